"""Row ranges of one result file: ``.npy``, Parquet, Zarr, ``.pt`` and ``.dgl``, out of core.

:func:`open_row_file` inspects a file from its header, footer, zip directory or
Zarr metadata only and returns a small picklable :class:`RowFile` (rows, dtype,
row shape, where the data is); :meth:`RowFile.read` then reads rows ``[lo, hi)``
with one seek (``.npy``, ``.pt``, ``.dgl``), the overlapping row groups (Parquet)
or the overlapping chunks (Zarr). Errors name the file.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.dgl.tensor_index import TensorPayload, index_tensor_dict, read_payload_rows
from dgl_chunked.io.formats import FileInfo, Piece, inspect_file
from dgl_chunked.io.formats.npy import npy_header
from dgl_chunked.io.formats.parquet import read_parquet_piece
from dgl_chunked.io.graphbolt.torch_tensors import index_torch_file
from dgl_chunked.remap.model import RemapError
from dgl_chunked.storage.arrays import zarr_store

__all__ = ["ID_NAMES", "RowFile", "column_to_numpy", "file_format", "open_row_file"]

ID_NAMES = ("ids", "nids", "eids", "_ID")
"""Entry names taken as the new IDs of a pairs file when no key is given."""

_EXTENSIONS = {
    ".npy": "numpy",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".zarr": "zarr",
    ".pt": "torch",
    ".pth": "torch",
    ".dgl": "dgl",
}


def file_format(path: str) -> str:
    """``numpy``, ``parquet``, ``zarr``, ``torch`` or ``dgl``, from the extension."""
    ext = posixpath.splitext(path.rstrip("/"))[1].lower()
    if ext not in _EXTENSIONS:
        raise RemapError(
            f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"expected one of {sorted(_EXTENSIONS)}"
        )
    return _EXTENSIONS[ext]


@dataclass(frozen=True)
class RowFile:
    """One array of a result file: ``rows`` rows of ``row_shape`` and ``dtype``.

    ``payload`` locates the data of ``.npy``/``.pt``/``.dgl`` files; ``info`` holds a
    Parquet file's footer facts.
    """

    path: str
    format: str
    key: str | None
    rows: int
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    payload: TensorPayload | None = None
    info: FileInfo | None = None
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    def describe(self) -> str:
        """The file, and the entry inside it when one was selected (for messages)."""
        return f"{self.path}[{self.key!r}]" if self.key else self.path

    def read(self, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)``."""
        so = self.storage_options
        if self.payload is not None:
            return read_payload_rows(self.path, self.payload, lo, hi, storage_options=so)
        if self.format == "zarr":
            return np.asarray(_zarr_array(self.path, self.key, so)[lo:hi])
        assert self.info is not None
        table = read_parquet_piece(Piece(path=self.path, start=lo, stop=hi), self.info, [str(self.key)], so)
        return column_to_numpy(table.column(0), self.row_shape, self.describe())


def _zarr_array(path: str, key: str | None, so: StorageOptions) -> Any:
    import zarr

    return zarr.open_array(zarr_store(path, so, read_only=True), path=key or "", mode="r")


def column_to_numpy(column: pa.ChunkedArray | pa.Array, row_shape: tuple[int, ...], where: str) -> npt.NDArray[Any]:
    """An Arrow column as numpy: scalars 1-D, lists 2-D (``row_shape``: their width; default the first row's)."""
    if column.null_count:
        raise RemapError(f"{where}: holds {column.null_count} null value(s); every row needs a value")
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type) or pa.types.is_fixed_size_list(column.type):
        lengths = np.asarray(column.value_lengths())
        width = row_shape[0] if row_shape else (int(lengths[0]) if lengths.size else 0)
        if lengths.size and (lengths != width).any():
            row = int(np.argmax(lengths != width))
            raise RemapError(f"{where}: row {row} holds {int(lengths[row])} values, earlier rows {width}")
        return np.asarray(column.flatten().to_numpy()).reshape((len(column), width))
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _pick(names: list[str], key: str | None, what: str) -> str:
    if key is not None:
        if key not in names:
            raise RemapError(f"{what}: has no entry {key!r}; found {names}")
        return key
    if len(names) == 1:
        return names[0]
    others = [n for n in names if n not in ID_NAMES]
    if len(names) == 2 and len(others) == 1:
        return others[0]
    raise RemapError(f"{what}: holds {len(names)} entries {names}; name the one to read (FILE#KEY, or key=)")


