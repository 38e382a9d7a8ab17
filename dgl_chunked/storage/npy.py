"""The one ``.npy`` reader: headers, whole arrays and row ranges, thread-safe.

numpy parses an ``.npy`` header with ``ast.literal_eval``. On CPython 3.11 concurrent
``ast`` parsing in threads fails at random ("SystemError: AST constructor recursion
depth mismatch"; seen in the threaded test runs and when ``open_chunked_graph`` reads
many headers at once), so every header parse in the package goes through
:data:`HEADER_LOCK`, here and nowhere else.
"""

from __future__ import annotations

import io
import threading
from typing import IO, Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["HEADER_LOCK", "NpyHeader", "load", "read_exact", "read_header", "read_rows"]

HEADER_LOCK = threading.Lock()
"""Held while numpy runs ``ast`` on a header (also by other ``ast.literal_eval`` users)."""


class NpyHeader(NamedTuple):
    """What an ``.npy`` header says: shape, dtype, where the data starts, memory order."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    offset: int
    fortran_order: bool

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape))


def read_header(f: IO[bytes]) -> NpyHeader:
    """Read the header of an open ``.npy`` file positioned at its start.

    Leaves ``f`` at the first data byte. Raises the ``ValueError`` / ``EOFError``
    numpy raises for a bad header.
    """
    version = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    with HEADER_LOCK:
        shape, fortran, dtype = read(f)
    return NpyHeader(tuple(int(x) for x in shape), dtype, f.tell(), bool(fortran))


def load(source: str | IO[bytes], *, mmap: bool = False) -> npt.NDArray[Any]:
    """``np.load`` of a local path (memory-mapped read-only with ``mmap``) or an open file.

    An open file (a remote object, say) is read whole into memory first, because
    ``np.load`` needs a seekable, real file for anything but a plain read.
    """
    if not isinstance(source, str):
        source = io.BytesIO(source.read())
        mmap = False
    with HEADER_LOCK:
        return np.load(source, mmap_mode="r" if mmap else None, allow_pickle=False)  # type: ignore[no-any-return]


def read_exact(f: IO[bytes], out: npt.NDArray[Any]) -> None:
    """Fill ``out`` from ``f`` (``readinto`` may return less than asked on a stream)."""
    view, pos = out.data.cast("B"), 0
    while pos < view.nbytes:
        got = f.readinto(view[pos:])  # type: ignore[attr-defined]
        if not got:
            raise OSError(f"{getattr(f, 'name', getattr(f, 'path', f))}: file ended {view.nbytes - pos} bytes early")
        pos += got


def read_rows(f: IO[bytes], lo: int = 0, hi: int | None = None) -> npt.NDArray[Any]:
    """Elements ``[lo, hi)`` of the 1-D ``.npy`` file open as ``f``, read with one seek."""
    header = read_header(f)
    hi = header.size if hi is None else min(hi, header.size)
    out = np.empty(max(hi - lo, 0), header.dtype)
    f.seek(header.offset + lo * header.dtype.itemsize)
    read_exact(f, out)
    return out
