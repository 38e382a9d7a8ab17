"""CSV text parsing that forgives: the retry for one unterminated line, and the one
diagnosis that names the first bad row of a text that failed to parse.

:func:`find_bad_row` is used for CSV edge files and for ``dgl-chunked chunk``'s CSV
pieces alike (each words the message for its own input).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from dgl_chunked._typing import StorageOptions
from dgl_chunked.io.formats.files import binary, source

__all__ = ["PARSE_POOL", "BadRow", "EmptyCsvError", "find_bad_row", "first_bad_integer", "parse_csv", "text_parser"]

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
