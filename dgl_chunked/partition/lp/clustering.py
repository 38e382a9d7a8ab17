"""One coarsening step of the multilevel ``lp`` method: a level's size-constrained
clustering, then its contraction into the next level.

The clustering runs ``LPConfig.cluster_rounds`` rounds, a fixed number: nothing the
driver learns from a round changes the next one. So the rounds go into the same
computation as the first clustering (every node its own cluster), the caps (computed
in a task from that computation's weight sums); the last round's weight releases
count the clusters named after it, and each block's contraction deletes its clustering
files. A step is then two computations (three with the two-hop round), where it was
``cluster_rounds + 3`` and a layer of deletion tasks.

Issue #38 (10M nodes / 100M edges, 39 blocks, 2 workers): fewer computations alone did
not shorten the time in which no task runs; the scheduler's cost of a computation grew
with its tasks and their all-to-all dependencies (see :mod:`.taskgraph` for the barrier
that cut those).

Every task reads and writes the same files, with the same seeds and salts, in the same
order as when each round was its own computation: the assignments do not change.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import salts
from dgl_chunked.partition.lp import shared_levels as SL
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.config import LPPlan
from dgl_chunked.partition.lp.regroup import block_groups, merged_level
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph

__all__ = ["coarsen_step"]

logger = logging.getLogger("dgl_chunked.partition.lp")


@dataclass(frozen=True)
class _Round:
    """The task keys of one clustering round."""

    index: int
    propose: list[str]
    hops: list[str]
    accept: list[str]
    release: list[str]

    def result_keys(self) -> list[str]:
        """The keys whose results the round's outcome is read from."""
        return [*self.propose, *self.hops, *self.accept]

    def outcome(self, results: dict[str, Any], level: C.Level) -> tuple[int, bool]:
        """The joins accepted, and whether the caps turned any away (a cluster with no
        room for a mover, a proposal refused)."""
        proposed = [results[k] for k in self.propose]
        hops = sum(results[k] for k in self.hops)
        accepted = [results[k] for k in self.accept]
        joins = int(sum(a[0] for a in accepted))
        logger.debug(
            "lp: level %d round %d: %d joins proposed, %d two-hop; %d accepted, %d two-hop",
            level.index,
            self.index,
            sum(p[0] for p in proposed),
            hops,
            joins,
            sum(a[1] for a in accepted),
        )
        offered = sum(p[0] for p in proposed) + hops
        return joins, joins < offered or any(p[1] for p in proposed)


def _caps_task(num_parts: int, fraction: float, *init: tuple[int, IdArray]) -> IdArray:
    """The cluster caps from every block's :func:`.coarsen_tasks.init_task` result."""
    return CK.cluster_caps(np.sum([r[1] for r in init], axis=0), num_parts, fraction)


def _round(
    tasks: TaskGraph, level: C.Level, plan: LPPlan, caps: Any, r: int, *, two_hop: bool, after: Sequence[Hashable]
) -> _Round:
    """Add clustering round ``r`` of ``level`` to ``tasks``, run after ``after``:
    proposals, with ``two_hop`` the two-hop groups of the nodes left alone
    (:func:`.coarsen_tasks.two_hop_task`), acceptance within ``caps`` (an array, or a
    :class:`.Ref` to one) at the clusters' blocks, the moves, the weight releases."""
    cfg, blocks = plan.config, range(level.num_blocks)
    kw: dict[str, Any] = {"seed": plan.seed, "salt": salts.coarsen(level.index, r), "caps": caps}
    propose = [
        tasks.add(C.propose_task, level, b, min_share=cfg.cluster_min_share, two_hop=two_hop, after=after, **kw)
        for b in blocks
    ]
    hops = []
    if two_hop:
        hop_kw = {"seed": plan.seed, "salt": kw["salt"] + 3}
        hops = [tasks.add(C.two_hop_task, level, t, after=propose, **hop_kw) for t in blocks]
    accept = [
        tasks.add(C.accept_task, level, t, after=propose + hops, two_hop=two_hop, fit_passes=cfg.fit_passes, **kw)
        for t in blocks
    ]
    apply = [tasks.add(C.apply_task, level, b, after=accept) for b in blocks]
    release = [tasks.add(C.release_task, level, t, after=apply) for t in blocks]
    return _Round(r, propose, hops, accept, release)


