"""Raw readers of ``dgl-chunked chunk``: file inspection and piece readers.

A source is split into *pieces* (:class:`Piece`): a row range of one ``.npy`` or
Parquet file, or a byte range of one CSV file. Readers take paths (local or
fsspec URLs), never handles, and only read the piece they are given:

- ``.npy``: the header gives the data offset, and a row range is read with one
  seek and ``readinto`` (no memory map is kept, so resident memory stays the size
  of the piece); shape ``(2, E)`` edge arrays are read as two ranges.
- Parquet: the row groups that overlap the range, streamed in batches (memory:
  the piece plus one batch).
- CSV: the lines *starting* in ``[start, stop)`` (a line crossing ``stop`` is
  finished, one crossing ``start`` belongs to the previous piece), parsed by
  ``pyarrow.csv``; only a piece at byte 0 skips a header line.

Inspection (:func:`inspect_file`) reads only headers, footers and a CSV's first
line. Every error names the spec key (``where``), the file and, for data errors,
the row (1-based, header excluded; for CSV the 1-based line).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pacsv

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError
from dgl_chunked.io.chunked.csv_files import find_bad_row
from dgl_chunked.io.chunked.npy_files import inspect_npy
from dgl_chunked.io.chunked.parquet_files import open_parquet, read_footer
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage import npy

__all__ = [
    "FileInfo",
    "Piece",
    "csv_line_number",
    "inspect_file",
    "npy_header",
    "read_csv_piece",
    "read_npy_flat",
    "read_npy_rows",
    "read_parquet_piece",
    "split_pieces",
]


@dataclass(frozen=True, kw_only=True)
class Piece:
    """Rows ``[start, stop)`` of an npy/Parquet file, or bytes of a CSV file."""

    path: str
    start: int
    stop: int


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """What inspection learned about one file.

    ``rows`` is None for CSV (unknown until parsed); ``names`` are the column
    names (Parquet schema, CSV header) or, for CSV without header, ``f0, f1, ...``
    for the fields of the first line; ``types`` are the Arrow types of Parquet
    columns; ``shape``/``dtype``/``offset``/``fortran`` describe an ``.npy``.
    """

    path: str
    size: int
    rows: int | None
    names: tuple[str, ...] = ()
    types: tuple[pa.DataType, ...] = ()
    row_groups: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    dtype: np.dtype[Any] | None = None
    offset: int = 0
    fortran: bool = False


# --- inspection ----------------------------------------------------------------------


def _size(path: str, where: str, storage_options: StorageOptions) -> int:
    fs, inner = _fs.filesystem(path, storage_options)
    try:
        if fs.isdir(inner):
            raise ChunkReadError(f"{where}: {path!r} is a directory; name a file, a glob or 'dir/'")
        return int(fs.size(inner))
    except FileNotFoundError:
        raise ChunkReadError(f"{where}: file {path!r} does not exist; fix the path in the spec") from None


def npy_header(path: str, where: str, storage_options: StorageOptions = None) -> FileInfo:
    """Shape, dtype and data offset of an ``.npy`` file; checks it is not truncated."""
    size = _size(path, where, storage_options)
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


def _parquet_info(path: str, where: str, storage_options: StorageOptions) -> FileInfo:
    size = _size(path, where, storage_options)
    footer = read_footer(path, storage_options, where=where)
    return FileInfo(
        path=path,
        size=size,
        rows=footer.rows,
        names=tuple(footer.schema.names),
        types=tuple(footer.schema.types),
        row_groups=footer.row_groups,
    )


def _csv_info(path: str, where: str, delimiter: str, header: bool, storage_options: StorageOptions) -> FileInfo:
    size = _size(path, where, storage_options)
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


def inspect_file(
    path: str,
    fmt: str,
    where: str,
    *,
    delimiter: str = ",",
    header: bool = False,
    storage_options: StorageOptions = None,
) -> FileInfo:
    """Inspect one file of a source from its header, footer or first line.

    Raises
    ------
    ChunkReadError
        Missing, unreadable, truncated or corrupt file.
    """
    if fmt == "numpy":
        return npy_header(path, where, storage_options)
    if fmt == "parquet":
        return _parquet_info(path, where, storage_options)
    return _csv_info(path, where, delimiter, header, storage_options)


def split_pieces(infos: Sequence[FileInfo], num_blocks: int, *, by_bytes: bool) -> list[tuple[Piece, ...]]:
    """Split the concatenation of ``infos`` into ``<= num_blocks`` near-equal blocks.

    Rows (or bytes, for CSV) are counted over all files; a block may span files
    and is a tuple of pieces. Empty blocks are dropped; at least one block is
    returned (possibly with no piece).
    """
    sizes = [(i.size if by_bytes else int(i.rows or 0)) for i in infos]
    total = sum(sizes)
    k = max(min(num_blocks, total), 1)
    cuts = [total * b // k for b in range(k + 1)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    blocks: list[tuple[Piece, ...]] = []
    for lo, hi in itertools.pairwise(cuts):
        pieces = []
        for info, first, n in zip(infos, starts[:-1], sizes, strict=True):
            a, b = max(lo, int(first)), min(hi, int(first) + n)
            if a < b:
                pieces.append(Piece(path=info.path, start=a - int(first), stop=b - int(first)))
        if pieces:
            blocks.append(tuple(pieces))
    return blocks or [()]


# --- npy ---------------------------------------------------------------------------------


def read_npy_flat(
    path: str, info: FileInfo, first: int, count: int, storage_options: StorageOptions = None
) -> npt.NDArray[Any]:
    """Elements ``[first, first + count)`` of an ``.npy`` file in storage order, 1-D."""
    dtype = info.dtype if info.dtype is not None else np.dtype(np.uint8)
    out = np.empty(count, dtype)
    with _fs.open_file(path, "rb", storage_options) as f:
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


# --- parquet --------------------------------------------------------------------------


def read_parquet_piece(
    piece: Piece,
    info: FileInfo,
    columns: Sequence[str],
    storage_options: StorageOptions = None,
    *,
    batch_rows: int = 1 << 16,
) -> pa.Table:
    """Rows ``[piece.start, piece.stop)`` of ``columns``.

    Only the row groups that overlap the piece are read, streamed in batches of
    ``batch_rows`` so that a row group larger than the piece is never held whole.
    """
    bounds = np.concatenate([[0], np.cumsum(info.row_groups)]).astype(np.int64)
    groups = [g for g in range(len(info.row_groups)) if bounds[g] < piece.stop and bounds[g + 1] > piece.start]
    kept: list[pa.RecordBatch] = []
    with _fs.open_file(piece.path, "rb", storage_options) as f:
        pf = open_parquet(f, piece.path)
        schema = pf.schema_arrow
        row = int(bounds[groups[0]]) if groups else 0
        for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=list(columns)):
            lo, hi = max(piece.start - row, 0), min(piece.stop - row, batch.num_rows)
            if lo < hi:
                kept.append(batch.slice(lo, hi - lo))
            row += batch.num_rows
            if row >= piece.stop:
                break
    if kept:
        return pa.Table.from_batches(kept)
    return schema.empty_table().select(list(columns))


# --- csv ----------------------------------------------------------------------------------


def _line_block(piece: Piece, storage_options: StorageOptions) -> tuple[int, bytes]:
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


def csv_line_number(path: str, offset: int, row: int, storage_options: StorageOptions = None) -> int:
    """1-based line number of data row ``row`` (0-based) of a block starting at byte ``offset``."""
    lines = 0
    with _fs.open_file(path, "rb", storage_options) as f:
        remaining = offset
        while remaining > 0:
            block = f.read(min(remaining, 1 << 22))
            if not block:
                break
            lines += block.count(b"\n")
            remaining -= len(block)
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
    offset, data = _line_block(piece, storage_options)
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
        raise _diagnose(piece, offset, data, where, delimiter, names, types, err, storage_options) from err


def _diagnose(
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
    """Re-parse a failing block as text to name the first bad line."""
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
