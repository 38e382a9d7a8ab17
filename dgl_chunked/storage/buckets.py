"""Bucket files: intermediate Arrow IPC files whose record batch ``b`` holds the rows of bucket ``b``.

A task that sorts its rows out for later tasks writes one bucket file; each later
task reads one bucket from all of them, so no task holds more than its own rows.
A bucket is whatever the caller groups by: a hash bucket of keys (``chunk``'s key
join, ``lookup``'s key join), or a block of original IDs (``lookup``'s steps,
``remap``'s ``raw_id_mappings`` by block). Every file has exactly ``num_buckets``
batches, empty ones included, so bucket ``b`` is batch ``b`` of every file.

Columns are numpy arrays of one length: numbers (1-D), text (object arrays of
``str``, stored as Arrow strings), or rows of numbers (2-D, stored as fixed-size
lists). :func:`read_bucket` gives them back as they went in (text as objects, 2-D
rows as 2-D), concatenated over the files in the order given. A writer that makes its
batches one at a time (``remap``'s endpoint answers, Arrow columns of any type) opens
the file with :func:`bucket_writer` and reads it back with :func:`read_bucket_table`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.storage import fs

__all__ = ["bucket_order", "bucket_schema", "bucket_writer", "read_bucket", "read_bucket_table", "write_buckets"]


def bucket_order(buckets: IdArray, num_buckets: int) -> tuple[IdArray, IdArray]:
    """``(order, offsets)``: a stable sort by bucket, and ``num_buckets + 1`` segment bounds.

    Examples
    --------
    >>> order, offsets = bucket_order(np.array([1, 0, 1, 0]), 3)
    >>> order.tolist(), offsets.tolist()
    ([1, 3, 0, 2], [0, 2, 4, 4])
    """
    order = np.argsort(buckets, kind="stable")
    counts = np.bincount(buckets, minlength=num_buckets)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return order.astype(np.int64), offsets


def _arrow(values: npt.NDArray[Any]) -> pa.Array:
    if values.dtype == object:
        return pa.array(values, pa.string())
    if values.ndim == 1:
        return pa.array(values)
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(values).reshape(-1)), width)


@contextmanager
def bucket_writer(path: str, schema: pa.Schema, so: StorageOptions = None) -> Iterator[pa.ipc.RecordBatchFileWriter]:
    """Open a bucket file for writing its batches in bucket order (the caller writes one per bucket)."""
    filesystem, inner = fs.filesystem(path, so)
    if "/" in inner:  # object stores' flat keys need no folder
        filesystem.makedirs(inner.rsplit("/", 1)[0], exist_ok=True)
    with fs.open_file(path, "wb", so) as f, pa.ipc.new_file(f, schema) as writer:
        yield writer


def write_buckets(
    path: str,
    columns: Mapping[str, npt.NDArray[Any]],
    buckets: IdArray,
    num_buckets: int,
    so: StorageOptions = None,
) -> list[int]:
    """Write ``columns`` as a bucket file: batch ``b`` holds the rows with ``buckets == b``, in their order.

    Returns the ``num_buckets + 1`` bounds of the buckets in the sorted rows.
    """
    order, offsets = bucket_order(buckets, num_buckets)
    arrays = {name: _arrow(values[order]) for name, values in columns.items()}
    schema = pa.schema([(name, a.type) for name, a in arrays.items()])
    with bucket_writer(path, schema, so) as writer:
        for b in range(num_buckets):
            lo, hi = int(offsets[b]), int(offsets[b + 1])
            writer.write_batch(pa.record_batch([a.slice(lo, hi - lo) for a in arrays.values()], schema=schema))
    return [int(o) for o in offsets]


def _to_numpy(column: pa.Array) -> npt.NDArray[Any]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_null(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
    if pa.types.is_fixed_size_list(column.type):
        return np.asarray(column.flatten().to_numpy()).reshape((len(column), column.type.list_size))
    return np.asarray(column.to_numpy(zero_copy_only=False))


def read_bucket_table(paths: str | Sequence[str], bucket: int, so: StorageOptions = None) -> pa.Table:
    """Bucket ``bucket`` of the file(s) ``paths``, concatenated in order, as an Arrow table."""
    batches = []
    for path in [paths] if isinstance(paths, str) else paths:
        with fs.open_file(path, "rb", so) as f:
            batches.append(pa.ipc.open_file(f).get_batch(bucket))
    return pa.Table.from_batches(batches)


def read_bucket(paths: str | Sequence[str], bucket: int, so: StorageOptions = None) -> dict[str, npt.NDArray[Any]]:
    """Bucket ``bucket`` of the file(s) ``paths``, concatenated in order, as numpy arrays by column name."""
    table = read_bucket_table(paths, bucket, so)
    return {name: _to_numpy(table.column(name).combine_chunks()) for name in table.column_names}


def bucket_schema(path: str, so: StorageOptions = None) -> pa.Schema:
    """The Arrow schema of a bucket file (its column names and types)."""
    with fs.open_file(path, "rb", so) as f:
        return pa.ipc.open_file(f).schema
