"""What ``lookup`` reads: original IDs or keys, with label columns, from files or arrays, in pieces.

Queries are one column of keys (or original type-wise IDs) plus any label columns
that travel with them:

- Parquet files (names; list columns give 2-D labels), read by row ranges;
- CSV/TSV files (header names or 0-based indices), read by byte ranges aligned to lines;
- ``.npy`` files of keys or IDs (no labels), read by row ranges;
- in memory: a numpy array (keys or IDs) or a pandas DataFrame, cut into row pieces.

:func:`query_input` inspects the files (headers and footers only) and cuts them into
pieces of about ``piece_rows`` rows; :meth:`QueryInput.read` reads one piece and
says where each row came from (file and row or line), for messages.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.chunk.kernels import keys_to_numpy
from dgl_chunked.io.formats import FileInfo, Piece, format_of_path, formats_with, get_format, inspect_file
from dgl_chunked.io.formats.csv import head_schema
from dgl_chunked.io.formats.rows import column_to_numpy
from dgl_chunked.remap.model import RemapError, ResultFile
from dgl_chunked.remap.result_sources import expand_files

__all__ = ["QueryInput", "QueryPiece", "query_input"]


@dataclass(frozen=True)
class QueryPiece:
    """Rows ``[start, stop)`` (bytes for CSV) of file ``file``, or of the in-memory queries."""

    file: int
    start: int
    stop: int


@dataclass(frozen=True)
class QueryInput:
    """The query source, inspected: files and pieces, the key column and the label columns.

    ``column`` and ``labels`` are Parquet names or CSV 0-based indices; ``label_names``
    are the output names of the labels; ``text_keys`` says whether keys are read as text.
    """

    format: str
    files: tuple[FileInfo, ...]
    pieces: tuple[QueryPiece, ...]
    column: Any
    labels: tuple[Any, ...]
    label_names: tuple[str, ...]
    label_types: tuple[pa.DataType, ...]
    text_keys: bool
    delimiter: str = ","
    header: bool = True
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    def describe(self, piece: QueryPiece, row: int, offset: int = 0) -> str:
        """Where row ``row`` of ``piece`` came from: file and row (CSV: line), or the array's row."""
        if self.format == "memory":
            return f"queries row {piece.start + row}"
        path = self.files[piece.file].path
        fmt = get_format(self.format)
        if fmt.kind == "text":
            return f"{path} line {fmt.line_number(path, offset, row, self.storage_options)}"
        return f"{path} row {piece.start + row}"

    def read(
        self, piece: QueryPiece, data: Any = None
    ) -> tuple[npt.NDArray[Any], dict[str, npt.NDArray[Any]], Callable[[int], str]]:
        """``(keys or IDs, labels, where(row))`` of one piece (``data``: the in-memory slice)."""
        so = self.storage_options
        if self.format == "memory":
            keys, labels = data
            return keys, labels, lambda r: self.describe(piece, r)
        info = self.files[piece.file]
        fmt = get_format(self.format)
        if fmt.kind == "array":
            keys = fmt.read_rows(info.path, info, piece.start, piece.stop, so)
            return keys, {}, lambda r: self.describe(piece, r)
        columns = [self.column, *self.labels]
        if fmt.kind == "table":
            table = fmt.read_piece(Piece(path=info.path, start=piece.start, stop=piece.stop), info, columns, so)
            offset = 0
        else:
            key_type = pa.string() if self.text_keys else pa.int64()
            offset, table = fmt.read_text_piece(
                Piece(path=info.path, start=piece.start, stop=piece.stop),
                where="queries",
                delimiter=self.delimiter,
                header=self.header,
                columns=columns,
                types=[key_type, *self.label_types],
                storage_options=so,
            )
        keys = self._keys(table.column(0), info.path)
        labels = {
            name: column_to_numpy(table.column(j + 1), (), f"{info.path} column {self.labels[j]!r}")
            for j, name in enumerate(self.label_names)
        }
        return keys, labels, lambda r: self.describe(piece, r, offset)

    def _keys(self, column: pa.ChunkedArray, path: str) -> npt.NDArray[Any]:
        if column.null_count:
            raise RemapError(f"{path}: the key column holds {column.null_count} empty value(s)")
        return keys_to_numpy(column)


def _format(path: str) -> str:
    """The format of a query file, from its extension (``tsv`` reads as ``csv``)."""
    fmt = format_of_path(path, "queries")
    if fmt is None:
        exts = [get_format(name).extensions[0] for name in formats_with("queries")]
        raise RemapError(f"{path}: expected a {', '.join(exts[:-1])} or {exts[-1]} file of queries")
    return get_format(fmt).reads_as


def _pieces(sizes: Sequence[int], size: int) -> tuple[QueryPiece, ...]:
    out = []
    for i, n in enumerate(sizes):
        out += [QueryPiece(i, lo, min(lo + size, n)) for lo in range(0, n, max(1, size))]
    return tuple(out) or (QueryPiece(0, 0, 0),)  # no queries: one empty piece still stages the columns


