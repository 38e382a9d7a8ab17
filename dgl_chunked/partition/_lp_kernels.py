"""Pure numpy kernels of the ``lp`` method (no Dask, no I/O).

Vocabulary (see :mod:`dgl_chunked.partition.lp` for the algorithm):

- node *blocks* are fixed ranges ``[b * block_rows, (b + 1) * block_rows)`` of the
  homogeneous ``orig_nid`` space; a node's *local* index is its offset in its block;
- a *staged entry* is one direction of one non-self-loop edge: the updated node ``u``
  (block-local, bit 31 set when ``u`` is the edge's destination) and its neighbour
  ``v`` (``orig_nid``);
- a *stratum* is (node type, first true balance mask); every stratum is balanced on
  its own;
- a *group* is the set of candidate nodes sharing ``(stratum, from part, to part,
  priority)``; ``from part == num_parts`` means "not placed yet". Groups are encoded as
  one int64 key by :func:`group_key`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, PartArray
from dgl_chunked.partition.random import splitmix64

__all__ = [
    "DST_FLAG",
    "LOCAL_MASK",
    "NUM_PRIORITIES",
    "apply_quotas",
    "block_degrees",
    "degree_levels",
    "fill_block",
    "group_key",
    "level_order",
    "neighbour_histogram",
    "node_order",
    "orient_edges",
    "priority_of",
    "propose_placement",
    "propose_refinement",
    "rows_of",
    "split_group_key",
    "summarise_groups",
]

DST_FLAG = np.uint32(1 << 31)
LOCAL_MASK = np.uint32((1 << 31) - 1)
NUM_PRIORITIES = 128
_NO_TARGET = -1


def orient_edges(src: IdArray, dst: IdArray, *, block_rows: int,
                 num_blocks: int) -> tuple[npt.NDArray[np.uint32], IdArray, IdArray, IdArray]:
    """Both directions of every non-self-loop edge, stably ordered by the block of ``u``.

    Parameters
    ----------
    src, dst
        ``orig_nid`` of both ends (int64).
    block_rows, num_blocks
        The node blocking.

    Returns
    -------
    u_local : uint32
        Block-local ``u``; bit 31 (``DST_FLAG``) set when ``u`` is the edge's destination.
    v : int64
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
    u = np.concatenate([src, dst])
    v = np.concatenate([dst, src])
    block = u // block_rows
    flag = np.zeros(u.size, np.uint32)
    if num_blocks > 1:
        order = np.argsort(block.astype(np.uint32 if num_blocks > 65535 else np.uint16), kind="stable")
        u, v, block = u[order], v[order], block[order]
        flag[order >= src.size] = DST_FLAG
    else:
        flag[src.size:] = DST_FLAG
    u_local = (u - block * block_rows).astype(np.uint32) | flag
    counts = np.bincount(block, minlength=num_blocks).astype(np.int64)
    return u_local, v, counts, self_loops


def block_degrees(u_locals: list[npt.NDArray[np.uint32]], self_loops: IdArray, *,
                  rows: int) -> tuple[IdArray, IdArray]:
    """Undirected degree (no self-loops) and owned edges (in-degree + self-loops) of a block."""
    degree = np.zeros(rows, np.int64)
    owned = np.bincount(np.asarray(self_loops, np.int64), minlength=rows).astype(np.int64)
    for u in u_locals:
        local = (u & LOCAL_MASK).astype(np.int64)
        degree += np.bincount(local, minlength=rows)
        owned += np.bincount(local[(u & DST_FLAG) != 0], minlength=rows)
    return degree, owned


def degree_levels(degree: IdArray) -> npt.NDArray[np.int8]:
    """``floor(log2(degree))`` (``-1`` for isolated nodes) as int8."""
    degree = np.asarray(degree, np.int64)
    out = np.full(degree.size, -1, np.int8)
    pos = degree > 0
    out[pos] = (np.frexp(degree[pos].astype(np.float64))[1] - 1).astype(np.int8)
    return out


def neighbour_histogram(u_local: npt.NDArray[np.uint32], v_part: npt.NDArray[np.integer[Any]],
                        row_of: IdArray, *, num_rows: int, num_parts: int,
                        out: npt.NDArray[np.int32] | None = None) -> npt.NDArray[np.int32]:
    """Add, per counted node, its neighbours per partition to a ``[num_rows, P]`` table.

    ``row_of`` maps a block-local node to its table row (negative: not counted);
    ``v_part`` holds the neighbours' partitions (negative: not placed, ignored).
    """
    hist = np.zeros((num_rows, num_parts), np.int32) if out is None else out
    row = row_of[(u_local & LOCAL_MASK).astype(np.int64)]
    keep = (v_part >= 0) & (row >= 0)
    keys = row[keep] * num_parts + v_part[keep]
    hist += np.bincount(keys, minlength=num_rows * num_parts).reshape(num_rows, num_parts).astype(np.int32)
    return hist


