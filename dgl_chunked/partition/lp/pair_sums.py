"""Distinct ``(a, b)`` pairs with their summed weights: the group-by under the
multilevel ``lp`` method's clustering, contraction and purification
(:mod:`.coarsen_kernels`), compiled with numba.

Profiled on the 250k-node / 2.5M-edge planted-community graph at 8 parts (issue #38),
``numpy.argsort`` of the combined ``a * width + b`` key took 28 s of the run's 35 s of
CPU. The pairs are grouped here by a counting sort on ``a`` (linear; ``a`` is a
block-local node or a cluster ID of one block's range) and sorted by ``b`` within each
``a`` (a node's few neighbouring clusters: insertion sort). The result is the same
arrays, sorted by ``(a, b)``, as the argsort; the sums are exact (integer weights), so
the ``lp`` output does not change. ``a`` spanning more than ``_SPAN_FACTOR`` times the
pairs (the counting array would outgrow the pairs) takes the argsort.

The contraction's :func:`mapped_pair_sums` sorts the pairs as one integer key instead,
``a`` in the high bits: by the key's top bits into buckets that fit the CPU's cache,
then each bucket by the rest (a radix sort), the same order and sums.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp.jit import FALSE, TRUE, ZERO, HostKernel, compiled
from dgl_chunked.partition.lp.node_kernels import counting_offsets, ints

__all__ = ["SortedPairs", "mapped_pair_sums", "pair_sums", "sorted_pairs"]

_SPAN_FACTOR = 4


def _by_key(key: Any, lo: int, extent: int, x: Any, y: Any) -> Any:  # pragma: no cover - compiled
    """A stable counting sort of ``x`` and ``y`` by ``key``: the start of each key's run
    (:func:`.node_kernels.counting_offsets`) and the sorted copies."""
    start = counting_offsets(key, lo, extent)
    pos = start[:-1].copy()
    ox = np.empty(x.size, x.dtype)
    oy = np.empty(y.size, y.dtype)
    for i in range(key.size):
        k = key[i] - lo
        p = pos[k]
        ox[p] = x[i]
        oy[p] = y[i]
        pos[k] = p + 1
    return start, ox, oy


def _merged(
    a: Any, b: Any, w: Any, lo: int, extent: int, presorted: bool, own: bool
) -> Any:  # pragma: no cover - compiled
    """The distinct ``(a, b)`` pairs with summed ``w``: a stable counting sort by ``a``,
    a shell sort by ``b`` within each ``a`` (none when ``presorted`` by ``b``), equal runs
    merged in place. ``own``: ``a`` is this module's copy, reused for the result."""
    start, bs, ws = _by_key(a, lo, extent, b, w)
    n = a.size
    out_a = a if own else np.empty(n, a.dtype)  # written at m <= the entries read so far
    m = 0
    for k in range(extent):
        s, e = start[k], start[k + 1]
        if e == s:
            continue
        gap = 1 if presorted else e - s
        while gap > 1:  # shell sort by b (gaps n/2.2...; the last pass is an insertion sort)
            gap = 1 if gap == 2 else int(gap / 2.2)
            for i in range(s + gap, e):
                kb, kw = bs[i], ws[i]
                j = i
                while j - gap >= s and bs[j - gap] > kb:
                    bs[j] = bs[j - gap]
                    ws[j] = ws[j - gap]
                    j -= gap
                bs[j] = kb
                ws[j] = kw
        out_a[m] = k + lo
        bs[m] = bs[s]  # merged in place: the m-th distinct pair is written at m <= s
        ws[m] = ws[s]
        for i in range(s + 1, e):
            if bs[i] == bs[m]:
                ws[m] += ws[i]
            else:
                m += 1
                out_a[m] = k + lo
                bs[m] = bs[i]
                ws[m] = ws[i]
        m += 1
    return out_a[:m], bs[:m], ws[:m]


def _grouped(a: Any, b: Any, w: Any, lo: int, extent: int, own: bool) -> Any:  # pragma: no cover - compiled
    """:func:`_merged`, after a counting sort by ``b`` when ``b``'s range is small (then
    the stable one by ``a`` sorts by ``(a, b)``)."""
    n = a.size
    if n > 0:
        b_lo, b_hi = _used_range(b)  # cluster IDs, >= 0; not b.min() and b.max(): two more compiled functions
        b_extent = b_hi - b_lo + 1
        if b_extent <= 4 * n + 1024:
            start, a1, w1 = _by_key(b, b_lo, b_extent, a, w)
            b1 = np.empty(n, b.dtype)
            for k in range(b_extent):
                b1[start[k] : start[k + 1]] = k + b_lo
            return _merged(a1, b1, w1, lo, extent, TRUE, TRUE)
    return _merged(a, b, w, lo, extent, FALSE, own)