def _select(info: FileInfo, column: Any, what: str, kind: str) -> Any:
    """A column as the reader wants it: a table's name, a CSV 0-based index."""
    if isinstance(column, int) and not isinstance(column, bool):
        if not 0 <= column < len(info.names):
            raise RemapError(f"{info.path}: has {len(info.names)} columns; {what} {column} is not one of them")
        return info.names[column] if kind == "table" else column
    if column not in info.names:
        raise RemapError(f"{info.path}: has no column {column!r} ({what}); found {list(info.names)}")
    return column if kind == "table" else info.names.index(column)


def _csv_label_types(
    info: FileInfo, labels: Sequence[int], delimiter: str, header: bool, so: StorageOptions
) -> list[pa.DataType]:
    schema = head_schema(info.path, delimiter, header, so)
    out = []
    for j in labels:
        kind = schema.types[j]
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
            raise RemapError(f"{info.path}: label column {schema.names[j]!r} holds {kind}; labels must be numbers")
        out.append(pa.float64() if pa.types.is_floating(kind) else kind)
    return out


def query_input(
    queries: Any,
    *,
    column: Any,
    labels: Sequence[Any],
    text_keys: bool,
    piece_rows: int,
    delimiter: str = ",",
    header: bool = True,
    storage_options: StorageOptions = None,
) -> tuple[QueryInput, list[Any]]:
    """Inspect ``queries`` and cut them into pieces; return the input and, in memory, each piece's data.

    Raises
    ------
    RemapError
        Unknown file type, a missing column, a label column that is not numeric.
    """
    so = storage_options
    if isinstance(queries, pd.DataFrame | np.ndarray):
        return _memory(queries, column, labels, piece_rows)
    paths = queries if isinstance(queries, list | tuple) else [queries]
    files = [f.path for f in expand_files(tuple(ResultFile(os.fspath(p)) for p in paths), so)]
    formats = {_format(p) for p in files}
    if len(formats) != 1:
        raise RemapError(f"queries: mix file types {sorted(formats)}; give files of one type")
    fmt = formats.pop()
    infos = [inspect_file(p, fmt, "queries", delimiter=delimiter, header=header, storage_options=so) for p in files]
    kind = get_format(fmt).kind
    if kind == "array":
        if labels:
            raise RemapError(f"{files[0]}: an .npy file holds keys or IDs only; put labels in a Parquet or CSV table")
        for info in infos:
            if len(info.shape) != 1:
                raise RemapError(f"{info.path}: holds shape {info.shape}; expected a 1-D array of keys or IDs")
        return QueryInput(
            fmt,
            tuple(infos),
            _pieces([int(i.rows or 0) for i in infos], piece_rows),
            None,
            (),
            (),
            (),
            text_keys,
            storage_options=so,
        ), []
    first = infos[0]
    key = first.names[0] if column is None and kind == "table" else (0 if column is None else column)
    picked = [_select(i, key, "the key column", kind) for i in infos]
    chosen = tuple(_select(first, c, "label column", kind) for c in labels)
    names = tuple(str(c) if kind == "table" or isinstance(c, str) else f"label{c}" for c in labels)
    if kind == "table":
        types = tuple(first.types[first.names.index(c)] for c in chosen)
        sizes = [int(i.rows or 0) for i in infos]
        per = piece_rows
    else:
        types = tuple(_csv_label_types(first, list(chosen), delimiter, header, so))
        sizes = [i.size for i in infos]
        per = max(1 << 20, piece_rows * 16)  # about 16 bytes a line
    return QueryInput(
        fmt, tuple(infos), _pieces(sizes, per), picked[0], chosen, names, types, text_keys, delimiter, header, so
    ), []


def _memory(queries: Any, column: Any, labels: Sequence[Any], piece_rows: int) -> tuple[QueryInput, list[Any]]:
    if isinstance(queries, pd.DataFrame):
        col = queries.columns[0] if column is None else column
        if col not in queries.columns:
            raise RemapError(f"queries: no column {col!r}; found {list(queries.columns)}")
        missing = [c for c in labels if c not in queries.columns]
        if missing:
            raise RemapError(f"queries: no label column(s) {missing}; found {list(queries.columns)}")
        keys = keys_to_numpy(queries[col].to_numpy())
        label_arrays = {
            str(c): np.stack(queries[c].to_numpy()) if queries[c].dtype == object else queries[c].to_numpy()
            for c in labels
        }
    else:
        if labels:
            raise RemapError("queries: a bare array holds keys or IDs only; pass a DataFrame to carry labels")
        keys = keys_to_numpy(np.asarray(queries))
        label_arrays = {}
    pieces = _pieces([keys.shape[0]], piece_rows)
    data = [(keys[p.start : p.stop], {n: a[p.start : p.stop] for n, a in label_arrays.items()}) for p in pieces]
    names = tuple(label_arrays)
    return QueryInput("memory", (), pieces, None, (), names, (), keys.dtype == object), data
