"""Pure numpy kernels of the ``lp`` method (no Dask, no I/O).

Vocabulary (see :mod:`dgl_chunked.partition.lp` for the algorithm):

- node *blocks* are fixed ranges ``[b * block_rows, (b + 1) * block_rows)`` of the
  homogeneous ``orig_nid`` space; a node's *local* index is its offset in its block;
- a *staged entry* is one direction of one non-self-loop edge: the updated node ``u``
  (block-local, bit 31 set when ``u`` is the edge's destination) and its neighbour
  ``v`` (``orig_nid``, int32 when every ID fits);
- a *stratum* is (node type, first true balance mask); every stratum is balanced on
  its own;
- a *group* is the set of candidate nodes sharing ``(stratum, from part, to part,
  priority)``; ``from part == num_parts`` means "not placed yet". Groups are encoded as
  one int64 key by :func:`group_key`.

Proposal kernels take the *candidate* rows only (the nodes a round may move), so a
round costs in proportion to its candidates, not to the block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, PartArray
from dgl_chunked.partition.lp.round_kernels import neighbour_counts, refinement_gains, sorted_by
from dgl_chunked.partition.random import splitmix64

__all__ = [
    "DST_FLAG",
    "LOCAL_MASK",
    "NUM_PRIORITIES",
    "apply_quotas",
    "block_degrees",
    "degree_tiers",
    "fill_block",
    "group_by_key",
    "group_key",
    "neighbour_histogram",
    "node_tier_order",
    "node_order",
    "movers",
    "orient_edges",
    "priority_of",
    "propose_balance",
    "propose_placement",
    "propose_refinement",
    "rows_by_block",
    "rows_of",
    "signed_priority",
    "split_group_key",
    "stable_order",
    "summarise_groups",
]

DST_FLAG = np.uint32(1 << 31)
LOCAL_MASK = np.uint32((1 << 31) - 1)
NUM_PRIORITIES = 128
NUM_TIERS = 64
"""Degree tiers ``-1`` (isolated) to ``62``; tables index them as ``tier + 1``."""
_NO_TARGET = -1


def _local_and_block(
    ids: IdArray, block_rows: int, local: npt.NDArray[np.uint32], block: npt.NDArray[Any] | None
) -> None:
    """Write the block-local index (and, unless None, the block) of ``ids`` into the outputs."""
    if block_rows & (block_rows - 1) == 0:  # a power of two: shifts, no division
        np.bitwise_and(ids, block_rows - 1, out=local, casting="unsafe")
        if block is not None:
            np.right_shift(ids, block_rows.bit_length() - 1, out=block, casting="unsafe")
        return
    np.remainder(ids, block_rows, out=local, casting="unsafe")
    if block is not None:
        np.floor_divide(ids, block_rows, out=block, casting="unsafe")


def stable_order(key: npt.NDArray[Any], num_keys: int) -> npt.NDArray[np.intp]:
    """The stable sort order of ``key`` (values in ``[0, num_keys)``): numpy's radix
    sort on 8 or 16 bits where the keys fit them (3.7x its merge sort of int64 keys on
    2.6M keys of 4 values, issue #38)."""
    dtype = np.uint8 if num_keys <= 1 << 8 else np.uint16 if num_keys <= 1 << 16 else np.int64
    return np.argsort(key.astype(dtype, copy=False), kind="stable")


def group_by_key(key: npt.NDArray[Any], num_keys: int, arrays: list[npt.NDArray[Any]]) -> list[npt.NDArray[Any]]:
    """Stable sort of ``arrays`` by ``key`` (values in ``[0, num_keys)``). Two arrays
    take one compiled counting sort (:func:`.round_kernels.sorted_by`): no order array,
    no gathers; 3.5-4x faster than the radix argsort and a gather per array on the
    staging's 5M entries in 4 or 39 blocks (issue #38). Other counts take those."""
    if num_keys <= 1:
        return arrays
    if len(arrays) == 2:
        x, y = (np.ascontiguousarray(a) for a in arrays)
        ox, oy = np.empty_like(x), np.empty_like(y)
        sorted_by(np.ascontiguousarray(key), num_keys, x, y, ox, oy)
        return [ox, oy]
    order = stable_order(key, num_keys)
    return [a[order] for a in arrays]


def orient_edges(
    src: IdArray, dst: IdArray, *, block_rows: int, num_blocks: int, v_dtype: type[np.signedinteger[Any]] = np.int64
) -> tuple[npt.NDArray[np.uint32], IdArray, IdArray, IdArray]:
    """Both directions of every non-self-loop edge, stably ordered by the block of ``u``.

    Parameters
    ----------
    src, dst
        ``orig_nid`` of both ends (int64).
    block_rows, num_blocks
        The node blocking.
    v_dtype
        Integer type of the returned neighbours (int32 halves the staged bytes when
        every ``orig_nid`` fits).

    Returns
    -------
    u_local : uint32
        Block-local ``u``; bit 31 (``DST_FLAG``) set when ``u`` is the edge's destination.
    v : v_dtype
        ``orig_nid`` of the neighbour.
    counts : int64 [num_blocks]
        Entries per block (the order is block-major).
    self_loops : int64
        ``orig_nid`` of every self-loop's node (one per self-loop; they count as owned edges).
    """
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    loop = src == dst
    self_loops = src[loop]
    if self_loops.size:
        src, dst = src[~loop], dst[~loop]
    m = src.size
    u_local = np.empty(2 * m, np.uint32)
    v = np.empty(2 * m, v_dtype)
    v[:m], v[m:] = dst, src
    block = np.empty(2 * m, np.uint16 if num_blocks <= 1 << 16 else np.int64) if num_blocks > 1 else None
    for half, ids in ((slice(0, m), src), (slice(m, 2 * m), dst)):
        _local_and_block(ids, block_rows, u_local[half], None if block is None else block[half])
    u_local[m:] |= DST_FLAG
    if block is None:
        return u_local, v, np.full(num_blocks, 2 * m, np.int64), self_loops
    u_local, v = group_by_key(block, num_blocks, [u_local, v])
    return u_local, v, np.bincount(block, minlength=num_blocks).astype(np.int64), self_loops


def rows_by_block(block: IdArray, num_blocks: int) -> list[tuple[int, IdArray]]:
    """Per non-empty block (ascending), the positions of the rows of ``block`` (values in
    ``[0, num_blocks)``) that fall in it, ascending: one stable radix sort for all
    blocks, where a comparison with every block cost rows x blocks."""
    block = np.asarray(block)
    if num_blocks <= 1:
        return [(0, np.arange(block.size, dtype=np.int64))] if block.size else []
    order = stable_order(block, num_blocks)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(block, minlength=num_blocks))])
    return [(b, order[bounds[b] : bounds[b + 1]]) for b in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist()]


