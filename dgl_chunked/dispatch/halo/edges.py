"""Multi-hop HALO: the in-edges of HALO nodes, for ``halo_hops > 1`` or kept HALO edges.

The chunked pipeline stores only owned edges (destination inner) and 1-hop HALO
nodes. With ``halo_hops = H`` and HALO edges kept, partition ``p``'s graph holds
the H-hop in-neighbourhood of its inner nodes: ``D0`` = inner nodes, ``D(k+1)`` =
sources of in-edges of ``Dk`` not seen before, and every in-edge of
``D0 ... D(H-1)``. In-edges of ``D0`` are the owned edges; the others are owned
by other partitions and are found by scanning their staged edge segments for
destinations in the current frontier. That costs one read of the other
partitions' staged edges per hop, and the HALO edges of a partition are held in
memory (they are what a sampler needs locally, usually far fewer than the owned
edges). DGL's ``partition_graph`` additionally adds 1-hop out-neighbours; the
in-neighbourhood is what message passing towards inner nodes reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.plan import PartitionPlan

__all__ = ["HaloEdges", "collect_halo_edges", "sorted_member"]

Int64s = npt.NDArray[np.int64]


@dataclass(frozen=True)
class HaloEdges:
    """HALO edges of one partition, sorted by ``new_eid``: new IDs of both ends, etype."""

    src: Int64s
    dst: Int64s
    eid: Int64s
    etype: npt.NDArray[np.int32]

    @staticmethod
    def empty() -> HaloEdges:
        z = np.zeros(0, np.int64)
        return HaloEdges(z, z, z, np.zeros(0, np.int32))


def sorted_member(values: Int64s, sorted_set: Int64s) -> npt.NDArray[np.bool_]:
    """``np.isin(values, sorted_set)`` for a sorted, duplicate-free set."""
    if sorted_set.size == 0:
        return np.zeros(values.shape[0], dtype=bool)
    idx = np.minimum(np.searchsorted(sorted_set, values), sorted_set.shape[0] - 1)
    return sorted_set[idx] == values  # type: ignore[no-any-return]


def _other_segments(plan: PartitionPlan, part: int) -> Iterator[tuple[int, int, int, int]]:
    """``(owner, etype id, read task, first new_eid of the segment)`` of every other partition's edges."""
    for owner in range(plan.edge_layout.num_parts):
        if owner == part:
            continue
        for r in range(len(plan.etypes)):
            first = int(plan.edge_layout.ranges[owner, r, 0])
            for c, counts in enumerate(plan.edge_task_counts[r]):
                if counts[owner]:
                    yield owner, r, c, first
                first += int(counts[owner])


def _in_edges_of(plan: PartitionPlan, part: int, frontier: Int64s) -> HaloEdges:
    """Edges owned by other partitions whose destination is in ``frontier``."""
    found: list[tuple[Int64s, Int64s, Int64s, int]] = []
    for owner, r, c, first in _other_segments(plan, part):
        dst = plan.edge_segment(r, c, "new_dst", owner)
        hit = np.flatnonzero(sorted_member(dst, frontier))
        if hit.size:
            src = plan.edge_segment(r, c, "new_src", owner)
            found.append((src[hit], dst[hit], first + hit.astype(np.int64), r))
    if not found:
        return HaloEdges.empty()
    return HaloEdges(
        src=np.concatenate([f[0] for f in found]),
        dst=np.concatenate([f[1] for f in found]),
        eid=np.concatenate([f[2] for f in found]),
        etype=np.concatenate([np.full(f[0].shape[0], f[3], np.int32) for f in found]),
    )


def collect_halo_edges(plan: PartitionPlan, part: int, hop1: Int64s, hops: int) -> HaloEdges:
    """In-edges of the HALO nodes up to ``hops`` hops, sorted by new edge ID.

    ``hop1`` is the sorted 1-hop HALO set (sources of owned edges not owned).
    """
    lo, hi = (int(x) for x in plan.node_layout.part_starts[part : part + 2])
    known, frontier = hop1, hop1
    pieces = []
    for _ in range(hops - 1):
        if frontier.size == 0:
            break
        edges = _in_edges_of(plan, part, frontier)
        pieces.append(edges)
        new = np.unique(edges.src)
        new = new[((new < lo) | (new >= hi)) & ~sorted_member(new, known)]
        known = np.union1d(known, new)
        frontier = new
    if not pieces:
        return HaloEdges.empty()
    eid = np.concatenate([p.eid for p in pieces])
    order = np.argsort(eid, kind="stable")
    return HaloEdges(
        src=np.concatenate([p.src for p in pieces])[order],
        dst=np.concatenate([p.dst for p in pieces])[order],
        eid=eid[order],
        etype=np.concatenate([p.etype for p in pieces])[order],
    )