def _sort_low_bits(
    keys: Any, ws: Any, tk: Any, tw: Any, s: int, e: int, bits: int, hist: Any
) -> None:  # pragma: no cover
    """Sort ``keys[s:e]`` (with ``ws``) by their low ``bits`` bits: an insertion sort when
    short, else a least-significant-digit radix sort in passes of at most
    :data:`_DIGIT_BITS` bits through the buffers ``tk``, ``tw`` (stable; ``hist``: the
    counts, ``2**_DIGIT_BITS + 1`` long). A bucket of :func:`_mapped_sorted` fits the CPU's
    cache, so the passes' scattered writes stay in it."""
    n = e - s
    if n < 2 or bits <= 0:
        return
    if n <= 32:
        for i in range(s + 1, e):
            k, x = keys[i], ws[i]
            j = i
            while j > s and keys[j - 1] > k:
                keys[j] = keys[j - 1]
                ws[j] = ws[j - 1]
                j -= 1
            keys[j] = k
            ws[j] = x
        return
    passes = (bits + _DIGIT_BITS - 1) // _DIGIT_BITS
    digit = (bits + passes - 1) // passes
    mask = np.uint64((1 << digit) - 1)
    src_k, src_w, dst_k, dst_w = keys, ws, tk, tw
    so, do = s, 0  # where the data starts in the source and the destination
    in_buffer = False
    for p in range(passes):
        shift = np.uint64(p * digit)
        h = hist[: (1 << digit) + 1]
        h[:] = 0
        for i in range(so, so + n):
            h[((src_k[i] >> shift) & mask) + 1] += 1
        if _one_value(h, n):  # nothing moves
            continue
        for d in range(1 << digit):
            h[d + 1] += h[d]
        for i in range(so, so + n):
            k = src_k[i]
            d = (k >> shift) & mask
            q = h[d]
            dst_k[do + q] = k
            dst_w[do + q] = src_w[i]
            h[d] = q + 1
        src_k, src_w, dst_k, dst_w = dst_k, dst_w, src_k, src_w
        so, do = do, so
        in_buffer = not in_buffer
    if in_buffer:
        for i in range(n):
            keys[s + i] = src_k[so + i]
            ws[s + i] = src_w[so + i]


def _one_value(h: Any, n: int) -> bool:  # pragma: no cover - compiled
    """Whether a count of ``h`` is ``n`` (not ``h.max()``: one more function to compile)."""
    for c in h:  # noqa: SIM110 - a generator in any() is not compiled as a loop
        if c == n:
            return True
    return False