def block_degrees(
    u_locals: list[npt.NDArray[np.uint32]], self_loops: IdArray, *, rows: int, owned: bool = True
) -> tuple[IdArray, IdArray]:
    """Undirected degree (no self-loops) and owned edges (in-degree + self-loops) of a
    block; the owned edges are zero unless ``owned``."""
    degree = np.zeros(rows, np.int64)
    weight = np.zeros(rows, np.int64)
    if owned:
        weight += np.bincount(np.asarray(self_loops, np.int64), minlength=rows)
    for u in u_locals:
        local = u & LOCAL_MASK
        degree += np.bincount(local, minlength=rows)
        if owned:
            weight += np.bincount(local[(u & DST_FLAG) != 0], minlength=rows)
    return degree, weight


def degree_tiers(degree: IdArray) -> npt.NDArray[np.int8]:
    """``floor(log2(degree))`` (``-1`` for isolated nodes) as int8."""
    degree = np.asarray(degree, np.int64)
    out = np.full(degree.size, -1, np.int8)
    pos = degree > 0
    out[pos] = (np.frexp(degree[pos].astype(np.float64))[1] - 1).astype(np.int8)
    return out


def node_tier_order(tier: npt.NDArray[np.int8]) -> npt.NDArray[np.int32]:
    """Block-local node indices by falling tier, ascending within a tier (isolated last)."""
    key = (NUM_TIERS - 2 - tier.astype(np.int16)).astype(np.uint8)  # tier 62 -> 0, -1 -> 63
    return np.argsort(key, kind="stable").astype(np.int32)


