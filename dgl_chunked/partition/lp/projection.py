"""Uncoarsening tasks of the multilevel ``lp`` method: store and project partitions,
refine coarse levels, settle level 0 (scratch layout: :mod:`.coarsen_tasks`); the
whole uncoarsening as one computation (:func:`uncoarsen`)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import salts, schedule
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.coarsen_tasks import Level
from dgl_chunked.partition.lp.config import LPPlan
from dgl_chunked.partition.lp.kernels import LOCAL_MASK, node_order, rows_by_block
from dgl_chunked.partition.lp.round_kernels import cut_entries, part_gains
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph

__all__ = ["run_blocks", "uncoarsen"]

logger = logging.getLogger("dgl_chunked.partition.lp")

GROUP_ENTRIES = 1 << 21
"""Staged entries the cut count reads at once (as ``LPConfig.group_entries``)."""


def write_parts(level: Level, b: int, part: npt.NDArray[np.int32], num_parts: int) -> tuple[IdArray, IdArray]:
    """Store block ``b``'s partitions; at level 0 into ``lp``'s result, returning the
    nodes per (stratum, part) ``[S, P]`` and owned edges per part ``[P]``."""
    if level.index > 0:
        C.save(level.url(f"part-{b}"), part)
        w, _ = C.node_weights(level, b)
        return part_weights(part, w, num_parts), np.empty(0, np.int64)
    S.write_block(level.lp_root, b, "part", part.astype(np.int32))
    placed = part >= 0
    stratum = S.read_block(level.lp_root, b, "stratum").astype(np.int64)[placed]
    sizes = np.bincount(stratum * num_parts + part[placed], minlength=level.num_strata * num_parts)
    weight = S.read_block(level.lp_root, b, "weight")[placed]
    wsizes = np.bincount(part[placed], weights=weight, minlength=num_parts)
    return sizes.reshape(level.num_strata, num_parts).astype(np.int64), np.rint(wsizes).astype(np.int64)


def write_block_parts(level: Level, b: int, part: npt.NDArray[np.int32], num_parts: int) -> tuple[IdArray, IdArray]:
    """:func:`write_parts` of block ``b``'s rows of the whole level's partitions ``part``."""
    return write_parts(level, b, part[level.offsets[b] : level.offsets[b + 1]], num_parts)


def project_task(
    level: Level, b: int, coarse: Level, num_parts: int, name: str, cid_name: str = "cid"
) -> tuple[IdArray, IdArray]:
    """Partitions of block ``b``: those of their clusters (files ``cid_name``) at the
    coarse level (files ``name``)."""
    cid = C.load(level.url(f"{cid_name}-{b}"))
    part = np.full(cid.size, -1, np.int32)
    pos = cid >= 0
    part[pos] = C.lookup(coarse, name, cid[pos])
    return write_parts(level, b, part, num_parts)


def unplace_task(
    lp_root: S.ScratchRoot, b: int, lo: int, quota: IdArray, *, seed: int, salt: int
) -> tuple[IdArray, IdArray]:
    """Unplace ``quota[s, p]`` nodes of stratum ``s`` from part ``p`` (seeded hash order)
    in block ``b`` (first ``orig_nid`` ``lo``); return the nodes ``[S]`` and owned edges ``[P]`` taken away."""
    part = S.read_block(lp_root, b, "part")
    stratum = S.read_block(lp_root, b, "stratum")
    weight = S.read_block(lp_root, b, "weight")
    num_strata, num_parts = quota.shape
    rank = node_order(np.arange(lo, lo + part.size, dtype=np.int64), seed=seed, salt=salt)
    gone_n, gone_w = np.zeros(num_strata, np.int64), np.zeros(num_parts, np.int64)
    for s, p in zip(*np.nonzero(quota), strict=True):
        nodes = np.flatnonzero((part == p) & (stratum == s))
        nodes = nodes[np.argsort(rank[nodes], kind="stable")][: int(quota[s, p])]
        part[nodes] = -1
        gone_n[s] += nodes.size
        gone_w[p] += int(weight[nodes].sum())
    S.write_block(lp_root, b, "part", part)
    return gone_n, gone_w


def block_sizes_task(lp_root: S.ScratchRoot, b: int, num_strata: int, num_parts: int) -> IdArray:
    """Nodes of block ``b`` per (stratum, part) ``[S, P]`` in the current assignment."""
    part = S.read_block(lp_root, b, "part")
    placed = part >= 0
    stratum = S.read_block(lp_root, b, "stratum").astype(np.int64)[placed]
    sizes = np.bincount(stratum * num_parts + part[placed], minlength=num_strata * num_parts)
    return sizes.reshape(num_strata, num_parts).astype(np.int64)


def _lp_parts(level: Level, ids: IdArray) -> npt.NDArray[np.int32]:
    """The level-0 assignment (``lp``'s result files) of ``ids``, one block at a time."""
    block = np.searchsorted(np.asarray(level.offsets, np.int64), ids, side="right") - 1
    out = np.empty(ids.size, np.int32)
    for b, sel in rows_by_block(block, level.num_blocks):  # one sort, not a pass per block
        out[sel] = S.read_block(level.lp_root, b, "part")[ids[sel] - level.offsets[b]]
    return out


def keep_task(level: Level, b: int, name: str) -> None:
    """Keep a copy of block ``b``'s level-0 assignment under ``name``."""
    C.save(level.url(f"{name}-{b}"), S.read_block(level.lp_root, b, "part"))


def cut_task(level: Level, b: int, save: str | None) -> int:
    """Cut entries of block ``b`` under the current level-0 assignment (unplaced nodes
    count as cut), read ``GROUP_ENTRIES`` staged entries at a time; with ``save``, keep a
    copy of the block's assignment under that name."""
    part = S.read_block(level.lp_root, b, "part")
    if save is not None:
        C.save(level.url(f"{save}-{b}"), part)
    # the whole assignment once when small (4 bytes per node), not one block file per group
    whole = None
    if level.offsets[-1] * 4 <= C.WHOLE_TABLE_BYTES:
        whole = np.concatenate([S.read_block(level.lp_root, t, "part") for t in range(level.num_blocks)])
    cut = 0
    for group in schedule.group_segments(list(level.segs[b]), GROUP_ENTRIES):  # memory: one group
        if whole is not None:  # one compiled pass over the group, read into pooled arrays
            u, v = (S.read_segments(level.lp_root, group, name, pooled=True) for name in ("u", "v"))
            cut += cut_entries(u, v, part, whole)
            continue
        u = (S.read_segments(level.lp_root, group, "u") & LOCAL_MASK).astype(np.int64)
        v = S.read_segments(level.lp_root, group, "v").astype(np.int64)
        pu = part[u] if u.size else np.empty(0, np.int32)
        cut += int(((pu < 0) | (pu != _lp_parts(level, v))).sum())
    return cut


def restore_task(level: Level, b: int, name: str | None) -> None:
    """Put back the saved assignment ``name`` of block ``b`` (None: nothing placed)."""
    if name is None:
        S.write_block(level.lp_root, b, "part", np.full(level.rows(b), -1, np.int32))
    else:
        S.write_block(level.lp_root, b, "part", C.load(level.url(f"{name}-{b}")))


def part_weights(part: npt.NDArray[np.integer[Any]], w: IdArray, num_parts: int) -> IdArray:
    """Weight per part ``[P, C]`` of nodes with partitions ``part`` (-1: none) and weights ``w``."""
    out = np.zeros((num_parts, w.shape[1]), np.int64)
    placed = part >= 0
    np.add.at(out, part[placed], w[placed])
    return out


def refine_task(
    level: Level,
    b: int,
    weights: IdArray,
    *,
    src: str,
    dst: str,
    num_parts: int,
    seed: int,
    salt: int,
    limit: IdArray,
) -> IdArray:
    """One label-propagation pass over block ``b`` of a coarse level: a seeded half of
    the nodes may move to the part they are most connected to (by edge weight) when
    that beats their own, best gain first, within this block's share of every part's
    room ``[P, C]`` (``limit`` ``[C]`` less the level's ``weights`` per part ``[P, C]``).
    Reads the partitions ``src-<b>`` (every block's), writes ``dst-<b>``.
    Returns the weight moved ``[P, C]`` (+ into, - out of a part)."""
    room = np.clip(limit[None, :] - weights, 0, None) // level.num_blocks
    part = C.load(level.url(f"{src}-{b}"))
    w, _ = C.node_weights(level, b)
    u, v, ew = C.read_entries(level, b, pooled=True)
    delta = np.zeros((num_parts, level.width), np.int64)
    table = C.whole_table(level, src)  # indexed in the kernel, instead of gathered per entry
    if table is None:
        v, table = np.arange(v.size), C.lookup(level, src, v)
    best, gain = part_gains(u, v, ew, table, part, num_parts)
    ids = np.arange(level.offsets[b], level.offsets[b + 1], dtype=np.int64)
    cand = np.flatnonzero((gain > 0) & (best != part) & CK.active_bit(ids, seed=seed, salt=salt))
    target = best[cand]
    accept = CK.accept_joins(
        target,
        gain[cand].astype(np.int64),
        node_order(ids[cand], seed=seed, salt=salt + 1),
        w[cand],
        -room[target],
        np.zeros(level.width, np.int64),
    )
    moved = cand[accept]
    np.add.at(delta, target[accept], w[moved])
    np.subtract.at(delta, part[moved], w[moved])
    part[moved] = target[accept]
    C.save(level.url(f"{dst}-{b}"), part)
    return delta


def refine_round_task(level: Level, b: int, *got: Any, **kw: Any) -> IdArray:
    """:func:`refine_task` of block ``b`` after the level's projection and refinement
    rounds so far: ``got`` are their results for every block (:func:`write_parts`' per
    block first, then each round's moves), summed into the level's weight per part.
    Every task of a round takes them all, so that no single task's result pins the
    round to one worker (Dask runs a task where its inputs are)."""
    blocks = level.num_blocks
    weights = np.sum([c[0] for c in got[:blocks]], axis=0).astype(np.int64)
    for r in range(blocks, len(got), blocks):
        weights = weights + np.sum(got[r : r + blocks], axis=0)
    return refine_task(level, b, weights, **kw)


def moved_task(level: Level, r: int, *deltas: IdArray) -> None:
    """Log the weight refinement round ``r`` moved (``deltas`` per block)."""
    moved = np.sum(deltas, axis=0)
    logger.debug("lp: level %d refinement round %d moved weight %d", level.index, r, int(np.abs(moved).sum()) // 2)


def removed_after(tasks: TaskGraph, level: Level, names: Sequence[str], after: Sequence[str]) -> list[str]:
    """Tasks deleting the level's files ``names``, one per block, after the tasks ``after``:
    in the computation, in parallel, instead of in the driver between two computations
    (where no task runs: issue #38's many-core target) or in one task."""
    root = level.lp_root
    return [
        tasks.add(S.remove_files_task, root, level.block_files(b, names), after=after) for b in range(level.num_blocks)
    ]


def uncoarsen(
    levels: Sequence[Level],
    part: Ref,
    plan: LPPlan,
    limit: IdArray,
    save: str,
    *,
    tasks: TaskGraph,
    keep_to: int = 0,
    cid_name: str = "cid",
    also: Sequence[str] = (),
) -> tuple[list[tuple[IdArray, IdArray]], int]:
    """Store the partition ``part`` of the coarsest level (``levels[-1]``), project it
    level by level to ``levels[0]`` (level 0), refining every coarse level but the
    coarsest (``LPConfig.coarse_refine_rounds`` rounds under the caps ``limit`` ``[C]``:
    :func:`refine_task`), and count the entries cut at level 0, keeping its
    assignment as ``save``: one computation, its rounds chained by their scratch files
    (every task of a round after every task of the one before). The levels up to
    index ``keep_to`` keep their entries and node weights (for the next cluster weight,
    :mod:`.shared_levels`); the coarser ones lose them once projected. ``cid_name``:
    the cluster maps of ``levels[0]`` (``pcid``: to the purified coarsest level).

    ``part`` is a task of ``tasks`` (:class:`.taskgraph.Ref`: its result, the coarsest
    level's partitions), the graph this computation adds to; the tasks ``also`` are
    computed in it too (their results dropped).

    Returns what :func:`write_parts` returns per block of level 0, and the cut entries.
    """
    top = levels[-1]
    after = [tasks.add(write_block_parts, top, b, part, plan.num_parts) for b in range(top.num_blocks)]
    keys: list[str] = []
    name = "part"  # the coarser level's partition files
    for fine, coarser in reversed(list(itertools.pairwise(levels))):
        maps = cid_name if fine is levels[0] else "cid"
        after = [
            tasks.add(project_task, fine, b, coarser, plan.num_parts, name, maps, after=after)
            for b in range(fine.num_blocks)
        ]
        # the purification reads the cluster maps (cid) only; it rebuilds the coarsest level
        # beside it; the levels a later cluster weight takes keep their entries and weights
        gone = ("part", "part0", "part1") if coarser.index <= keep_to else ("e", "w", "part", "part0", "part1")
        keys += removed_after(tasks, coarser, gone, after)
        name = "part"
        if fine.index == 0:
            break
        inputs = list(after)  # the level's projection, then each round's moves: every block's
        for r in range(plan.config.coarse_refine_rounds):
            kw: dict[str, Any] = {"num_parts": plan.num_parts, "seed": plan.seed, "limit": limit[: fine.width]}
            kw.update(src=name, dst=f"part{r % 2}", salt=salts.coarse_refine(fine.index, r))
            after = [tasks.add(refine_round_task, fine, b, *map(Ref, inputs), **kw) for b in range(fine.num_blocks)]
            keys.append(tasks.add(moved_task, fine, r, *map(Ref, after)))
            inputs, name = inputs + after, kw["dst"]
    cuts = [tasks.add(cut_task, levels[0], b, save, after=after) for b in range(levels[0].num_blocks)]
    got = tasks.compute(after + cuts + keys + list(also))
    return got[: len(after)], int(sum(got[len(after) : len(after) + len(cuts)]))


def run_blocks(tasks: TaskGraph, func: Any, level: Level, *args: Any) -> list[Any]:
    """``func(level, b, *args)`` for every block ``b``, as one computation."""
    return tasks.compute([tasks.add(func, level, b, *args) for b in range(level.num_blocks)])