def _mapped_sorted(
    u: Any, v: Any, w: Any, umap: Any, vmap: Any, a_lo: int, b_lo: int, b_bits: int, bits: int, top: int, chunk: int
) -> Any:  # pragma: no cover - compiled
    """:func:`sorted_pairs`: a counting sort of the keys by their ``top`` high bits into
    buckets of a few thousand pairs, each then sorted by the rest in cache
    (:func:`_sort_low_bits`); equal keys merged. The key is written out in each loop
    (here twice, in :func:`_hashed_sorted` once): a shared compiled helper returning it
    or a no-key value, inlined or not, made these kernels 2-7% slower on captured blocks
    of the 1M-node graph (issue #38)."""
    n = u.size
    shift = np.uint64(bits - top)
    nb = 1 << top
    start = np.zeros(nb + 1, np.int64)
    # vmap[v] read per ``chunk`` entries in a loop of its own: beside the write that needs it, each read of a table
    # out of cache (10M nodes) waited for the last (issue #38: random neighbours, 10M nodes: 157 -> 77 ns per entry)
    ys = np.empty(min(n, chunk), vmap.dtype)
    for c in range(0, n, chunk):
        e = min(c + chunk, n)
        for i in range(c, e):
            ys[i - c] = vmap[v[i]]
        for i in range(c, e):
            x, y = umap[u[i]], ys[i - c]
            if x != y and x >= 0 and y >= 0:
                k = (np.uint64(x - a_lo) << np.uint64(b_bits)) | np.uint64(y - b_lo)
                start[(k >> shift) + 1] += 1
    for d in range(nb):
        start[d + 1] += start[d]
    m = start[nb]
    keys = np.empty(m, np.uint64)
    ws = np.empty(m, w.dtype)
    pos = start[:-1].copy()
    for c in range(0, n, chunk):
        e = min(c + chunk, n)
        for i in range(c, e):
            ys[i - c] = vmap[v[i]]
        for i in range(c, e):
            x, y = umap[u[i]], ys[i - c]
            if x != y and x >= 0 and y >= 0:
                k = (np.uint64(x - a_lo) << np.uint64(b_bits)) | np.uint64(y - b_lo)
                t = k >> shift
                q = pos[t]
                keys[q] = k
                ws[q] = w[i]
                pos[t] = q + 1
    largest = 0
    for d in range(nb):
        largest = max(largest, start[d + 1] - start[d])
    tk = np.empty(largest, np.uint64)
    tw = np.empty(largest, w.dtype)
    hist = np.empty((1 << _DIGIT_BITS) + 1, np.int64)
    for d in range(nb):
        _sort_low_bits(keys, ws, tk, tw, start[d], start[d + 1], bits - top, hist)
    j = -1
    for i in range(m):  # equal keys merged in place: the j-th distinct one is written at j <= i
        if j >= 0 and keys[i] == keys[j]:
            ws[j] += ws[i]
        else:
            j += 1
            keys[j] = keys[i]
            ws[j] = ws[i]
    return keys[: j + 1], ws[: j + 1]


def _hashed_sorted(
    u: Any, v: Any, w: Any, umap: Any, vmap: Any, a_lo: int, b_lo: int, b_bits: int, bits: int, log_slots: int
) -> Any:  # pragma: no cover - compiled
    """:func:`_mapped_sorted` of the first entries, through a hash table of
    ``2**log_slots`` keys (linear probing; the sums in ``w``'s type), then a radix sort
    of the distinct keys of ``bits`` bits: where it stopped (the first entry whose pair
    found the table half full; ``u.size`` when none), and the keys and sums of the
    entries before. :func:`_sort_low_bits`, not ``np.argsort``: numba compiled its
    quicksort for this alone (4 s of the first run's 18 s of compiling, issue #38)."""
    size = 1 << log_slots
    mask = np.uint64(size - 1)
    shift = np.uint64(64 - log_slots)
    unused = np.uint64(0xFFFFFFFFFFFFFFFF)  # no key: a key has fewer than 64 bits
    table = np.full(size, unused, np.uint64)
    sums = np.zeros(size, w.dtype)
    room = size >> 1
    m = 0
    stop = u.size
    for i in range(u.size):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            k = (np.uint64(x - a_lo) << np.uint64(b_bits)) | np.uint64(y - b_lo)
            h = (k * np.uint64(0x9E3779B97F4A7C15)) >> shift  # Fibonacci hashing: the top bits
            while table[h] != k and table[h] != unused:
                h = (h + np.uint64(1)) & mask
            if table[h] == unused:
                if m == room:
                    stop = i
                    break
                table[h] = k
                m += 1
            sums[h] += w[i]
    keys = np.empty(m, np.uint64)
    ws = np.empty(m, w.dtype)
    j = 0
    for slot in range(size):
        if table[slot] != unused:
            keys[j] = table[slot]
            ws[j] = sums[slot]
            j += 1
    hist = np.empty((1 << _DIGIT_BITS) + 1, np.int64)
    _sort_low_bits(keys, ws, np.empty(m, np.uint64), np.empty(m, w.dtype), ZERO, keys.size, bits, hist)
    return stop, keys, ws


def _merged_sums(ak: Any, aw: Any, bk: Any, bw: Any) -> Any:  # pragma: no cover - compiled
    """The union of two sorted runs of distinct keys, the sums of keys in both added."""
    keys = np.empty(ak.size + bk.size, np.uint64)
    ws = np.empty(ak.size + bk.size, aw.dtype)
    i = j = m = 0
    while i < ak.size or j < bk.size:
        if j == bk.size or (i < ak.size and ak[i] < bk[j]):
            keys[m], ws[m] = ak[i], aw[i]
            i += 1
        elif i == ak.size or bk[j] < ak[i]:
            keys[m], ws[m] = bk[j], bw[j]
            j += 1
        else:
            keys[m], ws[m] = ak[i], aw[i] + bw[j]
            i += 1
            j += 1
        m += 1
    return keys[:m], ws[:m]