def rows_of(nodes: npt.NDArray[np.integer[Any]], rows: int, *, out: IdArray | None = None) -> IdArray:
    """Table row of every block-local node: its position in ``nodes``; the others get
    ``nodes.size`` (a spare row that callers drop). ``out``: an int64 array to fill."""
    out = np.empty(rows, np.int64) if out is None else out
    out.fill(nodes.size)
    out[nodes] = np.arange(nodes.size, dtype=np.int64)
    return out


def neighbour_histogram(
    u_local: npt.NDArray[np.uint32],
    v_part: npt.NDArray[np.integer[Any]],
    row_of: IdArray | None,
    *,
    num_rows: int,
    num_parts: int,
    dtype: type[np.signedinteger[Any]] = np.int64,
    out: npt.NDArray[np.signedinteger[Any]] | None = None,
) -> npt.NDArray[np.signedinteger[Any]]:
    """Neighbours per partition of every table row: ``[num_rows, P]`` of ``dtype``, or
    added to ``out`` (int32 or int64) and returned.

    ``row_of`` maps a block-local node to its row (``num_rows``: not counted; None:
    the row is the local index); ``v_part`` holds the neighbours' partitions (``-1``:
    not placed, not counted). One compiled pass (:func:`.round_kernels.neighbour_counts`):
    the numpy version built an int64 key per entry in four passes and counted them with
    a ``bincount`` into a fresh array of ``(num_rows + 1) * (P + 1)`` counts, 4.1 s of
    thread time at 1M nodes / 10M edges (issue #38).
    """
    counts: npt.NDArray[np.signedinteger[Any]] = neighbour_counts(
        u_local, v_part, row_of, np.zeros((num_rows, num_parts), dtype) if out is None else out
    )
    return counts


def priority_of(score: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int16]:
    """Monotone bucket of a non-negative integer score: ``min(127, floor(8 log2(1 + s)))``."""
    s = np.maximum(np.asarray(score, np.float64), 0.0)
    return np.minimum(NUM_PRIORITIES - 1, np.floor(8.0 * np.log2(1.0 + s))).astype(np.int16)


def signed_priority(gain: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int16]:
    """Monotone bucket of a signed integer gain, in ``[0, NUM_PRIORITIES)``: gains
    ``g >= 0`` take the upper half (``64 + min(63, floor(8 log2(1 + g)))``), losses
    ``g < 0`` the lower (``63 - min(63, floor(8 log2(-g))))``), so a smaller loss always
    ranks above a larger one."""
    g = np.asarray(gain, np.float64)
    half = NUM_PRIORITIES // 2
    up = np.minimum(half - 1, np.floor(8.0 * np.log2(1.0 + np.maximum(g, 0.0))))
    down = np.minimum(half - 1, np.floor(8.0 * np.log2(np.maximum(-g, 1.0))))
    return np.where(g >= 0, half + up, half - 1 - down).astype(np.int16)


def group_key(
    stratum: npt.NDArray[np.integer[Any]],
    src_part: npt.NDArray[np.integer[Any]],
    dst_part: npt.NDArray[np.integer[Any]],
    priority: npt.NDArray[np.integer[Any]],
    *,
    num_parts: int,
) -> IdArray:
    """One int64 per ``(stratum, from, to, priority)``; ``from`` may be ``num_parts``."""
    key = np.asarray(stratum, np.int64) * (num_parts + 1) + np.asarray(src_part, np.int64)
    key = key * num_parts + np.asarray(dst_part, np.int64)
    return key * NUM_PRIORITIES + np.asarray(priority, np.int64)


