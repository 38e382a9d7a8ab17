"""The compiled writer of the coarse levels' entry files against the numpy steps it
replaced (issue #38: ``searchsorted`` for the blocks, a stable argsort by block, the
narrowest type of every value): the same pieces, value for value, on random inputs
(hypothesis), so the ``lp`` output does not change."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.partition.lp.entry_kernels import NARROW_TYPES, narrow_dtype, pair_pieces, split_entries
from dgl_chunked.partition.lp.pair_sums import mapped_pair_sums, sorted_pairs


def _old_narrow_dtype(values: np.ndarray) -> np.dtype:
    if values.size == 0:
        return np.dtype("u1")
    lo, hi = int(values.min()), int(values.max())
    for dtype in NARROW_TYPES[:3] if lo >= 0 else NARROW_TYPES[3:]:
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return dtype
    return np.dtype(np.int64)


def _old_split(u: np.ndarray, v: np.ndarray, w: np.ndarray, offsets: np.ndarray) -> tuple[list[np.ndarray], str]:
    """The pieces ``[3, k]`` (local u, v, w) per block, and the narrow type, as numpy
    made them (entries outside every block dropped)."""
    block = np.searchsorted(offsets, u, side="right") - 1
    keep = (block >= 0) & (block < offsets.size - 1)
    u, v, w, block = u[keep], v[keep], w[keep], block[keep]
    rows = np.vstack([u - offsets[block], v, w])
    order = np.argsort(block, kind="stable")
    rows, block = rows[:, order], block[order]
    bounds = np.searchsorted(block, np.arange(offsets.size))
    dtype = _old_narrow_dtype(rows)
    return [rows[:, bounds[t] : bounds[t + 1]] for t in range(offsets.size - 1)], dtype.str


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 300),
    sizes=st.lists(st.integers(0, 70_000), min_size=1, max_size=6),
    top=st.sampled_from([10, 300, 70_000, 2**31 - 1, 2**33]),
    sort=st.booleans(),
    int32=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_entries_equals_the_numpy_split(
    n: int, sizes: list[int], top: int, sort: bool, int32: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]) + int(rng.integers(0, 5))
    u = rng.integers(-2, int(offsets[-1]) + 3, n)  # a few outside every block
    if sort:  # the contraction's order
        u.sort()
    v = rng.integers(0, top, n)
    w = rng.integers(1, min(top, 1000), n)
    if int32 and top < 2**31:  # the scratch files' types
        u, v, w = (x.astype(np.int32) for x in (u, v, w))
    data, bounds = split_entries(u, v, w, offsets)
    pieces, dtype = _old_split(u.astype(np.int64), v.astype(np.int64), w.astype(np.int64), offsets)
    assert data.dtype.str == dtype
    assert np.diff(bounds).tolist() == [p.shape[1] for p in pieces]
    for t, piece in enumerate(pieces):
        got = data[3 * bounds[t] : 3 * bounds[t + 1]].reshape(3, -1)
        assert got.astype(np.int64).tolist() == piece.tolist()
    wide, _ = split_entries(u, v, w, offsets, narrow=False)
    assert wide.dtype == np.dtype(np.int64) and wide.tolist() == data.astype(np.int64).tolist()


def test_narrow_dtype_of_an_empty_range_is_uint8() -> None:
    assert narrow_dtype(0, 0) == np.dtype("u1")


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 400),
    rows=st.integers(1, 60),
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=5),
    top=st.sampled_from([2, 300, 70_000]),
    shift=st.sampled_from([0, 3]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pair_pieces_equal_splitting_the_mapped_pair_sums(
    n: int, rows: int, sizes: list[int], top: int, shift: int, seed: int
) -> None:
    """The contraction writes its entry file from the sorted keys: the same data, type,
    bounds and weight as :func:`mapped_pair_sums` then :func:`split_entries`, a column
    of a piece at a time (:func:`pair_pieces`); with ``shift``, pairs below the first
    block and past the last are left out."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]) + shift
    span = max(int(offsets[-1]) + shift, 1)
    u, v = rng.integers(0, rows, n), rng.integers(0, 3 * rows, n)
    w = rng.integers(1, top, n)
    umap, vmap = rng.integers(-1, span, rows), rng.integers(-1, span, 3 * rows)
    for dtype in (np.int64, np.int32):
        args = [x.astype(dtype) for x in (u, v, w, umap, vmap)]
        a, b, s = mapped_pair_sums(*args)
        want, want_bounds = split_entries(a, b, s, offsets)
        pieces = pair_pieces(sorted_pairs(*args), offsets)
        parts = [p.copy() for p in pieces.parts]  # each part reuses the buffer
        assert [p.dtype for p in parts] == [want.dtype] * len(parts) and len(parts) == 3 * len(sizes)
        assert np.concatenate([want[:0], *parts]).tolist() == want.tolist()
        kept = (a >= offsets[0]) & (a < offsets[-1])
        assert (pieces.dtype, pieces.bounds.tolist()) == (want.dtype, want_bounds.tolist())
        assert pieces.weight == int(s[kept].sum())
