"""The ``range`` method: contiguous ranges of each node type's IDs, balanced.

Node ``type_nid`` of a type with ``n`` nodes goes to the part whose range holds it,
the ranges being those of ``numpy.array_split(range(n), num_parts)``: with
``q, r = divmod(n, num_parts)`` the first ``r`` parts get ``q + 1`` consecutive IDs
and the others ``q``, in order. That is GraphStorm's ``RangePartitionAlgorithm``
(graphstorm ``python/graphstorm/gpartition/range_partition.py``, commit a1282ded4,
"Add range partition option"), which writes ``np.array_split`` per node type.

The result depends only on ``(type_nid, n, num_parts)``: not on the seed, the node
chunking, the workers or the scheduler. Every node type is balanced exactly (part
sizes differ by at most one); masks named in ``balance_ntypes`` and
``balance_edges`` are not balanced (a contiguous range keeps whatever the IDs hold).

Why a user picks it: DGL numbers the nodes of each (partition, type) block in
ascending ``type_nid`` order, partition-major, so with contiguous ranges in part
order a node's new per-type ID (its index in the concatenation of every partition's
``orig_nids[ntype]``, GraphStorm's "partition node ID") equals its ``type_nid``, and its
``new_nid`` is ``node_map[ntype][p][0] + type_nid - first type_nid of p``. Results,
hard negatives and seed lists in per-type IDs need no remapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PartArray
from dgl_chunked.partition._base import node_type_blocks

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph
    from dgl_chunked.partition._base import PartitionOptions

__all__ = ["range_bounds", "range_parts", "range_assignment_block", "RangeMethod"]


def range_bounds(num_nodes: int, num_parts: int) -> npt.NDArray[np.int64]:
    """int64 ``(num_parts + 1,)``: part ``p`` owns IDs ``[bounds[p], bounds[p + 1])``.

    The boundaries of ``numpy.array_split(range(num_nodes), num_parts)``.
    """
    q, r = divmod(int(num_nodes), int(num_parts))
    p = np.arange(num_parts + 1, dtype=np.int64)
    return p * q + np.minimum(p, r)


def range_parts(type_nids: npt.NDArray[np.integer[Any]], *, num_nodes: int, num_parts: int) -> PartArray:
    """Partition IDs of the given per-type node IDs (pure numpy kernel).

    Parameters
    ----------
    type_nids
        Per-type node IDs in ``[0, num_nodes)``.
    num_nodes
        The node type's node count.
    num_parts
        Number of partitions (>= 1).

    Returns
    -------
    numpy.ndarray
        int32 IDs in ``[0, num_parts)``, same length as ``type_nids``, non-decreasing
        in the ID.
    """
    bounds = range_bounds(num_nodes, num_parts)
    ids = np.asarray(type_nids, dtype=np.int64)
    return (np.searchsorted(bounds, ids, side="right") - 1).astype(np.int32)


def range_assignment_block(*, num_nodes: int, num_parts: int, block_info: Any = None) -> PartArray:
    """Dask kernel: the block's ``type_nid`` range comes from ``block_info``."""
    lo, hi = block_info[None]["array-location"][0]
    return range_parts(np.arange(lo, hi, dtype=np.int64), num_nodes=num_nodes, num_parts=num_parts)


class RangeMethod:
    """The ``range`` method (DGL ``algo_name`` "random", as GraphStorm records it: DGL 2.1.0's
    ``partition_meta.json`` check accepts only "random" and "metis")."""

    name = "range"
    dgl_algo_name = "random"

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        """Lazy int32 arrays chunked like ``graph.node_chunks(ntype)``; never computes.

        ``seed``, ``balance_ntypes`` and ``balance_edges`` are not used: every node
        type is balanced exactly, and the ranges are fixed by the counts alone.
        """
        return node_type_blocks(
            graph,
            range_assignment_block,
            "dglc-assign-range",
            lambda ntype: {"num_nodes": graph.metadata.num_nodes(ntype), "num_parts": num_parts},
        )
