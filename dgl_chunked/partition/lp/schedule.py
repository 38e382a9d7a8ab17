"""The move step's plan for the ``lp`` method: pure numpy on small per-group tables.

It runs in the driver task. A *group* is every candidate node sharing ``(stratum,
from part, to part, priority)`` (key: :func:`.kernels.group_key`); the tables hold
one row per group (or per block and group) with node counts and weight sums.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp.kernels import split_group_key
from dgl_chunked.partition.lp.store import Segments

__all__ = [
    "Groups",
    "add_moves",
    "block_quotas",
    "caps_for",
    "fennel_costs",
    "fill_plan",
    "group_segments",
    "tier_rounds",
    "open_parts",
    "plan_excess",
    "plan_moves",
    "planned_gain",
    "round_segments",
    "round_spans",
    "split_quotas",
    "water_fill",
]

Groups = tuple[IdArray, IdArray, IdArray]  # (group keys, node counts, weight sums)


def _take(groups: IdArray, counts: IdArray, weights: IdArray, k: int) -> tuple[IdArray, IdArray, int, int]:
    """The first ``k`` nodes of ``groups`` (in order): per group (count, weight quota), and
    upper / lower bounds of the weight that moves (a partly taken group: all or none of it)."""
    take = np.clip(k - (np.cumsum(counts[groups]) - counts[groups]), 0, counts[groups])
    full = take == counts[groups]
    quota_w = np.where(take > 0, weights[groups], 0)
    return take, quota_w, int(quota_w.sum()), int(weights[groups][full & (take > 0)].sum())


def _swaps(
    strata: IdArray,
    src: IdArray,
    dst: IdArray,
    order: IdArray,
    counts: IdArray,
    weights: IdArray,
    wroom: IdArray,
    *,
    num_parts: int,
    acc_n: IdArray,
    acc_w: IdArray,
    done: npt.NDArray[np.bool_],
) -> None:
    """Pair moves ``p -> q`` with moves ``q -> p`` of one stratum (best first, equal numbers):
    they keep every node count, so they pass even when both parts are full. With an
    edge bound, a pair of parts swaps only if the worst case fits the weight room."""
    ranked = np.empty(order.size, np.int64)
    ranked[order] = np.arange(order.size)
    inner = src < num_parts
    for s, p, q in sorted(
        {(int(a), int(b), int(c)) for a, b, c in zip(strata[inner], src[inner], dst[inner], strict=True) if b < c}
    ):
        fwd = np.flatnonzero((strata == s) & (src == p) & (dst == q))
        bwd = np.flatnonzero((strata == s) & (src == q) & (dst == p))
        k = min(int(counts[fwd].sum()), int(counts[bwd].sum()))
        if k == 0:
            continue
        fwd, bwd = fwd[np.argsort(ranked[fwd])], bwd[np.argsort(ranked[bwd])]
        n_f, w_f, hi_f, lo_f = _take(fwd, counts, weights, k)
        n_b, w_b, hi_b, lo_b = _take(bwd, counts, weights, k)
        if hi_f - lo_b > wroom[q] or hi_b - lo_f > wroom[p]:
            continue
        wroom[q] -= hi_f - lo_b
        wroom[p] -= hi_b - lo_f
        for groups, n, w in ((fwd, n_f, w_f), (bwd, n_b, w_b)):
            used = n > 0
            acc_n[groups[used]], acc_w[groups[used]], done[groups[used]] = n[used], w[used], True


def plan_moves(
    keys: IdArray,
    counts: IdArray,
    weights: IdArray,
    *,
    sizes: IdArray,
    caps: IdArray,
    wsizes: IdArray,
    wcap: int | None,
    num_parts: int,
    sweeps: int = 3,
) -> tuple[IdArray, IdArray]:
    """How many nodes (and how much weight) of every group may move without breaking a cap.

    First, moves between two placed parts are paired into swaps (:func:`_swaps`).
    Then the other groups are served by priority (highest first), then key: a group
    takes ``min(count, room of (stratum, to))`` nodes and at most the weight room of
    ``to``; a group moved in full frees its room in ``from`` for later groups and
    sweeps (a partly moved group frees nothing: which of its nodes move is decided per
    block). ``sizes`` is ``[S, P]`` nodes per (stratum, part), ``wsizes`` ``[P]``.

    Returns
    -------
    (accepted count, accepted weight) per group, int64.
    """
    strata, src, dst, prio = split_group_key(keys, num_parts=num_parts)
    room = (np.asarray(caps, np.int64)[:, None] - np.asarray(sizes, np.int64)).copy()
    wroom = (
        np.full(num_parts, np.iinfo(np.int64).max // 4, np.int64)
        if wcap is None
        else int(wcap) - np.asarray(wsizes, np.int64)
    )
    acc_n = np.zeros(keys.size, np.int64)
    acc_w = np.zeros(keys.size, np.int64)
    done = np.zeros(keys.size, bool)
    order = np.lexsort((keys, -prio))
    _swaps(strata, src, dst, order, counts, weights, wroom, num_parts=num_parts, acc_n=acc_n, acc_w=acc_w, done=done)
    for _ in range(sweeps):
        progress = False
        for g in order.tolist():
            if done[g]:
                continue
            s, p, q = int(strata[g]), int(src[g]), int(dst[g])
            n = min(int(counts[g]), max(int(room[s, q]), 0))
            w = min(int(weights[g]), max(int(wroom[q]), 0))
            if n == 0 or (w == 0 and weights[g] > 0):
                continue
            full = n == counts[g] and w == weights[g]
            acc_n[g], acc_w[g], done[g], progress = n, w, True, True
            room[s, q] -= n
            wroom[q] -= w
            if full and p < num_parts:
                room[s, p] += n
                wroom[p] += w
        if not progress:
            break
    return acc_n, acc_w


def plan_excess(
    keys: IdArray,
    counts: IdArray,
    weights: IdArray,
    *,
    sizes: IdArray,
    caps: IdArray,
    wsizes: IdArray,
    wcap: int | None,
    num_parts: int,
) -> tuple[IdArray, IdArray]:
    """How many nodes (and how much weight) of every group leave an over-cap (stratum,
    part): groups served by priority (highest first: the least loss), then key; a group
    ``(s, p, q)`` takes ``min(count, what is still over in (s, p), room of (s, q))`` nodes
    and at most the weight room of ``q``. So no more than the excess leaves, and no part
    goes over a cap it was within. ``sizes`` is ``[S, P]``, ``wsizes`` ``[P]``.

    Returns
    -------
    (accepted count, accepted weight) per group, int64.
    """
    strata, src, dst, prio = split_group_key(keys, num_parts=num_parts)
    sizes = np.asarray(sizes, np.int64)
    caps_col = np.asarray(caps, np.int64)[:, None]
    excess = np.clip(sizes - caps_col, 0, None)
    room = np.clip(caps_col - sizes, 0, None)
    wroom = (
        np.full(num_parts, np.iinfo(np.int64).max // 4, np.int64)
        if wcap is None
        else int(wcap) - np.asarray(wsizes, np.int64)
    )
    acc_n = np.zeros(keys.size, np.int64)
    acc_w = np.zeros(keys.size, np.int64)
    for g in np.lexsort((keys, -prio)).tolist():
        s, p, q = int(strata[g]), int(src[g]), int(dst[g])
        if p >= num_parts:
            continue
        n = min(int(counts[g]), int(excess[s, p]), int(room[s, q]))
        w = min(int(weights[g]), max(int(wroom[q]), 0))
        if n == 0 or (w == 0 and weights[g] > 0):
            continue
        acc_n[g], acc_w[g] = n, w
        excess[s, p] -= n
        room[s, q] -= n
        wroom[q] -= w
        if n == counts[g] and w == weights[g]:
            wroom[p] += w
    return acc_n, acc_w


def split_quotas(
    block_ids: IdArray,
    keys: IdArray,
    counts: IdArray,
    weights: IdArray,
    group_keys: IdArray,
    group_counts: IdArray,
    group_weights: IdArray,
    acc_n: IdArray,
    acc_w: IdArray,
) -> tuple[IdArray, IdArray]:
    """Share every group's accepted count and weight among the blocks that hold it.

    Rows ``(block, key, count, weight)``; a fully accepted group gives every block
    everything; otherwise counts go by largest remainder (ties to the lower block) and
    weights by floor, so the sums never exceed the group's quota.
    """
    g = np.searchsorted(group_keys, keys)
    full = (acc_n[g] == group_counts[g]) & (acc_w[g] == group_weights[g])
    num = acc_n[g] * counts
    base = num // np.maximum(group_counts[g], 1)
    rem = num % np.maximum(group_counts[g], 1)
    left = acc_n - np.bincount(g, weights=base, minlength=group_keys.size).astype(np.int64)
    order = np.lexsort((block_ids, -rem, g))
    g_sorted = g[order]
    first = np.searchsorted(g_sorted, g_sorted)
    bonus = np.zeros(keys.size, np.int64)
    bonus[order] = ((np.arange(order.size) - first) < left[g_sorted]) & (rem[order] > 0)
    quota_n = np.where(full, counts, np.minimum(base + bonus, counts))
    quota_w = np.where(full, weights, acc_w[g] * weights // np.maximum(group_weights[g], 1))
    return quota_n, quota_w


def water_fill(sizes: IdArray, cap: int, extra: int) -> IdArray:
    """Nodes to add per part so the smallest parts grow first, none above ``cap``."""
    sizes = np.asarray(sizes, np.int64)
    add = np.zeros(sizes.size, np.int64)
    if extra <= 0:
        return add
    lo, hi = int(sizes.min()), int(max(cap, sizes.min()))
    while lo < hi:  # smallest water mark L with sum(clip(L - sizes, 0)) >= extra
        mid = (lo + hi) // 2
        if int(np.clip(mid - sizes, 0, None).sum()) >= extra:
            hi = mid
        else:
            lo = mid + 1
    add = np.clip(lo - 1 - sizes, 0, None)
    short = extra - int(add.sum())
    at_mark = np.flatnonzero(sizes + add < min(lo, cap) if lo <= cap else sizes + add < cap)
    add[at_mark[:short]] += 1
    return add


def fill_plan(unplaced: IdArray, sizes: IdArray, caps: IdArray) -> list[tuple[IdArray, IdArray, IdArray]]:
    """Where the unplaced nodes go: per block, rows ``(stratum, part, count)`` for :func:`fill_block`.

    ``unplaced`` is ``[blocks, S]``. Each stratum water-fills its emptiest parts; the
    blocks take consecutive runs of that fill in block order.
    """
    rows: list[list[tuple[int, int, int]]] = [[] for _ in range(unplaced.shape[0])]
    for s in np.flatnonzero(unplaced.sum(axis=0)):
        add = water_fill(sizes[s], int(caps[s]), int(unplaced[:, s].sum()))
        ends = np.cumsum(add)
        starts = ends - add
        taken = np.concatenate([[0], np.cumsum(unplaced[:, s])])
        for b in range(unplaced.shape[0]):
            got = np.clip(np.minimum(ends, taken[b + 1]) - np.maximum(starts, taken[b]), 0, None)
            rows[b] += [(int(s), int(q), int(got[q])) for q in np.flatnonzero(got)]
    return [tuple(np.array([r[i] for r in block], np.int64) for i in range(3)) for block in rows]  # type: ignore[misc]


def caps_for(total: IdArray | int, num_parts: int, eps: float) -> IdArray:
    """The most a part may hold of ``total``: ``max(ceil(total / P), floor((1 + eps) total / P))``."""
    total = np.asarray(total, np.int64)
    return np.maximum(-(-total // num_parts), np.floor((1 + eps) * total / num_parts).astype(np.int64))


def add_moves(
    sizes: IdArray,
    wsizes: IdArray,
    moved: list[Groups],
    *,
    num_parts: int,
    placed: IdArray | None = None,
    blocks: list[int] | None = None,
) -> int:
    """Apply per-group moves ``(keys, nodes, weight)`` to the size tables in place;
    return the number of nodes moved. With ``placed`` (``[blocks, S]``), also count the
    nodes newly placed per block and stratum (``moved[i]`` is block ``blocks[i]``'s)."""
    total = 0
    for i, (mk, mc, mw) in enumerate(moved):
        s, p, q, _ = split_group_key(mk, num_parts=num_parts)
        old = p < num_parts
        np.add.at(sizes, (s, q), mc)
        np.subtract.at(sizes, (s[old], p[old]), mc[old])
        np.add.at(wsizes, q, mw)
        np.subtract.at(wsizes, p[old], mw[old])
        if placed is not None and blocks is not None:
            np.add.at(placed[blocks[i]], s[~old], mc[~old])
        total += int(mc.sum())
    return total


def fennel_costs(
    sizes: IdArray, wsizes: IdArray, *, caps: IdArray, wcap: int | None, alpha: float, gamma: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Fennel's marginal cost per part of one more node and of one more owned edge
    (edges scaled to nodes at the caps, so ``W / n`` edges cost like one node)."""
    nodes = alpha * gamma * sizes.sum(axis=0).astype(np.float64) ** (gamma - 1)
    if wcap is None:
        return nodes, np.zeros_like(nodes)
    scale = caps.sum() / max(wcap, 1)
    return nodes, alpha * gamma * (scale * wsizes.astype(np.float64)) ** (gamma - 1) * scale


def open_parts(
    sizes: IdArray, wsizes: IdArray, *, caps: IdArray, wcap: int | None
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Parts with node room per stratum ``[S, P]`` and with owned-edge room ``[P]``."""
    weight_room = np.ones(wsizes.size, bool) if wcap is None else wcap - wsizes > 0
    return caps[:, None] - sizes > 0, weight_room


def block_quotas(
    summaries: list[Groups],
    *,
    sizes: IdArray,
    caps: IdArray,
    wsizes: IdArray,
    wcap: int | None,
    num_parts: int,
    excess: bool = False,
) -> list[Groups]:
    """The move step: from every block's proposal summary, its quota per group (sorted
    keys); planned by :func:`plan_moves`, or with ``excess`` by :func:`plan_excess`."""
    ids = np.concatenate([np.full(s[0].size, i, np.int64) for i, s in enumerate(summaries)])
    keys, counts, weights = (np.concatenate([s[i] for s in summaries]) for i in range(3))
    gkeys, inv = np.unique(keys, return_inverse=True)
    gcounts = np.bincount(inv, weights=counts, minlength=gkeys.size).astype(np.int64)
    gweights = np.bincount(inv, weights=weights, minlength=gkeys.size).astype(np.int64)
    planner = plan_excess if excess else plan_moves
    acc_n, acc_w = planner(
        gkeys, gcounts, gweights, sizes=sizes, caps=caps, wsizes=wsizes, wcap=wcap, num_parts=num_parts
    )
    qn, qw = split_quotas(ids, keys, counts, weights, gkeys, gcounts, gweights, acc_n, acc_w)
    bounds = np.searchsorted(ids, np.arange(len(summaries) + 1))
    return [(keys[lo:hi], qn[lo:hi], qw[lo:hi]) for lo, hi in itertools.pairwise(bounds)]


def tier_rounds(nodes_per_tier: IdArray, min_nodes: int) -> list[tuple[int, int]]:
    """Placement rounds ``(high tier, low tier)``, from the top tier down: consecutive
    degree tiers are merged until a round holds at least ``min_nodes`` nodes
    (``nodes_per_tier`` is indexed by tier + 1; isolated nodes are not placed by rounds)."""
    rounds: list[tuple[int, int]] = []
    high, count = None, 0
    for tier in range(nodes_per_tier.size - 2, -1, -1):
        n = int(nodes_per_tier[tier + 1])
        if n == 0:
            continue
        high = tier if high is None else high
        count += n
        if count >= min_nodes:
            rounds.append((high, tier))
            high, count = None, 0
    if high is not None:
        rounds.append((high, int(np.flatnonzero(nodes_per_tier[1:]).min())))
    return rounds


def round_spans(nodes_per_tier: IdArray, high: int, low: int) -> list[tuple[int, int]]:
    """Per block, the positions in its tier order (falling tier) of tiers ``high..low``
    (``nodes_per_tier`` is ``[blocks, 64]``, indexed by tier + 1)."""
    above = nodes_per_tier[:, high + 2 :].sum(axis=1)
    inside = nodes_per_tier[:, low + 1 : high + 2].sum(axis=1)
    return [(int(a), int(a + n)) for a, n in zip(above, inside, strict=True)]


def round_segments(tier_counts: IdArray, high: int, low: int) -> list[Segments]:
    """Per block, the staged entries of its nodes of tiers ``high..low``: one range of
    the block's own edge files, ordered by falling tier (``tier_counts``: entries per
    block and tier, ``[blocks, 63]``)."""
    first = tier_counts[:, high + 1 :].sum(axis=1)
    stop = tier_counts[:, low:].sum(axis=1)
    return [[(b, int(f), int(s))] if s > f else [] for b, (f, s) in enumerate(zip(first, stop, strict=True))]


def planned_gain(quotas: list[Groups], *, num_parts: int) -> int:
    """The cut edges the planned refinement moves would save if they did not interact,
    each node's gain taken as the least of its priority bucket (a lower bound of that;
    moves that undo each other save less)."""
    gain = 0
    for keys, counts, _ in quotas:
        prio = split_group_key(keys, num_parts=num_parts)[3]
        least = np.maximum(1, np.ceil(np.exp2(prio / 8.0) - 1 - 1e-9)).astype(np.int64)
        gain += int((least * counts).sum())
    return gain


def group_segments(segs: Segments, limit: int) -> list[Segments]:
    """Split a block's entry ranges into groups of about ``limit`` entries."""
    groups: list[Segments] = [[]]
    size = 0
    for c, lo, hi in segs:
        while lo < hi:
            if size >= limit:
                groups.append([])
                size = 0
            step = min(hi - lo, limit - size)
            groups[-1].append((c, lo, lo + step))
            size, lo = size + step, lo + step
    return groups
