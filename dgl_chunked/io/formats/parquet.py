"""Parquet files (format ``parquet``): the one footer reader, edge and feature files of
the Chunked Graph Format, and ``dgl-chunked chunk``'s raw input read by row ranges.

Every Parquet file dgl_chunked reads is opened by :func:`open_parquet` (one error
for a file that is not Parquet), and its row count, schema, row groups and
``b"shape"`` metadata come from :func:`read_footer`, for chunk files and for the
raw inputs of ``dgl-chunked chunk`` alike.

Edges use the file's first two (integer) columns, or ``format.columns``. Features
follow DGL 2.1.0's ``ParquetArrayParser`` (:mod:`.arrow_tables`). A raw piece reads
only the row groups that overlap it, streamed in batches (memory: the piece plus one
batch).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, one_line
from dgl_chunked.io.formats.arrow_tables import (
    checked_row_shape,
    common_dtype,
    edge_columns,
    feature_table,
    fixed_size_rows,
    is_list,
    read_dtype,
    shape_metadata,
    slice_batches,
    table_feature,
)
from dgl_chunked.io.formats.files import file_size, local_path, source
from dgl_chunked.io.formats.pieces import FileInfo, Piece, raw_file_size
from dgl_chunked.io.formats.registry import TableFormat, register_format
from dgl_chunked.storage import fs

__all__ = [
    "FOOTER_READ",
    "ParquetFooter",
    "ParquetFormat",
    "footer_of",
    "iter_parquet_edges",
    "open_parquet",
    "parquet_feature_info",
    "read_batches",
    "read_footer",
    "read_parquet_edges",
    "read_parquet_feature",
    "read_parquet_piece",
    "read_table",
    "whole_source",
    "write_parquet",
]

FOOTER_READ = 64 << 10
"""What Arrow reads at a Parquet file's end to find its footer (the network forecast's figure)."""

WHOLE_READ = 64 << 20
"""A remote Parquet file read whole and no larger than this is fetched in one request
(footer and pages together, see :func:`whole_source`)."""

THREADED_READ_BYTES = 16 << 20
"""Files with more uncompressed bytes than this are decoded by Arrow's thread pool:
below it, starting the threads cost more than they saved (a 4k-row mask file of a
256-file graph: 0.19 against 0.08 ms per read)."""


@register_format
class ParquetFormat(TableFormat):
    """Parquet tables: edges and features of a Chunked Graph Format input, ``chunk``'s raw input,
    ``remap``'s result files and output tables, ``lookup``'s queries."""

    name = "parquet"
    title = "Parquet"
    extensions = (".parquet", ".pq")
    roles = frozenset({"edges", "features", "raw_edges", "raw_features", "raw_keys", "results", "queries", "outputs"})
    options = {"columns": list}
    raw_options = frozenset({"columns", "column"})
    header_bytes = FOOTER_READ

    def read_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool
    ) -> tuple[IdArray, IdArray]:
        return read_parquet_edges(path, options, storage_options)

    def iter_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool, rows: int
    ) -> Iterator[tuple[IdArray, IdArray]]:
        return iter_parquet_edges(path, options, storage_options, rows)

    def count_edges(self, path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> int:
        return read_footer(path, storage_options).rows

    def write_edges(self, f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
        write_parquet(f, table)

    def read_feature(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, mmap: bool
    ) -> npt.NDArray[Any]:
        return read_parquet_feature(path, options, storage_options)

    def feature_info(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        return parquet_feature_info(path, options, storage_options)

    def write_feature(
        self, f: IO[bytes], array: npt.NDArray[Any], layout: Literal["columns", "list"], path: str
    ) -> None:
        write_parquet(f, feature_table(array, layout))

    def inspect(
        self, path: str, where: str, *, delimiter: str, header: bool, storage_options: StorageOptions
    ) -> FileInfo:
        size = raw_file_size(path, where, storage_options)
        footer = read_footer(path, storage_options, where=where)
        return FileInfo(
            path=path,
            size=size,
            rows=footer.rows,
            names=tuple(footer.schema.names),
            types=tuple(footer.schema.types),
            row_groups=footer.row_groups,
        )

    def read_piece(
        self, piece: Piece, info: FileInfo, columns: Sequence[str], storage_options: StorageOptions
    ) -> pa.Table:
        return read_parquet_piece(piece, info, columns, storage_options)

    def write_result_table(
        self,
        path: str,
        names: Sequence[str],
        arrays: Sequence[npt.NDArray[Any] | pa.Array],
        delimiter: str,
        storage_options: StorageOptions,
    ) -> None:
        columns = {
            n: a if isinstance(a, pa.Array) else fixed_size_rows(np.asarray(a))
            for n, a in zip(names, arrays, strict=True)
        }
        with fs.open_file(path, "wb", storage_options) as f:
            pq.write_table(pa.table(columns), f)


@dataclass(frozen=True, kw_only=True)
class ParquetFooter:
    """What a Parquet footer says: rows, Arrow schema, rows per row group."""

    rows: int
    schema: pa.Schema
    row_groups: tuple[int, ...]


def open_parquet(
    src: str | IO[bytes] | pa.BufferReader, path: str, *, where: str | None = None, memory_map: bool = True
) -> pq.ParquetFile:
    """Open a Parquet file (memory-mapped when ``src`` is a local path and ``memory_map``:
    to read its pages; for its footer alone a plain open is faster).

    Raises
    ------
    ChunkReadError
        Not a Parquet file; the message starts with ``where`` (a spec key) when given.
    """
    local = isinstance(src, str)
    try:  # pre-buffering coalesces remote reads; a memory-mapped file gains nothing from it
        return pq.ParquetFile(src, memory_map=local and memory_map, pre_buffer=not local)
    except (pa.ArrowInvalid, OSError) as err:
        name = f"{where}: {path!r}" if where else f"chunk file {path!r}"
        raise ChunkReadError(f"{name} is not a readable Parquet file ({one_line(err)}); rewrite it") from err


def footer_of(pf: pq.ParquetFile) -> ParquetFooter:
    """The :class:`ParquetFooter` of an open file."""
    meta = pf.metadata
    groups = tuple(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    return ParquetFooter(rows=int(meta.num_rows), schema=pf.schema_arrow, row_groups=groups)


@contextmanager
def whole_source(path: str, storage_options: StorageOptions) -> Iterator[str | IO[bytes] | pa.BufferReader]:
    """A :func:`~dgl_chunked.io.formats.files.source` for a file read whole: a remote file
    of at most :data:`WHOLE_READ` bytes comes in one ranged request.

    Through fsspec's read-ahead, Arrow's footer read fetched the file's last 64 KiB
    and its page read then the file again from byte 4: two requests and the footer
    twice for every file over 64 KiB (counted through a relay in front of an S3
    server, issue 37). A larger file is read as before (its footer, 64 KiB, twice).
    """
    if local_path(path, storage_options) is None:
        size = file_size(path, storage_options)  # listed when the graph was opened: no request there
        if size <= WHOLE_READ:
            filesystem, inner = fs.filesystem(path, storage_options)
            # a range, so that s3fs does not ask the size again (a HEAD per file in a worker)
            yield pa.BufferReader(filesystem.cat_file(inner, start=0, end=size) if size else b"")
            return
    with source(path, storage_options) as src:
        yield src


def read_footer(path: str, storage_options: StorageOptions = None, *, where: str | None = None) -> ParquetFooter:
    """Row count, schema and row groups of a Parquet file, from its footer only."""
    with source(path, storage_options, block_size=fs.HEADER_BLOCK) as src:
        return footer_of(open_parquet(src, path, where=where))


def read_table(pf: pq.ParquetFile, path: str, columns: list[str] | None) -> pa.Table:
    """``columns`` of an open file; a damaged row group raises :class:`ChunkReadError`
    naming the file, the row group, its rows and its bytes.

    The footer alone does not prove the pages readable (a damaged page header behind
    an intact footer opens fine and fails here).
    """
    try:
        return pf.read(columns=columns, use_threads=_threaded(pf))
    except (OSError, pa.ArrowException) as err:
        raise _damaged(pf, path, columns, err) from err


def read_batches(pf: pq.ParquetFile, path: str, columns: list[str] | None, rows: int) -> Iterator[pa.RecordBatch]:
    """``columns`` of an open file in batches of at most ``rows`` rows (Arrow's
    ``iter_batches``: one batch decoded at a time); a damaged row group raises
    :class:`ChunkReadError` as in :func:`read_table`."""
    try:
        yield from pf.iter_batches(batch_size=rows, columns=columns, use_threads=_threaded(pf))
    except (OSError, pa.ArrowException) as err:
        raise _damaged(pf, path, columns, err) from err


def _threaded(pf: pq.ParquetFile) -> bool:
    """Whether Arrow's threads decode the file: they cost more than they give on small
    files (Spark part files), see :data:`THREADED_READ_BYTES`."""
    meta = pf.metadata
    return int(sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))) > THREADED_READ_BYTES


def _damaged(pf: pq.ParquetFile, path: str, columns: list[str] | None, err: BaseException) -> ChunkReadError:
    """The error for a file whose read failed: its first row group that cannot be read."""
    meta, first = pf.metadata, 1
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        try:
            pf.read_row_group(i, columns=columns)
        except (OSError, pa.ArrowException) as group_err:
            lo, hi = _group_bytes(group)
            return ChunkReadError(
                f"chunk file {path!r}: row group {i} (rows {first}-{first + group.num_rows - 1}, bytes {lo}-{hi}) "
                f"cannot be read ({one_line(group_err)}); the file is damaged: replace it and run the command again"
            )
        first += group.num_rows
    return ChunkReadError(
        f"chunk file {path!r} cannot be read ({one_line(err)}); the file is damaged: "
        "replace it and run the command again"
    )


def _group_bytes(group: Any) -> tuple[int, int]:
    """Byte range ``[lo, hi)`` of a row group's column chunks, from the footer."""
    spans = []
    for j in range(group.num_columns):
        col = group.column(j)
        lo = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
        spans.append((int(lo), int(lo) + int(col.total_compressed_size)))
    return (min(lo for lo, _ in spans), max(hi for _, hi in spans)) if spans else (0, 0)