def _decoded(keys: Any, a_lo: int, b_lo: int, b_bits: int, a: Any, b: Any) -> None:  # pragma: no cover - compiled
    """``a`` and ``b`` of every key of :func:`_mapped_sorted`."""
    b_mask = np.uint64((1 << b_bits) - 1)
    for i in range(keys.size):
        a[i] = (keys[i] >> np.uint64(b_bits)) + a_lo
        b[i] = (keys[i] & b_mask) + b_lo


def _used_range(x: Any) -> Any:  # pragma: no cover - compiled
    """The least and greatest value >= 0 of ``x`` ((0, 0) when none)."""
    lo, hi = -1, -1
    for i in range(x.size):
        if x[i] >= 0:
            if lo < 0 or x[i] < lo:
                lo = x[i]
            if x[i] > hi:
                hi = x[i]
    return max(lo, 0), max(hi, 0)


_DIGIT_BITS = 11
_GATHER_CHUNK = 1 << 12  # entries whose clusters are read ahead of their keys (16 kB of int32)
_BUCKET_PAIRS = 1 << 14  # pairs per bucket of the first counting sort (about 200 kB: the CPU's cache)
_TOP_BITS = 9  # at most 512 buckets: the counting sort's writes go to few places at a time


_HASH_SPAN = 1 << 16  # cluster IDs spanning at most this many (the purified level's, the coarsest ones)
_HASH_LOG_SLOTS = 18  # their pairs summed in a table of 2**18 keys first (4 MB: the CPU's cache)

_HELPERS = ("counting_offsets", "_by_key", "_merged", "_grouped", "_one_value", "_sort_low_bits", "_used_range")
_KERNELS = {"grouped": "_grouped", "range": "_used_range", "sorted": "_mapped_sorted", "hashed": "_hashed_sorted"}
_KERNELS |= {"merged": "_merged_sums", "decoded": "_decoded"}


@functools.cache
def _kernel(name: str = "grouped") -> HostKernel:
    """The compiled kernel ``name`` (:func:`.jit.compiled`)."""
    return compiled(globals(), _HELPERS, _KERNELS[name])


