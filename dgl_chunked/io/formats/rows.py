"""Result files read by row ranges (``remap``'s results): :class:`RowFile` and its helpers.

A format with the ``results`` role inspects a result file from its header, footer or
metadata only (:meth:`FileFormat.open_result`) and returns a small picklable
:class:`RowFile` (rows, dtype, row shape, where the data is); :meth:`RowFile.read`
then reads rows ``[lo, hi)`` through the format that opened it. Errors name the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.formats.pieces import FileInfo, Piece

__all__ = [
    "ID_NAMES",
    "RowFile",
    "RowReader",
    "TableReader",
    "column_to_numpy",
    "pick_entry",
    "table_row_file",
    "table_rows",
]

ID_NAMES = ("ids", "nids", "eids", "_ID")
"""Entry names taken as the new IDs of a pairs file when no key is given."""


class RowReader(Protocol):
    """What reads a :class:`RowFile`'s rows: the format that opened it."""

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)`` of ``file``."""
        ...


@dataclass(frozen=True)
class RowFile:
    """One array of a result file: ``rows`` rows of ``row_shape`` and ``dtype``.

    ``payload`` locates the data of files read by offset (``.npy``, ``.pt``, ``.dgl``);
    ``info`` holds a table file's footer facts; ``reader`` reads the rows.
    """

    path: str
    format: str
    key: str | None
    rows: int
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    reader: RowReader = field(compare=False)
    payload: Any = None
    info: Any = None
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    def describe(self) -> str:
        """The file, and the entry inside it when one was selected (for messages)."""
        return f"{self.path}[{self.key!r}]" if self.key else self.path

    def read(self, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)``."""
        return self.reader.read_result_rows(self, lo, hi)


def column_to_numpy(column: pa.ChunkedArray | pa.Array, row_shape: tuple[int, ...], where: str) -> npt.NDArray[Any]:
    """An Arrow column as numpy: scalars 1-D, lists 2-D (``row_shape``: their width; default the first row's)."""
    if column.null_count:
        raise ChunkMismatchError(f"{where}: holds {column.null_count} null value(s); every row needs a value")
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type) or pa.types.is_fixed_size_list(column.type):
        lengths = np.asarray(column.value_lengths())
        width = row_shape[0] if row_shape else (int(lengths[0]) if lengths.size else 0)
        if lengths.size and (lengths != width).any():
            row = int(np.argmax(lengths != width))
            raise ChunkMismatchError(f"{where}: row {row} holds {int(lengths[row])} values, earlier rows {width}")
        return np.asarray(column.flatten().to_numpy()).reshape((len(column), width))
    return np.asarray(column.to_numpy(zero_copy_only=False))


def pick_entry(names: list[str], key: str | None, what: str) -> str:
    """The entry of a result file to read: ``key``, the only one, or the one beside an ID entry."""
    if key is not None:
        if key not in names:
            raise ChunkMismatchError(f"{what}: has no entry {key!r}; found {names}")
        return key
    if len(names) == 1:
        return names[0]
    others = [n for n in names if n not in ID_NAMES]
    if len(names) == 2 and len(others) == 1:
        return others[0]
    raise ChunkMismatchError(f"{what}: holds {len(names)} entries {names}; name the one to read (FILE#KEY, or key=)")


class TableReader(RowReader, Protocol):
    """A table format: reads row ranges of named columns."""

    def read_piece(
        self, piece: Piece, info: FileInfo, columns: Sequence[str], storage_options: StorageOptions
    ) -> pa.Table:
        """Rows ``[piece.start, piece.stop)`` of ``columns``."""
        ...


def table_row_file(
    reader: TableReader, name: str, info: FileInfo, key: str | None, storage_options: StorageOptions
) -> RowFile:
    """The :class:`RowFile` of one column of an inspected table file (format ``name``):
    numbers, or lists of numbers (the first row gives a variable list's width)."""
    path, so = info.path, storage_options
    column = pick_entry(list(info.names), key, path)
    kind = info.types[info.names.index(column)]
    row_shape: tuple[int, ...] = ()
    if pa.types.is_fixed_size_list(kind):
        row_shape = (kind.list_size,)
        dtype = np.dtype(kind.value_type.to_pandas_dtype())
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        first = reader.read_piece(Piece(path=path, start=0, stop=min(1, int(info.rows or 0))), info, [column], so)
        row_shape = (len(first.column(0)[0]),) if first.num_rows else (0,)
        dtype = np.dtype(kind.value_type.to_pandas_dtype())
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        dtype = np.dtype(kind.to_pandas_dtype())
    else:
        raise ChunkMismatchError(f"{path}: column {column!r} has type {kind}; expected numbers or lists of numbers")
    return RowFile(
        path, name, column, int(info.rows or 0), dtype, row_shape, reader=reader, info=info, storage_options=so
    )


def table_rows(reader: TableReader, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
    """Rows ``[lo, hi)`` of a :class:`RowFile` of a table format."""
    table = reader.read_piece(
        Piece(path=file.path, start=lo, stop=hi), file.info, [str(file.key)], file.storage_options
    )
    return column_to_numpy(table.column(0), file.row_shape, file.describe())