def split_group_key(key: IdArray, *, num_parts: int) -> tuple[IdArray, IdArray, IdArray, IdArray]:
    """Inverse of :func:`group_key`: ``(stratum, from, to, priority)``."""
    key = np.asarray(key, np.int64)
    prio = key % NUM_PRIORITIES
    key = key // NUM_PRIORITIES
    dst = key % num_parts
    key = key // num_parts
    return key // (num_parts + 1), key % (num_parts + 1), dst, prio


def summarise_groups(keys: IdArray, weight: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """Distinct group keys (sorted) with their node counts and weight sums."""
    if keys.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    counts = np.diff(np.concatenate([starts, [k.size]])).astype(np.int64)
    weights = np.add.reduceat(np.asarray(weight, np.int64)[order], starts)
    return k[starts].astype(np.int64), counts, weights.astype(np.int64)


def propose_placement(
    hist: npt.NDArray[np.integer[Any]],
    stratum: npt.NDArray[np.int32],
    weight: IdArray,
    *,
    penalty: npt.NDArray[np.float64],
    weight_penalty: npt.NDArray[np.float64],
    open_parts: npt.NDArray[np.bool_],
    weight_open: npt.NDArray[np.bool_],
) -> tuple[IdArray, npt.NDArray[np.int16]]:
    """Fennel choice for unplaced candidates over the parts open to them:
    ``argmax_q hist[q] - penalty[q] - weight * weight_penalty[q]`` (lowest part on ties).

    A part is open to a node when its stratum has room there and, for a node of
    positive weight, ``weight_open`` says the part has weight room. All arguments have
    one row per candidate. Returns the target (``-1``: no open part) and the priority
    (bucket of the neighbours in the target).
    """
    if hist.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int16)
    w = np.asarray(weight, np.float64)
    score = hist - penalty[None, :]
    if weight_penalty.any():
        score -= w[:, None] * weight_penalty[None, :]
    allowed = open_parts[stratum]
    if not weight_open.all():
        allowed &= weight_open[None, :] | (w == 0)[:, None]
    best = np.argmax(np.where(allowed, score, -np.inf), axis=1)
    ok = allowed.any(axis=1)
    target = np.where(ok, best, _NO_TARGET).astype(np.int64)
    prio = np.where(ok, priority_of(hist[np.arange(best.size), best]), 0).astype(np.int16)
    return target, prio


def propose_refinement(
    hist: npt.NDArray[np.integer[Any]],
    part: npt.NDArray[np.integer[Any]],
    stratum: npt.NDArray[np.int32],
    *,
    open_parts: npt.NDArray[np.bool_],
) -> tuple[IdArray, npt.NDArray[np.int16]]:
    """Label propagation for placed candidates: a node proposes the part with the most
    neighbours among those with room when that beats its own part (gain > 0), else
    the best full part (reachable by a swap only); priority = bucket of the gain.

    All arguments have one row per candidate. Returns the target (``-1``: stay) and
    the priority. Ties go to the lowest part.
    """
    if hist.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int16)
    best, gain = refinement_gains(hist, part, stratum, open_parts)
    ok = gain > 0
    return np.where(ok, best, _NO_TARGET).astype(np.int64), np.where(ok, priority_of(gain), 0).astype(np.int16)


def propose_balance(
    hist: npt.NDArray[np.integer[Any]],
    part: npt.NDArray[np.integer[Any]],
    stratum: npt.NDArray[np.int32],
    *,
    open_parts: npt.NDArray[np.bool_],
) -> tuple[IdArray, npt.NDArray[np.int16]]:
    """Where the nodes of an over-cap (stratum, part) would leave to: the part with room
    (``open_parts`` ``[S, P]``) holding most of their neighbours (ties: the lowest), and
    the priority (:func:`signed_priority` of the gain, neighbours there less neighbours
    in their own part: the least loss ranks first). All arguments have one row per
    candidate; target ``-1``: no part with room."""
    if hist.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, np.int16)
    idx = np.arange(hist.shape[0])
    own_part = part.astype(np.int64)
    allowed = open_parts[stratum].copy()
    allowed[idx, own_part] = False
    scores = np.where(allowed, np.asarray(hist, np.int64), -1)
    best = np.argmax(scores, axis=1)
    ok = allowed.any(axis=1)
    gain = scores[idx, best] - np.asarray(hist, np.int64)[idx, own_part]
    return np.where(ok, best, _NO_TARGET).astype(np.int64), np.where(ok, signed_priority(gain), 0).astype(np.int16)