def _tensor_file(path: str, fmt: str, key: str | None, so: StorageOptions) -> RowFile:
    index = (
        index_torch_file(path, storage_options=so) if fmt == "torch" else index_tensor_dict(path, storage_options=so)
    )
    name = _pick(list(index), key, path)
    payload = index[name]
    if not payload.shape:
        raise RemapError(f"{path}: {name!r} is a 0-d tensor; expected one row per ID")
    return RowFile(
        path, fmt, name or None, payload.rows, payload.dtype, payload.row_shape, payload=payload, storage_options=so
    )


def _parquet_file(path: str, key: str | None, so: StorageOptions) -> RowFile:
    info = inspect_file(path, "parquet", "result file", storage_options=so)
    name = _pick(list(info.names), key, path)
    kind = info.types[info.names.index(name)]
    row_shape: tuple[int, ...] = ()
    if pa.types.is_fixed_size_list(kind):
        row_shape = (kind.list_size,)
        dtype = np.dtype(kind.value_type.to_pandas_dtype())
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        first = read_parquet_piece(Piece(path=path, start=0, stop=min(1, int(info.rows or 0))), info, [name], so)
        row_shape = (len(first.column(0)[0]),) if first.num_rows else (0,)
        dtype = np.dtype(kind.value_type.to_pandas_dtype())
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        dtype = np.dtype(kind.to_pandas_dtype())
    else:
        raise RemapError(f"{path}: column {name!r} has type {kind}; expected numbers or lists of numbers")
    return RowFile(path, "parquet", name, int(info.rows or 0), dtype, row_shape, info=info, storage_options=so)


def _npy_file(path: str, so: StorageOptions) -> RowFile:
    info = npy_header(path, "result file", so)
    if info.fortran and len(info.shape) > 1:
        raise RemapError(f"{path}: is in Fortran order; save it with numpy.save(np.ascontiguousarray(a))")
    if not info.shape:
        raise RemapError(f"{path}: is a 0-d array; expected one row per ID")
    assert info.dtype is not None
    payload = TensorPayload(info.offset, info.dtype, tuple(info.shape))
    return RowFile(
        path, "numpy", None, info.shape[0], info.dtype, tuple(info.shape[1:]), payload=payload, storage_options=so
    )


def open_row_file(path: str, key: str | None = None, *, storage_options: StorageOptions = None) -> RowFile:
    """Inspect one result file (header only) and return how to read its rows.

    Raises
    ------
    RemapError
        Unknown extension, a missing file, an entry that is not there or several to
        choose from, a column of text; the message names the file.
    """
    path = os.fspath(path)
    fmt = file_format(path)
    try:
        if fmt == "zarr":
            arr = _zarr_array(path, key, storage_options)
            if not arr.shape:
                raise RemapError(f"{path}: is a 0-d array; expected one row per ID")
            return RowFile(
                path,
                "zarr",
                key,
                int(arr.shape[0]),
                np.dtype(arr.dtype),
                tuple(arr.shape[1:]),
                storage_options=storage_options,
            )
        if fmt in ("torch", "dgl"):
            return _tensor_file(path, fmt, key, storage_options)
        if fmt == "parquet":
            return _parquet_file(path, key, storage_options)
        return _npy_file(path, storage_options)
    except FileNotFoundError:
        raise RemapError(f"{path}: does not exist") from None
    except RemapError:
        raise
    except (DglChunkedError, OSError, ValueError) as err:
        text = str(err)
        raise RemapError(text if path in text else f"{path}: {text}") from None
