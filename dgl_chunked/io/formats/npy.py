"""``.npy`` files (format ``numpy``): feature files of the Chunked Graph Format, and
``dgl-chunked chunk``'s raw input read by row ranges.

Parsing goes through :mod:`dgl_chunked.storage.npy` (the one locked reader); this
module adds the file view: the file's size against what its header promises
(:func:`inspect_npy`), the feature reader and writer, and the raw readers: the header
gives the data offset, and a row range is read with one seek and ``readinto`` (no
memory map is kept, so resident memory stays the size of the piece); shape ``(2, E)``
edge arrays are read as two ranges.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError
from dgl_chunked.io.formats.files import binary, file_size, source
from dgl_chunked.io.formats.pieces import FileInfo, raw_file_size
from dgl_chunked.io.formats.registry import FileFormat, register_format
from dgl_chunked.io.formats.rows import RowFile
from dgl_chunked.storage import fs, npy

__all__ = [
    "NpyFile",
    "NpyFormat",
    "inspect_npy",
    "npy_feature_info",
    "npy_header",
    "read_npy_flat",
    "npy_header_bytes",
    "raw_bytes",
    "read_npy_rows",
    "read_npy_feature",
    "read_npy_header",
    "write_npy",
]


@register_format
class NpyFormat(FileFormat):
    """``.npy`` arrays: features of a Chunked Graph Format input, ``chunk``'s raw input,
    ``remap``'s result files, ``lookup``'s queries."""

    name = "numpy"
    title = ".npy"
    extensions = (".npy",)
    roles = frozenset({"features", "raw_edges", "raw_features", "raw_keys", "results", "queries"})
    kind = "array"
    raw_options = frozenset({"layout"})
    header_bytes = fs.HEADER_BLOCK
    header_proves_values = True

    def read_feature(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, mmap: bool
    ) -> npt.NDArray[Any]:
        return read_npy_feature(path, storage_options, mmap)

    def feature_info(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        return npy_feature_info(path, storage_options)

    def write_feature(
        self, f: IO[bytes], array: npt.NDArray[Any], layout: Literal["columns", "list"], path: str
    ) -> None:
        write_npy(f, array)

    def inspect(
        self, path: str, where: str, *, delimiter: str, header: bool, storage_options: StorageOptions
    ) -> FileInfo:
        return npy_header(path, where, storage_options)

    def read_rows(
        self, path: str, info: FileInfo, start: int, stop: int, storage_options: StorageOptions
    ) -> npt.NDArray[Any]:
        return read_npy_rows(path, info, start, stop, storage_options)

    def open_result(self, path: str, key: str | None, storage_options: StorageOptions) -> RowFile:
        info = npy_header(path, "result file", storage_options)
        if info.fortran and len(info.shape) > 1:
            raise ChunkMismatchError(f"{path}: is in Fortran order; save it with numpy.save(np.ascontiguousarray(a))")
        if not info.shape or info.dtype is None:
            raise ChunkMismatchError(f"{path}: is a 0-d array; expected one row per ID")
        row_shape = tuple(info.shape[1:])
        return RowFile(
            path,
            self.name,
            None,
            info.shape[0],
            info.dtype,
            row_shape,
            reader=self,
            info=info,
            storage_options=storage_options,
        )

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        return read_npy_rows(file.path, file.info, lo, hi, file.storage_options)

    def read_flat(
        self, path: str, info: FileInfo, first: int, count: int, storage_options: StorageOptions
    ) -> npt.NDArray[Any]:
        return read_npy_flat(path, info, first, count, storage_options)


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


# --- writing in place (remap's and lookup's preallocated outputs) -------------------


def npy_header_bytes(dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    """The ``.npy`` header (format 1.0, or 2.0 when needed) of a C-ordered array: what
    ``numpy.save`` writes before the data, so that blocks can be written at their offsets."""
    buf = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    try:
        np.lib.format.write_array_header_1_0(buf, header)
    except ValueError:
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


def raw_bytes(array: npt.NDArray[Any]) -> memoryview:
    """The bytes of ``array`` in C order (empty arrays too), without a copy when it is contiguous."""
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))  # type: ignore[arg-type]


# --- raw input pieces ----------------------------------------------------------------


def npy_header(path: str, where: str, storage_options: StorageOptions = None) -> FileInfo:
    """Shape, dtype and data offset of an ``.npy`` file; checks it is not truncated."""
    size = raw_file_size(path, where, storage_options)
    try:
        npy_file = inspect_npy(path, size, storage_options)
    except (ValueError, OSError, EOFError) as err:
        raise ChunkReadError(f"{where}: {path!r} is not a valid .npy file ({err}); write it with numpy.save") from err
    shape, dtype = npy_file.shape, npy_file.dtype
    if dtype.hasobject:
        raise ChunkMismatchError(f"{where}: {path!r}: expected a numeric dtype, found {dtype} (pickled objects)")
    if size < npy_file.needed:
        raise ChunkReadError(
            f"{where}: {path!r} is truncated: its header promises shape "
            f"{shape} {dtype} ({npy_file.needed} bytes), the file has {size}"
        )
    return FileInfo(
        path=path,
        size=size,
        rows=shape[0] if shape else 1,
        shape=shape,
        dtype=dtype,
        offset=npy_file.offset,
        fortran=npy_file.fortran,
    )


def read_npy_flat(
    path: str, info: FileInfo, first: int, count: int, storage_options: StorageOptions = None
) -> npt.NDArray[Any]:
    """Elements ``[first, first + count)`` of an ``.npy`` file in storage order, 1-D."""
    dtype = info.dtype if info.dtype is not None else np.dtype(np.uint8)
    out = np.empty(count, dtype)
    with fs.open_file(path, "rb", storage_options) as f:
        f.seek(info.offset + first * dtype.itemsize)
        try:
            npy.read_exact(f, out)
        except OSError:
            raise ChunkReadError(f"{path!r}: unexpected end of file (truncated .npy?)") from None
    return out


def read_npy_rows(
    path: str, info: FileInfo, start: int, stop: int, storage_options: StorageOptions = None
) -> npt.NDArray[Any]:
    """Rows ``[start, stop)`` of a C-order ``.npy`` file (all trailing dims)."""
    row_shape = info.shape[1:]
    per_row = int(np.prod(row_shape))
    flat = read_npy_flat(path, info, start * per_row, (stop - start) * per_row, storage_options)
    return flat.reshape((stop - start, *row_shape))
