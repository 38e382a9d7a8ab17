"""The driver of the multilevel ``lp`` method: coarsen, partition in memory, project, refine.

Runs inside the ``lp`` driver task (:func:`dgl_chunked.partition.lp.run_lp`), after the
``lp`` staging, and hands the projected assignment to the ``lp`` rounds
(:mod:`.streaming`) for balancing and refinement under the hard caps. Each step is a
Dask computation of per-block tasks (:mod:`.coarsen_tasks`; a coarsening step is two,
:mod:`.clustering`); the driver keeps per-block
counts only, and, once, the coarsest graph (within ``LPConfig.coarse_nodes`` and
``coarse_entries``). See :mod:`dgl_chunked.partition.lp`; :func:`phase` logs each phase's time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import posixpath
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import finalists as F
from dgl_chunked.partition.lp import projection as P
from dgl_chunked.partition.lp import purify_tasks as PT
from dgl_chunked.partition.lp import salts
from dgl_chunked.partition.lp import shared_levels as SL
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.clustering import coarsen_step
from dgl_chunked.partition.lp.coarsest import initial_partition_task, metis_cuts
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph

if TYPE_CHECKING:
    from dgl_chunked.io.chunked.graph import ChunkedGraph

__all__ = ["metis_cuts", "phase", "run_multilevel"]  # metis_cuts: see .coarsest

logger = logging.getLogger("dgl_chunked.partition.lp")

_MAX_FRACTION = 0.5  # cluster caps grow 4x per stalled level up to half a part's share


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Log the wall time of the ``lp`` phase ``name`` (INFO: ``lp: phase NAME: S s``;
    ``benchmarks/bench_lp.py`` sums them per name)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        logger.info("lp: phase %s: %.3f s", name, time.perf_counter() - start)


def run_multilevel(graph: ChunkedGraph, plan: LPPlan, root: S.ScratchRoot) -> None:
    """Stage; the initial assignments (the streaming placement, the multilevel ones:
    coarsen, partition the coarsest graph, project), settled under the caps and
    refined (:func:`_assign`); place the isolated nodes."""
    try:
        with phase("stage"):
            state = D.prepare(graph, plan, root)
        linked = int(state.linked.sum())
        if linked:
            _assign(state, root, linked)
        else:
            with phase("refine"):
                D.refine(state)
        with phase("fill"):
            logger.debug("lp: isolated nodes: %d", D.fill(state, isolated=True))
    finally:
        with phase("release"):  # every worker's pools and free heap
            D.release_worker_pools(trim=True)


def _assign(state: D.State, root: S.ScratchRoot, linked: int) -> None:
    """The streaming placement and the multilevel assignments, measured by their cut
    (entries between parts); the best streaming or level-by-level one is settled and
    refined, and so is the best purified one (``LPConfig.purify_rounds``): the one of
    these two cutting less after ``LPConfig.refine_compare`` passes is refined on and
    stays in the ``lp`` state (:func:`.finalists.refined_best`)."""
    level = _level0(state, root)
    level.create()
    with phase("streaming"):
        D.place(state, linked)
        # a refinement round measures the streaming cut (the placement's last moves run at
        # its start); its planned moves stay for the refinement when the streaming one stays
        D.run_round(state, mode="refine", tiers=None, salt=salts.refine())
    stream_cut = state.cut_entries
    entries = sum(int(c.sum()) for c in state.block_counts)
    random_cut = entries * (1 - 1 / state.plan.num_parts)
    cfg = state.plan.config
    fits = linked <= cfg.coarse_nodes and entries <= cfg.coarse_entries  # METIS alone: cheap, always tried
    if stream_cut <= cfg.multilevel_above * random_cut and not fits:
        logger.info(
            "lp: streaming cut %d entries, under %.2f of a random one (%d): no multilevel assignment",
            stream_cut,
            state.plan.config.multilevel_above,
            random_cut,
        )
        with phase("refine"):
            D.refine(state, done=1)
        return
    state.planned, state.planned_blocks = [], []  # dropped: the multilevel one may win
    # the lp rounds' pooled arrays (about 25 bytes per entry of the largest block, kept per
    # worker thread) are mostly not used by the multilevel tasks (they pool their block's
    # entries): freed until the refinement
    D.release_worker_pools()
    P.run_blocks(TaskGraph(), P.keep_task, level, "stream")
    stream = state.snapshot()
    plain = [F.Candidate("stream", "streaming assignment", stream_cut, None)]
    pure: list[F.Candidate] = []
    cuts: list[int | None] = []
    shared = SL.SharedLevels(level)
    # one multilevel assignment per cluster weight (within the budget: one, METIS alone)
    for i, fraction in enumerate((cfg.cluster_weight,) + (() if fits else cfg.extra_cluster_weights)):
        P.run_blocks(TaskGraph(), P.restore_task, level, None)
        got = _multilevel(state, level, fraction, i, shared, heaviest=len(plain) == 1)
        cuts.append(got[0].cut if got else None)
        plain += got[:1]
        pure += got[1:]
    shared.remove()
    best = min(plain, key=lambda c: c.cut)  # ties: the first (streaming, then lower cluster weight)
    logger.info("lp: initial cut entries: streaming %d, multilevel %s: keeping the %s", stream_cut, cuts, best.label)
    finalists = [best] + ([min(pure, key=lambda c: c.cut)] if pure else [])
    with phase("refine"):
        F.refined_best(state, level, finalists, stream, linked)


def _level0(state: D.State, root: S.ScratchRoot) -> C.Level:
    plan, n = state.plan, state.num_nodes
    offsets = tuple(min(b * plan.block_rows, n) for b in range(state.num_blocks + 1))
    return C.Level(
        index=0,
        offsets=offsets,
        lp_root=root,
        ml=root.join("work", "ml"),
        segs=tuple(tuple(s) for s in state.segs),
        num_strata=int(state.table.shape[2]),
        owned=plan.balance_edges,
    )


def _multilevel(
    state: D.State, level: C.Level, fraction: float, i: int, shared: SL.SharedLevels, *, heaviest: bool
) -> list[F.Candidate]:
    """The multilevel assignment of cluster weight ``fraction`` (the ``i``-th), saved as
    ``ml<i>``: coarsen (taking the levels ``shared`` with the first cluster weight while
    they are the same), partition the coarsest level, project it level by level to level
    0; with ``purify_rounds`` and at least one coarse level, then the purified one too,
    saved as ``pure<i>`` (:func:`_purify`, METIS, projected to level 0 in one step).

    The purified level does not depend on the coarsest level's partition: it is rebuilt
    in the computation of that partition and its projection, whose tasks leave workers
    idle (METIS in one task, rounds waiting for their slowest block). Issue #38: at 1M
    nodes / 10M edges, 8 parts, the 0.7-1.0 s of the coarsest level's METIS per cluster
    weight ran while every other thread waited.

    Returns these candidates (the level-by-level one first), or none when the method
    falls back to the streaming placement (nothing written then); the first cluster
    weight's when this one took all of its levels.
    """
    plan = state.plan
    with phase("coarsen"):
        levels, steps, computed = _coarsen_levels(state, level, fraction, shared, heaviest=heaviest)
    shared.record(steps)
    same = None if computed else shared.same_as_first(steps)
    if same is not None:
        logger.info("lp: cluster weight %s took every level of the first one: its assignments too", fraction)
        return same
    if levels is None:
        return []
    cap = _entries_cap(plan.config, steps[-1] if len(levels) > 1 else None)
    limit = np.concatenate([state.caps, [state.wcap if state.wcap is not None else 0]])  # [: width] per level
    pure = _purified_level(levels[-1], levels[0].num_blocks) if len(levels) > 1 and plan.config.purify_rounds else None
    with phase("uncoarsen"):  # METIS on the coarsest level and the projection; beside them, the purified level
        tasks, metis = initial_partition_task(levels[-1], plan, max_entries=cap)  # pymetis: a dependency
        rebuilt: list[str] = []
        if pure is not None:
            graph, rebuilt = _purify(levels, pure, plan)
            tasks.merge(graph.dsk)
        counts, cut = P.uncoarsen(
            levels, Ref(metis), plan, limit, f"ml{i}", tasks=tasks, keep_to=shared.deepest, also=rebuilt
        )
        out = [F.Candidate(f"ml{i}", f"multilevel assignment of cluster weight {fraction}", cut, counts)]
    if pure is not None:
        with phase("purify"):
            tasks, metis = initial_partition_task(pure, plan, max_entries=cap)
            counts, cut = P.uncoarsen([level, pure], Ref(metis), plan, limit, f"pure{i}", cid_name="pcid", tasks=tasks)
            pure.lp_root.remove(pure.ml)
        out.append(F.Candidate(f"pure{i}", f"purified assignment of cluster weight {fraction}", cut, counts))
        logger.info("lp: cut entries at the input: level by level %d, purified %d", out[0].cut, cut)
    if i == 0:
        shared.first_candidates = out
    for lv in levels[1:]:
        if lv.index > shared.deepest:
            lv.remove()
    level.remove("pcid", "top", *(f"top{r}" for r in range(plan.config.purify_rounds - 1)))
    if not shared.steps:
        level.remove("cid")
    return out


def _coarsen_levels(
    state: D.State, level: C.Level, fraction: float, shared: SL.SharedLevels, *, heaviest: bool
) -> tuple[list[C.Level] | None, list[SL.Step], int]:
    """Coarsen until the graph fits the budget (clusters within ``fraction`` of a part's
    share, relaxed when a level stalls): every level from ``level`` to the coarsest,
    taking the ``shared`` steps while they give the same levels.

    A level that shrinks by less than ``stall_shrink`` and fits the stall budget
    (``stall_nodes``, ``stall_entries``) is the coarsest; so is
    the last one when the clustering stalls at the largest clusters or ``max_levels``
    is reached, if it fits the stall budget; else None (the streaming placement only).
    Also returns the steps to every level (taken or made) and how many were made.
    """
    plan, cfg = state.plan, state.plan.config
    levels, made = [level], 0
    steps: list[SL.Step] = []
    nodes, entries = int(state.linked.sum()), int(sum(int(c.sum()) for c in state.block_counts))
    block_entries = max((sum(hi - lo for _, lo, hi in s) for s in level.segs), default=0) or None  # .regroup
    while nodes > cfg.coarse_nodes or entries > cfg.coarse_entries:
        if level.index >= cfg.max_levels:
            why = f"max_levels ({cfg.max_levels})"
            return _stalled_end(cfg, levels, nodes, entries, why, heaviest=heaviest), steps, made
        start = time.perf_counter()
        step = None if made else shared.take(level, fraction, plan.num_parts)
        if step is None:
            step, made = coarsen_step(level, plan, fraction, max_entries=block_entries), made + 1
        coarse = step.coarse
        logger.info(
            "lp: level %d: %d nodes, %d entries, %d rounds, %d moved, %.3f s%s",
            coarse.index,
            step.nodes,
            step.entries,
            step.rounds,
            step.moved,
            time.perf_counter() - start,
            "" if made else " (the first cluster weight's: no cap turned a join away)",
        )
        logger.debug("lp: level %d: entries of weight %d", coarse.index, step.between)
        stalled = step.nodes > (1 - cfg.min_shrink) * nodes  # the cluster caps hold it back
        slow = step.nodes > (1 - cfg.stall_shrink) * nodes
        if step.nodes < nodes:
            steps.append(step)
            if slow and _fits_stall(cfg, step.nodes, step.entries):  # METIS takes it from here
                logger.info(
                    "lp: level %d shrank %d -> %d nodes: within the stall budget, to METIS",
                    coarse.index,
                    nodes,
                    step.nodes,
                )
                return [*levels, coarse], steps, made
            level, nodes, entries = coarse, step.nodes, step.entries
            levels.append(level)
        else:  # not a level: the next try rewrites it
            coarse.remove()
        if stalled:  # relax the caps
            if fraction >= _MAX_FRACTION:
                why = "the largest clusters"
                return _stalled_end(cfg, levels, nodes, entries, why, heaviest=heaviest), steps, made
            fraction = min(_MAX_FRACTION, 4 * fraction)
    return levels, steps, made


def _entries_cap(cfg: LPConfig, last: SL.Step | None) -> int | None:
    """``stall_entries`` when the coarsest level (made by the step ``last``) fits neither
    the in-memory nor the stall budget (:func:`_stalled_end` kept it for its nodes):
    METIS gets its heaviest entries, as many as the budget holds, and the purified
    level's too; else None (every entry)."""
    if last is None or _fits_stall(cfg, last.nodes, last.entries):
        return None
    fits = last.nodes <= cfg.coarse_nodes and last.entries <= cfg.coarse_entries
    return None if fits else cfg.stall_entries