def pair_sums(a: IdArray, b: IdArray, w: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """Distinct ``(a, b)`` pairs sorted by ``(a, b)``, with the sum of their integer
    ``w``; ``a, b >= 0``. int32 inputs give int32 results (the sums must fit ``w``'s type).

    Examples
    --------
    >>> a, b, w = pair_sums(np.array([1, 0, 1, 1]), np.array([5, 2, 3, 5]), np.array([1, 1, 1, 2]))
    >>> a.tolist(), b.tolist(), w.tolist()
    ([0, 1, 1], [2, 3, 5], [1, 1, 3])
    """
    if a.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    a, b, w = (ints(x) for x in (a, b, w))
    lo, hi = int(a.min()), int(a.max())
    if hi - lo + 1 > _SPAN_FACTOR * a.size + 1024:
        return _argsort_sums(a, b, w)
    out: tuple[IdArray, IdArray, IdArray] = _kernel()(
        a,
        b,
        w,
        lo,
        hi - lo + 1,
        False,
    )
    return out


def _argsort_sums(a: IdArray, b: IdArray, w: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """:func:`pair_sums` by one argsort of a combined key (a two-key lexsort was 3x slower)."""
    width = np.int64(int(b.max()) + 1)
    key = a.astype(np.int64) * width + b
    order = np.argsort(key)
    key, w = key[order], np.asarray(w, np.int64)[order]
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    key = key[starts]
    return key // width, key % width, np.add.reduceat(w, starts)


class SortedPairs(NamedTuple):
    """Distinct pairs ``(a, b)`` as sorted keys ``(a - a_lo) << b_bits | (b - b_lo)``
    (uint64) with their summed weights (:func:`sorted_pairs`)."""

    keys: npt.NDArray[np.uint64]
    weights: IdArray
    a_lo: int
    b_lo: int
    b_bits: int


def sorted_pairs(u: IdArray, v: IdArray, w: IdArray, umap: IdArray, vmap: IdArray, *, few: bool = False) -> SortedPairs:
    """The pairs of :func:`mapped_pair_sums` as sorted keys (``a`` high, ``b`` low), for
    a caller that writes them out itself (:func:`.entry_kernels.pair_pieces`: no
    ``a`` and ``b`` arrays). The weights have ``w``'s type (int32 or int64).

    The pairs are sorted as one integer key: first by its high bits into buckets of
    about :data:`_BUCKET_PAIRS`, then each bucket by the rest while it is in the CPU's
    cache. The counting sorts by ``b`` then ``a`` over their whole ranges that this
    replaced (issue #38) wrote every pair to a random place of arrays far larger than
    the cache, twice: 8.4 s of thread time at 1M nodes / 10M edges; this sort takes
    about half as long on the same blocks (a level-0 block of that graph, 5.2M entries:
    465 -> 240 ms of CPU).

    With ``few`` (the caller expects few distinct pairs: the purified level's, whose
    11k clusters at 1M nodes / 10M edges hold 9k-70k of a level-0 block's 5.2M
    entries) and cluster IDs spanning under :data:`_HASH_SPAN`, the pairs are summed in
    a hash table that stays in the cache first, and only the distinct ones sorted
    (those contractions: 126-223 -> 63-96 ms each); when they outgrow it (half of its
    ``2**_HASH_LOG_SLOTS`` keys), the rest of the entries take the bucketed sort and
    the two sorted runs are merged (no entry summed twice). Not the default: on the
    coarse levels of that graph, 0.3-1.5M distinct pairs per block, the table fills
    early and the merge made those contractions 30-50% slower.
    """
    u, v, w, umap, vmap = (ints(x) for x in (u, v, w, umap, vmap))
    if u.size == 0:
        return SortedPairs(np.empty(0, np.uint64), np.empty(0, w.dtype), 0, 0, 1)
    a_lo, a_hi = _kernel("range")(umap)
    b_lo, b_hi = _kernel("range")(vmap)
    b_bits = max(1, int(b_hi - b_lo).bit_length())
    bits = max(1, int(a_hi - a_lo).bit_length()) + b_bits
    hashed = None
    if few and max(a_hi - a_lo, b_hi - b_lo) < _HASH_SPAN and u.size > 1 << _HASH_LOG_SLOTS:
        stop, hk, hw = _kernel("hashed")(u, v, w, umap, vmap, int(a_lo), int(b_lo), b_bits, bits, _HASH_LOG_SLOTS)
        if stop == u.size:
            return SortedPairs(hk, hw, int(a_lo), int(b_lo), b_bits)
        hashed = (hk, hw)
        u, v, w = u[stop:], v[stop:], w[stop:]  # the rest sorted, then merged with the table's
    top = min(_TOP_BITS, bits, max(0, (u.size // _BUCKET_PAIRS).bit_length()))
    keys, ws = _kernel("sorted")(u, v, w, umap, vmap, int(a_lo), int(b_lo), b_bits, bits, top, _GATHER_CHUNK)
    if hashed is not None:
        keys, ws = _kernel("merged")(*hashed, keys, ws)
    return SortedPairs(keys, ws, int(a_lo), int(b_lo), b_bits)


def mapped_pair_sums(
    u: IdArray, v: IdArray, w: IdArray, umap: IdArray, vmap: IdArray
) -> tuple[IdArray, IdArray, IdArray]:
    """:func:`pair_sums` of ``(umap[u], vmap[v], w)`` without the pairs where
    ``umap[u] == vmap[v]``, in one compiled pass (the contraction: ``u`` block-local,
    ``v`` global; entries whose node maps to -1 are dropped). The results have the types
    of ``umap``, ``vmap`` and ``w`` (int32 or int64: the sums must fit ``w``'s); see
    :func:`sorted_pairs`."""
    u, v, w, umap, vmap = (ints(x) for x in (u, v, w, umap, vmap))
    if u.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    got = sorted_pairs(u, v, w, umap, vmap)
    a, b = np.empty(got.keys.size, umap.dtype), np.empty(got.keys.size, vmap.dtype)
    _kernel("decoded")(got.keys, got.a_lo, got.b_lo, got.b_bits, a, b)
    return a, b, got.weights