def node_order(orig_nids: IdArray, *, seed: int, salt: int) -> npt.NDArray[np.uint64]:
    """Seeded pseudo-random rank of each node (chunk-invariant: a hash of its ID)."""
    key = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(salt)))
    with np.errstate(over="ignore"):
        return splitmix64(np.asarray(orig_nids).astype(np.uint64) + key)


def movers(orig_nids: IdArray, *, seed: int, salt: int, fraction: float) -> npt.NDArray[np.bool_]:
    """Whether each node may move this pass: a seeded coin per node ID, true for about
    ``fraction`` of them (all at 1)."""
    if fraction >= 1:
        return np.ones(np.shape(orig_nids), bool)
    below = min(int(fraction * 2.0**64), (1 << 64) - 1)  # a fraction just under 1 rounds to 2**64
    return node_order(orig_nids, seed=seed, salt=salt) < np.uint64(below)


def apply_quotas(
    keys: IdArray,
    weight: IdArray,
    rank: npt.NDArray[np.uint64],
    quota_keys: IdArray,
    quota_count: IdArray,
    quota_weight: IdArray,
) -> tuple[npt.NDArray[np.bool_], IdArray, IdArray, IdArray]:
    """Take, in every group, the first candidates in ``rank`` order within its count and
    weight quota.

    ``keys``, ``weight`` and ``rank`` have one row per candidate. Returns which
    candidates move and, per group that moved nodes, ``(key, moved, moved weight)``.
    """
    take = np.zeros(keys.size, bool)
    if keys.size == 0 or quota_keys.size == 0:
        empty = np.empty(0, np.int64)
        return take, empty, empty, empty
    by_rank = np.argsort(rank)  # ranks are distinct (a bijective hash of the node ID)
    order = by_rank[np.argsort(keys[by_rank], kind="stable")]  # = lexsort((rank, keys)), faster
    k = keys[order]
    pos = np.minimum(np.searchsorted(quota_keys, k), quota_keys.size - 1)
    known = quota_keys[pos] == k
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    first = np.repeat(starts, np.diff(np.concatenate([starts, [k.size]])))
    w = np.asarray(weight, np.int64)[order]
    csum_w = np.cumsum(w)
    cum_w = csum_w - (csum_w[first] - w[first])
    cum_n = np.arange(k.size) - first + 1
    take[order] = known & (cum_n <= quota_count[pos]) & (cum_w <= quota_weight[pos])
    mk, mc, mw = summarise_groups(keys[take], np.asarray(weight, np.int64)[take])
    return take, mk, mc, mw


def fill_block(
    stratum: npt.NDArray[np.int32],
    rank: npt.NDArray[np.uint64],
    fill_strata: IdArray,
    fill_parts: IdArray,
    fill_counts: IdArray,
) -> PartArray:
    """Partitions of nodes to place: in each stratum, nodes in ``rank`` order go to the
    listed parts, ``fill_counts`` each (rows of ``(stratum, part, count)``; counts sum per
    stratum to the stratum's nodes here). Arguments have one row per node to place."""
    new = np.full(stratum.size, -1, np.int32)
    for s in np.unique(fill_strata):
        nodes = np.flatnonzero(stratum == s)
        nodes = nodes[np.argsort(rank[nodes], kind="stable")]
        sel = fill_strata == s
        new[nodes] = np.repeat(fill_parts[sel], fill_counts[sel]).astype(np.int32)
    return new
