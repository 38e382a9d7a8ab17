"""Block-wise lookups into Zarr arrays equal plain fancy indexing."""

from __future__ import annotations

import numpy as np
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.storage.zarr_lookup import create_1d, lookup


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 400), chunk=st.integers(1, 50), count=st.integers(0, 300), seed=st.integers(0, 2**16))
def test_lookup_equals_fancy_indexing(tmp_path_factory, length, chunk, count, seed):
    store = str(tmp_path_factory.mktemp("z"))
    values = np.random.default_rng(seed).integers(-(10**12), 10**12, length)
    arr = create_1d(store, "v", length=length, dtype="int64", chunk=chunk)
    arr[:] = values
    ids = np.random.default_rng(seed + 1).integers(0, length, count)
    got = lookup(zarr.open_array(store, path="v", mode="r"), ids)
    np.testing.assert_array_equal(got, values[ids])
    assert got.dtype == np.int64


def _array(store, name, values, chunk):
    arr = create_1d(store, name, length=values.shape[0], dtype=values.dtype, chunk=chunk)
    arr[:] = values
    return zarr.open_array(store, path=name, mode="r")


def test_cached_lookup_keeps_small_ids_as_int32_and_returns_the_array_dtype(tmp_path):
    from dgl_chunked.storage import zarr_lookup

    zarr_lookup.clear_lookup_cache()
    values = np.random.default_rng(0).permutation(1000).astype(np.int64)
    arr = _array(str(tmp_path), "v", values, chunk=64)
    ids = np.random.default_rng(1).integers(0, 1000, 5000)
    got = zarr_lookup.cached_lookup(arr, ids, key="k", budget_bytes=4000)
    np.testing.assert_array_equal(got, values[ids])
    assert got.dtype == np.int64
    assert zarr_lookup._CACHE["k"].dtype == np.int32 and zarr_lookup._CACHE["k"].nbytes == 4000
    got2 = zarr_lookup.cached_lookup(arr, ids[:10], key="k", budget_bytes=4000)
    np.testing.assert_array_equal(got2, values[ids[:10]])
    zarr_lookup.clear_lookup_cache()


def test_cached_lookup_keeps_int64_values_beyond_int32(tmp_path):
    from dgl_chunked.storage import zarr_lookup

    zarr_lookup.clear_lookup_cache()
    values = np.arange(300, dtype=np.int64) * (1 << 33)
    arr = _array(str(tmp_path), "v", values, chunk=50)
    ids = np.array([299, 0, 150, 150])
    np.testing.assert_array_equal(zarr_lookup.cached_lookup(arr, ids, key="big", budget_bytes=10_000), values[ids])
    assert zarr_lookup._CACHE["big"].dtype == np.int64
    # int32 would fit a 1500-byte budget, the native 2400 bytes do not: block-wise, nothing kept
    np.testing.assert_array_equal(zarr_lookup.cached_lookup(arr, ids, key="over", budget_bytes=1500), values[ids])
    assert "over" not in zarr_lookup._CACHE
    zarr_lookup.clear_lookup_cache()


def test_cached_lookup_over_budget_reads_blockwise_and_evicts_least_recent(tmp_path):
    from dgl_chunked.storage import zarr_lookup

    zarr_lookup.clear_lookup_cache()
    store = str(tmp_path)
    a = _array(store, "a", np.arange(100, dtype=np.int64), chunk=10)
    b = _array(store, "b", np.arange(100, dtype=np.int64) + 7, chunk=10)
    big = _array(store, "big", np.arange(1000, dtype=np.int64), chunk=10)
    ids = np.array([5, 99, 0])
    np.testing.assert_array_equal(zarr_lookup.cached_lookup(big, ids, key="big", budget_bytes=600), ids)
    assert "big" not in zarr_lookup._CACHE  # 4000 bytes > budget: not kept
    zarr_lookup.cached_lookup(a, ids, key="a", budget_bytes=600)
    np.testing.assert_array_equal(zarr_lookup.cached_lookup(b, ids, key="b", budget_bytes=600), ids + 7)
    assert list(zarr_lookup._CACHE) == ["b"]  # 400 + 400 > 600: "a" was evicted
    zarr_lookup.clear_lookup_cache()


@settings(max_examples=30, deadline=None)
@given(
    length=st.integers(1, 3000),
    chunk=st.integers(1, 300),
    budget=st.integers(0, 4000),
    count=st.integers(0, 2000),
    seed=st.integers(0, 2**16),
)
def test_ranged_cached_lookup_equals_fancy_indexing(tmp_path_factory, length, chunk, budget, count, seed):
    """Over budget, some ranges kept, the others read: few blocks (compares) or many (a sort) alike."""
    from dgl_chunked.storage import zarr_lookup

    zarr_lookup.clear_lookup_cache()
    values = np.random.default_rng(seed).permutation(length).astype(np.int64)
    arr = _array(str(tmp_path_factory.mktemp("z")), "v", values, chunk=chunk)
    ids = np.random.default_rng(seed + 1).integers(0, length, count)
    for _ in range(2):  # the second call finds the ranges the first one kept
        got = zarr_lookup.cached_lookup(
            arr, ids, key=("k", seed), budget_bytes=min(budget, 4 * length - 1), dtype=np.int32
        )
        np.testing.assert_array_equal(got, values[ids])
        assert got.dtype == np.int32
        assert zarr_lookup.cached_bytes() <= budget
    zarr_lookup.clear_lookup_cache()


class _Recorded:
    """A 1-D array with Zarr's ``chunks``/``shape``/``nbytes`` that records the slices read."""

    def __init__(self, values: np.ndarray, chunk: int) -> None:
        self.values, self.chunks, self.shape = values, (chunk,), values.shape
        self.dtype, self.nbytes, self.reads = values.dtype, values.nbytes, []

    def __getitem__(self, key: slice) -> np.ndarray:
        self.reads.append((key.start or 0, self.shape[0] if key.stop is None else min(key.stop, self.shape[0])))
        return self.values[key]


def test_lookup_reads_touched_chunks_or_the_whole_array_when_no_larger_than_the_ids() -> None:
    values = np.arange(1000, dtype=np.int64) * 3
    few = _Recorded(values, chunk=100)
    ids = np.array([950, 5, 7, 420], np.int64)  # 32 bytes of IDs against 8000 of array: chunk by chunk
    np.testing.assert_array_equal(lookup(few, ids), values[ids])
    assert sorted(few.reads) == [(0, 100), (400, 500), (900, 1000)]
    many = _Recorded(values, chunk=100)
    ids = np.random.default_rng(0).integers(0, 1000, 1000)  # as many bytes as the array: one read
    np.testing.assert_array_equal(lookup(many, ids), values[ids])
    assert many.reads == [(0, 1000)]
