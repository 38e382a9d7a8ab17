"""The partition config JSON that DGL's ``load_partition`` reads.

Its keys, their order and the readers that depend on it are in
``docs/spec/partition-config.md`` ("Keys", "Key order"). The chunked pipeline names it ``metadata.json``
inside the output directory (the same name as the *input* chunked metadata, with a
different schema), and ``DistGraph`` users pass its path as ``part_config``. Layout of
an output directory::

    OUT/
      metadata.json          this config (written last, atomically)
      part0/graph.dgl        homogeneous graph: inner nodes, HALO nodes, owned edges
      part0/node_feat.dgl    "<ntype>/<feat>" -> rows of the owned nodes
      part0/edge_feat.dgl    "<src:rel:dst>/<feat>" -> rows of the owned edges
      part0/orig_nids.dgl    optional: "<ntype>" -> original per-type IDs
      part0/orig_eids.dgl    optional: "<src:rel:dst>" -> original per-type IDs
      part1/...
      raw_id_mappings/       optional: GSProcessing's user IDs, carried beside the config
      .dglc-owned.json       our ownership marker, of kind ``"dispatch"`` (OUTPUT_KIND)

The writer lays the document out exactly as DGL 2.1's chunked pipeline does: its
top-level keys in the pipeline's order, every type dictionary (``ntypes``,
``etypes``, ``node_map``, ``edge_map``) in type-ID order, ``part-<i>`` entries in
partition order. Order matters: DGL's ``dgl_partition_to_graphbolt`` numbers node
types by their position in ``ntypes`` and ``load_partition`` returns the types in
key order. The reader takes type IDs from the values only and returns every type
dictionary in ID order, whatever order the file has (DGL's, ours, older ours).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import MetadataError
from dgl_chunked.storage import fs

__all__ = [
    "CONFIG_NAME",
    "ID_MAPPINGS_DIR",
    "OUTPUT_KIND",
    "PartitionConfig",
    "by_type_id",
    "config_document",
    "read_partition_config",
    "types_in_id_order",
    "write_partition_config",
]

CONFIG_NAME = "metadata.json"
ID_MAPPINGS_DIR = "raw_id_mappings"
"""GSProcessing's user-ID folder: in its output, and beside the partition config, where
GraphStorm's ``gconstruct/remap_result.py`` looks (``os.path.dirname(part_config)/raw_id_mappings``)."""
OUTPUT_KIND = "dispatch"
"""The kind in the ownership marker of a partition output dgl_chunked wrote (:mod:`dgl_chunked.storage.owned`)."""
HOMOGENEOUS_NTYPES = {"_N": 0}
HOMOGENEOUS_ETYPES = {"_N:_E:_N": 0}
MAP_DTYPE_KEYS = ("node_map_dtype", "edge_map_dtype")

Ranges = list[list[int]]
V = TypeVar("V")


