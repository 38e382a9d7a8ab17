"""A partition's graph structure from whichever file it has: graph.dgl or GraphBolt's .pt.

``verify`` and ``load_partition_output`` check partitions in DGL's layout: local
edges in edge-ID order with ``ndata``/``edata``. A GraphBolt partition stores CSC by
destination instead; with edge ``_ID`` stored (``--store-eids``) its edges are put
back in ``_ID`` order, which is the local edge order our writer and DGL use for
owned edges. Without edge ``_ID`` the edge order is lost and this raises.
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
    edata: dict[str, Any] = {k: np.asarray(v)[order] for k, v in eattrs.items()}
    if gb.type_per_edge is not None:
        edata["_TYPE"] = gb.type_per_edge.astype(np.int64)[order]
    if "inner_node" not in nattrs and node_range is not None and "_ID" in nattrs:
        nid = nattrs["_ID"]
        nattrs["inner_node"] = ((nid >= node_range[0]) & (nid < node_range[1])).astype(np.uint8)
    return PartitionGraph(gb.indices.astype(np.int64)[order], dst[order], nattrs, edata, ("csc",), path)
