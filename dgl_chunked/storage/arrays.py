"""Intermediate arrays in a scratch directory: written once, read back by row ranges.

The one on-disk form of the arrays a computation keeps between its tasks (``lp``'s
node blocks and staged entries, its multilevel levels, ``verify``'s staged facts), on a
local disk or an object store (fsspec URL) alike. A file holds one 1-D or 2-D array
behind a fixed little-endian header, and may be cut into *pieces* (row ranges one
reader each reads alone)::

    magic   8 bytes   b"DGLCARR1"
    dtype   8 bytes   the numpy dtype string (``<i8``, ``|i1`` ...), space padded
    ndim    uint64    1 or 2
    rows    uint64
    cols    uint64    1 for a 1-D array
    pieces  uint64    p
    bounds  int64 x (p + 1)   first row of every piece, then ``rows``
    data    rows x cols items, C order

A reader reads the header, seeks to its row range and reads it with ``readinto`` into
one array (its own, or one it is given), so memory is bounded by the range: no memory
map (mapped pages fault one 4 KiB page at a time, which cost more than the copy), no
``.npy`` (numpy parses ``.npy`` headers with ``ast``, unsafe under threads on Python
3.11). A local file is written under a temporary name and renamed; on an object store
the one PUT is atomic already.

Zarr arrays (the dispatch staging, ``docs/spec/staging.md``; the report's copy of an
assignment; remap's inputs) open their store here too: :func:`zarr_store`.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.storage import fs

__all__ = ["ArrayFile", "ArrayHeader", "read_array", "write_array", "write_array_parts", "zarr_store"]

_MAGIC = b"DGLCARR1"
_HEADER = struct.Struct("<8s8sQQQQ")  # magic, dtype, ndim, rows, columns, pieces


@dataclass(frozen=True)
class ArrayHeader:
    """What the header of an array file says: dtype, shape and the pieces' row bounds."""

    dtype: np.dtype[Any]
    ndim: int
    rows: int
    cols: int  # 1 for a 1-D array
    bounds: npt.NDArray[np.int64]  # pieces + 1 row bounds
    offset: int  # where the data starts

    @property
    def row_bytes(self) -> int:
        return self.dtype.itemsize * self.cols

    def shape(self, rows: int) -> tuple[int, ...]:
        return (rows, self.cols) if self.ndim == 2 else (rows,)


