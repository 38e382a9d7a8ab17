"""Row ranges of uncompressed Zarr arrays, reading only the bytes of those rows.

Zarr reads whole chunks: ``array[lo:hi]`` of an array stored as one 32 MiB chunk
fetches all 32 MiB for a range of a few rows. That is what a partition writer did
with every staged array of the dispatch staging: it needs one owner's segment, and
on an object store it downloaded every segment of every owner, ``P`` times the
staging for ``P`` partitions (measured with ``benchmarks/bench_network.py
--trace-s3``).

For an array whose chunks are stored raw (the single ``bytes`` codec, no
compression, C order, chunked along axis 0 only), a range of rows is a range of
bytes of each chunk it overlaps, so :func:`read_rows` asks the array's own store
for those byte ranges (``RangeByteRequest``), all at once. Any other array is read
through Zarr's indexing as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.store import RangeByteRequest
from zarr.codecs import BytesCodec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.metadata import ArrayV3Metadata
from zarr.core.sync import sync

__all__ = ["read_rows", "raw_rows"]


def raw_rows(array: zarr.Array[Any]) -> bool:
    """True when rows of ``array`` are contiguous byte ranges of its stored chunks."""
    meta = array.metadata
    if not isinstance(meta, ArrayV3Metadata) or len(meta.codecs) != 1:
        return False
    codec = meta.codecs[0]
    if not isinstance(codec, BytesCodec):
        return False
    native = "little" if np.little_endian else "big"
    if array.dtype.itemsize > 1 and codec.endian is not None and codec.endian.value != native:
        return False
    return array.order == "C" and tuple(array.chunks[1:]) == tuple(array.shape[1:])


def read_rows(array: zarr.Array[Any], lo: int, hi: int) -> npt.NDArray[Any]:
    """Rows ``[lo, hi)`` (along axis 0) of ``array`` as a numpy array.

    Only the bytes of those rows are read when :func:`raw_rows` holds; a chunk
    that was never written reads as the fill value, as through Zarr.
    """
    lo, hi = max(0, lo), min(hi, array.shape[0])
    if hi <= lo or not raw_rows(array):
        return np.asarray(array[lo:hi]) if hi > lo else np.empty((0, *array.shape[1:]), array.dtype)
    out = np.empty((hi - lo, *array.shape[1:]), array.dtype)
    if out.nbytes:
        sync(_fill(array, lo, hi, out))
    return out


async def _fill(array: zarr.Array[Any], lo: int, hi: int, out: npt.NDArray[Any]) -> None:
    chunk = int(array.chunks[0])
    row_bytes = out.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
    store_path = array.store_path
    prototype = default_buffer_prototype()
    tail = (0,) * (array.ndim - 1)

    async def one(c: int) -> None:
        a, b = max(lo, c * chunk), min(hi, (c + 1) * chunk)
        key = f"{store_path.path}/{array.metadata.encode_chunk_key((c, *tail))}".lstrip("/")
        got = await store_path.store.get(
            key, prototype, byte_range=RangeByteRequest((a - c * chunk) * row_bytes, (b - c * chunk) * row_bytes)
        )
        target = out[a - lo : b - lo]
        if got is None:  # never written: Zarr's fill value
            target[...] = array.fill_value
        else:
            target.reshape(-1).view(np.uint8)[:] = np.frombuffer(got.to_bytes(), np.uint8)

    await asyncio.gather(*(one(c) for c in range(lo // chunk, -(-hi // chunk))))
