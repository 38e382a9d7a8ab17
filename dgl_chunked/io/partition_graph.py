"""A partition's graph structure from whichever file it has: graph.dgl or GraphBolt's .pt.

``verify`` and ``load_partition_output`` check partitions in DGL's layout: local
edges in edge-ID order with ``ndata``/``edata``. A GraphBolt partition stores CSC by
destination instead; its edges are put back in local edge order: DGL >= 2.3's
``_dgl2gb_eid`` (each local edge's CSC slot) where stored, else edge ``_ID`` order,
which is the local edge order our writer and DGL use for owned edges. Without either
the edge order is lost and this raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.binary import read_graphs
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE, read_graphbolt_graph
from dgl_chunked.storage import fs

__all__ = ["PartitionGraph", "read_partition_graph"]


@dataclass
class PartitionGraph:
    """Local edges in edge-ID order and the node/edge data of one partition."""

    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    ndata: dict[str, Any]
    edata: dict[str, Any]
    formats: tuple[str, ...]
    source: str


def read_partition_graph(
    part_dir: str, *, node_range: tuple[int, int] | None = None, storage_options: StorageOptions = None
) -> PartitionGraph:
    """Read ``part_dir/graph.dgl``, else ``part_dir/fused_csc_sampling_graph.pt``.

    Parameters
    ----------
    part_dir
        The partition directory.
    node_range
        ``[lo, hi)`` of the partition's own new node IDs: a GraphBolt graph stored
        without ``inner_node`` gets it derived from ``_ID`` (1 inside the range).
    """
    dgl_path = fs.join(part_dir, "graph.dgl")
    if fs.exists(dgl_path, storage_options):
        graphs, _ = read_graphs(dgl_path, storage_options=storage_options)
        g = graphs[0]
        etype = g.canonical_etypes[0]
        src, dst = (np.asarray(a, np.int64) for a in g.edges())
        return PartitionGraph(
            src, dst, g.ndata.get(g.ntypes[0], {}), g.edata.get(etype, {}), g.stored_formats[etype], dgl_path
        )
    path = fs.join(part_dir, GRAPHBOLT_FILE)
    if not fs.exists(path, storage_options):
        raise FileNotFoundError(f"{part_dir}: neither graph.dgl nor {GRAPHBOLT_FILE} exists")
    gb = read_graphbolt_graph(path, storage_options=storage_options)
    eattrs, nattrs = gb.edge_attributes or {}, dict(gb.node_attributes or {})
    if "_ID" not in eattrs:
        raise DGLFormatError(
            f"{path}: edge _ID is not stored, so the local edge order cannot be rebuilt; "
            "write GraphBolt partitions without --no-store-eids to verify them"
        )
    order = np.argsort(eattrs["_ID"], kind="stable")
    dst = np.repeat(np.arange(gb.total_num_nodes, dtype=np.int64), np.diff(gb.indptr).astype(np.int64))
    order = _dgl2gb_order(eattrs, order, dst, path)
    edata: dict[str, Any] = {k: np.asarray(v)[order] for k, v in eattrs.items()}
    if gb.type_per_edge is not None:
        edata["_TYPE"] = gb.type_per_edge.astype(np.int64)[order]
    if "inner_node" not in nattrs and node_range is not None and "_ID" in nattrs:
        nid = nattrs["_ID"]
        nattrs["inner_node"] = ((nid >= node_range[0]) & (nid < node_range[1])).astype(np.uint8)
    return PartitionGraph(gb.indices.astype(np.int64)[order], dst[order], nattrs, edata, ("csc",), path)


def _dgl2gb_order(
    eattrs: dict[str, Any], order: npt.NDArray[Any], dst: npt.NDArray[np.int64], path: str
) -> npt.NDArray[Any]:
    """The local edge order: DGL >= 2.3's ``_dgl2gb_eid`` (each local edge's CSC slot) when
    stored, checked to be a permutation, else ``order`` (by edge ``_ID``); ``_gb_dst_id``,
    when stored, must be every slot's destination (``docs/spec/graphbolt.md``)."""
    dst_ids = eattrs.get("_gb_dst_id")
    if dst_ids is not None and not np.array_equal(dst_ids, dst):
        raise DGLFormatError(f"{path}: _gb_dst_id is not every CSC slot's destination (the expanded indptr)")
    slots = eattrs.get("_dgl2gb_eid")
    if slots is None:
        return order
    seen = np.zeros(order.shape[0], dtype=bool)
    if slots.shape != order.shape or slots.size and (slots.min() < 0 or slots.max() >= order.shape[0]):
        raise DGLFormatError(f"{path}: _dgl2gb_eid holds slots outside [0, {order.shape[0]})")
    seen[slots] = True
    if not seen.all():
        raise DGLFormatError(f"{path}: _dgl2gb_eid repeats a CSC slot; it must give each local edge its own")
    local_order: npt.NDArray[Any] = np.asarray(slots, dtype=np.int64)
    return local_order
