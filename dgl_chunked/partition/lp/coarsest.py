"""The coarsest level of the multilevel ``lp`` method partitioned in memory with METIS,
in one task (:func:`metis_task`): gathered from its blocks (:func:`gather_task`),
whole, or only its heaviest entries when it holds more than the stall budget's
(:func:`weight_floor`; :func:`.multilevel._stalled_end` keeps such a level).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import heap
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph
from dgl_chunked.partition.metis import metis_parts

__all__ = [
    "gather_task",
    "initial_partition_task",
    "metis_cuts",
    "metis_task",
    "weight_counts_task",
    "weight_floor",
]

logger = logging.getLogger("dgl_chunked.partition.lp")


def initial_partition_task(level: C.Level, plan: LPPlan, *, max_entries: int | None = None) -> tuple[TaskGraph, str]:
    """A task graph of the partition of the coarsest level (written already) in memory
    with METIS (node and edge weights): its blocks gathered, then :func:`metis_task`.
    With ``max_entries``, of its entries only the heaviest (:func:`weight_floor`): their
    weights are counted first, in a computation of their own. Returns the graph (to add
    to) and the key of the task that returns the part of every node of the level (-1:
    not in the graph), for :func:`.projection.uncoarsen` to store.

    METIS is a task, not a step of the driver, so the tasks of the same computation that
    do not wait for it run beside it (the purification's), in one process too: it runs
    without the GIL (:mod:`dgl_chunked.partition.metis_capi`).
    """
    floor = 0
    if max_entries is not None:
        counted = TaskGraph()
        floor = weight_floor(
            counted.compute([counted.add(weight_counts_task, level, b) for b in range(level.num_blocks)]), max_entries
        )
    tasks = TaskGraph()
    gather = [tasks.add(gather_task, level, b, min_weight=floor) for b in range(level.num_blocks)]
    return tasks, tasks.add(metis_task, level, plan, *map(Ref, gather))


def metis_task(
    level: C.Level, plan: LPPlan, *gathered: tuple[IdArray, IdArray, IdArray, IdArray, npt.NDArray[np.bool_]]
) -> npt.NDArray[np.int32]:
    """METIS's partition of the coarsest level from its blocks (:func:`gather_task`):
    the part of every node of the level (-1: not in the graph)."""
    node_w, active = np.concatenate([g[3] for g in gathered]), np.concatenate([g[4] for g in gathered])
    index = np.cumsum(active, dtype=CK.id_dtype(active.size)) - 1
    # Renumbered block by block into the level's ID type (int32 below 2**31 nodes), the
    # weights kept in the blocks' type: the whole level in int64, then its sort, was this
    # task's peak (issue #38, 10M nodes / 100M edges: 1.9M entries, +159 MB -> +57 MB;
    # the worker's 687 -> 629 MB).
    u = np.concatenate([index[g[0]] for g in gathered])
    v = np.concatenate([index[g[1]] for g in gathered])
    w = np.concatenate([g[2] for g in gathered])
    del gathered
    xadj, adjncy, eweights = CK.weighted_csr(u, v, w, int(active.sum()))
    del u, v, w
    heap.give_back_free_heap()  # the coarsening's and the gathering's freed pages: METIS's peak comes next
    vweights = node_w[active].sum(axis=1) if plan.balance_edges else node_w[active][:, : level.num_strata].sum(axis=1)
    part = np.full(active.size, -1, np.int32)
    part[active] = metis_parts(
        xadj,
        adjncy,
        plan.num_parts,
        seed=plan.seed,
        vweights=np.maximum(vweights, 1),
        eweights=eweights,
        ncuts=metis_cuts(plan.config, adjncy.size),
    )
    coarse = part[active]
    cut = int(eweights[coarse[np.repeat(np.arange(xadj.size - 1), np.diff(xadj))] != coarse[adjncy]].sum())
    logger.debug("lp: initial partition of %d nodes, %d entries: %d cut", int(active.sum()), adjncy.size, cut)
    del xadj, adjncy, eweights, coarse
    heap.give_back_free_heap()  # METIS's and the gathered graph's freed pages
    return part


def weight_floor(counts: Sequence[tuple[IdArray, IdArray]], max_entries: int) -> int:
    """The lowest entry weight ``t`` such that at most ``max_entries`` entries weigh
    ``t`` or more (``counts``: per block, its distinct entry weights and their numbers):
    METIS gets those entries, every pair's two directions alike (equal weights)."""
    weights, inverse = np.unique(np.concatenate([c[0] for c in counts]).astype(np.int64), return_inverse=True)
    number = np.bincount(inverse.reshape(-1), weights=np.concatenate([c[1] for c in counts])).astype(np.int64)
    heavier = np.cumsum(number[::-1])[::-1]  # entries weighing weights[i] or more
    fits = np.flatnonzero(heavier <= max_entries)
    floor = int(weights[fits[0]]) if fits.size else int(weights[-1]) + 1 if weights.size else 0
    total = max(int((number * weights).sum()), 1)
    logger.info(
        "lp: METIS gets the %d entries of weight %d or more of %d (%.1f%% of the weight)",
        int(heavier[fits[0]]) if fits.size else 0,
        floor,
        int(number.sum()),
        100 * int((number * weights)[weights >= floor].sum()) / total,
    )
    return floor


def metis_cuts(cfg: LPConfig, entries: int) -> int:
    """METIS's ``ncuts`` for a coarsest graph of ``entries`` entries: ``metis_ncuts``,
    or more (up to ``metis_max_ncuts``) while ``ncuts x entries`` stays within
    ``metis_work``: small graphs get more tries for about the same time."""
    more = cfg.metis_work // max(entries, 1)
    return int(max(cfg.metis_ncuts, min(cfg.metis_max_ncuts, more)))


def gather_task(
    level: C.Level, b: int, min_weight: int = 0
) -> tuple[IdArray, IdArray, IdArray, IdArray, npt.NDArray[np.bool_]]:
    """Block ``b`` of the coarsest level for the in-memory partitioner: global ``u``,
    ``v``, ``w`` of its entries (those of weight ``min_weight`` or more), its node
    weights and which nodes are in the graph."""
    u, v, w = C.read_entries(level, b)
    u = u + level.offsets[b]
    if min_weight > 0:  # by the pairs' weights (a pair's pieces come from several writers)
        u, v, w = CK.contract_entries(u, v, w)
        keep = w >= min_weight
        u, v, w = u[keep], v[keep], w[keep]
    nw, active = C.node_weights(level, b)
    return u, v, w, nw, active


def weight_counts_task(level: C.Level, b: int) -> tuple[IdArray, IdArray]:
    """The distinct weights of block ``b``'s entries (the sums of equal pairs: one entry
    per neighbour of a node) and how many entries weigh each."""
    u, v, w = C.read_entries(level, b)
    return np.unique(CK.contract_entries(u + level.offsets[b], v, w)[2], return_counts=True)
