"""ORC files (format ``orc``): edge and feature files of a Chunked Graph Format input,
``dgl-chunked chunk``'s raw input, ``remap``'s result files and ``lookup``'s queries,
read by row ranges; ``pyarrow.orc`` reads and writes them.

DGL 2.1.0's dispatch does not read ORC (its ``tools/distpartitioning/array_readwriter/``
registers ``csv``, ``parquet`` and ``numpy`` only, and edges are read by name): an input
with ``"format": {"name": "orc"}`` is for ``dgl_chunked`` alone.

The rules are Parquet's (:mod:`.arrow_tables`): edges are the first two (integer)
columns, or ``format.columns``; a feature is ``(rows, columns)``, a single list column
``(rows, length)``. ORC files carry no ``b"shape"`` schema metadata (``pyarrow.orc``
writes none), so one scalar column is ``(rows, 1)``. The rows of each *stripe* (ORC's
row group) come from the file tail (the ``Footer``'s ``StripeInformation.numberOfRows``
in ``orc_proto.proto`` of Apache ORC), so a raw piece reads only the stripes it overlaps.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, UnsupportedFormatError, one_line
from dgl_chunked.io.formats.arrow_tables import (
    common_dtype,
    edge_columns,
    feature_table,
    is_list,
    read_dtype,
    slice_batches,
    table_feature,
)
from dgl_chunked.io.formats.files import source
from dgl_chunked.io.formats.pieces import FileInfo, Piece, raw_file_size
from dgl_chunked.io.formats.registry import TableFormat, register_format
from dgl_chunked.storage import fs

__all__ = [
    "TAIL_READ",
    "OrcFormat",
    "open_orc",
    "orc_feature_info",
    "read_orc_edges",
    "read_orc_feature",
    "read_orc_piece",
    "stripe_rows",
    "write_orc",
]

TAIL_READ = 16 << 10
"""What ``pyarrow.orc`` reads at a file's end to find its tail (the network forecast's figure)."""


@register_format
class OrcFormat(TableFormat):
    """ORC tables: edges and features of a Chunked Graph Format input, ``chunk``'s raw input,
    ``remap``'s result files and ``lookup``'s queries."""

    name = "orc"
    title = "ORC"
    extensions = (".orc",)
    roles = frozenset({"edges", "features", "raw_edges", "raw_features", "raw_keys", "results", "queries"})
    options = {"columns": list}
    raw_options = frozenset({"columns", "column"})
    header_bytes = TAIL_READ

    def read_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool
    ) -> tuple[IdArray, IdArray]:
        return read_orc_edges(path, options, storage_options)

    def count_edges(self, path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> int:
        with source(path, storage_options, block_size=fs.HEADER_BLOCK) as src:
            return int(open_orc(src, path).nrows)

    def write_edges(self, f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
        write_orc(f, table)

    def read_feature(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, mmap: bool
    ) -> npt.NDArray[Any]:
        return read_orc_feature(path, options, storage_options)

    def feature_info(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        return orc_feature_info(path, options, storage_options)

    def write_feature(
        self, f: IO[bytes], array: npt.NDArray[Any], layout: Literal["columns", "list"], path: str
    ) -> None:
        write_orc(f, feature_table(array, layout))

    def inspect(
        self, path: str, where: str, *, delimiter: str, header: bool, storage_options: StorageOptions
    ) -> FileInfo:
        size = raw_file_size(path, where, storage_options)
        with source(path, storage_options, block_size=fs.HEADER_BLOCK) as src:
            f = open_orc(src, path, where=where)
            groups = stripe_rows(f, path)
            return FileInfo(
                path=path,
                size=size,
                rows=int(f.nrows),
                names=tuple(f.schema.names),
                types=tuple(f.schema.types),
                row_groups=groups,
            )

    def read_piece(
        self, piece: Piece, info: FileInfo, columns: Sequence[str], storage_options: StorageOptions
    ) -> pa.Table:
        return read_orc_piece(piece, info, columns, storage_options)


def open_orc(src: str | IO[bytes], path: str, *, where: str | None = None) -> orc.ORCFile:
    """Open an ORC file (its tail only).

    Raises
    ------
    ChunkReadError
        Not an ORC file; the message starts with ``where`` (a spec key) when given.
    """
    try:
        return orc.ORCFile(src)
    except (pa.ArrowException, OSError) as err:
        name = f"{where}: {path!r}" if where else f"chunk file {path!r}"
        raise ChunkReadError(f"{name} is not a readable ORC file ({one_line(err)}); rewrite it") from err


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of a protobuf message: varints as int, the rest as bytes."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        wire = key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield key >> 3, value
            continue
        size = {1: 8, 5: 4}.get(wire)
        if size is None and wire == 2:
            size, at = _varint(data, at)
        if size is None:
            raise ValueError(f"protobuf wire type {wire}")
        yield key >> 3, data[at : at + size]
        at += size


def stripe_rows(f: orc.ORCFile, path: str) -> tuple[int, ...]:
    """Rows of each stripe, from the file tail (``FileTail.footer.stripes[i].numberOfRows``:
    fields 2, 3 and 5 of Apache ORC's ``orc_proto.proto``)."""
    try:
        tail = f.reader.serialized_file_tail()
        footer = next(v for k, v in _fields(tail) if k == 2 and isinstance(v, bytes))
        stripes = [v for k, v in _fields(footer) if k == 3 and isinstance(v, bytes)]
        rows = tuple(next(int(v) for k, v in _fields(s) if k == 5 and isinstance(v, int)) for s in stripes)
    except (ValueError, IndexError, StopIteration) as err:
        raise ChunkReadError(f"chunk file {path!r}: the ORC file tail cannot be read ({err}); rewrite it") from err
    if len(rows) != f.nstripes or sum(rows) != f.nrows:
        raise ChunkReadError(f"chunk file {path!r}: the ORC stripes hold {sum(rows)} rows, the file {f.nrows}")
    return rows


def _read(f: orc.ORCFile, path: str, columns: list[str] | None) -> pa.Table:
    try:
        return f.read(columns=columns)
    except (OSError, pa.ArrowException) as err:
        raise ChunkReadError(
            f"chunk file {path!r} cannot be read ({one_line(err)}); the file is damaged: "
            "replace it and run the command again"
        ) from err


def _columns(f: orc.ORCFile, path: str, columns: list[str] | None) -> list[str]:
    names = list(f.schema.names)
    for name in columns or ():
        if name not in names:
            raise ChunkMismatchError(f"chunk file {path!r}: format.columns names {name!r}, the file has {names}")
    return list(columns) if columns else names


def read_orc_edges(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 arrays of an ORC edge file: its first two columns or ``format.columns``."""
    with source(path, storage_options) as src:
        f = open_orc(src, path)
        columns = _columns(f, path, options.get("columns"))
        if len(columns) < 2:
            raise ChunkMismatchError(f"edge file {path!r}: expected 2 columns (src, dst), found {f.schema.names}")
        table = _read(f, path, columns[:2])
    return edge_columns(table, columns[:2], path)


def read_orc_feature(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> npt.NDArray[Any]:
    """An ORC feature file as one array, by Parquet's rule (no ``b"shape"``: see the module)."""
    with source(path, storage_options) as src:
        f = open_orc(src, path)
        table = _read(f, path, _columns(f, path, options.get("columns")))
    return table_feature(table, None, path)


def orc_feature_info(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions
) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    """``(rows, row_shape, dtype)`` of an ORC feature file, as :func:`read_orc_feature` reads it.

    The tail gives rows and types; integer and bool columns are read to count their
    nulls (``pyarrow.orc`` gives no column statistics), and a variable-size list column's
    first stripe to learn the vector length.
    """
    with source(path, storage_options) as src:
        f = open_orc(src, path)
        rows = int(f.nrows)
        names = _columns(f, path, options.get("columns"))
        types = [f.schema.field(n).type for n in names]
        if len(types) == 1 and is_list(types[0]):
            value = types[0].value_type
            nulls = _nulls(f, path, names[0]) if pa.types.is_integer(value) else 0
            dtype = read_dtype(value, nulls, names[0], path)
            if pa.types.is_fixed_size_list(types[0]):
                return rows, (types[0].list_size,), dtype
            if not rows:
                return rows, (0,), dtype
            first = f.read_stripe(0, columns=names).column(0)
            return rows, (int(pc.list_value_length(first)[0].as_py()),), dtype
        dtypes = [
            read_dtype(t, _nulls(f, path, n) if pa.types.is_integer(t) or pa.types.is_boolean(t) else 0, n, path)
            for n, t in zip(names, types, strict=True)
        ]
        return rows, (len(types),), common_dtype(dtypes, names, path)


def _nulls(f: orc.ORCFile, path: str, name: str) -> int:
    column = _read(f, path, [name]).column(0).combine_chunks()
    return int((column.flatten() if is_list(column.type) else column).null_count)


def write_orc(f: IO[bytes], table: pa.Table) -> None:
    """Write ``table`` as one ORC file (``pyarrow.orc``'s defaults).

    Raises
    ------
    UnsupportedFormatError
        A type ORC has no counterpart for (``float16``, unsigned integers).
    """
    try:
        orc.write_table(table, f)
    except pa.ArrowNotImplementedError as err:
        raise UnsupportedFormatError(
            f"ORC cannot hold the column types {sorted({str(t) for t in table.schema.types})} ({one_line(err)}): "
            "it has no float16 and no unsigned integers; cast them or write Parquet"
        ) from err


def read_orc_piece(
    piece: Piece, info: FileInfo, columns: Sequence[str], storage_options: StorageOptions = None
) -> pa.Table:
    """Rows ``[piece.start, piece.stop)`` of ``columns``: only the stripes that overlap
    the piece are read, one at a time."""
    bounds = np.concatenate([[0], np.cumsum(info.row_groups)]).astype(np.int64)
    stripes = [s for s in range(len(info.row_groups)) if bounds[s] < piece.stop and bounds[s + 1] > piece.start]
    with fs.open_file(piece.path, "rb", storage_options) as raw:
        f = open_orc(raw, piece.path)
        batches = (f.read_stripe(s, columns=list(columns)) for s in stripes)
        first = int(bounds[stripes[0]]) if stripes else 0
        table = slice_batches(batches, first, piece.start, piece.stop, f.schema, columns)
    return table.select(list(columns))  # a stripe's columns come in file order
