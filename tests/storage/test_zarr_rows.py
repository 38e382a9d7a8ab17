"""Row ranges of uncompressed Zarr arrays read with byte-range requests (storage/zarr_rows.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
import zarr.storage

from dgl_chunked.storage.zarr_rows import raw_rows, read_rows


class CountingStore(zarr.storage.MemoryStore):
    """A memory store that records the bytes every ``get`` returned (in the class: Zarr
    makes a read-only copy of the store for ``mode="r"``)."""

    got: list[tuple[str, int]] = []

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        value = await super().get(key, prototype, byte_range)
        if value is not None and not key.endswith("zarr.json"):
            self.got.append((key, len(value.to_bytes())))
        return value


CASES = [
    ((1000,), (300,), "int32"),
    ((1000, 3), (128, 3), "float32"),
    ((10,), (4,), "bool"),
    ((50, 2, 2), (7, 2, 2), "<i8"),
]
RANGES = [(0, None), (5, 17), (299, 301), (600, 1000), (3, 3), (950, 2000)]


@pytest.mark.parametrize(("shape", "chunks", "dtype"), CASES)
def test_rows_equal_zarr_and_only_their_bytes_are_read(shape: Any, chunks: Any, dtype: str) -> None:
    store = CountingStore()
    CountingStore.got = []
    data = (np.arange(np.prod(shape)).reshape(shape) % 7).astype(dtype)
    zarr.create_array(store=store, name="a", shape=shape, chunks=chunks, dtype=dtype, compressors=None)[...] = data
    array = zarr.open_array(store=store, path="a", mode="r")
    assert raw_rows(array)
    for lo, hi in RANGES:
        hi = shape[0] if hi is None else hi
        CountingStore.got.clear()
        got = read_rows(array, lo, hi)
        want = data[lo:hi]
        assert got.dtype == want.dtype and np.array_equal(got, want), (lo, hi)
        assert sum(n for _, n in CountingStore.got) == want.nbytes  # not one byte of other rows


def test_unwritten_chunks_read_as_the_fill_value(tmp_path: Path) -> None:
    array = zarr.create_array(
        store=zarr.storage.LocalStore(tmp_path), name="f", shape=(100,), chunks=(10,), dtype="int32",
        compressors=None, fill_value=5,
    )  # fmt: skip
    array[0:10] = 1
    assert np.array_equal(read_rows(array, 5, 25), np.r_[np.ones(5), np.full(15, 5)])


def test_compressed_or_rechunked_trailing_axes_read_through_zarr() -> None:
    store = zarr.storage.MemoryStore()
    compressed = zarr.create_array(store=store, name="c", shape=(100,), chunks=(10,), dtype="int32")
    compressed[...] = np.arange(100)
    split = zarr.create_array(store=store, name="s", shape=(20, 4), chunks=(5, 2), dtype="int32", compressors=None)
    split[...] = np.arange(80).reshape(20, 4)
    assert not raw_rows(compressed) and not raw_rows(split)
    assert np.array_equal(read_rows(compressed, 5, 25), np.arange(5, 25))
    assert np.array_equal(read_rows(split, 3, 9), np.arange(80).reshape(20, 4)[3:9])
