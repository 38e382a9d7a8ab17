"""The driver of the ``lp`` method: the rounds, run from inside one Dask task.

Every round is one computation (a :class:`.taskgraph.TaskGraph`): the previous round's
planned moves, then per block its proposal task (which counts its histogram), waiting for
all the moves. The driver keeps only small tables: sizes per (stratum, part), nodes per
(block, tier, stratum), placed nodes per (block, stratum) and entries per (block, tier).
See :mod:`dgl_chunked.partition.lp`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from dgl_chunked._dask import on_worker
from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import salts, schedule, staging
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import tasks as T
from dgl_chunked.partition.lp.config import LPPlan
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph

__all__ = [
    "RETRY_ROUNDS",
    "Refining",
    "Sizes",
    "State",
    "fill",
    "place",
    "placed_nodes",
    "prepare",
    "refine",
    "release_arrow_pools",
    "release_worker_pools",
    "run_planned",
    "run_round",
]

logger = logging.getLogger("dgl_chunked.partition.lp")

RETRY_ROUNDS = 3


class Sizes(NamedTuple):
    """The balance tables of a :class:`State`, as :meth:`State.snapshot` copies them."""

    sizes: IdArray  # [S, P] nodes per (stratum, part)
    wsizes: IdArray  # [P] owned edges per part
    placed: IdArray  # [blocks, S] placed nodes per block and stratum


@dataclass(kw_only=True)
class State:
    """What the driver knows between rounds (small: per-stratum, per-part and per-block tables)."""

    plan: LPPlan
    root: S.ScratchRoot
    num_nodes: int
    block_counts: IdArray  # [blocks]: staged entries per block (in the block's own edge files)
    tier_counts: IdArray  # [blocks, 63]: staged entries per block and tier of u
    segs: list[S.Segments]  # per block: (block, start, stop) of all its entries
    table: IdArray  # [blocks, 64, S]: nodes per block, tier + 1 and stratum
    tier_weight: IdArray  # [blocks, 64]: owned edges per block and tier + 1 (balance_edges)
    caps: IdArray  # [S] node cap per (stratum, part)
    wcap: int | None  # owned-edge cap per part (balance_edges)
    alpha: float
    sizes: IdArray  # [S, P] nodes per (stratum, part)
    wsizes: IdArray  # [P] owned edges per part
    placed: IdArray  # [blocks, S] placed nodes per block and stratum
    planned: list[schedule.Groups] = field(default_factory=list)  # quotas of the planned moves (an upper bound)
    planned_blocks: list[int] = field(default_factory=list)  # ... of these blocks
    planned_salt: int = 0  # ... ranking nodes with this salt
    cut_entries: int = 0  # cut seen by the last refinement round, counted from both ends

    @property
    def num_blocks(self) -> int:
        return len(self.segs)

    @property
    def linked(self) -> IdArray:
        """``[blocks, S]`` nodes with neighbours."""
        return np.asarray(self.table[:, 1:, :].sum(axis=1), np.int64)

    def block_kw(self, b: int) -> dict[str, Any]:
        rows = min(self.plan.block_rows, self.num_nodes - b * self.plan.block_rows)
        return {
            "root": self.root,
            "b": b,
            "block_rows": self.plan.block_rows,
            "rows": rows,
            "num_nodes": self.num_nodes,
        }

    def absorb(self, moved: list[schedule.Groups], blocks: list[int]) -> int:
        """Add the moves the blocks report to the sizes; return how many nodes moved."""
        return schedule.add_moves(
            self.sizes, self.wsizes, moved, num_parts=self.plan.num_parts, placed=self.placed, blocks=blocks
        )

    def add_planned(self, graph: TaskGraph) -> tuple[list[str], list[int]]:
        """Add the planned moves to ``graph`` and forget them; return their keys and blocks."""
        keys = [
            graph.add(T.apply_task, q, **self.block_kw(b), seed=self.plan.seed, salt=self.planned_salt)
            for b, q in zip(self.planned_blocks, self.planned, strict=True)
        ]
        blocks, self.planned, self.planned_blocks = self.planned_blocks, [], []
        return keys, blocks

    def compute_after_planned(self, tasks: TaskGraph, add: Callable[[list[str]], list[str]]) -> list[Any]:
        """One computation of ``tasks``: the planned moves (forgotten, their moves added to
        the sizes), then the tasks ``add`` puts in after them (it gets the moves' keys);
        returns the results of those."""
        moves, blocks = self.add_planned(tasks)
        keys = add(moves)
        results = tasks.compute(moves + keys)
        self.absorb(results[: len(moves)], blocks)
        return results[len(moves) :]

    def snapshot(self) -> Sizes:
        """A copy of the balance tables, for :meth:`restore`."""
        return Sizes(self.sizes.copy(), self.wsizes.copy(), self.placed.copy())

    def restore(self, snap: Sizes) -> None:
        """Put the balance tables of ``snap`` back (copies: ``snap`` can be restored again)."""
        self.sizes, self.wsizes, self.placed = (a.copy() for a in snap)

    def projected(self) -> tuple[IdArray, IdArray, IdArray]:
        """Sizes, owned edges and placed nodes once the planned moves are done (exact
        without ``balance_edges``, else an upper bound of the nodes that move)."""
        sizes, wsizes, placed = self.sizes.copy(), self.wsizes.copy(), self.placed.copy()
        schedule.add_moves(
            sizes, wsizes, self.planned, num_parts=self.plan.num_parts, placed=placed, blocks=self.planned_blocks
        )
        return sizes, wsizes, placed


def _strata(graph: ChunkedGraph, plan: LPPlan) -> tuple[da.Array, int]:
    """Lazy int32 stratum of every ``orig_nid``, chunked by ``block_rows``; number of strata."""
    import dask.array as da

    pieces, base = [], 0
    for t, ntype in enumerate(graph.metadata.node_types):
        feats = [f for ti, f in plan.masks if ti == t]
        label = da.zeros(graph.num_nodes(ntype), dtype=np.int32, chunks=(graph.node_chunks(ntype),))
        for j in range(len(feats) - 1, -1, -1):
            mask = graph.node_feature(ntype, feats[j]).reshape(-1).astype(bool).rechunk(label.chunks)
            label = da.where(mask, np.int32(j + 1), label)
        pieces.append((label + np.int32(base)).astype(np.int32))
        base += 1 + len(feats)
    return da.concatenate(pieces).rechunk(plan.block_rows), base


def _stage(
    graph: ChunkedGraph, plan: LPPlan, root: S.ScratchRoot, num_blocks: int, tasks: TaskGraph
) -> tuple[list[str], int]:
    """Staging tasks, one per read task of edge files (each returns its staged files'
    entries and self-loops per block), and the number of staged files they write."""
    md = graph.metadata
    v_dtype = "int32" if md.node_type_offsets[-1] <= np.iinfo(np.int32).max else "int64"
    keys: list[str] = []
    files = 0
    for spec in md.edge_types:
        si, di = md.ntype_id(spec.src_type), md.ntype_id(spec.dst_type)
        kw: dict[str, Any] = {
            "root": root,
            "offsets": (int(md.node_type_offsets[si]), int(md.node_type_offsets[di])),
            "bounds": (graph.num_nodes(spec.src_type), graph.num_nodes(spec.dst_type)),
            "block_rows": plan.block_rows,
            "num_blocks": num_blocks,
            "v_dtype": v_dtype,
        }
        for ref in graph.edge_groups(spec.name):
            keys.append(tasks.add(staging.stage_task, ref, c=files, **kw))
            files += staging.stage_pieces(ref.rows)
    return keys, files


def prepare(graph: ChunkedGraph, plan: LPPlan, root: S.ScratchRoot) -> State:
    """Stage the edges, compute degrees, tiers and strata, gather every block's entries
    into its own files ordered by tier: one computation (the prepare and restage tasks
    find their entries from the staging tasks' counts themselves, so the driver need
    not step in between); the staging files are deleted after it."""
    n = int(graph.metadata.node_type_offsets[-1])
    num_blocks = plan.num_blocks(n)
    S.create_dirs(root)
    tasks = TaskGraph()
    stage, staged_files = _stage(graph, plan, root, num_blocks, tasks)
    strata, num_strata = _strata(graph, plan)
    tasks.merge(strata.__dask_graph__())
    prepared = [
        tasks.add(
            T.prepare_task,
            Ref(blk),
            *map(Ref, stage),
            root=root,
            b=b,
            block_rows=plan.block_rows,
            num_strata=num_strata,
            owned=plan.balance_edges,
        )
        for b, blk in enumerate(strata.__dask_keys__())
    ]
    restage = [
        tasks.add(T.restage_task, *map(Ref, stage), root=root, b=b, after=[prepared[b]]) for b in range(num_blocks)
    ]
    results = tasks.compute(stage + prepared + restage)
    S.remove_staged(root, staged_files)  # every block has its own copy of its entries now
    release_arrow_pools()
    out = results[len(stage) : len(stage) + len(prepared)]
    tier_counts = np.stack(results[len(stage) + len(prepared) :]).reshape(num_blocks, -1)
    block_counts = tier_counts.sum(axis=1)
    table, tier_weight = np.stack([o[0] for o in out]), np.stack([o[1] for o in out])
    entries, gamma = int(block_counts.sum()), plan.config.gamma
    return State(
        plan=plan,
        root=root,
        num_nodes=n,
        block_counts=block_counts,
        tier_counts=tier_counts,
        segs=[[(b, 0, int(k))] if k else [] for b, k in enumerate(block_counts.tolist())],
        table=table,
        tier_weight=tier_weight,
        caps=schedule.caps_for(table.sum(axis=(0, 1)), plan.num_parts, plan.config.eps),
        wcap=int(schedule.caps_for(int(tier_weight.sum()), plan.num_parts, plan.config.eps))
        if plan.balance_edges
        else None,
        alpha=(entries / 2) * plan.num_parts ** (gamma - 1) / max(n, 1) ** gamma,
        sizes=np.zeros((num_strata, plan.num_parts), np.int64),
        wsizes=np.zeros(plan.num_parts, np.int64),
        placed=np.zeros((num_blocks, num_strata), np.int64),
    )


def _propose(
    state: State, tasks: TaskGraph, b: int, segs: S.Segments, span: T.Span, *, after: list[str], **kw: Any
) -> str:
    """Proposal task of block ``b``: its histogram counted over groups of about
    ``group_entries`` entries, one at a time (:func:`.tasks.propose_task`)."""
    groups = schedule.group_segments(segs, state.plan.config.group_entries)
    kw = {**state.block_kw(b), "span": span, "num_parts": state.plan.num_parts, **kw}
    return tasks.add(T.propose_task, groups=groups, after=after, **kw)


def run_round(
    state: State,
    *,
    mode: str,
    tiers: tuple[int, int] | None,
    salt: int,
    over: npt.NDArray[np.bool_] | None = None,
    movers: tuple[float, int] | None = None,
) -> int:
    """Propose and plan one round; its moves run in the next computation (before that
    round's histograms, so one computation per round). ``tiers``: ``(high, low)`` for
    the nodes of those degree tiers, None for every node. ``mode``: ``place``,
    ``refine`` (with ``movers`` ``(fraction, salt)``, only that seeded fraction of the
    nodes proposes) or ``balance`` (the nodes of the (stratum, part) pairs ``over``
    marks, planned by :func:`.schedule.plan_excess`). Returns the number of nodes
    planned to move."""
    plan = state.plan
    if tiers is not None:
        spans: list[T.Span] = list(schedule.round_spans(state.table.sum(axis=2), *tiers))
        segs = schedule.round_segments(state.tier_counts, *tiers)
        blocks = [b for b, s in enumerate(spans) if s is not None and s[1] > s[0]]
    else:
        spans, segs, blocks = [None] * state.num_blocks, state.segs, list(range(state.num_blocks))
    sizes, wsizes, _ = state.projected()
    kw: dict[str, Any] = {
        "mode": mode,
        "round_key": uuid.uuid4().hex,  # the assignment is read once per worker thread in this round
        "open_parts": schedule.open_parts(sizes, wsizes, caps=state.caps, wcap=state.wcap),
        "penalties": schedule.fennel_costs(
            sizes, wsizes, caps=state.caps, wcap=state.wcap, alpha=state.alpha, gamma=plan.config.gamma
        ),
    }
    if mode == "refine" and movers is not None and movers[0] < 1:
        kw["movers"] = (plan.seed, movers[1], movers[0])
    if mode == "balance":
        kw["over"] = over
    tasks = TaskGraph()
    results = state.compute_after_planned(
        tasks, lambda moves: [_propose(state, tasks, b, segs[b], spans[b], after=moves, **kw) for b in blocks]
    )
    summaries = [r[:3] for r in results]
    state.cut_entries = sum(r[3] for r in results)
    if not sum(s[0].size for s in summaries):
        return 0
    state.planned = schedule.block_quotas(
        summaries,
        sizes=state.sizes,
        caps=state.caps,
        wsizes=state.wsizes,
        wcap=state.wcap,
        num_parts=plan.num_parts,
        excess=mode == "balance",
    )
    state.planned_blocks, state.planned_salt = blocks, salt
    return int(sum(int(q[1].sum()) for q in state.planned))


def fill(state: State, *, isolated: bool) -> int:
    """Place the unplaced isolated nodes (or the others): each stratum fills its emptiest
    parts. Runs with the planned moves when their outcome is known (no ``balance_edges``)."""
    plan = state.plan
    if state.wcap is not None:  # moves may fall short of the quotas: run them first
        run_planned(state)
    sizes, _, placed = state.projected()
    unplaced = state.table[:, 0, :] if isolated else state.linked - placed
    fills = schedule.fill_plan(unplaced, sizes, state.caps) if unplaced.sum() else []
    blocks = [b for b in range(state.num_blocks) if unplaced[b].sum()]
    tasks = TaskGraph()
    kw = {"seed": plan.seed, "salt": salts.fill(isolated=isolated), "num_parts": plan.num_parts, "isolated": isolated}
    results = state.compute_after_planned(
        tasks, lambda moves: [tasks.add(T.fill_task, fills[b], **state.block_kw(b), **kw, after=moves) for b in blocks]
    )
    return state.absorb(results, blocks)


def run_planned(state: State) -> int:
    """Run the planned moves now, in a computation of their own; return how many nodes moved."""
    if not state.planned:
        return 0
    tasks = TaskGraph()
    moves, blocks = state.add_planned(tasks)
    return state.absorb(tasks.compute(moves), blocks)


def placed_nodes(state: State) -> int:
    """Nodes placed once the planned moves run. With ``balance_edges`` a block's moves
    may fall short of their quotas (it stops at a group's owned-edge quota), so
    :meth:`State.projected` only bounds the count from above: the moves run first and
    the count is exact (trusting the bound left nodes unplaced in the output)."""
    if state.wcap is not None:
        run_planned(state)
    return int(state.projected()[2].sum())


def place(state: State, linked: int) -> None:
    """Streaming placement by degree tier, then retries for the refused nodes."""
    plan = state.plan
    refused: list[tuple[int, int]] = []  # rounds that refused nodes for lack of room
    min_round = int(np.ceil(plan.config.round_nodes * linked / plan.num_parts))
    for tiers in schedule.tier_rounds(state.table.sum(axis=(0, 2)), min_round):
        moved = run_round(state, mode="place", tiers=tiers, salt=salts.placement(tiers[1]))
        logger.debug("lp: round for degree in [2**%d, 2**%d) places %d nodes", tiers[1], tiers[0] + 1, moved)
        if moved < state.table[:, tiers[1] + 1 : tiers[0] + 2, :].sum():
            refused.append(tiers)
    # refused nodes retry with fresh neighbour counts, over the tiers that refused
    # some (with balance_edges moves may fall short of the plan: every tier)
    span = (refused[0][0], refused[-1][1]) if refused and state.wcap is None else None
    for i in range(RETRY_ROUNDS):
        if placed_nodes(state) == linked:
            break
        moved = run_round(state, mode="place", tiers=span, salt=salts.retry(i))
        logger.debug("lp: retry round %d places %d nodes", i, moved)
        if moved == 0:
            break
    if placed_nodes(state) < linked:
        logger.debug("lp: fill placed %d nodes", fill(state, isolated=False))


@dataclass
class Refining:
    """Where a refinement stands between calls of :func:`refine`."""

    passes: int = 0  # passes made (or counted as made)
    movers: float = 1.0  # the fraction of nodes that may move in the next pass
    last: tuple[int, int] | None = None  # the last pass's cut and planned saving (edges)
    converged: bool = False  # a pass planned to save under refine_min_gain: its moves were the last


def refine(state: State, *, done: int = 0, until: int | None = None, then: Refining | None = None) -> Refining:
    """Label-propagation passes; the last is the first whose planned moves would save
    less than ``refine_min_gain`` of the current cut (its moves still run), or pass
    ``refine_passes`` (``until``: stop before that pass, to go on later with the
    returned :class:`Refining` as ``then``). Every node may move until a pass saves
    less than ``refine_conflicts`` of its planned saving (its moves undid each other:
    neighbours moving towards each other at once); from the pass after the one
    measuring that on, only a seeded ``refine_movers`` of the nodes may (a new coin per
    pass). ``done``: passes already made, the last of them just before (its cut
    measured, its moves planned), which count towards ``refine_passes``."""
    plan = state.plan
    at = then or Refining()
    stop = plan.config.refine_passes if until is None else min(until, plan.config.refine_passes)
    while at.passes < stop and not at.converged:
        i = at.passes
        moved = (
            run_round(state, mode="refine", tiers=None, salt=salts.refine(i), movers=(at.movers, salts.movers(i)))
            if i >= done
            else -1
        )
        cut, gain = state.cut_entries // 2, schedule.planned_gain(state.planned, num_parts=plan.num_parts)
        logger.debug(
            "lp: refinement pass %d moves %d nodes (of %.2f), saving >= %d of %d cut edges",
            i,
            moved,
            at.movers,
            gain,
            cut,
        )
        if at.last is not None and at.last[0] - cut < plan.config.refine_conflicts * at.last[1]:
            at.movers = plan.config.refine_movers  # moves undid each other: fewer movers from the next pass on
        at.passes, at.last, at.converged = i + 1, (cut, gain), gain <= plan.config.refine_min_gain * cut
    return at


def release_arrow_pools() -> list[bool]:
    """Give pyarrow's freed read buffers back on every worker, from its main thread
    (:func:`.staging.release_arrow_pool`: there only); returns, per worker, whether it
    ran there (nothing outside a ``distributed`` worker: local threads have no thread
    of their own to run it on).

    Issue #38: after the staging of 10M nodes / 100M edges in 8 Parquet files of 12.5M
    edges, each worker kept 225 MB of freed read buffers for the rest of the run, 3 MB
    once released here (1M nodes / 10M edges in files of 1.25M edges: 38 MB, 7 MB)."""
    if not on_worker():
        return []
    from distributed import worker_client

    with worker_client() as client:
        return list(client.run(staging.release_arrow_pool).values())


def release_worker_pools(*, trim: bool = False) -> None:
    """Free the tasks' pooled arrays in every worker process (or in this one); with
    ``trim`` also their free heap (:func:`.store.release_pools`; at lp's end)."""
    S.release_pools(trim=trim)
    if not on_worker():
        return
    from distributed import worker_client

    with worker_client() as client:
        client.run(S.release_pools, trim=trim)