def _rounds(
    level: C.Level, plan: LPPlan, fraction: float
) -> tuple[list[tuple[int, IdArray]], IdArray, list[int], int, bool]:
    """The clustering of ``level`` in one computation: every node its own cluster, the
    caps of ``fraction``, ``cluster_rounds`` rounds, the clusters named per block.
    Returns the init results, the caps, the clusters per block, the joins accepted and
    whether the caps turned any away."""
    blocks = range(level.num_blocks)
    tasks = TaskGraph()
    init = [tasks.add(C.init_task, level, b) for b in blocks]
    caps = tasks.add(_caps_task, plan.num_parts, fraction, *map(Ref, init))
    after: list[str] = init
    rounds = []
    for r in range(plan.config.cluster_rounds):
        rounds.append(_round(tasks, level, plan, Ref(caps), r, two_hop=False, after=after))
        after = rounds[-1].release
    leaders = rounds[-1].release if rounds else [tasks.add(C.leaders_task, level, b, after=init) for b in blocks]
    keys = [*init, caps, *(k for one in rounds for k in one.result_keys()), *leaders]
    results = dict(zip(keys, tasks.compute(keys), strict=True))
    outcomes = [one.outcome(results, level) for one in rounds]
    joins = sum(j for j, _ in outcomes)
    return [results[k] for k in init], results[caps], [results[k] for k in leaders], joins, any(c for _, c in outcomes)


def _two_hop_round(level: C.Level, plan: LPPlan, caps: IdArray) -> tuple[list[int], int, bool]:
    """The two-hop round after the others (one computation): the clusters named per
    block after it, its joins, whether the caps turned any away."""
    tasks = TaskGraph()
    one = _round(tasks, level, plan, caps, plan.config.cluster_rounds, two_hop=True, after=())
    keys = [*one.result_keys(), *one.release]  # the releases count the clusters left
    results = dict(zip(keys, tasks.compute(keys), strict=True))
    joins, turned_away = one.outcome(results, level)
    return [results[k] for k in one.release], joins, turned_away


def _contract_task(level: C.Level, b: int, coarse: C.Level) -> tuple[int, int, IdArray]:
    """Block ``b``'s contraction (:func:`.coarsen_tasks.contract_task`), then its
    clustering files deleted: the last tasks that read them, the numbering and mapping,
    have all run, and no contraction reads them. A layer of deletion tasks after the
    contractions added a barrier and a task per block to every step (39 at 10M nodes,
    each waiting to be handed to a worker: issue #38)."""
    out = C.contract_task(level, b, coarse)
    S.remove_files_task(level.lp_root, level.block_files(b, C.CLUSTERING_FILES))
    return out


def coarsen_step(level: C.Level, plan: LPPlan, fraction: float, *, max_entries: int | None = None) -> SL.Step:
    """Size-constrained clustering of ``level``, then its contraction (the clustering files
    deleted after it; ``cid`` stays for the projection): the coarse level, its node and
    entry counts, its entries' weight (between clusters), the clustering rounds run and
    the joins accepted in them, and whether the caps turned a join away. With
    ``max_entries`` (the largest level-0 block's), the coarse level's blocks are merged
    up to it (:mod:`.regroup`)."""
    cfg, blocks = plan.config, range(level.num_blocks)
    level.create()
    init, caps, leaders, moved, capped = _rounds(level, plan, fraction)
    rounds = cfg.cluster_rounds
    if sum(leaders) > cfg.two_hop_above * sum(r[0] for r in init):  # shrinking slowly: the caps are full
        leaders, joins, turned_away = _two_hop_round(level, plan, caps)
        moved, rounds, capped = moved + joins, rounds + 1, capped or turned_away
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(leaders)]))
    coarse = C.Level(
        index=level.index + 1,
        offsets=offsets,
        lp_root=level.lp_root,
        ml=level.ml,
        num_strata=level.num_strata,
        owned=level.owned,
    )
    coarse.create()
    tasks = TaskGraph()
    number = [tasks.add(C.number_task, level, b, coarse) for b in blocks]
    mapped = [tasks.add(C.map_task, level, b, after=number) for b in blocks]
    out = tasks.compute([tasks.add(_contract_task, level, b, coarse, after=mapped) for b in blocks])
    coarse = replace(coarse, weight=int(sum(o[1] for o in out)))  # below 2**31, read_entries checks no block's sum
    if max_entries is not None:
        per_block = np.diff(np.sum([o[2] for o in out], axis=0))  # entries of each coarse block
        groups = block_groups(per_block.tolist(), leaders, max_entries=max_entries, max_nodes=plan.block_rows)
        coarse = merged_level(coarse, groups)
    return SL.Step(
        coarse=coarse,
        nodes=offsets[-1],
        entries=int(sum(o[0] for o in out)),
        rounds=rounds,
        moved=moved,
        totals=np.sum([r[1] for r in init], axis=0),
        caps=caps,
        capped=capped,
    )