def _fits_stall(cfg: LPConfig, nodes: int, entries: int) -> bool:
    """Whether a level of ``nodes`` nodes and ``entries`` entries fits the stall budget
    (``LPConfig.stall_nodes``, ``stall_entries``)."""
    return nodes <= cfg.stall_nodes and entries <= cfg.stall_entries


def _stalled_end(
    cfg: LPConfig, levels: list[C.Level], nodes: int, entries: int, why: str, *, heaviest: bool
) -> list[C.Level] | None:
    """The levels of a coarsening stopped above the budget (by ``why``): kept, the last
    one for METIS, when it fits the stall budget, or, with ``heaviest`` (no earlier
    cluster weight gave a multilevel assignment), when its nodes do (METIS gets its
    heaviest ``stall_entries`` entries: :func:`.coarsest.initial_partition_task`); else None (the
    streaming placement only, a warning; an earlier cluster weight's assignments when there
    are some, logged as such: at 10M nodes / 100M edges the second weight ends here every
    run, and the warning read as if lp had fallen back to streaming).

    Issue #38 (h-10m): at 10M nodes / 100M edges the second cluster weight coarsened
    levels 2-11 (179 s of 493 s of coarsening) and stopped at the largest clusters at
    14,111 nodes and 2.26M entries, 8% above the stall budget's 2**21 entries, which
    left the streaming placement alone; nothing in its levels could tell before: the
    caps reached their largest at level 9, after 173 s of the 179. Given to METIS with
    its heaviest entries, its purified assignment cut 18.8M entries at the input
    against the first weight's 34.7M, and so became the purified finalist, but after
    the settling and refinement it cut 46.1M against the 41.2M of the first weight's
    (lp 0.2304 against 0.2060): a later cluster weight keeps the fallback.
    """
    if _fits_stall(cfg, nodes, entries):
        last = levels[-1].index
        logger.info("lp: coarsening stopped by %s at level %d: within the stall budget, to METIS", why, last)
        return levels
    if heaviest and nodes <= cfg.stall_nodes and len(levels) > 1:
        logger.info(
            "lp: coarsening stopped by %s at level %d: %d entries, above the stall budget's %d: "
            "to METIS with its heaviest entries",
            why,
            levels[-1].index,
            entries,
            cfg.stall_entries,
        )
        return levels
    if not heaviest:  # not a degradation: the earlier cluster weight's assignments stay the candidates
        logger.info(
            "lp: coarsening stopped by %s at %d nodes (level %d); no multilevel assignment of this cluster "
            "weight: an earlier one's are kept",
            why,
            nodes,
            levels[-1].index,
        )
        return None
    logger.warning(
        "lp: coarsening stopped by %s at %d nodes (level %d); streaming placement only", why, nodes, levels[-1].index
    )
    return None