@dataclass(frozen=True, kw_only=True)
class PartitionConfig:
    """Everything DGL's partition book needs, in DGL's own key names.

    ``node_map[ntype][p] == [start, end)`` of partition ``p``'s nodes of that type in
    the shuffled homogeneous ID space; ``edge_map`` likewise per canonical etype.
    ``ntypes`` / ``etypes`` map each name to its type ID; the ID, never the position
    of a name, is what counts (:func:`read_partition_config` returns them in ID order).
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
        """The JSON document, laid out as DGL's chunked pipeline writes it.

        Keys in the pipeline's order (``edge_map``, ``etypes``, ``graph_name``,
        ``halo_hops``, ``node_map``, ``ntypes``, ``num_edges``, ``num_nodes``,
        ``num_parts``, ``part_method``, then ``part-0`` ... ``part-<P-1>``, each with
        ``node_feats``, ``edge_feats``, ``part_graph``); type dictionaries in type-ID
        order. Other keys (``extra``) follow the partitions; GraphBolt outputs end with
        ``node_map_dtype`` / ``edge_map_dtype`` as DGL's converter appends them.
        """
        ntypes, etypes = by_type_id(self.ntypes), by_type_id(self.etypes)
        doc: dict[str, Any] = {
            "edge_map": _ordered(self.edge_map, etypes),
            "etypes": etypes,
            "graph_name": self.graph_name,
            "halo_hops": self.halo_hops,
            "node_map": _ordered(self.node_map, ntypes),
            "ntypes": ntypes,
            "num_edges": self.num_edges,
            "num_nodes": self.num_nodes,
            "num_parts": self.num_parts,
            "part_method": self.part_method,
        }
        for p in range(self.num_parts):
            entry = {"node_feats": f"part{p}/node_feat.dgl", "edge_feats": f"part{p}/edge_feat.dgl"}
            if self.graphbolt:  # as DGL's partition_graph(use_graphbolt=True): no graph.dgl
                entry["part_graph_graphbolt"] = f"part{p}/fused_csc_sampling_graph.pt"
            else:
                entry["part_graph"] = f"part{p}/graph.dgl"
            doc[f"part-{p}"] = entry
        doc.update({k: v for k, v in self.extra.items() if k not in doc and k not in MAP_DTYPE_KEYS})
        if self.graphbolt:  # dgl_partition_to_graphbolt: GraphBolt IDs are int64 in RPC (dgl#7175)
            doc["node_map_dtype"] = doc["edge_map_dtype"] = "int64"
        else:
            doc.update({k: self.extra[k] for k in MAP_DTYPE_KEYS if k in self.extra})
        return doc


def by_type_id(types: Mapping[str, int]) -> dict[str, int]:
    """``{name: type ID}`` in type-ID order (the order DGL's pipeline writes and enumerates)."""
    return {name: int(i) for name, i in sorted(types.items(), key=lambda kv: int(kv[1]))}


def _ordered(mapping: Mapping[str, V], ids: Mapping[str, int]) -> dict[str, V]:
    """``mapping``'s entries in the order of ``ids`` (names it lacks keep their order, last)."""
    out = {name: mapping[name] for name in ids if name in mapping}
    out.update({k: v for k, v in mapping.items() if k not in out})
    return out


def config_document(config: PartitionConfig) -> bytes:
    """The bytes of ``metadata.json``: :meth:`PartitionConfig.to_dict` as DGL dumps it
    (``json.dump(..., indent=4)``, no final newline), so equal configs are equal files."""
    return json.dumps(config.to_dict(), indent=4).encode()


def write_partition_config(
    out_dir: PathLike, config: PartitionConfig, *, storage_options: StorageOptions = None
) -> str:
    """Write ``OUT/metadata.json`` atomically and return its path."""
    path = fs.join(out_dir, CONFIG_NAME)
    fs.atomic_write_bytes(path, config_document(config), storage_options)
    return path


def read_partition_config(path: PathLike, *, storage_options: StorageOptions = None) -> PartitionConfig:
    """Read a partition config written by us (any version), DGL's pipeline or ``partition_graph``.

    ``path`` is the JSON file or the output directory holding ``metadata.json``.
    Type IDs come from the ``ntypes`` / ``etypes`` values (DGL's defaults
    ``{"_N": 0}`` and ``{"_N:_E:_N": 0}`` when absent); the returned dictionaries are
    in type-ID order whatever the file's key order.

    Raises
    ------
    MetadataError
        Missing file, invalid JSON, a required key missing, type IDs that are not
        ``0 .. T-1``, or a map naming a type its ``ntypes`` / ``etypes`` lacks; the
        message names the file and the key.
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
    if not isinstance(doc, dict):
        raise MetadataError(f"partition config {target!r}: expected a JSON object, found {type(doc).__name__}")
    missing = [k for k in ("graph_name", "num_parts", "node_map", "edge_map") if k not in doc]
    if missing:
        raise MetadataError(f"partition config {target!r} lacks required key(s) {missing}")
    ntypes = _type_ids(doc, "ntypes", HOMOGENEOUS_NTYPES, target)
    etypes = _type_ids(doc, "etypes", HOMOGENEOUS_ETYPES, target)
    node_map = _ordered(_ranges(doc, "node_map", ntypes, target), ntypes)
    edge_map = _ordered(_ranges(doc, "edge_map", etypes, target), etypes)
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
        extra = {k: v for k, v in extra.items() if k not in MAP_DTYPE_KEYS}
    return PartitionConfig(
        graph_name=doc["graph_name"],
        num_parts=int(doc["num_parts"]),
        node_map=node_map,
        edge_map=edge_map,
        ntypes=ntypes,
        etypes=etypes,
        part_method=doc.get("part_method", "unknown"),
        halo_hops=int(doc.get("halo_hops", 1)),
        graphbolt=graphbolt,
        extra=extra,
    )


def types_in_id_order(doc: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """A copy of a config document with ``ntypes``, ``etypes``, ``node_map`` and
    ``edge_map`` in type-ID order, every key keeping its place in the document.

    For rewriting a config someone else laid out (``convert-graphbolt``): DGL's own
    documents are unchanged, ours from before the pipeline's layout get DGL's order.

    Raises
    ------
    MetadataError
        Type IDs that are not ``0 .. T-1`` (``where`` names the file).
    """
    ntypes = _type_ids(doc, "ntypes", HOMOGENEOUS_NTYPES, where)
    etypes = _type_ids(doc, "etypes", HOMOGENEOUS_ETYPES, where)
    out = dict(doc)
    for key, ids in (("ntypes", ntypes), ("etypes", etypes)):
        if key in out:
            out[key] = ids
    for key, ids in (("node_map", ntypes), ("edge_map", etypes)):
        if isinstance(out.get(key), dict):
            out[key] = _ordered(out[key], ids)
    return out


def _type_ids(doc: Mapping[str, Any], key: str, default: dict[str, int], where: str) -> dict[str, int]:
    """``doc[key]`` checked as DGL's partition book needs it (IDs exactly ``0 .. T-1``), in ID order."""
    types = doc.get(key, default)
    if not isinstance(types, dict) or not types:
        raise MetadataError(f"partition config {where!r}: {key!r} must be a non-empty object of name -> type ID")
    for name, i in types.items():
        if not isinstance(i, int) or isinstance(i, bool):
            raise MetadataError(f"partition config {where!r}: {key}[{name!r}] = {i!r} is not an integer type ID")
    if sorted(types.values()) != list(range(len(types))):
        raise MetadataError(
            f"partition config {where!r}: {key} IDs {sorted(types.values())} are not 0 .. {len(types) - 1}, "
            "each once (DGL's partition book requires that)"
        )
    return by_type_id(types)


def _ranges(doc: Mapping[str, Any], key: str, types: Mapping[str, int], where: str) -> dict[str, Ranges]:
    """``node_map`` / ``edge_map`` as ``{name: [[start, end], ...]}``; the legacy list form
    is the homogeneous type's, as in DGL's reader."""
    value = doc[key]
    if isinstance(value, list):
        value = {next(iter(HOMOGENEOUS_NTYPES if key == "node_map" else HOMOGENEOUS_ETYPES)): value}
    if not isinstance(value, dict):
        raise MetadataError(f"partition config {where!r}: {key!r} must be an object of type name -> ranges")
    out = {}
    for name, ranges in value.items():
        if name not in types:
            kind = "ntypes" if key == "node_map" else "etypes"
            raise MetadataError(f"partition config {where!r}: {key} names {name!r}, which {kind} lacks")
        try:
            out[name] = [[int(r[0]), int(r[1])] for r in ranges]
        except (TypeError, ValueError, IndexError, KeyError) as err:
            raise MetadataError(f"partition config {where!r}: {key}[{name!r}] is not a list of [start, end]") from err
    return out
