"""Random-access lookups into large 1-D Zarr arrays with bounded memory.

``lookup(array, ids)`` returns ``array[ids]`` while holding at most one Zarr chunk
of ``array`` in memory at a time: the IDs are grouped by the chunk they fall in
and only the touched chunks are read, one after another. This is how an edge
chunk finds the partition or new ID of its endpoints without loading a whole
node-level array, whatever the graph size.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

__all__ = ["lookup", "create_1d", "open_array"]


def lookup(array: zarr.Array, ids: npt.NDArray[np.integer[Any]]) -> npt.NDArray[Any]:
    """Gather ``array[ids]`` chunk by chunk.

    Parameters
    ----------
    array
        A 1-D Zarr array with regular chunks.
    ids
        Integer positions in ``[0, array.shape[0])``.

    Returns
    -------
    numpy.ndarray
        Same length as ``ids``, dtype of ``array``.
    """
    ids = np.asarray(ids)
    out = np.empty(ids.shape[0], dtype=array.dtype)
    if ids.size == 0:
        return out
    chunk = int(array.chunks[0])
    if array.shape[0] <= chunk:  # one chunk: no grouping needed
        return np.asarray(array[:])[ids]  # type: ignore[no-any-return]
    block = ids // chunk
    for b, sel in _groups(block, -(-array.shape[0] // chunk)):
        values = np.asarray(array[b * chunk : min((b + 1) * chunk, array.shape[0])])
        out[sel] = values[ids[sel] - b * chunk]
    return out


def _groups(block: npt.NDArray[Any], num_blocks: int) -> list[tuple[int, npt.NDArray[np.intp]]]:
    """Positions of the IDs falling in each touched block, block by block."""
    if num_blocks <= 16:  # a pass per block beats sorting millions of IDs
        groups = [(b, np.flatnonzero(block == b)) for b in range(num_blocks)]
        return [(b, sel) for b, sel in groups if sel.size]
    order = np.argsort(block, kind="stable")
    sorted_blocks = block[order]
    bounds = np.flatnonzero(np.diff(sorted_blocks)) + 1
    starts = np.concatenate(([0], bounds)).tolist()
    stops = np.concatenate((bounds, [block.size])).tolist()
    return [(int(sorted_blocks[lo]), order[lo:hi]) for lo, hi in zip(starts, stops, strict=True)]


def create_1d(
    store: Any, path: str, *, length: int, dtype: Any, chunk: int, overwrite: bool = True
) -> zarr.Array:
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


def open_array(store: Any, path: str) -> zarr.Array:
    """Open an existing Zarr array read-only."""
    return zarr.open_array(store=store, path=path, mode="r")