def _purified_level(coarsest: C.Level, writers: int) -> C.Level:
    """Where :func:`_purify` rebuilds the coarsest level (beside it, not over it: the
    level may be shared with the next cluster weight, :mod:`.shared_levels`), from the
    entries of level 0's ``writers`` blocks."""
    where = posixpath.join(coarsest.ml, "pure")
    pure = dataclasses.replace(coarsest, ml=where, writers=writers, pieces=(), groups=())
    pure.create()
    return pure


def _purify(levels: list[C.Level], pure: C.Level, plan: LPPlan) -> tuple[TaskGraph, list[str]]:
    """The task graph (not computed) that moves every input node to the coarsest-level
    cluster it has the most edges to, ``rounds`` times, then rebuilds the coarsest
    level (node weights, entries) from the input under that map as ``pure``; and its
    last tasks.

    Clusters are built from the finest level up, where a node's neighbours are mostly
    singleton or tiny clusters: it picks among them by a coin (about one pick in ten
    is another community on the planted-partition graphs), and each coarser level adds
    such picks. At the coarsest level a community is a few large clusters, so the
    strongest link of a node to them is its own community's. Measured on SBM skewed
    2M nodes / 16M edges, 4 parts: cluster purity 0.805 at the coarsest level, 0.936
    after one round, 0.969 after two; METIS's cut projected to the input 0.308, 0.166,
    0.130 (METIS on the whole graph 0.124).
    """
    fine = levels[0]
    blocks = range(fine.num_blocks)
    tasks = TaskGraph()
    after = [tasks.add(PT.top_task, fine, b, tuple(levels)) for b in blocks]
    names = ["top", *(f"top{r}" for r in range(plan.config.purify_rounds - 1)), "pcid"]
    moved = []
    for r, (src, dst) in enumerate(itertools.pairwise(names)):
        kw = {"seed": plan.seed, "salt": salts.purify(r)}
        after = [tasks.add(PT.purify_task, fine, b, src, dst, after=after, **kw) for b in blocks]
        moved.append(tasks.add(_log_purified, *map(Ref, after)))
    pieces = [tasks.add(PT.weight_pieces_task, fine, b, pure, "pcid", after=after) for b in blocks]
    sums = [tasks.add(PT.coarse_weights_task, pure, t, after=pieces) for t in range(pure.num_blocks)]
    contracted = [tasks.add(C.contract_task, fine, b, pure, "pcid", after=after, few_pairs=True) for b in blocks]
    return tasks, moved + sums + contracted


def _log_purified(*moved: int) -> None:
    logger.debug("lp: purification moved %d nodes to another coarsest cluster", sum(moved))
