"""Compiled passes that write the coarse levels' entry files (:mod:`.coarsen_tasks`,
``ML/<L>/e-<s>.bin``): one writer's entries grouped by destination block, narrow and
column by column (numba; no Dask, no I/O).

A piece of an entry file is its ``k`` entries as three columns one after the other
(``k`` local ``u``, ``k`` ``v``, ``k`` ``w``), so that a reader copies each column
into its own array in one contiguous stretch. Before issue #38's rewrite the writer
stacked the three columns (``np.vstack``), scanned them for the narrow type, and
transposed them into rows (``astype`` of the transpose, then a C-order copy): 12% of
the thread time of ``lp`` at 1M nodes / 10M edges, and its reader's strided copies
back into columns another 12%. Here two passes over the entries do it: one for the
pieces' sizes and the value range, one that writes every value at its place; the
contraction's sorted pairs, whose pieces are runs of their keys, are decoded one column
of one piece at a time into a buffer that is written out before the next
(:func:`pair_pieces`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp.jit import ZERO, HostKernel, compiled
from dgl_chunked.partition.lp.node_kernels import ints
from dgl_chunked.partition.lp.pair_sums import SortedPairs

__all__ = ["NARROW_TYPES", "PairPieces", "narrow_dtype", "pair_pieces", "split_entries"]

NARROW_TYPES = tuple(np.dtype(t) for t in ("u1", "u2", "u4", "i1", "i2", "i4"))


def narrow_dtype(lo: int, hi: int) -> np.dtype[Any]:
    """The narrowest of uint8/16/32 (int8/16/32 when ``lo`` < 0) that holds every integer
    of ``[lo, hi]``; int64 when none does."""
    for dtype in NARROW_TYPES[:3] if lo >= 0 else NARROW_TYPES[3:]:
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return dtype
    return np.dtype(np.int64)


def _block_of(x: Any, offsets: Any, guess: int) -> int:  # pragma: no cover - compiled
    """The block ``t`` with ``offsets[t] <= x < offsets[t + 1]``, -1 when none (``guess``
    first: the entries come sorted by ``x``, so the last one's block mostly holds)."""
    if offsets[guess] <= x < offsets[guess + 1]:
        return guess
    if x < offsets[0] or x >= offsets[offsets.size - 1]:
        return -1
    lo, hi = 0, offsets.size - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offsets[mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


def _sizes(u: Any, v: Any, w: Any, offsets: Any) -> Any:  # pragma: no cover - compiled
    """Entries per block of ``u`` and the range of the values to write (``u`` local)."""
    counts = np.zeros(offsets.size - 1, np.int64)
    lo = np.int64(0)
    hi = np.int64(0)
    t = ZERO  # block of the last entry
    for i in range(u.size):
        b = _block_of(u[i], offsets, t)
        if b < 0:
            continue
        t = b
        counts[t] += 1
        x = np.int64(u[i]) - offsets[t]
        lo = min(lo, x, np.int64(v[i]), np.int64(w[i]))
        hi = max(hi, x, np.int64(v[i]), np.int64(w[i]))
    return counts, lo, hi


def _fill(u: Any, v: Any, w: Any, offsets: Any, bounds: Any, out: Any) -> None:  # pragma: no cover - compiled
    """Write every entry into its block's piece of ``out``: piece ``t`` starts at
    ``3 * bounds[t]`` and holds its ``k`` local ``u``, then ``v``, then ``w``; the
    entries of a block keep their order."""
    pos = bounds[:-1].copy()
    t = ZERO  # block of the last entry
    for i in range(u.size):
        b = _block_of(u[i], offsets, t)
        if b < 0:
            continue
        t = b
        base = 3 * bounds[t]
        k = bounds[t + 1] - bounds[t]
        j = pos[t] - bounds[t]
        pos[t] += 1
        out[base + j] = u[i] - offsets[t]
        out[base + k + j] = v[i]
        out[base + 2 * k + j] = w[i]


def _pair_sizes(keys: Any, ws: Any, a_lo: int, b_lo: int, b_bits: int, offsets: Any) -> Any:  # pragma: no cover
    """:func:`_sizes` of the pairs ``(a, b)`` of sorted keys (:func:`.pair_sums.sorted_pairs`),
    and their weight (:func:`pair_pieces`)."""
    counts = np.zeros(offsets.size - 1, np.int64)
    b_mask = np.uint64((1 << b_bits) - 1)
    lo = np.int64(0)
    hi = np.int64(0)
    weight = np.int64(0)
    t = ZERO  # block of the last entry
    for i in range(keys.size):
        a = np.int64(keys[i] >> np.uint64(b_bits)) + a_lo
        x = _block_of(a, offsets, t)
        if x < 0:
            continue
        t = x
        counts[t] += 1
        b = np.int64(keys[i] & b_mask) + b_lo
        local = a - offsets[t]
        lo = min(lo, local, b, np.int64(ws[i]))
        hi = max(hi, local, b, np.int64(ws[i]))
        weight += ws[i]
    return counts, lo, hi, weight


def _pair_column(
    keys: Any, ws: Any, a_lo: int, b_lo: int, b_bits: int, start: int, base: int, column: int, out: Any
) -> None:  # pragma: no cover - compiled
    """Column ``column`` (0: ``a - base``, 1: ``b``, 2: the weight) of the pairs
    ``keys[start:start + out.size]`` (:func:`.pair_sums.sorted_pairs`), into ``out``."""
    b_mask = np.uint64((1 << b_bits) - 1)
    for j in range(out.size):
        i = start + j
        if column == 0:
            out[j] = np.int64(keys[i] >> np.uint64(b_bits)) + a_lo - base
        elif column == 1:
            out[j] = np.int64(keys[i] & b_mask) + b_lo
        else:
            out[j] = ws[i]


_KERNELS = {"sizes": "_sizes", "fill": "_fill", "pair_sizes": "_pair_sizes", "pair_column": "_pair_column"}


@functools.cache
def _kernel(name: str) -> HostKernel:
    """The compiled kernel ``name`` (:func:`.jit.compiled`)."""
    return compiled(globals(), ["_block_of"], _KERNELS[name])


def split_entries(
    u: IdArray, v: IdArray, w: IdArray, offsets: IdArray, *, narrow: bool = True
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The entries ``(u, v, w)`` (``u`` global, ``offsets``: the ``B + 1`` block offsets
    of ``u``'s level) as the ``3 * k`` values of an entry file, piece by piece (block
    ``t``'s entries, ``u`` made local, in their order; a ``u`` outside every block is
    dropped), in the narrowest type that holds every value (:func:`narrow_dtype`; int64
    without ``narrow``); and the pieces' bounds in entries (``B + 1``).

    Examples
    --------
    >>> data, bounds = split_entries(np.array([5, 1, 6]), np.array([0, 2, 9]), np.array([1, 1, 3]), np.array([0, 4, 8]))
    >>> data.tolist(), data.dtype.name, bounds.tolist()
    ([1, 2, 1, 1, 2, 0, 9, 1, 3], 'uint8', [0, 1, 3])
    """
    u, v, w = (ints(x) for x in (u, v, w))
    offsets = np.ascontiguousarray(offsets, np.int64)
    counts, lo, hi = _kernel("sizes")(u, v, w, offsets)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = np.empty(3 * int(bounds[-1]), narrow_dtype(int(lo), int(hi)) if narrow else np.int64)
    if out.size:
        _kernel("fill")(u, v, w, offsets, bounds, out)
    return out, bounds


class PairPieces(NamedTuple):
    """An entry file of the contraction's sorted pairs, to write part by part
    (:func:`pair_pieces`; :func:`.storage.arrays.write_array_parts`)."""

    dtype: np.dtype[Any]
    bounds: npt.NDArray[np.int64]  # B + 1 piece bounds, in entries
    weight: int
    parts: Iterator[npt.NDArray[Any]]


def pair_pieces(pairs: SortedPairs, offsets: IdArray) -> PairPieces:
    """:func:`split_entries` of the contraction's sorted pairs (``a`` global, of the level
    of block ``offsets``), without the file in memory: its type, bounds and the weight
    written, and its values one column of one piece at a time (``parts``), each decoded
    from the keys into the same buffer (as long as the largest piece: write each part
    before taking the next).

    A block's pairs are one run of the sorted keys (``a`` is their high bits), so piece
    ``t``'s column is decoded straight from its run. The whole file in memory was 12
    bytes per pair (59 MB for a 4.9M-pair block of the 1M-node graph, in every
    concurrent contraction task), and fresh memory, which the kernel zeroes page by page.

    Examples
    --------
    >>> from dgl_chunked.partition.lp.pair_sums import sorted_pairs
    >>> u, v, w = np.array([0, 1, 2, 2]), np.array([3, 0, 1, 1]), np.ones(4, np.int64)
    >>> got = pair_pieces(sorted_pairs(u, v, w, np.array([5, 1, 6]), np.array([0, 2, 9, 1])), np.array([0, 4, 8]))
    >>> [p.tolist() for p in got.parts], got.bounds.tolist(), got.weight
    ([[1], [0], [1], [1, 2], [1, 2], [1, 2]], [0, 1, 3], 4)
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    args = (pairs.keys, pairs.weights, pairs.a_lo, pairs.b_lo, pairs.b_bits, offsets)
    counts, lo, hi, weight = _kernel("pair_sizes")(*args)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    dtype = narrow_dtype(int(lo), int(hi))
    # each block's first key: the pairs with ``a`` below the first block come first
    firsts = np.left_shift(np.maximum(offsets - pairs.a_lo, 0).astype(np.uint64), np.uint64(pairs.b_bits))
    starts = np.searchsorted(pairs.keys, firsts)
    if not np.array_equal(np.diff(starts), counts):
        raise RuntimeError("pair_pieces: the pairs are not sorted by their keys")
    return PairPieces(dtype, bounds, int(weight), _columns(pairs, offsets, starts, counts, dtype))


def _columns(
    pairs: SortedPairs, offsets: IdArray, starts: IdArray, counts: IdArray, dtype: np.dtype[Any]
) -> Iterator[npt.NDArray[Any]]:
    buf = np.empty(int(counts.max()) if counts.size else 0, dtype)
    column = _kernel("pair_column")
    for t, (start, k) in enumerate(zip(starts[:-1].tolist(), counts.tolist(), strict=True)):
        for c in range(3):
            column(pairs.keys, pairs.weights, pairs.a_lo, pairs.b_lo, pairs.b_bits, start, int(offsets[t]), c, buf[:k])
            yield buf[:k]