def write_array(
    path: str,
    arr: npt.NDArray[Any],
    *,
    bounds: npt.NDArray[np.integer[Any]] | None = None,
    storage_options: StorageOptions = None,
) -> None:
    """Write ``arr`` (1-D or 2-D) to ``path``, cut into pieces at the row ``bounds``
    (default: one piece); the directory exists."""
    arr = np.ascontiguousarray(arr)
    if bounds is None:
        bounds = np.array([0, arr.shape[0]], np.int64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{path}: an array file holds a 1-D or 2-D array, not {arr.ndim}-D")
    cols = arr.shape[1] if arr.ndim == 2 else 1
    _write_file(path, _header(arr.dtype, arr.ndim, arr.shape[0], cols, bounds), [arr], arr.nbytes, storage_options)


def write_array_parts(
    path: str,
    parts: Iterable[npt.NDArray[Any]],
    *,
    dtype: np.dtype[Any],
    rows: int,
    bounds: npt.NDArray[np.integer[Any]],
    storage_options: StorageOptions = None,
) -> None:
    """Write a 1-D array of ``rows`` values of ``dtype``, cut into pieces at ``bounds``,
    from ``parts``: arrays of ``dtype`` whose values follow one another, each written
    as it comes, so that the writer never holds the whole array (a part may reuse the
    previous one's memory). Raises ``ValueError`` when they do not add up to ``rows``;
    nothing is left at ``path`` then."""
    dtype = np.dtype(dtype)
    _write_file(path, _header(dtype, 1, rows, 1, bounds), parts, rows * dtype.itemsize, storage_options)


def _header(dtype: np.dtype[Any], ndim: int, rows: int, cols: int, bounds: npt.NDArray[np.integer[Any]]) -> bytes:
    head = _HEADER.pack(_MAGIC, dtype.str.encode().ljust(8), ndim, rows, cols, bounds.size - 1)
    return head + np.asarray(bounds, "<i8").tobytes()


def _write_file(
    path: str, head: bytes, parts: Iterable[npt.NDArray[Any]], nbytes: int, storage_options: StorageOptions
) -> None:
    """Write ``head``, then ``parts`` (``nbytes`` in all, else ``ValueError``): a local
    file through a temporary name renamed to ``path``, an object in one upload; on an
    error nothing stays at ``path``."""
    if fs.is_url(path):
        try:
            with fs.open_file(path, "wb", storage_options) as f:
                _write_all(f, head, parts, nbytes, path)
        except BaseException:
            filesystem, inner = fs.filesystem(path, storage_options)
            if filesystem.exists(inner):  # closing the file uploaded what it had
                filesystem.rm(inner)
            raise
        return
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            _write_all(f, head, parts, nbytes, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


def _write_all(f: Any, head: bytes, parts: Iterable[npt.NDArray[Any]], nbytes: int, path: str) -> None:
    f.write(head)
    written = 0
    for part in parts:
        if part.size:
            f.write(np.ascontiguousarray(part).data.cast("B"))
            written += part.nbytes
    if written != nbytes:
        raise ValueError(f"{path}: the parts hold {written} bytes, the header {nbytes}")


class ArrayFile:
    """An array file open for reading, for several row ranges (a context manager)."""

    def __init__(self, path: str, storage_options: StorageOptions = None) -> None:
        self.path = path
        self._f: Any = fs.open_file(path, "rb", storage_options) if fs.is_url(path) else open(path, "rb")  # noqa: SIM115  (closed by close)
        try:
            magic, dtype, ndim, rows, cols, pieces = _HEADER.unpack(self._read_bytes(_HEADER.size))
            if magic != _MAGIC:
                raise ValueError(f"{path}: not an array file of dgl_chunked")
            bounds = np.frombuffer(self._read_bytes(8 * (pieces + 1)), "<i8").astype(np.int64)
        except BaseException:
            self._f.close()
            raise
        offset = _HEADER.size + 8 * (pieces + 1)
        self.header = ArrayHeader(np.dtype(dtype.decode().strip()), ndim, rows, cols, bounds, offset)

    def _read_bytes(self, n: int) -> bytes:
        data: bytes = self._f.read(n)
        if len(data) != n:
            raise ValueError(f"{self.path}: truncated")
        return data

    def read(self, lo: int = 0, hi: int | None = None, *, out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]:
        """Rows ``[lo:hi]`` as a slice takes them (default: all; ``lo``, ``hi`` >= 0),
        into ``out`` when given (of that many rows)."""
        head = self.header
        hi = head.rows if hi is None else min(hi, head.rows)
        lo = min(lo, hi)
        if lo < 0:
            raise ValueError(f"{self.path}: negative row {lo}")
        if out is None:
            out = np.empty(head.shape(hi - lo), head.dtype)
        self._f.seek(head.offset + lo * head.row_bytes)
        self._fill(out)
        return out

    def read_parts(self, lo: int, hi: int, outs: list[npt.NDArray[Any]]) -> None:
        """The bytes of rows ``[lo, hi)`` into the contiguous arrays ``outs``, one after
        the other (their bytes add up to the range's): a piece stored column by column
        read straight into one array per column."""
        head = self.header
        if not 0 <= lo <= hi <= head.rows or sum(o.nbytes for o in outs) != (hi - lo) * head.row_bytes:
            raise ValueError(f"{self.path}: rows [{lo}, {hi}) do not fill {[o.nbytes for o in outs]} bytes")
        self._f.seek(head.offset + lo * head.row_bytes)
        for out in outs:
            self._fill(out)

    def _fill(self, out: npt.NDArray[Any]) -> None:
        """Read ``out``'s bytes (contiguous) from the current position."""
        data = out.data.cast("B") if out.size else memoryview(b"")
        got = 0
        while got < data.nbytes:
            n = self._f.readinto(data[got:])
            if not n:
                raise ValueError(f"{self.path}: truncated")
            got += n

    def piece(self, t: int) -> npt.NDArray[Any]:
        """The rows of piece ``t``."""
        return self.read(int(self.header.bounds[t]), int(self.header.bounds[t + 1]))

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> ArrayFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def read_array(
    path: str,
    lo: int = 0,
    hi: int | None = None,
    *,
    piece: int | None = None,
    storage_options: StorageOptions = None,
) -> npt.NDArray[Any]:
    """Rows ``[lo, hi)`` (default: all), or piece ``piece``, of the array file ``path``."""
    with ArrayFile(path, storage_options) as f:
        return f.piece(piece) if piece is not None else f.read(lo, hi)


def zarr_store(path: str, storage_options: StorageOptions = None, *, read_only: bool = False) -> Any:
    """The Zarr store of a local path or an fsspec URL (every worker opens its own)."""
    import zarr.storage

    if fs.is_url(path) and not path.startswith("file://"):
        return zarr.storage.FsspecStore.from_url(path, storage_options=storage_options or {}, read_only=read_only)
    return zarr.storage.LocalStore(fs.filesystem(path, storage_options)[1], read_only=read_only)
