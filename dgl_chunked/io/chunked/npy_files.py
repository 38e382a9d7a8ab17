"""``.npy`` chunk files: header facts, feature reads and writes.

Parsing goes through :mod:`dgl_chunked.storage.npy` (the one locked reader); this
module adds the chunk-file view: the file's size against what its header
promises (:func:`inspect_npy`), and the feature reader and writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkReadError
from dgl_chunked.io.chunked.files import binary, file_size, source
from dgl_chunked.storage import fs, npy

__all__ = [
    "NpyFile",
    "inspect_npy",
    "npy_feature_info",
    "read_npy_feature",
    "read_npy_header",
    "write_npy",
]


@dataclass(frozen=True, kw_only=True)
class NpyFile:
    """An ``.npy`` file's header and size; ``needed`` is the size the header promises."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    offset: int
    fortran: bool
    size: int

    @property
    def needed(self) -> int:
        """Header plus data bytes; a smaller ``size`` means the file is truncated."""
        return self.offset + int(np.prod(self.shape)) * self.dtype.itemsize


def read_npy_header(
    path: str, storage_options: StorageOptions = None
) -> tuple[tuple[int, ...], np.dtype[Any], int, bool]:
    """``(shape, dtype, data offset, fortran order)`` from an ``.npy`` header only.

    Raises the ``ValueError`` / ``OSError`` / ``EOFError`` numpy raises for a bad header.
    """
    with source(path, storage_options, block_size=fs.HEADER_BLOCK) as src, binary(src) as f:
        header = npy.read_header(f)
        return header.shape, header.dtype, header.offset, header.fortran_order


def inspect_npy(path: str, size: int, storage_options: StorageOptions = None) -> NpyFile:
    """Header facts of an ``.npy`` file of ``size`` bytes (callers check ``needed``).

    Raises the ``ValueError`` / ``OSError`` / ``EOFError`` numpy raises for a bad header.
    """
    shape, dtype, offset, fortran = read_npy_header(path, storage_options)
    return NpyFile(shape=tuple(shape), dtype=dtype, offset=offset, fortran=bool(fortran), size=size)


def read_npy_feature(path: str, storage_options: StorageOptions, mmap: bool) -> npt.NDArray[Any]:
    """A whole ``.npy`` feature file (see ``formats.read_feature_chunk``)."""
    with source(path, storage_options) as src:
        try:
            return npy.load(src, mmap=mmap)
        except (ValueError, OSError, EOFError) as err:
            raise ChunkReadError(
                f"feature file {path!r} is not a valid .npy file or is truncated ({err}); rewrite it with numpy.save"
            ) from err


def npy_feature_info(path: str, storage_options: StorageOptions) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    """``(rows, row_shape, dtype)`` of an ``.npy`` feature file from its header and size."""
    size = file_size(path, storage_options)
    try:
        info = inspect_npy(path, size, storage_options)
    except (ValueError, OSError, EOFError) as err:
        raise ChunkReadError(
            f"feature file {path!r} has no valid .npy header ({err}); rewrite it with numpy.save"
        ) from err
    if info.dtype.hasobject:
        raise ChunkReadError(f"feature file {path!r}: expected a numeric dtype, found {info.dtype} (pickled objects)")
    if size < info.needed:
        raise ChunkReadError(
            f"feature file {path!r} is truncated: header promises shape {info.shape} {info.dtype} "
            f"({info.needed} bytes), file has {size} bytes; rewrite it"
        )
    if len(info.shape) == 0:
        return 1, (), info.dtype
    return info.shape[0], info.shape[1:], info.dtype


def write_npy(f: IO[bytes], array: npt.NDArray[Any]) -> None:
    """Write ``array`` as an ``.npy`` file (no pickles)."""
    np.save(f, array, allow_pickle=False)
