"""Random-access lookups into large 1-D Zarr arrays with bounded memory.

``lookup(array, ids)`` returns ``array[ids]`` while holding at most one Zarr chunk
of ``array`` in memory at a time: the IDs are grouped by the Zarr chunk they fall in
and only the touched Zarr chunks are read, one after another. This is how an edge
read task finds the partition or new ID of its endpoints without loading a whole
node-level array, whatever the graph size. An array no larger than the IDs (a
10M-node int32 assignment against one 12.5M-edge file's int64 IDs) is read whole
instead: no more memory than the task holds already, and one gather instead of a
pass over the IDs per Zarr chunk.

``cached_lookup`` trades memory for speed where the caller allows it: a whole
array that fits a byte budget is read once per process (as int32 when its values
allow) and kept, so the many edge read tasks a worker runs gather from memory
instead of re-reading every Zarr chunk per read task. An array larger than the
budget is range-partitioned by its Zarr chunks: the ranges that fit the budget
stay in memory, the others are read from Zarr at each lookup. Memory is bounded
by the budget (plus one Zarr chunk), whatever the array's length.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
import zarr

__all__ = [
    "lookup",
    "cached_lookup",
    "cached_object",
    "cached_bytes",
    "clear_lookup_cache",
    "create_1d",
    "open_array",
]


def lookup(array: zarr.Array[Any], ids: npt.NDArray[np.integer[Any]]) -> npt.NDArray[Any]:
    """Gather ``array[ids]`` Zarr chunk by Zarr chunk (or from the whole array, read once,
    when it holds no more bytes than ``ids``).

    Parameters
    ----------
    array
        A 1-D Zarr array with regular Zarr chunks.
    ids
        Integer positions in ``[0, array.shape[0])``.

    Returns
    -------
    numpy.ndarray
        Same length as ``ids``, dtype of ``array``.
    """
    ids = np.asarray(ids)
    if ids.size == 0:
        return np.empty(0, dtype=array.dtype)
    chunk = int(array.chunks[0])
    if array.shape[0] <= chunk or array.nbytes <= ids.nbytes:
        # one Zarr chunk, or a whole array no larger than the IDs the caller holds already:
        # one read and one gather, instead of a pass over the IDs per Zarr chunk
        return np.asarray(array[:])[ids]  # type: ignore[no-any-return]
    out = np.empty(ids.shape[0], dtype=array.dtype)
    for b, sel in _range_groups(ids, chunk, -(-array.shape[0] // chunk)):
        values = np.asarray(array[b * chunk : min((b + 1) * chunk, array.shape[0])])
        out[sel] = values[ids[sel] - b * chunk]
    return out


_CACHE: OrderedDict[Hashable, Any] = OrderedDict()
"""What this process keeps: arrays and other objects with an ``nbytes``."""
_CACHE_LOCK = threading.Lock()
T = TypeVar("T")
_INT32 = np.iinfo(np.int32)


def cached_lookup(
    array: zarr.Array[Any],
    ids: npt.NDArray[np.integer[Any]],
    *,
    key: Hashable,
    budget_bytes: int,
    dtype: npt.DTypeLike | None = None,
    compact: bool = True,
) -> npt.NDArray[Any]:
    """``array[ids]`` from a whole copy of ``array`` kept in this process, if it fits.

    Parameters
    ----------
    array
        A 1-D Zarr array whose content never changes while ``key`` is in use.
    ids
        Integer positions in ``[0, array.shape[0])``.
    key
        Identifies the array's content; must change whenever the content may
        (callers put a per-run token in it).
    budget_bytes
        Most bytes all cached arrays of this process may hold together. Of an array
        larger than this only the ranges (Zarr chunks) that fit are kept; the
        others are read at every lookup, one Zarr chunk at a time.
    dtype
        dtype of the result (default: ``array``'s); the caller guarantees the values fit.
    compact
        Keep integer arrays as int32 when their values allow (half the memory);
        False keeps the native dtype, as for values beyond int32 (tests use it).

    Returns
    -------
    numpy.ndarray
        Same length as ``ids``.
    """
    dtype = np.dtype(array.dtype if dtype is None else dtype)
    values = _cached_values(array, key, budget_bytes, compact)
    if values is None:
        return _ranged_lookup(array, np.asarray(ids), key, budget_bytes, compact, dtype)
    return values[np.asarray(ids)].astype(dtype, copy=False)


def _ranged_lookup(
    array: zarr.Array[Any],
    ids: npt.NDArray[np.integer[Any]],
    key: Hashable,
    budget_bytes: int,
    compact: bool,
    dtype: np.dtype[Any],
) -> npt.NDArray[Any]:
    """:func:`lookup` through the ranges of ``array`` kept in memory, reading the others."""
    out = np.empty(ids.shape[0], dtype=dtype)  # straight in the result's dtype: no second copy
    if ids.size == 0:
        return out
    chunk = int(array.chunks[0])
    for b, sel in _range_groups(ids, chunk, -(-array.shape[0] // chunk)):
        values = _cached_range(array, key, b, budget_bytes, compact)
        if values is None:
            values = np.asarray(array[b * chunk : (b + 1) * chunk])
        out[sel] = values[ids[sel] - b * chunk]
    return out


def _range_groups(
    ids: npt.NDArray[np.integer[Any]], chunk: int, num_chunks: int
) -> Iterator[tuple[int, npt.NDArray[np.intp]]]:
    """Positions of the IDs falling in each touched Zarr chunk (``chunk`` IDs each), one at a time.

    Few Zarr chunks: two compares per Zarr chunk and ID, and only one Zarr chunk's positions
    alive at a time (no Zarr chunk number per ID). Many: one sort of the Zarr chunk numbers.
    """
    if num_chunks > 16:
        yield from _groups(_chunk_numbers(ids, chunk, num_chunks))
        return
    for b in range(num_chunks):
        sel = np.flatnonzero((ids >= b * chunk) & (ids < (b + 1) * chunk))
        if sel.size:
            yield b, sel


def _cached_range(
    array: zarr.Array[Any], key: Hashable, index: int, budget_bytes: int, compact: bool
) -> npt.NDArray[Any] | None:
    """Zarr chunk ``index`` of ``array`` from memory, loaded when the budget still has room for it.

    Ranges are never evicted for other ranges: with uniformly random IDs every edge
    read task touches every range, and keeping the first ones beats a cache that cycles.
    """
    chunk = int(array.chunks[0])
    range_key = (key, "range", index)
    itemsize = 4 if compact and np.dtype(array.dtype).kind in "iu" else np.dtype(array.dtype).itemsize
    with _CACHE_LOCK:
        if range_key in _CACHE:
            return cast("npt.NDArray[Any]", _CACHE[range_key])
        if _held() + chunk * itemsize > budget_bytes:
            return None
        values = np.asarray(array[index * chunk : (index + 1) * chunk])
        if itemsize == 4 and values.size and values.min() >= _INT32.min and values.max() <= _INT32.max:
            values = values.astype(np.int32)
        _CACHE[range_key] = values
        return values


def cached_object(key: Hashable, nbytes: int, budget_bytes: int, build: Callable[[], T]) -> T | None:
    """``build()``, made once per process and kept under ``key`` with the cached arrays.

    Returns None (and builds nothing) when ``nbytes`` exceeds ``budget_bytes``;
    least recently used entries make room otherwise. ``build()``'s result must have
    an ``nbytes`` attribute no larger than ``nbytes``.
    """
    if nbytes > budget_bytes:
        return None
    with _CACHE_LOCK:  # one build at a time: two threads never hold two copies
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return cast(T, _CACHE[key])
        _make_room(nbytes, budget_bytes)
        value = build()
        _CACHE[key] = value
        return value


def cached_bytes() -> int:
    """Bytes :func:`cached_lookup` and :func:`cached_object` hold in this process now."""
    with _CACHE_LOCK:
        return _held()


def _held() -> int:
    """Bytes in the cache (the caller holds ``_CACHE_LOCK``)."""
    return sum(v.nbytes for v in _CACHE.values())


def _make_room(nbytes: int, budget_bytes: int) -> None:
    """Evict the least recently used entries until ``nbytes`` more fit (under ``_CACHE_LOCK``)."""
    while _CACHE and _held() + nbytes > budget_bytes:
        _CACHE.popitem(last=False)


def clear_lookup_cache() -> None:
    """Drop every array :func:`cached_lookup` keeps in this process."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _cached_values(array: zarr.Array[Any], key: Hashable, budget_bytes: int, compact: bool) -> npt.NDArray[Any] | None:
    itemsize = 4 if compact and np.dtype(array.dtype).kind in "iu" else np.dtype(array.dtype).itemsize
    if array.ndim != 1 or array.shape[0] * itemsize > budget_bytes:
        return None
    with _CACHE_LOCK:  # one load at a time: two threads never hold two copies
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return cast("npt.NDArray[Any]", _CACHE[key])
        values = _read_compact(array, budget_bytes) if compact else _read_native(array, budget_bytes)
        if values is None:
            return None
        _make_room(values.nbytes, budget_bytes)
        _CACHE[key] = values
        return values


def _read_compact(array: zarr.Array[Any], budget_bytes: int) -> npt.NDArray[Any] | None:
    """The whole array, Zarr chunk by Zarr chunk, as int32 when every value fits (half the memory);
    None when its values need the native dtype and that exceeds ``budget_bytes``."""
    dtype = np.dtype(array.dtype)
    out = np.empty(array.shape[0], dtype=np.int32 if dtype.kind in "iu" else dtype)
    step = int(array.chunks[0])
    for lo in range(0, array.shape[0], step):
        values = np.asarray(array[lo : lo + step])
        if out.dtype != dtype and values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
            del out  # values beyond int32: the native dtype or nothing
            return _read_native(array, budget_bytes)
        out[lo : lo + values.shape[0]] = values
    return out


def _read_native(array: zarr.Array[Any], budget_bytes: int) -> npt.NDArray[Any] | None:
    """The whole array in its own dtype, or None when that exceeds ``budget_bytes``."""
    return np.asarray(array[:]) if array.nbytes <= budget_bytes else None


def _chunk_numbers(ids: npt.NDArray[np.integer[Any]], chunk: int, num_chunks: int) -> npt.NDArray[np.integer[Any]]:
    """The Zarr chunk of every ID in the narrowest type: 2 bytes per ID up to 65536 Zarr
    chunks (numpy sorts those by radix), not 8."""
    dtype = np.uint16 if num_chunks <= 1 << 16 else np.int32 if num_chunks < 1 << 31 else np.int64
    return np.floor_divide(ids, chunk, out=np.empty(ids.shape[0], dtype), casting="unsafe")  # type: ignore[no-any-return]


def _groups(zarr_chunk: npt.NDArray[Any]) -> list[tuple[int, npt.NDArray[np.intp]]]:
    """Positions of the IDs falling in each touched Zarr chunk, one Zarr chunk after
    another, by one sort of their chunk numbers (:func:`_range_groups` makes a pass per
    chunk instead when there are few)."""
    order = np.argsort(zarr_chunk, kind="stable")
    sorted_chunks = zarr_chunk[order]
    bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    stops = np.concatenate((bounds, [zarr_chunk.size])).tolist()
    return [(int(sorted_chunks[lo]), order[lo:hi]) for lo, hi in zip(starts, stops, strict=True)]


def create_1d(store: Any, path: str, *, length: int, dtype: Any, chunk: int, overwrite: bool = True) -> zarr.Array[Any]:
    """Create an uncompressed 1-D Zarr v3 array (staging data is short-lived)."""
    return zarr.create_array(
        store=store,
        name=path,
        shape=(length,),
        chunks=(max(1, min(chunk, max(length, 1))),),
        dtype=dtype,
        compressors=None,
        fill_value=0,
        overwrite=overwrite,
    )


def open_array(store: Any, path: str) -> zarr.Array[Any]:
    """Open an existing Zarr array read-only."""
    return zarr.open_array(store=store, path=path, mode="r", zarr_format=3)
