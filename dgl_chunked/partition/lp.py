"""The ``lp`` method: streaming placement plus label propagation, out of core on Dask.

Every step is a map over edge files or node blocks plus a small reduce in the driver:

1. **Stage** (one task per edge file): read the edges, make them homogeneous
   (``orig_nid``), drop self-loops *for the partitioner only* and write both
   directions of every edge (block-local ``u``, neighbour ``v``), ordered by ``u``'s
   node block, plus the self-loops, to scratch ``.npy`` files (layout:
   :mod:`._lp_tasks`). The graph is thus symmetrised; multi-edges are kept as weight
   (a doubled edge cut twice counts twice, as in the quality report) instead of being
   deduplicated. The input graph is never changed.
2. **Prepare** (one task per node block): degree, owned edges (in-degree plus
   self-loops: the ``balance_edges`` weight), ``level = floor(log2 degree)`` and the
   balance *stratum* (node type x first true mask named in ``balance_ntypes``), in
   Zarr. Then each edge file's entries are reordered by (block, falling level of ``u``).
3. **Streaming placement** (Fennel, one round per degree level, highest first): a
   round maps over the staged entries of that level's nodes only (tasks of about
   ``group_entries`` entries), looks up the neighbours' partitions in the Zarr
   assignment (read whole when under 64 MiB, else through
   :func:`~dgl_chunked.io.zarr_lookup.lookup`, one Zarr chunk at a time) and counts
   each node's placed neighbours per part; a per-block task proposes the open part
   maximising ``neighbours[q] - c(nodes[q]) - weight * c'(owned_edges[q])`` (Fennel's
   marginal cost, ``c(x) = alpha gamma x**(gamma-1)``; the edge term only with
   ``balance_edges``). High-degree nodes go first, so hubs find each other as in a
   sequential degree-ordered stream, and every entry is read once over all rounds.
   Up to three retry rounds (full passes, only when some node was refused) re-propose
   the nodes refused for lack of room; a **fill** puts any still left into the
   emptiest parts of their stratum.
4. **Refinement** (``refine_passes`` label-propagation passes, stopping early when
   nothing moves): every placed node's neighbour histogram; a node proposes the part
   with most neighbours when it beats its own (among parts with room, else a full
   one: reachable only by a swap).
5. **Isolated nodes** (no edge but self-loops) cut nothing, so they are placed last,
   by the fill: until then their share of every cap is room for the refinement.

Every proposal round ends with the **move step**: the blocks summarise their
proposals per group ``(stratum, from, to, priority)``; the driver
(:func:`._lp_plan.plan_moves`) pairs opposite moves into swaps, then serves groups by
priority within the room of every (stratum, part) and, with ``balance_edges``, of
every part's owned edges; quotas are shared among blocks, and each block moves its
candidates in seeded hash order within its quota. So these limits are hard: no part
gets more than ``max(ceil(n / P), floor((1 + eps) n / P))`` of a stratum's ``n``
nodes (so of every node type, and of every mask when the masks are disjoint, as
train/val/test masks are). The owned-edge limit holds for every move, but the final
fill ignores it, so ``balance_edges`` is best effort (the report shows the result).

**Memory** per task: a staging task holds one edge file, about 60 bytes per edge.
Every other task holds one node block's histogram (``block_rows x P`` int32; a sum
task up to five) and node arrays (about 30 bytes per row), plus one group of staged
entries (``group_entries x 12`` bytes) and either the whole assignment (under 64 MiB)
or one Zarr chunk of it. ``block_rows`` defaults to ``2**22 // P`` (a 16 MiB
histogram), so below about 100 MiB per task once the graph has more than
``block_rows`` nodes, whatever its size. The driver task holds per-group tables
(at most ``S x (P + 1) x P x 128`` rows, ``S`` strata) and the list of edge-file
segments per block and level. Scratch disk: 24 bytes per edge and 24 per node.

**Determinism**: the output is a function of the graph, ``num_parts``, the seed and
:class:`LPConfig`. Histograms are exact integer sums, blocks are fixed ID ranges and
ties are broken by a seeded hash of the node ID, so the output does not depend on
the file chunking (edges or nodes), the number of workers or the scheduler.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import AssignmentError
from dgl_chunked.partition import _lp_plan as plan_
from dgl_chunked.partition import _lp_tasks as T
from dgl_chunked.partition.random import _check_seed

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked import ChunkedGraph
    from dgl_chunked.partition.assign import PartitionOptions

__all__ = ["LPConfig", "LPMethod", "run_lp"]

logger = logging.getLogger(__name__)

_RETRY_ROUNDS = 3
_RESULTS: dict[str, str] = {}  # token -> result root in this process (a recompute reuses it)


@dataclass(frozen=True, kw_only=True)
class LPConfig:
    """Tuning of the ``lp`` method.

    Change it with ``register_method("lp", LPMethod(LPConfig(...)), overwrite=True)``.

    Attributes
    ----------
    eps
        Balance tolerance: at most ``(1 + eps)`` times the even share per stratum.
    refine_passes
        Label-propagation passes after the streaming placement.
    gamma
        Fennel's exponent; the penalty weight is ``alpha = m P**(gamma-1) / n**gamma``.
    block_rows
        Nodes per block (None: ``2**22 // num_parts``, at least 4096). The output
        depends on it (it decides how quotas are shared), not on the input chunking.
    group_entries
        Staged edge entries per histogram task.
    scratch_dir
        Parent directory of the scratch stores (None: the system temp dir). On a
        multi-host cluster it must be a path every worker can read and write.
    """

    eps: float = 0.05
    refine_passes: int = 3
    gamma: float = 1.5
    block_rows: int | None = None
    group_entries: int = 1 << 21
    scratch_dir: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if not 0 <= self.eps < 1:
            problems.append(f"eps: expected 0 <= eps < 1, found {self.eps!r}")
        if self.refine_passes < 0 or self.group_entries < 1:
            problems.append(f"refine_passes, group_entries: expected >= 0 and >= 1, found "
                            f"{self.refine_passes!r}, {self.group_entries!r}")
        if self.block_rows is not None and not 1 <= self.block_rows < 1 << 31:
            problems.append(f"block_rows: expected 1 <= block_rows < 2**31, found {self.block_rows!r}")
        if not self.gamma > 1:
            problems.append(f"gamma: expected > 1, found {self.gamma!r}")
        if problems:
            raise AssignmentError("LPConfig: " + "; ".join(problems))

    def rows_per_block(self, num_parts: int) -> int:
        """The node block size used for ``num_parts`` partitions."""
        return int(self.block_rows) if self.block_rows is not None else max(4096, (1 << 22) // num_parts)


@dataclass(frozen=True, kw_only=True)
class _Plan:
    num_parts: int
    seed: int
    balance_edges: bool
    config: LPConfig
    block_rows: int
    masks: tuple[tuple[int, str], ...]  # (node type ID, bool feature) to balance, in priority order
    token: str = ""


class LPMethod:
    """The ``lp`` method (DGL ``algo_name`` "random": DGL knows only random and metis).

    Parameters
    ----------
    config
        Tuning; None uses the :class:`LPConfig` defaults.

    Examples
    --------
    >>> parts = assign_partitions(graph, 8, method="lp", balance_ntypes=["train_mask"])  # doctest: +SKIP
    """

    name = "lp"
    dgl_algo_name = "random"

    def __init__(self, config: LPConfig | None = None) -> None:
        self.config = config or LPConfig()

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        """Lazy int32 arrays chunked like ``graph.node_chunks(ntype)``; never computes.

        One driver task (:func:`run_lp`) runs the algorithm when the arrays are
        computed: it submits its own Dask computations (through ``worker_client`` on a
        distributed worker, else on the current scheduler) and leaves the result in a
        scratch Zarr array that the output chunks read. ``balance_ntypes`` may name node
        types (always balanced) and boolean node features (one stratum per first true one).
        """
        import dask
        from dask.base import tokenize

        from dgl_chunked.partition.metis import _mask_features

        md = graph.metadata
        plan = _Plan(num_parts=num_parts, seed=_check_seed(options.seed), balance_edges=options.balance_edges,
                     config=self.config, block_rows=self.config.rows_per_block(num_parts),
                     masks=tuple(_mask_features(graph, options.balance_ntypes)))
        token = tokenize(plan, md.fingerprint(), _input_stamp(graph, plan))
        plan = replace(plan, token=token)
        driver = dask.delayed(run_lp, pure=True)(graph, plan, dask_key_name=f"dglc-assign-lp-driver-{token}")
        offsets = md.node_type_offsets
        return {t: _type_view(driver, int(offsets[i]), tuple(graph.node_chunks(t)), f"dglc-assign-lp-{t}-{token}")
                for i, t in enumerate(md.node_types)}


def _input_stamp(graph: ChunkedGraph, plan: _Plan) -> list[tuple[Any, ...]]:
    """Edge and mask files with their row ranges, and size and mtime when local: a
    rewritten input gets a new token (so a new run, not this process's cached result)."""
    refs = [r for e in graph.edge_types for r in graph.edge_chunks(e)]
    refs += [r for t, f in plan.masks for r in graph.node_feature_chunks(graph.metadata.node_types[t], f)]
    stamp: list[tuple[Any, ...]] = []
    for ref in refs:
        try:
            st = os.stat(ref.path)
            stamp.append((ref.path, ref.start, ref.stop, st.st_size, st.st_mtime_ns))
        except OSError:  # a URL: the path and rows only
            stamp.append((ref.path, ref.start, ref.stop))
    return stamp


def _type_view(driver: Any, offset: int, chunks: tuple[int, ...], name: str) -> da.Array:
    """Blocks ``chunks`` of the result starting at ``orig_nid`` ``offset``, after ``driver``."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    bounds = np.concatenate([[0], np.cumsum(chunks)]).astype(int) + offset
    layer: dict[Any, Any] = {(name, i): (T.read_result, driver.key, int(bounds[i]), int(bounds[i + 1]))
                             for i in range(len(chunks))}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[driver])
    return da.Array(graph, name, (chunks,), meta=np.empty(0, np.int32))


def _compute(tasks: list[Any]) -> list[Any]:
    """Compute from inside the driver task: via ``worker_client`` on a distributed worker
    (the driver secedes, so it holds no worker thread), else on the current scheduler."""
    import dask

    if not tasks:
        return []
    try:
        from distributed import get_worker, worker_client

        get_worker()
    except (ImportError, ValueError):
        return list(dask.compute(*tasks))
    with worker_client() as client:
        return list(client.gather(client.compute(tasks)))


# --- the driver -----------------------------------------------------------------------


@dataclass(kw_only=True)
class _State:
    """What the driver knows between rounds (small: per-stratum and per-part tables)."""

    plan: _Plan
    root: str
    num_nodes: int
    segs: list[T.Segments]  # per block: (edge file, start, stop) of all its entries
    level_segs: list[list[T.Segments]]  # per block and level: the entries of that level's nodes
    nodes_per_level: IdArray  # [blocks, 64]: index level + 1
    caps: IdArray  # [S] node cap per (stratum, part)
    wcap: int | None  # owned-edge cap per part (balance_edges)
    alpha: float
    sizes: IdArray  # [S, P] nodes per (stratum, part)
    wsizes: IdArray  # [P] owned edges per part
    pending: list[Any] = field(default_factory=list)  # delayed moves of the last planned round
    planned: list[T.Groups] = field(default_factory=list)  # their quotas (an upper bound of the moves)

    @property
    def num_blocks(self) -> int:
        return len(self.segs)

    def block_kw(self, b: int) -> dict[str, Any]:
        rows = min(self.plan.block_rows, self.num_nodes - b * self.plan.block_rows)
        return {"root": self.root, "b": b, "block_rows": self.plan.block_rows, "rows": rows}

    def absorb(self, moved: list[T.Groups]) -> int:
        """Add the moves the blocks report to the sizes; return how many nodes moved."""
        return plan_.add_moves(self.sizes, self.wsizes, moved, num_parts=self.plan.num_parts)

    def projected(self) -> tuple[IdArray, IdArray]:
        """The sizes once the planned moves are done (exact without ``balance_edges``,
        else an upper bound of the nodes that move)."""
        sizes, wsizes = self.sizes.copy(), self.wsizes.copy()
        plan_.add_moves(sizes, wsizes, self.planned, num_parts=self.plan.num_parts)
        return sizes, wsizes


def _strata(graph: ChunkedGraph, plan: _Plan) -> tuple[da.Array, int]:
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


def _stage(graph: ChunkedGraph, plan: _Plan, root: str, num_blocks: int) -> tuple[list[IdArray], list[IdArray]]:
    import dask

    md = graph.metadata
    task = dask.delayed(T.stage_task, pure=True, nout=2)
    tasks: list[Any] = []
    for spec in md.edge_types:
        si, di = md.ntype_id(spec.src_type), md.ntype_id(spec.dst_type)
        kw = {"root": root, "offsets": (int(md.node_type_offsets[si]), int(md.node_type_offsets[di])),
              "bounds": (graph.num_nodes(spec.src_type), graph.num_nodes(spec.dst_type)),
              "block_rows": plan.block_rows, "num_blocks": num_blocks}
        tasks += [task(ref, c=len(tasks) + i, **kw) for i, ref in enumerate(graph.edge_chunks(spec.name))]
    results = _compute(tasks)
    return [r[0] for r in results], [r[1] for r in results]


def _prepare(graph: ChunkedGraph, plan: _Plan, root: str) -> _State:
    """Stage the edges, compute degrees, levels and strata, reorder entries by level."""
    import dask

    n = int(graph.metadata.node_type_offsets[-1])
    num_blocks = -(-n // plan.block_rows)
    T.create_node_arrays(root, n, plan.block_rows)
    block_counts, loop_counts = _stage(graph, plan, root, num_blocks)
    segs, loop_segs = plan_.file_segments(block_counts, num_blocks), plan_.file_segments(loop_counts, num_blocks)
    strata, num_strata = _strata(graph, plan)
    task = dask.delayed(T.prepare_task, pure=True, nout=3)
    out = _compute([task(blk, root=root, b=b, block_rows=plan.block_rows, segs=segs[b], loop_segs=loop_segs[b],
                         num_strata=num_strata) for b, blk in enumerate(strata.to_delayed().ravel())])
    per_level = np.array([o[2] for o in out], np.int64).reshape(num_blocks, 64)
    max_level = int(np.flatnonzero(per_level.sum(axis=0)).max(initial=0)) - 1
    level_counts = _compute([dask.delayed(T.restage_task, pure=True)(
        root=root, c=c, block_counts=bc, block_rows=plan.block_rows, max_level=max(max_level, 0))
        for c, bc in enumerate(block_counts)])
    entries = int(sum(int(bc.sum()) for bc in block_counts))
    gamma = plan.config.gamma
    return _State(plan=plan, root=root, num_nodes=n, segs=segs, nodes_per_level=per_level,
                  level_segs=plan_.level_segments(block_counts, level_counts),
                  caps=plan_.caps_for(np.sum([o[0] for o in out], axis=0), plan.num_parts, plan.config.eps),
                  wcap=int(plan_.caps_for(sum(o[1] for o in out), plan.num_parts, plan.config.eps)) if plan.balance_edges
                  else None, alpha=(entries / 2) * plan.num_parts ** (gamma - 1) / max(n, 1) ** gamma,
                  sizes=np.zeros((num_strata, plan.num_parts), np.int64), wsizes=np.zeros(plan.num_parts, np.int64))


def _hist(state: _State, b: int, segs: T.Segments, mode: str, level: int, *, after: list[Any]) -> Any:
    """Delayed neighbour histogram of block ``b``'s active nodes: tasks of about
    ``group_entries`` entries, summed in a tree of fan-in 4."""
    import dask

    limit = state.plan.config.group_entries
    groups: list[T.Segments] = [[]]
    size = 0
    for c, lo, hi in segs:
        while lo < hi:
            if size >= limit:
                groups.append([])
                size = 0
            step = min(hi - lo, limit - size)
            groups[-1].append((c, lo, lo + step))
            size, lo = size + step, lo + step
    kw = {**state.block_kw(b), "mode": mode, "level": level, "num_parts": state.plan.num_parts}
    parts = [dask.delayed(T.hist_task, pure=True)(segs=g, after=after, **kw) for g in groups]
    while len(parts) > 1:
        parts = [dask.delayed(T.sum_task, pure=True)(*parts[i:i + 4]) for i in range(0, len(parts), 4)]
    return parts[0]


def _round(state: _State, *, mode: str, level: int, salt: int) -> int:
    """Propose and plan one round; its moves run in the next compute (before that round's
    histograms, so one compute per round). Returns the number of nodes planned to move."""
    import dask

    plan = state.plan
    if mode == "place" and level != T.ALL_LEVELS:
        blocks = [b for b in range(state.num_blocks) if state.nodes_per_level[b, level + 1]]
        segs = {b: state.level_segs[b][level] for b in blocks}
    else:
        blocks = list(range(state.num_blocks))
        segs = {b: state.segs[b] for b in blocks}
    pending, state.pending = state.pending, []
    projected = state.projected()
    propose = dask.delayed(T.propose_task, pure=True, nout=3)
    results = _compute(pending + [
        propose(_hist(state, b, segs[b], mode, level, after=pending), **state.block_kw(b), mode=mode, level=level,
                penalties=plan_.fennel_costs(*projected, caps=state.caps, wcap=state.wcap, alpha=state.alpha,
                                             gamma=plan.config.gamma),
                open_parts=plan_.open_parts(*projected, caps=state.caps, wcap=state.wcap),
                num_parts=plan.num_parts) for b in blocks])
    state.absorb(results[:len(pending)])
    summaries = results[len(pending):]
    if not sum(s[0].size for s in summaries):
        state.planned = []
        return 0
    state.planned = plan_.block_quotas(summaries, sizes=state.sizes, caps=state.caps, wsizes=state.wsizes,
                                       wcap=state.wcap, num_parts=plan.num_parts)
    apply = dask.delayed(T.apply_task, pure=True, nout=3)
    state.pending = [apply(q, **state.block_kw(b), mode=mode, seed=plan.seed, salt=salt, num_parts=plan.num_parts)
                     for b, q in zip(blocks, state.planned, strict=True)]
    return int(sum(int(q[1].sum()) for q in state.planned))


def _flush(state: _State) -> None:
    """Run the planned moves of the last round."""
    pending, state.pending, state.planned = state.pending, [], []
    state.absorb(_compute(pending))


def _fill(state: _State, *, salt: int, isolated: bool) -> int:
    """Place the unplaced isolated nodes (or the others): each stratum fills its emptiest parts."""
    import dask

    plan = state.plan
    _flush(state)
    unplaced = np.array(_compute([dask.delayed(T.unplaced_task, pure=True)(
        **state.block_kw(b), num_strata=state.caps.size, isolated=isolated) for b in range(state.num_blocks)]),
        np.int64)
    if not unplaced.sum():
        return 0
    fills = plan_.fill_plan(unplaced, state.sizes, state.caps)
    task = dask.delayed(T.fill_task, pure=True, nout=3)
    return state.absorb(_compute([task(fills[b], **state.block_kw(b), seed=plan.seed, salt=salt,
                                       num_parts=plan.num_parts, isolated=isolated)
                                  for b in range(state.num_blocks) if unplaced[b].sum()]))


def run_lp(graph: ChunkedGraph, plan: _Plan) -> str:
    """The driver task: run every round; return the root of the result Zarr store.

    The work arrays (staged edges, degrees, proposals) are deleted at the end. The
    result (``4 x num_nodes`` bytes) stays under the scratch directory for the output
    chunks to read until this process exits; computing the same arrays again in this
    process reuses it.
    """
    known = _RESULTS.get(plan.token)
    if known is not None and os.path.isdir(known):
        return known
    root = tempfile.mkdtemp(prefix="dglc-lp-", dir=plan.config.scratch_dir)
    atexit.register(shutil.rmtree, root, True)
    if not graph.metadata.node_type_offsets[-1]:
        return root  # no nodes: every output chunk is empty and reads nothing
    try:
        state = _prepare(graph, plan, root)
        for level in range(state.nodes_per_level.shape[1] - 2, -1, -1):
            if state.nodes_per_level[:, level + 1].any():
                moved = _round(state, mode="place", level=level, salt=level)
                logger.debug("lp: round for degree in [2**%d, 2**%d) places %d nodes", level, level + 1, moved)
        linked = int(state.nodes_per_level[:, 1:].sum())  # nodes with neighbours
        for i in range(_RETRY_ROUNDS):  # nodes refused for lack of room, with fresh neighbour counts
            if state.projected()[0].sum() == linked:
                break
            moved = _round(state, mode="place", level=T.ALL_LEVELS, salt=(1 << 19) + i)
            logger.debug("lp: retry round %d places %d nodes", i, moved)
            if moved == 0:
                break
        logger.debug("lp: fill placed %d nodes", _fill(state, salt=1 << 20, isolated=False))
        for i in range(plan.config.refine_passes):
            moved = _round(state, mode="refine", level=0, salt=(1 << 21) + i)
            logger.debug("lp: refinement pass %d moves %d nodes", i, moved)
            if moved == 0:
                break
        # isolated nodes cut nothing: placed last, they leave refinement the most room
        logger.debug("lp: isolated nodes: %d", _fill(state, salt=(1 << 20) + 1, isolated=True))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    shutil.rmtree(os.path.join(root, "work"), ignore_errors=True)
    _RESULTS[plan.token] = root
    return root
