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
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp.node_kernels import counting_offsets, ints

__all__ = ["mapped_pair_sums", "pair_sums"]

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
        b_lo = b.min()
        b_extent = b.max() - b_lo + 1
        if b_extent <= 4 * n + 1024:
            start, a1, w1 = _by_key(b, b_lo, b_extent, a, w)
            b1 = np.empty(n, b.dtype)
            for k in range(b_extent):
                b1[start[k] : start[k + 1]] = k + b_lo
            return _merged(a1, b1, w1, lo, extent, True, True)
    return _merged(a, b, w, lo, extent, False, own)


def _mapped(u: Any, v: Any, w: Any, umap: Any, vmap: Any, lo: int, extent: int) -> Any:  # pragma: no cover - compiled
    n = u.size
    a = np.empty(n, umap.dtype)
    b = np.empty(n, vmap.dtype)
    ws = np.empty(n, w.dtype)
    m = 0
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            a[m] = x
            b[m] = y
            ws[m] = w[i]
            m += 1
    return _grouped(a[:m], b[:m], ws[:m], lo, extent, True)


def _mapped_radix(
    u: Any, v: Any, w: Any, umap: Any, vmap: Any, lo: int, extent: int, b_lo: int, b_extent: int
) -> Any:  # pragma: no cover - compiled
    """:func:`_mapped` for a small range of ``vmap``: the pairs are mapped twice instead of
    kept, and counting-sorted by b, then by a (three arrays of the entries' size less)."""
    n = u.size
    pos = np.zeros(b_extent + 1, np.int64)
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            pos[y - b_lo + 1] += 1
    for k in range(b_extent):
        pos[k + 1] += pos[k]
    m = pos[b_extent]
    a1 = np.empty(m, umap.dtype)
    b1 = np.empty(m, vmap.dtype)
    w1 = np.empty(m, w.dtype)
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            p = pos[y - b_lo]
            a1[p] = x
            b1[p] = y
            w1[p] = w[i]
            pos[y - b_lo] = p + 1
    return _merged(a1, b1, w1, lo, extent, True, True)


_LOCK = threading.Lock()


@functools.cache
def _kernel(name: str = "grouped") -> Any:
    """The compiled kernel ``name``; its helpers first, in this module's namespace, where
    the kernels look them up."""
    import numba

    jit = numba.njit(cache=True, nogil=True)
    with _LOCK:
        for helper in ("counting_offsets", "_by_key", "_merged", "_grouped"):
            if not isinstance(globals()[helper], numba.core.dispatcher.Dispatcher):
                globals()[helper] = jit(globals()[helper])
        return {"grouped": globals()["_grouped"], "mapped": jit(_mapped), "radix": jit(_mapped_radix)}[name]


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


def mapped_pair_sums(
    u: IdArray, v: IdArray, w: IdArray, umap: IdArray, vmap: IdArray
) -> tuple[IdArray, IdArray, IdArray]:
    """:func:`pair_sums` of ``(umap[u], vmap[v], w)`` without the pairs where
    ``umap[u] == vmap[v]``, in one compiled pass (the contraction: ``u`` block-local,
    ``v`` global; entries whose node maps to -1 are dropped). The results have the types
    of ``umap``, ``vmap`` and ``w`` (int32 or int64: the sums must fit ``w``'s)."""
    u, v, w, umap, vmap = (ints(x) for x in (u, v, w, umap, vmap))
    if u.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    used = umap[umap >= 0]
    lo, hi = (int(used.min()), int(used.max())) if used.size else (0, 0)
    if hi - lo + 1 > _SPAN_FACTOR * u.size + 1024:
        a, b = umap[u], vmap[v]
        keep = (a != b) & (a >= 0) & (b >= 0)
        return pair_sums(a[keep], b[keep], w[keep])
    targets = vmap[vmap >= 0]
    b_lo, b_hi = (int(targets.min()), int(targets.max())) if targets.size else (0, 0)
    out: tuple[IdArray, IdArray, IdArray]
    if b_hi - b_lo + 1 <= _SPAN_FACTOR * u.size + 1024:
        out = _kernel("radix")(u, v, w, umap, vmap, lo, hi - lo + 1, b_lo, b_hi - b_lo + 1)
    else:
        out = _kernel("mapped")(u, v, w, umap, vmap, lo, hi - lo + 1)
    return out
