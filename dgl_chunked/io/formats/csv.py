"""CSV files (format ``csv``, and ``tsv`` for ``chunk``): edge files of the Chunked Graph
Format, and ``dgl-chunked chunk``'s raw input read by byte pieces.

Edge files: rows are ``src<delim>dst[<delim>ignored...]`` of per-type node IDs, with
no header unless ``format.header`` is true (a dgl_chunked extension DGL rejects).
Parsing is ``pyarrow.csv``; when it fails, the file is parsed again slowly, as text,
to name the first row that is at fault (:func:`.csv_rows.find_bad_row`).

Raw input: a piece is the lines *starting* in ``[start, stop)`` of a file's bytes (a
line crossing ``stop`` is finished, one crossing ``start`` belongs to the previous
piece), parsed by ``pyarrow.csv``; only a piece at byte 0 skips a header line.
Inspection reads the first line only.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, one_line
from dgl_chunked.io.formats.csv_rows import PARSE_POOL, EmptyCsvError, find_bad_row, parse_csv
from dgl_chunked.io.formats.files import binary, file_size, source
from dgl_chunked.io.formats.pieces import FileInfo, Piece, raw_file_size
from dgl_chunked.io.formats.registry import FileFormat, register_format
from dgl_chunked.storage import fs as _fs

__all__ = [
    "EDGE_COLUMNS",
    "CsvFormat",
    "TsvFormat",
    "count_csv_rows",
    "csv_info",
    "csv_line_number",
    "head_schema",
    "read_csv_edges",
    "read_csv_piece",
    "write_csv_table",
    "write_csv_edges",
]

EDGE_COLUMNS = ["f0", "f1"]
"""pyarrow's generated names of the source and destination columns."""

_COUNT_BYTES = 1 << 22