# --- edges ---------------------------------------------------------------------------


def read_parquet_edges(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions
) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 arrays of a Parquet edge file (see ``formats.read_edge_chunk``),
    decoded row group by row group into them: beside the two arrays, one row group's
    Arrow table at a time, not the file's and its int64 copies (a 12.5M-edge file of 12
    row groups: 387 -> 256 MB above the reading task's base, issue #38's report). A
    remote file over :data:`WHOLE_READ` is read whole, in Arrow's coalesced requests
    (one per row group would multiply them)."""
    with whole_source(path, storage_options) as src:
        pf = open_parquet(src, path, memory_map=False)
        columns = _edge_column_names(pf, options, path)
        groups = pf.metadata.num_row_groups
        if groups <= 1 or not isinstance(src, (str, pa.BufferReader)):
            return edge_columns(read_table(pf, path, columns), columns, path)
        rows, threaded = pf.metadata.num_rows, _threaded(pf)
        out, first = (np.empty(rows, np.int64), np.empty(rows, np.int64)), 0
        for i in range(groups):
            got = edge_columns(_read_group(pf, path, columns, i, threaded), columns, path, first_row=first)
            for arr, part in zip(out, got, strict=True):
                arr[first : first + part.size] = part
            first += got[0].size
    return out


def _read_group(pf: pq.ParquetFile, path: str, columns: list[str], i: int, threaded: bool) -> pa.Table:
    """Row group ``i`` of an open file (``threaded``: :func:`_threaded` of the file, asked
    once, not per group); a damaged one raises as in :func:`read_table`."""
    try:
        return pf.read_row_group(i, columns=columns, use_threads=threaded)
    except (OSError, pa.ArrowException) as err:
        raise _damaged(pf, path, columns, err) from err


def iter_parquet_edges(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions, rows: int
) -> Iterator[tuple[IdArray, IdArray]]:
    """``(src, dst)`` int64 arrays of a Parquet edge file in order, decoded in batches
    of at most ``rows`` edges (Arrow's ``iter_batches``): one batch and its arrays in
    memory, not the file's (issue #38: ``lp``'s staging of a 12.5M-edge file held
    its 200 MB of edges, and Arrow's read buffers beside them). A damaged row group
    raises :class:`ChunkReadError` naming it, as :func:`read_table` does.

    A local file is read, not memory-mapped: the mapped pages of the file read so far
    count in the process's memory until the file is closed (a 137 MB file of 12.5M
    edges ends its staging task with all of it resident)."""
    with whole_source(path, storage_options) as src:
        pf = open_parquet(src, path, memory_map=False)
        columns, first = _edge_column_names(pf, options, path), 0
        for batch in read_batches(pf, path, columns, rows):
            yield edge_columns(pa.Table.from_batches([batch]), columns, path, first_row=first)
            first += batch.num_rows


def _edge_column_names(pf: pq.ParquetFile, options: Mapping[str, Any], path: str) -> list[str]:
    """The ``src`` and ``dst`` columns of an edge file: ``format.columns``, else its first two."""
    columns = list(options.get("columns") or pf.schema_arrow.names[:2])
    if len(columns) < 2:
        raise ChunkMismatchError(f"edge file {path!r}: expected 2 columns (src, dst), found {pf.schema_arrow.names}")
    return columns[:2]


# --- features ----------------------------------------------------------------------------


def read_parquet_feature(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> npt.NDArray[Any]:
    """A Parquet feature file as one array, as DGL 2.1.0's ``ParquetArrayParser.read``
    (``tools/distpartitioning/array_readwriter/parquet.py``) makes it:
    ``table.to_pandas().to_numpy()``, so ``(rows, columns)`` even for one scalar column;
    a single list column ``(rows, length)``; then reshaped to the ``b"shape"`` schema
    metadata when the file has it (``(rows,)`` gives a 1-D array). Nulls become NaN
    (an integer column with a null is float64), as pandas makes them."""
    with whole_source(path, storage_options) as src:
        pf = open_parquet(src, path)
        table = read_table(pf, path, options.get("columns"))
    return table_feature(table, shape_metadata(pf.schema_arrow, path), path)


def _null_counts(pf: pq.ParquetFile, names: list[str], path: str) -> list[int]:
    """Nulls per column (leaf values of a list) from the footer's statistics; a column
    without them is read."""
    meta, out = pf.metadata, []
    for name in names:
        total: int | None = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for j in range(group.num_columns):
                col = group.column(j)
                if col.path_in_schema.split(".")[0] != name:
                    continue
                stats = col.statistics
                if stats is None or not stats.has_null_count or total is None:
                    total = None
                else:
                    total += int(stats.null_count)
        if total is None:
            column = read_table(pf, path, [name]).column(0).combine_chunks()
            total = int((column.flatten() if is_list(column.type) else column).null_count)
        out.append(total)
    return out


def parquet_feature_info(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions
) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    """``(rows, row_shape, dtype)`` of a Parquet feature file, as :func:`read_parquet_feature`
    reads it, from its footer (nulls from its statistics).

    For a list column of variable size the first row is read to learn the vector
    length (``row_shape`` is ``(0,)`` for a zero-row file).
    """
    with source(path, storage_options) as src:
        pf = open_parquet(src, path, memory_map=False)
        footer = ParquetFooter(rows=int(pf.metadata.num_rows), schema=pf.schema_arrow, row_groups=())
        names = list(options.get("columns") or footer.schema.names)
        types = [footer.schema.field(n).type for n in names]
        nullable = [n for n, t in zip(names, types, strict=True) if pa.types.is_integer(t) or pa.types.is_boolean(t)]
        if len(types) == 1 and is_list(types[0]):
            nulls = _null_counts(pf, names, path) if pa.types.is_integer(types[0].value_type) else [0]
            dtype = read_dtype(types[0].value_type, nulls[0], names[0], path)
            if pa.types.is_fixed_size_list(types[0]):
                row_shape: tuple[int, ...] = (types[0].list_size,)
            elif footer.rows:
                first = next(pf.iter_batches(batch_size=1, columns=names))
                row_shape = (int(pc.list_value_length(first.column(0))[0].as_py()),)
            else:
                row_shape = (0,)
        else:
            counts = dict(zip(nullable, _null_counts(pf, nullable, path), strict=True))
            dtypes = [read_dtype(t, counts.get(n, 0), n, path) for n, t in zip(names, types, strict=True)]
            dtype = common_dtype(dtypes, names, path)
            row_shape = (len(types),)
    return footer.rows, checked_row_shape(shape_metadata(footer.schema, path), footer.rows, row_shape, path), dtype


def write_parquet(f: IO[bytes], table: pa.Table) -> None:
    """Write ``table`` as one Parquet file (pyarrow's defaults: the output bytes are pinned)."""
    pq.write_table(table, f)


# --- raw input pieces ----------------------------------------------------------------


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
    with fs.open_file(piece.path, "rb", storage_options) as f:
        pf = open_parquet(f, piece.path)
        row = int(bounds[groups[0]]) if groups else 0
        batches = pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=list(columns))
        return slice_batches(batches, row, piece.start, piece.stop, pf.schema_arrow, columns)
