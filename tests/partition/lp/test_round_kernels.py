"""The compiled kernels of the ``lp`` rounds and refinements (:mod:`.round_kernels`)
against the numpy steps they replaced (issue #38): equal outputs, element for element,
on random inputs, so the ``lp`` output does not change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp.round_kernels import cut_entries, gather, part_gains, refinement_gains, sorted_by


@pytest.mark.parametrize(("n", "rows", "parts"), [(0, 3, 2), (1, 1, 1), (500, 40, 4), (5000, 300, 8), (2000, 10, 64)])
def test_part_gains_equal_the_numpy_version(n: int, rows: int, parts: int) -> None:
    """The coarse-level refinement's best part and gain per node against the numpy steps
    it replaced (a bincount of float weights, argmax: ties to the lowest part; an
    unplaced node, -1, reads the last column)."""
    rng = np.random.default_rng(n + rows)
    u = rng.integers(0, rows, n)
    v = rng.integers(0, 3 * rows, n)
    w = rng.integers(1, 4, n)
    table = rng.integers(0, parts, 3 * rows)
    part = rng.integers(-1, parts, rows)
    hist = np.bincount(u * parts + table[v], weights=w, minlength=rows * parts).reshape(rows, parts)
    best = np.argmax(hist, axis=1)
    gain = hist[np.arange(rows), best] - hist[np.arange(rows), part]
    for dtype in (np.int64, np.int32):
        got = part_gains(*(x.astype(dtype) for x in (u, v, w, table, part)), parts)
        assert got[0].tolist() == best.tolist() and got[1].tolist() == gain.astype(np.int64).tolist()


def _old_refinement_gains(hist: np.ndarray, part: np.ndarray, stratum: np.ndarray, open_parts: np.ndarray) -> tuple:
    """kernels.propose_refinement's steps before issue #38's compiled pass (an unplaced
    node, -1, reads the last column, as numpy's indexing)."""
    idx = np.arange(hist.shape[0])
    own = hist[idx, part]
    others = np.array(hist, np.int64)
    others[idx, part] = -1
    best_any = np.argmax(others, axis=1)
    open_only = np.where(open_parts[stratum], others, -1)
    best_open = np.argmax(open_only, axis=1)
    best = np.where(open_only[idx, best_open] - own > 0, best_open, best_any)
    return best, others[idx, best] - own


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 300),
    parts=st.integers(1, 9),
    strata=st.integers(1, 4),
    top=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_refinement_gains_equal_the_numpy_version(rows: int, parts: int, strata: int, top: int, seed: int) -> None:
    """The refinement proposal's best part and gain per node: ties to the lowest part,
    full parts (one stratum with no part open at all), unplaced nodes, int32 and int64
    counts."""
    rng = np.random.default_rng(seed)
    hist = rng.integers(0, top, (rows, parts))
    part = rng.integers(-1, parts, rows)
    stratum = rng.integers(0, strata, rows).astype(np.int32)
    open_parts = rng.random((strata, parts)) < rng.random()
    open_parts[0] = False
    want = _old_refinement_gains(hist, part, stratum, open_parts)
    for dtype in (np.int32, np.int64):
        got = refinement_gains(hist.astype(dtype), part, stratum, open_parts)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def _old_neighbour_histogram(
    u_local: np.ndarray, v_part: np.ndarray, row_of: np.ndarray | None, *, num_rows: int, num_parts: int
) -> np.ndarray:
    """kernels.neighbour_histogram before issue #38: an int64 key per entry, one bincount."""
    width = num_parts + 1
    keys = (u_local & K.LOCAL_MASK).astype(np.int64)
    if row_of is not None:
        keys = row_of[keys]
    keys = keys * width + v_part + 1
    counts = np.bincount(keys, minlength=(num_rows + 1) * width)
    return counts[: num_rows * width].reshape(num_rows, width)[:, 1:]


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 3000),
    rows=st.integers(1, 400),
    parts=st.integers(1, 70),
    span=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_neighbour_histogram_equals_the_numpy_bincount(n: int, rows: int, parts: int, span: bool, seed: int) -> None:
    """Placed and unplaced (-1) neighbours, both edge directions (bit 31), all rows or a
    span's rows (the others counted nowhere), int8 and int32 partitions."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31))
    v_part = rng.integers(-1, parts, n)
    row_of, num_rows = None, rows
    if span:
        nodes = np.sort(rng.choice(rows, size=int(rng.integers(0, rows + 1)), replace=False))
        row_of, num_rows = K.rows_of(nodes, rows), nodes.size
    want = _old_neighbour_histogram(u, v_part, row_of, num_rows=num_rows, num_parts=parts)
    for part_type, dtype in ((np.int8, np.int64), (np.int32, np.int32)):
        got = K.neighbour_histogram(
            u, v_part.astype(part_type), row_of, num_rows=num_rows, num_parts=parts, dtype=dtype
        )
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        assert got.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 2000), rows=st.integers(1, 300), parts=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_cut_entries_equal_the_numpy_count(n: int, rows: int, parts: int, seed: int) -> None:
    """The cut check's compiled count against its numpy steps (unplaced nodes, -1, count
    as cut; both edge directions, bit 31)."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31))
    v = rng.integers(0, 3 * rows, n)
    part = rng.integers(-1, parts, rows).astype(np.int32)
    whole = rng.integers(-1, parts, 3 * rows).astype(np.int32)
    pu = part[(u & K.LOCAL_MASK).astype(np.int64)]
    want = int(((pu < 0) | (pu != whole[v])).sum())
    for dtype in (np.int32, np.int64):
        assert cut_entries(u, v.astype(dtype), part, whole) == want


@pytest.mark.parametrize("index_type", [np.uint32, np.int32, np.int64])
@pytest.mark.parametrize("table_type", [np.int8, np.int32])
def test_gather_equals_take(index_type: type, table_type: type) -> None:
    """The neighbours' partitions gathered by staged (uint32) or coarse IDs, as np.take."""
    rng = np.random.default_rng(7)
    table = rng.integers(-1, 100, 5000).astype(table_type)
    idx = rng.integers(0, 5000, 20_000).astype(index_type)
    out = np.empty(idx.size, table_type)
    assert gather(table, idx, out) is out
    assert out.tolist() == np.take(table, idx).tolist()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 500), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_sorted_by_is_numpys_stable_argsort(n: int, extent: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, extent, n)
    x, y = rng.integers(0, 1 << 31, n).astype(np.uint32), np.arange(n, dtype=np.int32)
    ox, oy = np.empty_like(x), np.empty_like(y)
    sorted_by(key, extent, x, y, ox, oy)
    order = np.argsort(key, kind="stable")
    assert ox.tolist() == x[order].tolist() and oy.tolist() == y[order].tolist()
