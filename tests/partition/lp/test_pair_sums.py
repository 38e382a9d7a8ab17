"""The compiled group-by of the multilevel ``lp`` method against the plain numpy one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.partition.lp import pair_sums as PS
from dgl_chunked.partition.lp.pair_sums import mapped_pair_sums, pair_sums


def _reference(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    sums: dict[tuple[int, int], int] = {}
    for x, y, z in zip(a.tolist(), b.tolist(), w.tolist(), strict=True):
        sums[(x, y)] = sums.get((x, y), 0) + z
    keys = sorted(sums)
    return [k[0] for k in keys], [k[1] for k in keys], [sums[k] for k in keys]


def _contracted(u: np.ndarray, v: np.ndarray, w: np.ndarray, umap: np.ndarray, vmap: np.ndarray) -> tuple:
    """:func:`_reference` of ``(umap[u], vmap[v], w)`` without the pairs inside one
    cluster or with a -1 end."""
    a, b = umap[u], vmap[v]
    keep = (a != b) & (a >= 0) & (b >= 0)
    return _reference(a[keep], b[keep], w[keep])


@pytest.mark.parametrize(
    ("n", "span", "width", "offset"),
    [
        (1, 1, 1, 0),
        (500, 20, 7, 0),  # short segments
        (3000, 10, 2000, 5000),  # segments of ~300 entries; a starts at 5000
        (200, 1_000_000, 50, 0),  # a spans far more than the pairs: the argsort path
        (3000, 30, 1_000_000, 7),  # b spans far more than the pairs: a shell sort per segment
        (50_000, 100, 3000, 0),  # long segments, b's range small: a counting sort by b first
    ],
)
def test_pair_sums_matches_a_dict_group_by(n: int, span: int, width: int, offset: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.integers(0, span, n) + offset
    b = rng.integers(0, width, n)
    w = rng.integers(1, 5, n)
    got = pair_sums(a, b, w)
    assert [x.dtype for x in got] == [np.dtype(np.int64)] * 3
    assert [x.tolist() for x in got] == list(_reference(a, b, w))
    narrow = pair_sums(a.astype(np.int32), b.astype(np.int32), w.astype(np.int32))  # lp's scratch types
    assert [x.tolist() for x in narrow] == [x.tolist() for x in got]


def test_pair_sums_of_nothing() -> None:
    empty = np.empty(0, np.int64)
    assert [x.size for x in pair_sums(empty, empty, empty)] == [0, 0, 0]


@pytest.mark.parametrize(
    ("n", "rows", "span"),
    [(0, 5, 10), (1, 1, 1), (2000, 50, 40), (20000, 2000, 30000), (3000, 300, 5000), (300, 20, 10**6)],
)
def test_mapped_pair_sums_equal_the_numpy_contraction(n: int, rows: int, span: int) -> None:
    """The contraction's fused kernel against the numpy steps it replaced: map both
    ends, drop the entries inside one cluster, group and sum (``contract_entries``)."""
    rng = np.random.default_rng(n + rows)
    u = rng.integers(0, rows, n)
    v = rng.integers(0, 3 * rows, n)
    w = rng.integers(1, 4, n)
    umap = rng.integers(0, span, rows)  # the last case spans far more than the pairs: the argsort path
    vmap = rng.integers(0, span if span < 10**6 else 50, 3 * rows)
    vmap[: rows // 2] = umap[: rows // 2]  # many entries inside a cluster
    if span == 5000:  # the targets span far more than the pairs: no counting sort by them
        vmap[-1] = 10**7
    cu, cv = umap[u], vmap[v]
    keep = cu != cv
    want = pair_sums(cu[keep], cv[keep], w[keep])
    got = mapped_pair_sums(u, v, w, umap, vmap)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]
    narrow = mapped_pair_sums(*(x.astype(np.int32) for x in (u, v, w, umap, vmap)))
    assert [x.tolist() for x in narrow] == [x.tolist() for x in want]
    if n and span < 10**6:  # the compiled paths keep int32 (the argsort one widens)
        assert [x.dtype for x in narrow] == [np.dtype(np.int32)] * 3
    if n:
        assert got[0].size < n  # some pairs summed or dropped: the test sees both


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 2000),
    rows=st.integers(1, 300),
    span=st.sampled_from([1, 5, 300, 70_000, 2**31 - 1]),
    base=st.sampled_from([0, 17, 2**30]),
    bucket=st.sampled_from([1, 64, 1 << 14]),
    chunk=st.sampled_from([1, 7, 1 << 12]),
    seed=st.integers(0, 2**32 - 1),
)
def test_mapped_pair_sums_equal_a_dict_group_by(
    n: int, rows: int, span: int, base: int, bucket: int, chunk: int, seed: int
) -> None:
    """Random maps (-1: no cluster), spans up to 2**31, bucket sizes from one pair up
    (many buckets of the first sort, each sorted by the radix passes or inserted) and
    clusters read ahead in chunks from one entry up, against a dict: the pairs sorted
    by ``(a, b)``, equal ones summed, ``a == b`` dropped."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n)
    v = rng.integers(0, 2 * rows, n)
    w = rng.integers(1, 1000, n)
    umap = np.minimum(rng.integers(0, span, rows) + base, 2**31 - 1)
    vmap = np.minimum(rng.integers(0, span, 2 * rows) + base, 2**31 - 1)
    umap[rng.random(rows) < 0.1] = -1
    vmap[: rows // 3] = umap[: rows // 3]  # entries inside a cluster
    want = _contracted(u, v, w, umap, vmap)
    for dtype in (np.int64, np.int32):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(PS, "_BUCKET_PAIRS", bucket)
            patch.setattr(PS, "_GATHER_CHUNK", chunk)
            got = mapped_pair_sums(*(x.astype(dtype) for x in (u, v, w, umap, vmap)))
        assert [x.tolist() for x in got] == list(want)
        if n:
            assert [x.dtype for x in got] == [np.dtype(dtype)] * 3


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 3000),
    rows=st.integers(1, 300),
    span=st.sampled_from([1, 5, 300, 70_000]),
    log_slots=st.sampled_from([1, 3, 6, 12]),
    seed=st.integers(0, 2**32 - 1),
)
def test_pairs_of_few_clusters_summed_in_a_hash_table_equal_a_dict_group_by(
    n: int, rows: int, span: int, log_slots: int, seed: int
) -> None:
    """Clusters spanning under ``_HASH_SPAN`` are summed in a hash table first: tables
    from 2 keys (full at once: the bucketed sort from the start) to 4096 (every pair
    fits), -1 maps, int32 and int64, against a dict; 70,000 takes the sort alone."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n)
    v = rng.integers(0, 2 * rows, n)
    w = rng.integers(1, 1000, n)
    umap, vmap = rng.integers(-1, span, rows), rng.integers(-1, span, 2 * rows)
    vmap[: rows // 3] = umap[: rows // 3]
    want = _contracted(u, v, w, umap, vmap)
    for dtype in (np.int64, np.int32):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(PS, "_HASH_LOG_SLOTS", log_slots)
            args = [x.astype(dtype) for x in (u, v, w, umap, vmap)]
            got = PS.sorted_pairs(*args, few=True)
        a_got = (got.keys >> np.uint64(got.b_bits)).astype(np.int64) + got.a_lo
        b_got = (got.keys & np.uint64((1 << got.b_bits) - 1)).astype(np.int64) + got.b_lo
        assert [a_got.tolist(), b_got.tolist(), got.weights.tolist()] == list(want)
        assert got.weights.dtype == np.dtype(dtype)


def test_the_hash_table_stops_at_the_first_pair_past_half_full() -> None:
    """Up to half its keys the table sums every entry and returns the distinct pairs
    sorted; else it stops at the entry whose pair found it half full and returns what
    came before (the caller sorts the rest and merges)."""
    u = np.arange(6, dtype=np.int64)
    v = np.zeros(6, np.int64)
    w = np.array([5, 1, 1, 2, 1, 1], np.int64)
    vmap = np.array([9], np.int64)
    hashed = PS._kernel("hashed")
    stop, keys, ws = hashed(u, v, w, np.array([3, 0, 1, 3, 2, 0], np.int64), vmap, 0, 0, 4, 6, 3)  # 4 pairs, 8 keys
    assert stop == 6 and keys.tolist() == [9, 25, 41, 57] and ws.tolist() == [2, 1, 1, 7]
    stop, keys, ws = hashed(u, v, w, np.array([3, 0, 1, 3, 2, 5], np.int64), vmap, 0, 0, 4, 6, 3)  # the 5th at 5
    assert stop == 5 and keys.tolist() == [9, 25, 41, 57] and ws.tolist() == [1, 1, 1, 7]
