"""Bucket files (storage/buckets.py): every bucket comes back as it went in, over many files, empty ones too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from dgl_chunked.storage.buckets import bucket_order, bucket_schema, read_bucket, write_buckets


def test_bucket_order_is_stable_with_bounds() -> None:
    order, offsets = bucket_order(np.array([2, 0, 2, 0, 1]), 4)
    assert order.tolist() == [1, 3, 4, 0, 2] and offsets.tolist() == [0, 2, 3, 5, 5]


def test_every_bucket_round_trips_numbers_text_and_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n, buckets = 500, 7
    which = rng.integers(0, buckets - 1, n)  # the last bucket stays empty
    columns = {
        "id": rng.integers(-(2**40), 2**40, n),
        "key": np.array([f"k{i}" for i in range(n)], dtype=object),
        "label": rng.integers(0, 9, n).astype(np.int8),
        "vec": rng.normal(size=(n, 3)).astype(np.float32),
    }
    bounds = write_buckets(str(tmp_path / "a.arrow"), columns, which, buckets)
    assert bounds == np.concatenate([[0], np.cumsum(np.bincount(which, minlength=buckets))]).tolist()
    schema = bucket_schema(str(tmp_path / "a.arrow"))
    assert schema.names == ["id", "key", "label", "vec"] and schema.field("key").type == pa.string()
    for b in range(buckets):
        got = read_bucket(str(tmp_path / "a.arrow"), b)
        rows = np.flatnonzero(which == b)  # in their original order
        for name, values in columns.items():
            assert got[name].dtype == values.dtype and got[name].shape == (len(rows), *values.shape[1:])
            np.testing.assert_array_equal(got[name], values[rows])


def test_a_bucket_of_many_files_is_their_rows_in_file_order(tmp_path: Path) -> None:
    paths = [str(tmp_path / f"sub/{i}.arrow") for i in range(3)]  # the folder is made
    keys = [np.array(["a", "b", "c"], dtype=object), np.array([], dtype=object), np.array(["d", "e"], dtype=object)]
    for path, k in zip(paths, keys, strict=True):
        write_buckets(path, {"key": k, "row": np.arange(len(k), dtype=np.int64)}, np.arange(len(k)) % 2, 2)
    got = read_bucket(paths, 0)
    assert got["key"].tolist() == ["a", "c", "d"] and got["row"].tolist() == [0, 2, 0]
    empty = read_bucket(paths[1], 1)
    assert empty["key"].dtype == object and empty["key"].shape == (0,) and empty["row"].dtype == np.int64