def rows_of(active: npt.NDArray[np.bool_]) -> IdArray:
    """Table row of every active node (in block order), ``-1`` for the others."""
    out = np.full(active.size, -1, np.int64)
    out[active] = np.arange(int(np.count_nonzero(active)))
    return out


def priority_of(score: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int16]:
    """Monotone bucket of a non-negative integer score: ``min(127, floor(8 log2(1 + s)))``."""
    s = np.maximum(np.asarray(score, np.float64), 0.0)
    return np.minimum(NUM_PRIORITIES - 1, np.floor(8.0 * np.log2(1.0 + s))).astype(np.int16)


def group_key(stratum: npt.NDArray[np.integer[Any]], src_part: npt.NDArray[np.integer[Any]],
              dst_part: npt.NDArray[np.integer[Any]], priority: npt.NDArray[np.integer[Any]], *,
              num_parts: int) -> IdArray:
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
    weights = np.add.reduceat(np.asarray(weight, np.int64)[order], starts) if k.size else np.empty(0, np.int64)
    return k[starts], counts, weights.astype(np.int64)


def _best_open(score: npt.NDArray[np.float64], allowed: npt.NDArray[np.bool_]) -> tuple[IdArray, npt.NDArray[np.bool_]]:
    """Argmax of ``score`` over allowed columns (lowest index on ties); ``ok`` if any allowed."""
    if score.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0, bool)
    best = np.argmax(np.where(allowed, score, -np.inf), axis=1).astype(np.int64)
    return best, np.asarray(allowed.any(axis=1), dtype=bool)


def propose_placement(hist: npt.NDArray[np.integer[Any]], part: PartArray, active: npt.NDArray[np.bool_],
                      stratum: npt.NDArray[np.int32], weight: IdArray, *, penalty: npt.NDArray[np.float64],
                      weight_penalty: npt.NDArray[np.float64], open_parts: npt.NDArray[np.bool_],
                      weight_open: npt.NDArray[np.bool_]) -> tuple[IdArray, npt.NDArray[np.int16]]:
    """Fennel choice for the active (unplaced) nodes over the parts open to them:
    ``argmax_q hist[q] - penalty[q] - weight * weight_penalty[q]`` (lowest part on ties).

    A part is open to a node when its stratum has room there and, for a node of
    positive weight, ``weight_open`` says the part has weight room. ``hist`` has one
    row per active node, in block order. Returns per block row the target (``-1``: no
    proposal) and the priority (bucket of the neighbours in the target).
    """
    rows = part.size
    target = np.full(rows, _NO_TARGET, np.int64)
    prio = np.zeros(rows, np.int16)
    cand = np.flatnonzero(active)
    if cand.size == 0:
        return target, prio
    h = np.asarray(hist, np.int64)
    w = np.asarray(weight, np.float64)[cand]
    score = h - penalty[None, :] - w[:, None] * weight_penalty[None, :]
    allowed = open_parts[stratum[cand]] & (weight_open[None, :] | (w == 0)[:, None])
    best, ok = _best_open(score, allowed)
    cand, best = cand[ok], best[ok]
    target[cand] = best
    prio[cand] = priority_of(h[ok][np.arange(cand.size), best])
    return target, prio


def propose_refinement(hist: npt.NDArray[np.integer[Any]], part: PartArray, active: npt.NDArray[np.bool_],
                       stratum: npt.NDArray[np.int32], *,
                       open_parts: npt.NDArray[np.bool_]) -> tuple[IdArray, npt.NDArray[np.int16]]:
    """Label propagation: an active (placed) node proposes the part with the most
    neighbours among those with room when that beats its own part (gain > 0), else
    the best full part (reachable by a swap only); priority = bucket of the gain.

    ``hist`` has one row per active node, in block order.
    """
    rows = part.size
    target = np.full(rows, _NO_TARGET, np.int64)
    prio = np.zeros(rows, np.int16)
    cand = np.flatnonzero(active)
    if cand.size == 0:
        return target, prio
    h = np.asarray(hist, np.int64)
    idx = np.arange(cand.size)
    own = h[idx, part[cand]]
    others = np.ones(h.shape, bool)
    others[idx, part[cand]] = False
    best_open, _ = _best_open(h.astype(np.float64), others & open_parts[stratum[cand]])
    best_any, _ = _best_open(h.astype(np.float64), others)
    gain_open = np.where((others & open_parts[stratum[cand]])[idx, best_open], h[idx, best_open] - own, 0)
    best = np.where(gain_open > 0, best_open, best_any)
    gain = h[idx, best] - own
    ok = gain > 0
    target[cand[ok]] = best[ok]
    prio[cand[ok]] = priority_of(gain[ok])
    return target, prio


