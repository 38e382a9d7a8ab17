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

__all__ = ["mapped_pair_sums", "pair_sums"]

_SPAN_FACTOR = 4


def _grouped(a: Any, b: Any, w: Any, lo: int, extent: int) -> Any:  # pragma: no cover - compiled
    n = a.size
    presorted = False
    if n > 0:  # b's range small enough: a counting sort by b first, so that the stable one by a sorts by (a, b)
        b_lo = b.min()
        b_extent = b.max() - b_lo + 1
        if b_extent <= 4 * n + 1024:
            count = np.zeros(b_extent + 1, np.int64)
            for i in range(n):
                count[b[i] - b_lo + 1] += 1
            for k in range(b_extent):
                count[k + 1] += count[k]
            a1 = np.empty(n, np.int64)
            b1 = np.empty(n, np.int64)
            w1 = np.empty(n, np.int64)
            for i in range(n):
                p = count[b[i] - b_lo]
                a1[p] = a[i]
                b1[p] = b[i]
                w1[p] = w[i]
                count[b[i] - b_lo] = p + 1
            a, b, w = a1, b1, w1
            presorted = True
    start = np.zeros(extent + 1, np.int64)
    for i in range(n):
        start[a[i] - lo + 1] += 1
    for k in range(extent):
        start[k + 1] += start[k]
    pos = start[:-1].copy()
    bs = np.empty(n, np.int64)
    ws = np.empty(n, np.int64)
    for i in range(n):
        k = a[i] - lo
        p = pos[k]
        bs[p] = b[i]
        ws[p] = w[i]
        pos[k] = p + 1
    if presorted:  # free the copies sorted by b
        a = b = w = np.empty(0, np.int64)
    out_a = np.empty(n, np.int64)
    out_b = bs  # merged in place: the m-th distinct pair is written at m <= the entries read so far
    out_w = ws
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
        out_b[m] = bs[s]
        out_w[m] = ws[s]
        for i in range(s + 1, e):
            if bs[i] == out_b[m]:
                out_w[m] += ws[i]
            else:
                m += 1
                out_a[m] = k + lo
                out_b[m] = bs[i]
                out_w[m] = ws[i]
        m += 1
    return out_a[:m], out_b[:m], out_w[:m]


def _mapped(u: Any, v: Any, w: Any, umap: Any, vmap: Any, lo: int, extent: int) -> Any:  # pragma: no cover - compiled
    n = u.size
    a = np.empty(n, np.int64)
    b = np.empty(n, np.int64)
    ws = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            a[m] = x
            b[m] = y
            ws[m] = w[i]
            m += 1
    return _grouped(a[:m], b[:m], ws[:m], lo, extent)


def _mapped_radix(
    u: Any, v: Any, w: Any, umap: Any, vmap: Any, lo: int, extent: int, b_lo: int, b_extent: int
) -> Any:  # pragma: no cover - compiled
    """:func:`_mapped` for a small range of ``vmap``: the pairs are mapped twice instead of
    kept, and counting-sorted by b, then by a (three arrays of the entries' size less)."""
    n = u.size
    count_b = np.zeros(b_extent + 1, np.int64)
    start = np.zeros(extent + 1, np.int64)
    m = 0
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            count_b[y - b_lo + 1] += 1
            start[x - lo + 1] += 1
            m += 1
    for k in range(b_extent):
        count_b[k + 1] += count_b[k]
    for k in range(extent):
        start[k + 1] += start[k]
    a1 = np.empty(m, np.int64)
    b1 = np.empty(m, np.int64)
    w1 = np.empty(m, np.int64)
    for i in range(n):
        x = umap[u[i]]
        y = vmap[v[i]]
        if x != y and x >= 0 and y >= 0:
            p = count_b[y - b_lo]
            a1[p] = x
            b1[p] = y
            w1[p] = w[i]
            count_b[y - b_lo] = p + 1
    pos = start[:-1].copy()
    bs = np.empty(m, np.int64)
    ws = np.empty(m, np.int64)
    for i in range(m):
        k = a1[i] - lo
        p = pos[k]
        bs[p] = b1[i]
        ws[p] = w1[i]
        pos[k] = p + 1
    a1 = b1 = w1 = np.empty(0, np.int64)
    out_a = np.empty(m, np.int64)
    j = 0  # merged in place, as in _grouped
    for k in range(extent):
        s, e = start[k], start[k + 1]
        if e == s:
            continue
        out_a[j] = k + lo
        bs[j] = bs[s]
        ws[j] = ws[s]
        for i in range(s + 1, e):
            if bs[i] == bs[j]:
                ws[j] += ws[i]
            else:
                j += 1
                out_a[j] = k + lo
                bs[j] = bs[i]
                ws[j] = ws[i]
        j += 1
    return out_a[:j], bs[:j], ws[:j]


_LOCK = threading.Lock()


@functools.cache
def _kernel(name: str = "grouped") -> Any:
    """The compiled kernel ``name`` (``_grouped`` first, in this module's namespace,
    where ``_mapped`` looks it up)."""
    import numba

    jit = numba.njit(cache=True, nogil=True)
    with _LOCK:
        if not isinstance(globals()["_grouped"], numba.core.dispatcher.Dispatcher):
            globals()["_grouped"] = jit(globals()["_grouped"])
        return {"grouped": globals()["_grouped"], "mapped": jit(_mapped), "radix": jit(_mapped_radix)}[name]


def pair_sums(a: IdArray, b: IdArray, w: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """Distinct ``(a, b)`` pairs sorted by ``(a, b)``, with the sum of their integer
    ``w``; ``a, b >= 0``.

    Examples
    --------
    >>> a, b, w = pair_sums(np.array([1, 0, 1, 1]), np.array([5, 2, 3, 5]), np.array([1, 1, 1, 2]))
    >>> a.tolist(), b.tolist(), w.tolist()
    ([0, 1, 1], [2, 3, 5], [1, 1, 3])
    """
    if a.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    lo, hi = int(a.min()), int(a.max())
    if hi - lo + 1 > _SPAN_FACTOR * a.size + 1024:
        return _argsort_sums(a, b, w)
    out: tuple[IdArray, IdArray, IdArray] = _kernel()(
        np.ascontiguousarray(a, np.int64),
        np.ascontiguousarray(b, np.int64),
        np.ascontiguousarray(w, np.int64),
        lo,
        hi - lo + 1,
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
    ``v`` global; entries whose node maps to -1 are dropped)."""
    u, v, w, umap, vmap = (np.ascontiguousarray(x, np.int64) for x in (u, v, w, umap, vmap))
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
