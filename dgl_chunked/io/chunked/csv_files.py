"""CSV edge files: read, count, write, and name the first bad row when parsing fails.

Rows are ``src<delim>dst[<delim>ignored...]`` of per-type node IDs, with no header
unless ``format.header`` is true (a dgl_chunked extension DGL rejects). Parsing is
``pyarrow.csv``; when it fails, the file is parsed again slowly, as text, to name
the first row that is at fault (:func:`find_bad_row`, the one diagnosis:
``dgl-chunked chunk`` uses it for its CSV pieces too, and words the message for its
spec).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, one_line
from dgl_chunked.io.chunked.files import binary, file_size, source

__all__ = [
    "EDGE_COLUMNS",
    "BadRow",
    "EmptyCsvError",
    "count_csv_rows",
    "find_bad_row",
    "first_bad_integer",
    "parse_csv",
    "read_csv_edges",
    "text_parser",
    "write_csv_edges",
]

EDGE_COLUMNS = ["f0", "f1"]
"""pyarrow's generated names of the source and destination columns."""

_COUNT_BLOCK = 1 << 22
_INTEGER = r"^\s*-?[0-9]+\s*$"  # what pyarrow's int64 conversion accepts


PARSE_POOL = pa.system_memory_pool()
"""Where edge files are parsed: the C allocator, which hands freed parse buffers back
(Arrow's default mimalloc keeps them, and every edge chunk's work that follows came on
top: 345 against 237 MB peak RSS per worker on bench_pipeline.py's 1x graph)."""


class EmptyCsvError(Exception):
    """The CSV file holds no data row (a control-flow signal, never shown to users)."""


def parse_csv(path: str, storage_options: StorageOptions, parse: Callable[[Any], pa.Table]) -> pa.Table:
    """``parse(src)``, retried in memory when pyarrow cannot infer the columns of a
    file with one line and no final newline; :class:`EmptyCsvError` for no data rows."""
    with source(path, storage_options) as src:
        try:
            return parse(src)
        except pa.ArrowInvalid as err:
            if not _no_rows(err):
                raise
            if not isinstance(src, str):
                src.seek(0)
            with binary(src) as f:
                data = f.read().rstrip(b"\r\n")
    if not data.strip():
        raise EmptyCsvError
    try:
        return parse(io.BytesIO(data + b"\n"))
    except pa.ArrowInvalid as err:  # a header row and nothing else
        if _no_rows(err):
            raise EmptyCsvError from err
        raise


def _no_rows(err: Exception) -> bool:
    return "Empty CSV file" in str(err) or "Could not skip initial" in str(err)


def text_parser(delimiter: str, skip: int, text_columns: Sequence[str], bad: list[Any]) -> Callable[[Any], pa.Table]:
    """A slow, forgiving CSV parse for diagnosis.

    The returned function reads a source with generated column names (``f0, f1,
    ...``), ``text_columns`` as strings and the others inferred, skipping ``skip``
    lines; rows with a wrong number of fields are skipped and appended to ``bad``
    (pyarrow's ``InvalidRow``: ``number``, ``expected_columns``, ``actual_columns``,
    ``text``).
    """

    def handler(row: Any) -> str:
        bad.append(row)
        return "skip"

    def parse(src: Any) -> pa.Table:
        return pacsv.read_csv(
            src,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, invalid_row_handler=handler),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(text_columns, pa.string())),
        )

    return parse


@dataclass(frozen=True)
class BadRow:
    """The first row of a CSV text that is not what was asked for (:func:`find_bad_row`).

    ``kind`` is ``"fields"`` (a wrong number of fields: ``row`` is pyarrow's 1-based
    row number, ``found``/``expected`` the field counts, ``text`` the row),
    ``"columns"`` (every row has too few fields: ``column`` is the first missing one,
    ``found`` the number of columns) or ``"value"`` (``row`` is the 0-based data row,
    ``column`` the column, ``found`` the value, ``expected`` what it is not:
    ``"an integer"`` or ``"an int64"``).
    """

    kind: Literal["fields", "columns", "value"]
    row: int = 0
    column: str = ""
    found: Any = None
    expected: Any = None
    text: str = ""


def find_bad_row(
    read: Callable[[Callable[[Any], pa.Table]], pa.Table],
    delimiter: str,
    skip: int,
    columns: Sequence[str],
    integers: Sequence[str],
) -> BadRow | None:
    """The one diagnosis of a CSV text that failed to parse: ``read(parse)`` parses it
    slowly and forgivingly (:func:`text_parser`); the first row with a wrong number of
    fields, else the first of ``columns`` missing, else the first value of
    ``integers`` that is no int64. None when nothing is wrong (the failure was
    elsewhere). ``read``'s own errors propagate."""
    bad: list[Any] = []
    table = read(text_parser(delimiter, skip, integers, bad))
    if bad:
        row = bad[0]
        return BadRow("fields", row.number, found=row.actual_columns, expected=row.expected_columns, text=row.text)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        return BadRow("columns", column=missing[0], found=table.num_columns)
    for col in integers:
        found = first_bad_integer(table.column(col))
        if found is not None:
            return BadRow("value", found[0], column=col, found=found[1], expected=found[2])
    return None


def first_bad_integer(column: pa.ChunkedArray) -> tuple[int, Any, str] | None:
    """The first value of a column that is not an int64: ``(0-based row, value, expected)``.

    ``expected`` is ``"an integer"`` for text that is no integer (or a null) and
    ``"an int64"`` for an integer that overflows; None when every value is fine.
    """
    column = column.cast(pa.string())
    ok = pc.fill_null(pc.match_substring_regex(column, _INTEGER), False)
    first = pc.index(ok, False).as_py()
    if first >= 0:
        return first, column[first].as_py(), "an integer"
    lengths = pc.utf8_length(column).to_numpy(zero_copy_only=False)
    for row in np.flatnonzero(lengths >= 19):  # only 19+ characters can overflow int64
        value = column[int(row)].as_py()
        if not -(2**63) <= int(value) < 2**63:
            return int(row), value, "an int64"
    return None


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
        while block := f.read(_COUNT_BLOCK):
            x = np.frombuffer(block, np.uint8)
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


def write_csv_edges(f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
    """Write a ``src, dst`` table as CSV rows (no quoting; a header only if asked)."""
    write_options = pacsv.WriteOptions(
        include_header=bool(options.get("header", False)),
        delimiter=options.get("delimiter", ","),
        quoting_style="none",
    )
    pacsv.write_csv(table, f, write_options=write_options)
