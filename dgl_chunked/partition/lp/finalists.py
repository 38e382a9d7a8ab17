"""The choice between the ``lp`` method's finalists: the initial assignments kept for
the refinement (the best streaming or level-by-level one, the best purified one), each
settled under the caps (balance rounds, least loss first, then unplacing what is still
over) and refined ``LPConfig.refine_compare`` passes; the one cutting fewest entries
then is refined on and stays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import projection as P
from dgl_chunked.partition.lp import salts
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.taskgraph import TaskGraph

__all__ = ["Candidate", "rebalance", "refined_best", "settle", "take"]

logger = logging.getLogger("dgl_chunked.partition.lp")


@dataclass(frozen=True)
class Candidate:
    """An initial assignment at the input, saved under ``name`` (:func:`.projection.keep_task`)."""

    name: str
    label: str  # for the log
    cut: int  # entries cut at the input before settling and refining (unplaced nodes: cut)
    counts: list[tuple[IdArray, IdArray]] | None  # per block, as write_parts returns; None: streaming


def take(
    state: D.State,
    level: C.Level,
    cand: Candidate,
    stream: D.Sizes,
    linked: int,
) -> None:
    """Put ``cand`` back into the ``lp`` state and files, settled under the caps."""
    P.run_blocks(TaskGraph(), P.restore_task, level, cand.name)
    if cand.counts is not None:
        settle(state, cand.counts, linked)
    else:
        state.restore(stream)


def refined_best(
    state: D.State,
    level: C.Level,
    finalists: list[Candidate],
    stream: D.Sizes,
    linked: int,
) -> None:
    """Settle every finalist and refine it ``LPConfig.refine_compare`` passes; keep the
    one cutting fewest entries then (ties: the first) and refine it on to the end
    (:func:`.streaming.refine`). One finalist is only settled and refined.

    The cut before the refinement misleads here: on SBM uniform 1M nodes at 4 parts
    the purified assignment cut fewer entries at the input than the level-by-level one
    but 0.1112 of the edges after the refinement, against 0.0750.
    """
    if len(finalists) == 1:
        take(state, level, finalists[0], stream, linked)
        D.refine(state)
        return
    compare = state.plan.config.refine_compare
    cuts, kept, where = [], [], []
    for k, cand in enumerate(finalists):
        take(state, level, cand, stream, linked)
        where.append(D.refine(state, until=compare))
        cuts.append(_cut_after_moves(state, level, f"final{k}"))
        kept.append(state.snapshot())
    k = int(np.argmin(cuts))
    logger.info(
        "lp: cut entries after %d refinement passes: %s: keeping the %s",
        compare,
        ", ".join(f"{c.label} {cut}" for c, cut in zip(finalists, cuts, strict=True)),
        finalists[k].label,
    )
    if k != len(finalists) - 1:
        P.run_blocks(TaskGraph(), P.restore_task, level, f"final{k}")
        state.restore(kept[k])
    D.refine(state, then=where[k])


def _cut_after_moves(state: D.State, level: C.Level, save: str) -> int:
    """Run the planned moves, then count the cut entries (and keep the assignment as
    ``save``, :func:`.projection.cut_task`): one computation."""
    tasks = TaskGraph()
    cuts = state.compute_after_planned(
        tasks, lambda moves: [tasks.add(P.cut_task, level, b, save, after=moves) for b in range(level.num_blocks)]
    )
    return int(sum(cuts))


def _excess_quotas(excess: IdArray, per_block: IdArray) -> IdArray:
    """Share each (stratum, part)'s excess among the blocks in proportion to the nodes
    they hold there (largest remainder, ties to the lower block): ``[B, S, P]``."""
    total = per_block.sum(axis=0)
    num = excess[None, :, :] * per_block
    base = num // np.maximum(total, 1)[None]
    rem = num % np.maximum(total, 1)[None]
    quota = base.copy()
    left = excess - base.sum(axis=0)
    for s, p in zip(*np.nonzero(left), strict=True):
        order = np.lexsort((np.arange(per_block.shape[0]), -rem[:, s, p]))
        quota[order[: int(left[s, p])], s, p] += 1
    return np.asarray(np.minimum(quota, per_block), np.int64)


def settle(state: D.State, counts: list[tuple[IdArray, IdArray]], linked: int) -> None:
    """Take the projected assignment into the ``lp`` state and bring every (stratum,
    part) within its cap: first by up to ``LPConfig.balance_rounds`` balance rounds
    (:func:`rebalance`: the nodes that lose least leave, exactly the excess); what is
    still over then is unplaced (seeded hash order) and placed again by the ``lp``
    rounds (and fill)."""
    state.sizes = np.stack([c[0] for c in counts]).sum(axis=0)
    state.wsizes = np.sum([c[1] for c in counts], axis=0).astype(np.int64)
    state.placed = np.stack([c[0] for c in counts]).sum(axis=2)
    rebalance(state)
    D.run_planned(state)
    excess = np.clip(state.sizes - state.caps[:, None], 0, None)
    if excess.any():
        _unplace(state, excess)
    for i in range(D.RETRY_ROUNDS):
        if D.placed_nodes(state) == linked:
            break
        if D.run_round(state, mode="place", tiers=None, salt=salts.retry(i)) == 0:
            break
    if D.placed_nodes(state) < linked:
        logger.debug("lp: fill placed %d nodes", D.fill(state, isolated=False))


def rebalance(state: D.State) -> int:
    """Balance rounds (at most ``LPConfig.balance_rounds``): the nodes of every (stratum,
    part) over its cap propose the part with room holding most of their neighbours, and
    the move step lets leave, least loss first, as many as the excess
    (:func:`.schedule.plan_excess`; KaMinPar's greedy balancer, by rounds). Stops once
    the planned moves bring every pair within its cap, or a round moves nothing.
    Returns the nodes planned to move (the last round's moves stay planned)."""
    total = 0
    for i in range(state.plan.config.balance_rounds):
        if state.wcap is not None:  # moves may fall short of their quotas: run them first
            D.run_planned(state)
        over = state.projected()[0] > state.caps[:, None]
        if not over.any():
            break
        moved = D.run_round(state, mode="balance", tiers=None, salt=salts.balance(i), over=over)
        logger.debug("lp: balance round %d moves %d of %d nodes over the caps", i, moved, int(over.sum()))
        total += moved
        if moved == 0:
            break
    return total


def _unplace(state: D.State, excess: IdArray) -> None:
    """Unplace each (stratum, part)'s ``excess`` (seeded hash order), shared among the
    blocks by the nodes they hold there."""
    plan = state.plan
    tasks = TaskGraph()
    per_block = np.stack(
        tasks.compute(
            [
                tasks.add(P.block_sizes_task, state.root, b, excess.shape[0], plan.num_parts)
                for b in range(state.num_blocks)
            ]
        )
    )
    quotas = _excess_quotas(excess, per_block)
    blocks = [b for b in range(state.num_blocks) if quotas[b].any()]
    tasks = TaskGraph()
    kw: dict[str, Any] = {"seed": plan.seed, "salt": salts.settle()}
    gone = tasks.compute(
        [tasks.add(P.unplace_task, state.root, b, b * plan.block_rows, quotas[b], **kw) for b in blocks]
    )
    for b, (gone_n, gone_w) in zip(blocks, gone, strict=True):
        state.placed[b] -= gone_n
        state.wsizes -= gone_w
    state.sizes = state.sizes - quotas.sum(axis=0)
    logger.debug("lp: %d nodes over the caps unplaced", int(quotas.sum()))