def node_order(orig_nids: IdArray, *, seed: int, salt: int) -> npt.NDArray[np.uint64]:
    """Seeded pseudo-random rank of each node (chunk-invariant: a hash of its ID)."""
    key = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(salt)))
    with np.errstate(over="ignore"):
        return splitmix64(np.asarray(orig_nids).astype(np.uint64) + key)


def apply_quotas(part: PartArray, target: IdArray, keys: IdArray, weight: IdArray,
                 rank: npt.NDArray[np.uint64], quota_keys: IdArray, quota_count: IdArray,
                 quota_weight: IdArray, *, num_parts: int) -> tuple[PartArray, IdArray, IdArray, IdArray]:
    """Move, in every group, the first nodes in ``rank`` order within its count and weight quota.

    ``keys`` is the group key of each block row (ignored where ``target < 0``). Returns
    the new partitions and, per group that moved nodes, ``(key, moved, moved weight)``.
    """
    new = part.copy()
    cand = np.flatnonzero(target >= 0)
    if cand.size == 0 or quota_keys.size == 0:
        empty = np.empty(0, np.int64)
        return new, empty, empty, empty
    order = np.lexsort((rank[cand], keys[cand]))
    cand = cand[order]
    k = keys[cand]
    pos = np.searchsorted(quota_keys, k)
    pos_c = np.minimum(pos, quota_keys.size - 1)
    known = quota_keys[pos_c] == k
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    first = np.repeat(starts, np.diff(np.concatenate([starts, [k.size]])))
    w = np.asarray(weight, np.int64)[cand]
    csum_w = np.cumsum(w)
    cum_w = csum_w - (csum_w[first] - w[first])
    cum_n = np.arange(k.size) - first + 1
    take = known & (cum_n <= quota_count[pos_c]) & (cum_w <= quota_weight[pos_c])
    moved = cand[take]
    new[moved] = target[moved].astype(np.int32)
    mk, mc, mw = summarise_groups(k[take], w[take])
    return new, mk, mc, mw


def fill_block(part: PartArray, todo: npt.NDArray[np.bool_], stratum: npt.NDArray[np.int32],
               rank: npt.NDArray[np.uint64], fill_strata: IdArray, fill_parts: IdArray,
               fill_counts: IdArray) -> PartArray:
    """Place the ``todo`` nodes: in each stratum, nodes in ``rank`` order go to the listed
    parts, ``fill_counts`` each (rows of ``(stratum, part, count)``; counts sum per stratum
    to the stratum's ``todo`` nodes in this block)."""
    new = part.copy()
    for s in np.unique(fill_strata):
        nodes = np.flatnonzero(todo & (stratum == s))
        nodes = nodes[np.argsort(rank[nodes], kind="stable")]
        sel = fill_strata == s
        new[nodes] = np.repeat(fill_parts[sel], fill_counts[sel]).astype(np.int32)
    return new


def level_order(u_local: npt.NDArray[np.uint32], block_counts: IdArray, level_of: npt.NDArray[np.int8], *,
                max_level: int) -> tuple[IdArray, IdArray]:
    """Reorder block-ordered entries by (block, falling level of ``u``).

    ``level_of`` gives each entry's ``u`` level. Returns the permutation and the entry
    counts per ``(block, level)`` as ``[blocks, max_level + 1]``.
    """
    blocks = np.repeat(np.arange(block_counts.size, dtype=np.int64), block_counts)
    lev = np.clip(level_of.astype(np.int64), 0, max_level)
    key = blocks * (max_level + 1) + (max_level - lev)
    order = np.argsort(key.astype(np.uint16 if key.size and key.max() < 65536 else np.uint64), kind="stable")
    counts = np.bincount(blocks * (max_level + 1) + lev, minlength=block_counts.size * (max_level + 1))
    return order, counts.reshape(block_counts.size, max_level + 1).astype(np.int64)
