"""The partition config JSON that DGL's ``load_partition`` reads (spec section 3.2).

The chunked pipeline names it ``metadata.json`` inside the output directory (the
same name as the *input* chunked metadata, with a different schema), and
``DistGraph`` users pass its path as ``part_config``. Layout of an output
directory::

    OUT/
      metadata.json          this config (written last, atomically)
      part0/graph.dgl        homogeneous graph: inner nodes, HALO nodes, owned edges
      part0/node_feat.dgl    "<ntype>/<feat>" -> rows of the owned nodes
      part0/edge_feat.dgl    "<src:rel:dst>/<feat>" -> rows of the owned edges
      part0/orig_nids.dgl    optional: "<ntype>" -> original per-type IDs
      part0/orig_eids.dgl    optional: "<src:rel:dst>" -> original per-type IDs
      part1/...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import MetadataError
from dgl_chunked.storage import fs

__all__ = ["PartitionConfig", "write_partition_config", "read_partition_config", "CONFIG_NAME"]

CONFIG_NAME = "metadata.json"

Ranges = list[list[int]]


@dataclass(frozen=True, kw_only=True)
class PartitionConfig:
    """Everything DGL's partition book needs, in DGL's own key names.

    ``node_map[ntype][p] == [start, end)`` of partition ``p``'s nodes of that type in
    the shuffled homogeneous ID space; ``edge_map`` likewise per canonical etype.
    """

    graph_name: str
    num_parts: int
    node_map: dict[str, Ranges]
    edge_map: dict[str, Ranges]
    ntypes: dict[str, int]
    etypes: dict[str, int]
    part_method: str = "random"
    halo_hops: int = 1
    graphbolt: bool = False
    """Partitions hold ``fused_csc_sampling_graph.pt`` (``part_graph_graphbolt``) instead of graph.dgl."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return sum(e - s for r in self.node_map.values() for s, e in r)

    @property
    def num_edges(self) -> int:
        return sum(e - s for r in self.edge_map.values() for s, e in r)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, with ``part-<i>`` entries pointing at ``part<i>/...``."""
        doc: dict[str, Any] = {
            "graph_name": self.graph_name,
            "part_method": self.part_method,
            "num_parts": self.num_parts,
            "halo_hops": self.halo_hops,
            "node_map": self.node_map,
            "edge_map": self.edge_map,
            "ntypes": self.ntypes,
            "etypes": self.etypes,
            "num_nodes": sum(e - s for r in self.node_map.values() for s, e in r),
            "num_edges": self.num_edges,
        }
        for p in range(self.num_parts):
            doc[f"part-{p}"] = {
                "node_feats": f"part{p}/node_feat.dgl",
                "edge_feats": f"part{p}/edge_feat.dgl",
            }
            if self.graphbolt:  # as DGL's partition_graph(use_graphbolt=True): no graph.dgl
                doc[f"part-{p}"]["part_graph_graphbolt"] = f"part{p}/fused_csc_sampling_graph.pt"
            else:
                doc[f"part-{p}"]["part_graph"] = f"part{p}/graph.dgl"
        if self.graphbolt:  # dgl_partition_to_graphbolt: GraphBolt IDs are int64 in RPC (dgl#7175)
            doc["node_map_dtype"] = doc["edge_map_dtype"] = "int64"
        doc.update(self.extra)
        return doc


def write_partition_config(
    out_dir: PathLike, config: PartitionConfig, *, storage_options: StorageOptions = None
) -> str:
    """Write ``OUT/metadata.json`` atomically and return its path."""
    path = fs.join(out_dir, CONFIG_NAME)
    text = json.dumps(config.to_dict(), indent=4, sort_keys=True) + "\n"
    fs.atomic_write_bytes(path, text.encode(), storage_options)
    return path


def read_partition_config(path: PathLike, *, storage_options: StorageOptions = None) -> PartitionConfig:
    """Read a partition config written by us, DGL's pipeline or ``partition_graph``.

    ``path`` is the JSON file or the output directory holding ``metadata.json``.
    """
    target = str(path)
    if not target.endswith(".json"):
        target = fs.join(target, CONFIG_NAME)
    try:
        with fs.open_file(target, "rb", storage_options) as f:
            doc = json.load(f)
    except FileNotFoundError as err:
        raise MetadataError(f"partition config {target!r} does not exist") from err
    except json.JSONDecodeError as err:
        raise MetadataError(f"partition config {target!r} is not valid JSON: {err}") from err
    missing = [k for k in ("graph_name", "num_parts", "node_map", "edge_map") if k not in doc]
    if missing:
        raise MetadataError(f"partition config {target!r} lacks required key(s) {missing}")
    node_map = {k: [list(map(int, r)) for r in v] for k, v in doc["node_map"].items()}
    edge_map = {k: [list(map(int, r)) for r in v] for k, v in doc["edge_map"].items()}
    known = {
        "graph_name",
        "num_parts",
        "node_map",
        "edge_map",
        "ntypes",
        "etypes",
        "part_method",
        "halo_hops",
        "num_nodes",
        "num_edges",
    }
    extra = {k: v for k, v in doc.items() if k not in known and not k.startswith("part-")}
    part0 = doc.get("part-0", {})
    graphbolt = "part_graph_graphbolt" in part0 and "part_graph" not in part0
    if graphbolt:
        extra = {k: v for k, v in extra.items() if k not in ("node_map_dtype", "edge_map_dtype")}
    return PartitionConfig(
        graph_name=doc["graph_name"],
        num_parts=int(doc["num_parts"]),
        node_map=node_map,
        edge_map=edge_map,
        ntypes=dict(doc.get("ntypes", {"_N": 0})),
        etypes=dict(doc.get("etypes", {"_N:_E:_N": 0})),
        part_method=doc.get("part_method", "unknown"),
        halo_hops=int(doc.get("halo_hops", 1)),
        graphbolt=graphbolt,
        extra=extra,
    )
