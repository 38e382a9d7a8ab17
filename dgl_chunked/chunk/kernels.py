"""Pure numpy kernels of ``dgl-chunked chunk``: hashing, remap, dedup, self loops, casts.

Nothing here does I/O or imports Dask. Rows of a raw edge source are identified
by ``(task, row)``: the index of the read task and the 0-based row inside
it; because read tasks are in source order, sorting by ``(task, row)`` is sorting by
original edge ID.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from dgl_chunked._typing import IdArray
from dgl_chunked.storage.buckets import bucket_order  # re-exported: the kernels group by bucket too

__all__ = [
    "bucket_order",
    "cast_rows",
    "duplicate_rows",
    "fill_rows",
    "first_duplicate_key",
    "key_buckets",
    "keys_to_numpy",
    "lookup_keys",
    "mix64",
    "pair_buckets",
    "self_loop_edges",
    "split_counts",
    "starts",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64(x: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """splitmix64 finaliser of int64/uint64 values (wrapping arithmetic).

    Examples
    --------
    >>> int(mix64(np.array([0]))[0]) == int(mix64(np.array([0]))[0])
    True
    """
    z = np.asarray(x).astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return np.asarray(z ^ (z >> np.uint64(31)), dtype=np.uint64)


def pair_buckets(src: IdArray, dst: IdArray, num_buckets: int) -> IdArray:
    """Bucket in ``[0, num_buckets)`` of every ``(src, dst)`` pair (a hash partition)."""
    h = mix64(mix64(src) ^ np.asarray(dst).astype(np.uint64))
    return (h % np.uint64(num_buckets)).astype(np.int64)


def keys_to_numpy(keys: pa.Array | pa.ChunkedArray | npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Keys as int64 (integer keys) or an object array of str (string keys)."""
    if isinstance(keys, pa.ChunkedArray | pa.Array):
        if pa.types.is_integer(keys.type):
            return np.asarray(keys.to_numpy(), dtype=np.int64)
        return np.asarray(keys.to_numpy(zero_copy_only=False), dtype=object)
    arr = np.asarray(keys)
    return arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.astype(object)


def key_buckets(keys: npt.NDArray[Any], num_buckets: int) -> IdArray:
    """Bucket of every key: a deterministic hash (pandas ``hash_array``) modulo ``num_buckets``."""
    if keys.size == 0:
        return np.empty(0, np.int64)
    h = pd.util.hash_array(keys, categorize=False)
    return np.asarray(h % np.uint64(num_buckets), dtype=np.int64)


def duplicate_rows(task: IdArray, row: IdArray, src: IdArray, dst: IdArray) -> IdArray:
    """Positions of every edge that repeats an earlier ``(src, dst)``.

    "Earlier" is by ``(task, row)``, the original edge order, so the first
    occurrence is kept. Returns positions into the input arrays, ascending.

    Examples
    --------
    >>> duplicate_rows(np.array([0, 0, 1]), np.array([0, 1, 0]),
    ...                np.array([5, 5, 5]), np.array([2, 3, 2])).tolist()
    [2]
    """
    if len(src) == 0:
        return np.empty(0, np.int64)
    order = np.lexsort((row, task, dst, src))
    s, d = src[order], dst[order]
    repeat = np.zeros(len(order), bool)
    repeat[1:] = (s[1:] == s[:-1]) & (d[1:] == d[:-1])
    return np.sort(order[repeat]).astype(np.int64)


def first_duplicate_key(keys: npt.NDArray[Any], ids: IdArray) -> tuple[Any, int, int] | None:
    """``(key, first_id, second_id)`` of the key with a repeat of smallest ID, or None."""
    dup = pd.Index(keys).duplicated(keep=False)
    if not dup.any():
        return None
    pos = np.flatnonzero(dup)
    key = keys[pos[np.argmin(ids[pos])]]
    same = np.sort(ids[pos][keys[pos] == key])
    return key, int(same[0]), int(same[1])


def lookup_keys(keys: npt.NDArray[Any], ids: IdArray, query: npt.NDArray[Any]) -> IdArray:
    """ID of every ``query`` key among unique ``keys`` (``ids`` aligned); -1 if absent."""
    if len(query) == 0:
        return np.empty(0, np.int64)
    pos = pd.Index(keys).get_indexer(query)
    out = np.where(pos >= 0, ids[np.maximum(pos, 0)] if len(ids) else -1, -1)
    return np.asarray(out, dtype=np.int64)


def self_loop_edges(start: int, stop: int) -> tuple[IdArray, IdArray]:
    """``(i, i)`` for every node ``i`` in ``[start, stop)``."""
    ids = np.arange(start, stop, dtype=np.int64)
    return ids, ids.copy()


def cast_rows(array: npt.NDArray[Any], dtype: np.dtype[Any] | None) -> npt.NDArray[Any]:
    """``array`` in ``dtype`` (numpy ``astype`` semantics); unchanged when None."""
    if dtype is None or array.dtype == dtype:
        return array
    return array.astype(dtype)


def fill_rows(rows: int, row_shape: tuple[int, ...], dtype: np.dtype[Any], value: float) -> npt.NDArray[Any]:
    """``rows`` feature rows all equal to ``value`` (the features of added self loops)."""
    return np.full((rows, *row_shape), value).astype(dtype)


def split_counts(total: int, parts: int) -> list[int]:
    """``total`` rows in ``min(parts, total)`` near-equal chunks (``[0]`` when empty), larger first."""
    k = max(min(parts, total), 1)
    return [total // k + (i < total % k) for i in range(k)]


def starts(sizes: list[int]) -> list[int]:
    """``[0, s0, s0 + s1, ...]``: where each chunk starts, and the total last."""
    return [0, *np.cumsum(sizes, dtype=np.int64).tolist()]