@register_format
class CsvFormat(FileFormat):
    """Delimited text: edges of a Chunked Graph Format input, ``chunk``'s raw edges and keys,
    ``lookup``'s queries, ``remap``'s output tables."""

    name = "csv"
    title = "CSV"
    extensions = (".csv",)
    roles = frozenset({"edges", "raw_edges", "raw_keys", "queries", "outputs"})
    kind = "text"
    options = {"delimiter": str, "header": bool}
    drops_options = False
    raw_options = frozenset({"delimiter", "header", "columns", "column"})

    def read_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool
    ) -> tuple[IdArray, IdArray]:
        return read_csv_edges(path, options, storage_options, allow_empty)

    def count_edges(self, path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> int:
        return count_csv_rows(path, options, storage_options)

    def write_edges(self, f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
        write_csv_edges(f, table, options)

    def inspect(
        self, path: str, where: str, *, delimiter: str, header: bool, storage_options: StorageOptions
    ) -> FileInfo:
        return csv_info(path, where, delimiter, header, storage_options)

    def read_text_piece(
        self,
        piece: Piece,
        *,
        where: str,
        delimiter: str,
        header: bool,
        columns: Sequence[int],
        types: Sequence[pa.DataType],
        storage_options: StorageOptions,
    ) -> tuple[int, pa.Table]:
        return read_csv_piece(
            piece,
            where=where,
            delimiter=delimiter,
            header=header,
            columns=columns,
            types=types,
            storage_options=storage_options,
        )

    def line_number(self, path: str, offset: int, row: int, storage_options: StorageOptions) -> int:
        return csv_line_number(path, offset, row, storage_options)

    def write_result_table(
        self,
        path: str,
        names: Sequence[str],
        arrays: Sequence[npt.NDArray[Any] | pa.Array],
        delimiter: str,
        storage_options: StorageOptions,
    ) -> None:
        write_csv_table(path, names, arrays, delimiter, storage_options)


@register_format
class TsvFormat(CsvFormat):
    """Tab-separated text, a ``chunk`` source's ``format: tsv`` (read as ``csv`` with a tab)."""

    name = "tsv"
    title = "TSV"
    extensions = (".tsv",)
    roles = frozenset({"raw_edges", "raw_keys", "queries"})
    delimiter = "\t"

    @property
    def reads_as(self) -> str:
        return "csv"


# --- edge files ------------------------------------------------------------------------


def read_csv_edges(
    path: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    allow_empty: bool,
) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 arrays of a CSV edge file (see ``formats.read_edge_chunk``)."""
    delimiter = options.get("delimiter", ",")
    skip = int(bool(options.get("header", False)))

    def parse(src: Any) -> pa.Table:
        return pacsv.read_csv(
            src,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(EDGE_COLUMNS, pa.int64()),
                include_columns=EDGE_COLUMNS,
            ),
            memory_pool=PARSE_POOL,
        )

    try:
        table = parse_csv(path, storage_options, parse)
    except EmptyCsvError:
        if allow_empty or (skip and file_size(path, storage_options) > 0):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        raise ChunkReadError(
            f"edge file {path!r}: expected 'src{delimiter}dst' rows, found an empty file; "
            "remove it from metadata.json (DGL v2.2.1 fails on empty CSV files)"
        ) from None
    except (pa.ArrowInvalid, pa.ArrowKeyError) as err:
        raise _diagnose(path, options, storage_options, err) from err
    if any(table.column(c).null_count for c in EDGE_COLUMNS):
        raise _diagnose(path, options, storage_options, None)
    return _to_int64(table.column("f0")), _to_int64(table.column("f1"))


def _to_int64(column: pa.ChunkedArray) -> IdArray:
    return np.ascontiguousarray(column.to_numpy(), dtype=np.int64)


def _diagnose(
    path: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    err: Exception | None,
) -> Exception:
    """Re-read a failing CSV edge file as text to name the first bad row."""
    delimiter = options.get("delimiter", ",")
    skip = int(bool(options.get("header", False)))
    try:
        bad = find_bad_row(
            lambda parse: parse_csv(path, storage_options, parse), delimiter, skip, EDGE_COLUMNS, EDGE_COLUMNS
        )
    except (EmptyCsvError, pa.ArrowInvalid) as exc:  # not even text: name the first line that is no edge
        return _first_bad_line(path, delimiter, skip, storage_options) or ChunkReadError(
            f"edge file {path!r} could not be parsed as CSV: {one_line(err or exc)}"
        )
    if bad is None:
        return ChunkReadError(f"edge file {path!r} could not be parsed as CSV: {one_line(err or '')}")
    if bad.kind == "fields":
        return ChunkMismatchError(
            f"edge file {path!r}: row {bad.row}: expected {bad.expected} columns "
            f"separated by {delimiter!r} (as on the first row), found {bad.found}: "
            f"{bad.text!r}; every row must have the same number of columns"
        )
    if bad.kind == "columns":
        return ChunkMismatchError(
            f"edge file {path!r}: expected at least 2 columns (src, dst) separated by "
            f"{delimiter!r}, found {bad.found}; check format.delimiter in metadata.json"
        )
    header = bad.row == 0 and not skip and bad.expected == "an integer"
    hint = "; it looks like a header row: DGL edge files have no header" if header else ""
    hint += " (remove it, or set format.header=true)" if header else ""
    return ChunkMismatchError(
        f"edge file {path!r}: row {bad.row + 1 + skip}, column {bad.column[1]}: "
        f"expected {bad.expected} node ID, found {bad.found!r}{hint}"
    )


def _first_bad_line(path: str, delimiter: str, skip: int, storage_options: StorageOptions) -> Exception | None:
    """The first line (after ``skip``) that is not ``src<delim>dst[<delim>...]`` of integers,
    scanned line by line (a damaged file: binary bytes that no CSV parser takes)."""
    sep = re.escape(delimiter.encode())
    edge = re.compile(rb"^\s*-?[0-9]+\s*" + sep + rb"\s*-?[0-9]+\s*(" + sep + rb".*)?$")
    with source(path, storage_options) as src, binary(src) as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip(b"\r\n")
            if number <= skip or not line.strip() or edge.match(line):
                continue
            return ChunkMismatchError(
                f"edge file {path!r}: row {number}: expected 'src{delimiter}dst' node IDs, found "
                f"{ascii(line[:60])[2:-1]}{'...' if len(line) > 60 else ''}; the file is damaged: replace it"
            )
    return None


def count_csv_rows(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> int:
    """Number of non-empty lines of a CSV file, less its header line."""
    count, last = 0, None
    with source(path, storage_options) as src, binary(src) as f:
        while buf := f.read(_COUNT_BYTES):
            x = np.frombuffer(buf, np.uint8)
            x = x[x != 13]  # "\r"
            if x.size == 0:
                continue
            if last is not None and last != 10 and x[0] == 10:
                count += 1
            count += int(np.count_nonzero((x[:-1] != 10) & (x[1:] == 10)))
            last = int(x[-1])
    if last is not None and last != 10:
        count += 1
    return max(count - int(bool(options.get("header", False))), 0)


def _csv_values(values: npt.NDArray[Any] | pa.Array) -> list[Any]:
    """As GraphStorm's ``write_data_csv_file``: a 1-D array's Python values, a 2-D row's
    joined by ``;``; user IDs (Arrow) as int64 or str."""
    if isinstance(values, pa.Array):
        if pa.types.is_integer(values.type):
            return list(np.asarray(values.to_numpy(), dtype=np.int64))
        return list(np.asarray(values.to_numpy(zero_copy_only=False), dtype=object))
    if values.ndim == 1:
        return list(values.tolist())
    rows = values.reshape(values.shape[0], -1).tolist()
    return [";".join(str(v) for v in row) for row in rows]


def write_csv_table(
    path: str,
    names: Sequence[str],
    arrays: Sequence[npt.NDArray[Any] | pa.Array],
    delimiter: str,
    storage_options: StorageOptions,
) -> None:
    """One CSV table as GraphStorm writes it (pandas' ``to_csv(index=False, sep=delimiter)``,
    a header line in every file; ``python/graphstorm/gconstruct/remap_result.py``)."""
    data = {n: _csv_values(a if isinstance(a, pa.Array) else np.asarray(a)) for n, a in zip(names, arrays, strict=True)}
    text = pd.DataFrame(data, columns=list(names)).to_csv(index=False, sep=delimiter)
    with _fs.open_file(path, "wb", storage_options) as f:
        f.write(text.encode())


def write_csv_edges(f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
    """Write a ``src, dst`` table as CSV rows (no quoting; a header only if asked)."""
    write_options = pacsv.WriteOptions(
        include_header=bool(options.get("header", False)),
        delimiter=options.get("delimiter", ","),
        quoting_style="none",
    )
    pacsv.write_csv(table, f, write_options=write_options)


# --- raw input pieces ----------------------------------------------------------------


def csv_info(path: str, where: str, delimiter: str, header: bool, storage_options: StorageOptions) -> FileInfo:
    size = raw_file_size(path, where, storage_options)
    with _fs.open_file(path, "rb", storage_options) as f:
        first = f.readline()
    names: tuple[str, ...] = ()
    if first.strip():
        try:
            table = pacsv.read_csv(
                io.BytesIO(first.rstrip(b"\r\n") + b"\n"),
                read_options=pacsv.ReadOptions(autogenerate_column_names=not header),
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
            )
        except pa.ArrowInvalid as err:
            raise ChunkReadError(f"{where}: {path!r}: first line is not CSV ({err})") from err
        names = tuple(table.column_names)
    return FileInfo(path=path, size=size, rows=None, names=names)


def _line_piece(piece: Piece, storage_options: StorageOptions) -> tuple[int, bytes]:
    """``(offset, bytes)`` of the lines starting in ``[start, stop)``."""
    with _fs.open_file(piece.path, "rb", storage_options) as f:
        if piece.start > 0:
            f.seek(piece.start - 1)
            f.readline()  # the rest of the line holding byte start-1 belongs to the previous piece
        pos = f.tell()
        if pos >= piece.stop:
            return pos, b""
        data = f.read(piece.stop - pos)
        if data and not data.endswith(b"\n"):
            data += f.readline()
    return pos, data


def head_schema(path: str, delimiter: str, header: bool, storage_options: StorageOptions = None) -> pa.Schema:
    """The column types ``pyarrow.csv`` infers from the complete lines of a file's first 64 KiB."""
    with _fs.open_file(path, "rb", storage_options) as f:
        head = f.read(1 << 16)
    head = head[: head.rfind(b"\n") + 1] or head
    return pacsv.read_csv(
        io.BytesIO(head),
        read_options=pacsv.ReadOptions(autogenerate_column_names=not header),
        parse_options=pacsv.ParseOptions(delimiter=delimiter),
    ).schema


def csv_line_number(path: str, offset: int, row: int, storage_options: StorageOptions = None) -> int:
    """1-based line number of data row ``row`` (0-based) of a piece starting at byte ``offset``."""
    lines = 0
    with _fs.open_file(path, "rb", storage_options) as f:
        remaining = offset
        while remaining > 0:
            buf = f.read(min(remaining, 1 << 22))
            if not buf:
                break
            lines += buf.count(b"\n")
            remaining -= len(buf)
    return lines + row + 1


def read_csv_piece(
    piece: Piece,
    *,
    where: str,
    delimiter: str,
    header: bool,
    columns: Sequence[int],
    types: Sequence[pa.DataType],
    storage_options: StorageOptions = None,
) -> tuple[int, pa.Table]:
    """Parse the lines of a CSV piece: ``(byte offset of its first data row, table)``.

    The table has one column per 0-based index in ``columns``, typed ``types``.

    Raises
    ------
    ChunkMismatchError
        A row with a different number of fields, or a value that is not of the
        expected type; the message names the spec key, file and line.
    """
    offset, data = _line_piece(piece, storage_options)
    if header and offset == 0:
        cut = data.find(b"\n")
        offset, data = (len(data), b"") if cut < 0 else (cut + 1, data[cut + 1 :])
    names = [f"f{c}" for c in columns]
    if data and not data.endswith(b"\n"):
        data += b"\n"  # pyarrow cannot infer the columns of one unterminated line
    if not data.strip():
        return offset, pa.table({n: pa.array([], t) for n, t in zip(names, types, strict=True)})
    try:
        return offset, pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                include_columns=names, column_types=dict(zip(names, types, strict=True))
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError) as err:
        raise _diagnose_piece(piece, offset, data, where, delimiter, names, types, err, storage_options) from err


def _diagnose_piece(
    piece: Piece,
    offset: int,
    data: bytes,
    where: str,
    delimiter: str,
    names: list[str],
    types: Sequence[pa.DataType],
    err: Exception,
    storage_options: StorageOptions,
) -> ChunkMismatchError:
    """Re-parse a failing piece as text to name the first bad line."""
    integers = [n for n, t in zip(names, types, strict=True) if pa.types.is_integer(t)]
    bad = find_bad_row(lambda parse: parse(pa.py_buffer(data)), delimiter, 0, names, integers)
    path = piece.path
    if bad is None:
        return ChunkMismatchError(f"{where}: {path!r} (bytes {piece.start}..{piece.stop}): {err}")
    if bad.kind == "fields":
        line = csv_line_number(path, offset, bad.row - 1, storage_options)
        return ChunkMismatchError(
            f"{where}: {path!r} line {line}: expected {bad.expected} fields separated "
            f"by {delimiter!r}, found {bad.found}: {bad.text!r}"
        )
    if bad.kind == "columns":
        return ChunkMismatchError(
            f"{where}: {path!r}: expected column {bad.column} (0-based index "
            f"{bad.column[1:]}), found only {bad.found} fields per line; fix 'columns'"
        )
    line = csv_line_number(path, offset, bad.row, storage_options)
    hint = "; is it a header? set header: true" if line == 1 else ""
    return ChunkMismatchError(
        f"{where}: {path!r} line {line}, column {bad.column[1:]} (0-based): expected "
        f"{bad.expected}, found {bad.found!r}{hint}"
    )
