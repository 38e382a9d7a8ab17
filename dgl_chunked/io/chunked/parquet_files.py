"""Parquet chunk files: the one footer reader, edge and feature readers, writers.

Every Parquet file dgl_chunked reads is opened by :func:`open_parquet` (one error
for a file that is not Parquet), and its row count, schema, row groups and
``b"shape"`` metadata come from :func:`read_footer`, for chunk files and for the
raw inputs of ``dgl-chunked chunk`` alike.

Edges use the file's first two (integer) columns, or ``format.columns``. Features
follow DGL 2.1.0's ``ParquetArrayParser``: the columns as ``(rows, columns)`` (one
scalar column gives ``(rows, 1)``), a single list column as ``(rows, length)``, then
the schema metadata key ``b"shape"`` reshapes the array; nulls are NaN.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, one_line
from dgl_chunked.io.chunked.files import source
from dgl_chunked.storage import fs, npy

__all__ = [
    "ParquetFooter",
    "feature_table",
    "footer_of",
    "is_list",
    "open_parquet",
    "parquet_feature_info",
    "read_footer",
    "read_table",
    "read_parquet_edges",
    "read_parquet_feature",
    "shape_metadata",
    "write_parquet",
]


_SHAPE = re.compile(rb"\(\s*\d+\s*(,\s*\d+\s*)*,?\s*\)")

THREADED_READ_BYTES = 16 << 20
"""Files with more uncompressed bytes than this are decoded by Arrow's thread pool:
below it, starting the threads cost more than they saved (a 4k-row mask file of a
256-file graph: 0.19 against 0.08 ms per read)."""


@dataclass(frozen=True, kw_only=True)
class ParquetFooter:
    """What a Parquet footer says: rows, Arrow schema, rows per row group."""

    rows: int
    schema: pa.Schema
    row_groups: tuple[int, ...]


def open_parquet(
    src: str | IO[bytes], path: str, *, where: str | None = None, memory_map: bool = True
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
    meta = pf.metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    try:  # Arrow's threads cost more than they give on small files (Spark part files)
        return pf.read(columns=columns, use_threads=size > THREADED_READ_BYTES)
    except (OSError, pa.ArrowException) as err:
        raise _damaged(pf, path, columns, err) from err


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


def shape_metadata(schema: pa.Schema, path: str) -> tuple[int, ...] | None:
    """The ``b"shape"`` schema metadata (DGL's), or None when absent."""
    raw = (schema.metadata or {}).get(b"shape")
    if not raw:  # DGL's reader: `shape = ... if shape else arr.shape`
        return None
    if _SHAPE.fullmatch(raw):  # what DGL and numpy write: "(5000, 16)" (no parser, no lock)
        return tuple(int(s) for s in raw.strip(b"()").split(b",") if s.strip())
    try:
        with npy.HEADER_LOCK:  # CPython 3.11's ast is not thread-safe
            shape = ast.literal_eval(raw.decode())
        return tuple(int(s) for s in shape)
    except (ValueError, SyntaxError, TypeError) as err:
        raise ChunkReadError(
            f"feature file {path!r}: schema metadata 'shape' should be a tuple like '(10, 4)', found {raw!r}"
        ) from err


def is_list(dtype: pa.DataType) -> bool:
    """True for the list, large list and fixed-size list Arrow types."""
    return bool(pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype))


# --- edges ---------------------------------------------------------------------------


def read_parquet_edges(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions
) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 arrays of a Parquet edge file (see ``formats.read_edge_chunk``)."""
    with source(path, storage_options) as src:
        pf = open_parquet(src, path)
        columns = list(options.get("columns") or pf.schema_arrow.names[:2])
        if len(columns) < 2:
            raise ChunkMismatchError(
                f"edge file {path!r}: expected 2 columns (src, dst), found {pf.schema_arrow.names}"
            )
        table = read_table(pf, path, columns[:2])
    out = []
    for name in columns[:2]:
        column = table.column(name)
        if not pa.types.is_integer(column.type):
            raise ChunkMismatchError(
                f"edge file {path!r}: column {name!r}: expected integer node IDs, found type "
                f"{column.type}; cast the column to int64"
            )
        if column.null_count:
            row = pc.index(pc.is_null(column), True).as_py()
            raise ChunkMismatchError(
                f"edge file {path!r}: row {row + 1}, column {name!r}: expected a node ID, found null"
            )
        try:
            out.append(np.ascontiguousarray(column.cast(pa.int64()).to_numpy(), dtype=np.int64))
        except pa.ArrowInvalid as err:
            raise ChunkMismatchError(f"edge file {path!r}: column {name!r}: {err}") from err
    return out[0], out[1]


# --- features ----------------------------------------------------------------------------


def _numeric(dtype: pa.DataType, name: str, path: str) -> None:
    if not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_boolean(dtype)):
        raise ChunkMismatchError(
            f"feature file {path!r}: column {name!r}: expected a numeric or bool type, found {dtype}"
        )


def _read_dtype(dtype: pa.DataType, nulls: int, name: str, path: str) -> np.dtype[Any]:
    """The numpy dtype pandas gives a column (what DGL's reader sees): an integer column
    with a null is float64 (the nulls NaN), a float column keeps its type (NaN)."""
    _numeric(dtype, name, path)
    if nulls and pa.types.is_boolean(dtype):
        raise ChunkMismatchError(
            f"feature file {path!r}: column {name!r}: bool values with {nulls} nulls (DGL reads them as Python "
            "objects and fails); fill the nulls"
        )
    if nulls and pa.types.is_integer(dtype):
        return np.dtype(np.float64)
    out: np.dtype[Any] = np.dtype(dtype.to_pandas_dtype())
    return out


def _common_dtype(dtypes: list[np.dtype[Any]], names: list[str], path: str) -> np.dtype[Any]:
    """``DataFrame.to_numpy()``'s dtype for the columns: numpy's promotion, but bool with
    another type is an object array there (DGL fails on it): refused."""
    kinds = {d.kind == "b" for d in dtypes}
    if len(kinds) > 1:
        raise ChunkMismatchError(
            f"feature file {path!r}: columns {names} mix bool with {sorted({str(d) for d in dtypes})} "
            "(DGL reads them as Python objects and fails); cast them to one type"
        )
    return np.result_type(*dtypes) if dtypes else np.dtype(np.float64)


def _values(column: pa.ChunkedArray | pa.Array, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """A flat column as ``dtype``, nulls as NaN (only float dtypes come with nulls)."""
    if column.null_count:
        column = pc.fill_null(column.cast(pa.from_numpy_dtype(dtype)), float("nan"))
    return np.asarray(column.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _vectors(column: pa.ChunkedArray, name: str, path: str) -> npt.NDArray[Any]:
    """A list column as ``(rows, length)``: ``np.array(column.to_list())`` in DGL."""
    column = column.combine_chunks()
    if column.null_count:
        row = pc.index(pc.is_null(column), True).as_py()
        raise ChunkMismatchError(f"feature file {path!r}: row {row + 1}, column {name!r}: found a null vector")
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    if lengths.size and (lengths.min() != lengths.max()):
        raise ChunkMismatchError(
            f"feature file {path!r}: list column {name!r}: expected vectors of one length, "
            f"found lengths {int(lengths.min())}..{int(lengths.max())}"
        )
    flat = column.flatten()
    values = _values(flat, _read_dtype(flat.type, flat.null_count, name, path))
    return values.reshape(len(column), int(lengths[0]) if lengths.size else 0)


def read_parquet_feature(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> npt.NDArray[Any]:
    """A Parquet feature file as one array, as DGL 2.1.0's ``ParquetArrayParser.read``
    (``tools/distpartitioning/array_readwriter/parquet.py``) makes it:
    ``table.to_pandas().to_numpy()``, so ``(rows, columns)`` even for one scalar column;
    a single list column ``(rows, length)``; then reshaped to the ``b"shape"`` schema
    metadata when the file has it (``(rows,)`` gives a 1-D array). Nulls become NaN
    (an integer column with a null is float64), as pandas makes them."""
    with source(path, storage_options) as src:
        pf = open_parquet(src, path)
        table = read_table(pf, path, options.get("columns"))
    shape = shape_metadata(pf.schema_arrow, path)
    names = table.schema.names
    if table.num_columns == 1 and is_list(table.schema.types[0]):
        array = _vectors(table.column(0), names[0], path)
    else:
        dtypes = [_read_dtype(table.column(i).type, table.column(i).null_count, n, path) for i, n in enumerate(names)]
        common = _common_dtype(dtypes, names, path)
        if len(names) == 1:  # the common case (Spark, GSProcessing): no copy
            array = _values(table.column(0), common).reshape(-1, 1)
        else:
            array = np.empty((table.num_rows, len(names)), common)
            for i, dtype in enumerate(dtypes):
                array[:, i] = _values(table.column(i), dtype)
    if shape is not None:
        if int(np.prod(shape)) != array.size:
            raise ChunkMismatchError(
                f"feature file {path!r}: schema metadata shape {shape} does not fit "
                f"{array.size} values; fix or drop the 'shape' metadata"
            )
        array = array.reshape(shape)
    return array


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
            dtype = _read_dtype(types[0].value_type, nulls[0], names[0], path)
            if pa.types.is_fixed_size_list(types[0]):
                row_shape: tuple[int, ...] = (types[0].list_size,)
            elif footer.rows:
                first = next(pf.iter_batches(batch_size=1, columns=names))
                row_shape = (int(pc.list_value_length(first.column(0))[0].as_py()),)
            else:
                row_shape = (0,)
        else:
            counts = dict(zip(nullable, _null_counts(pf, nullable, path), strict=True))
            dtypes = [_read_dtype(t, counts.get(n, 0), n, path) for n, t in zip(names, types, strict=True)]
            dtype = _common_dtype(dtypes, names, path)
            row_shape = (len(types),)
    shape = shape_metadata(footer.schema, path)
    if shape is not None:
        if not shape or shape[0] != footer.rows or int(np.prod(shape)) != footer.rows * int(np.prod(row_shape)):
            raise ChunkMismatchError(
                f"feature file {path!r}: schema metadata shape {shape} does not start with the "
                f"file's {footer.rows} rows or does not fit its values; fix the 'shape' metadata"
            )
        row_shape = shape[1:]
    return footer.rows, row_shape, dtype


def feature_table(array: npt.NDArray[Any], layout: Literal["columns", "list"]) -> pa.Table:
    """A feature array as an Arrow table with DGL's ``b"shape"`` schema metadata, so
    that DGL's reader (and ours) gives back the array's shape: a 1-D array stays 1-D
    (without the metadata one column reads as ``(rows, 1)``).

    2-D arrays become one column per dimension (``"columns"``) or a single list
    column of vectors (``"list"``, the Spark ML layout: an Arrow ``list``, the only
    list type DGL 2.1.0's reader takes as vectors).
    """
    if array.ndim == 1:
        table = pa.table({"0": array})
    elif layout == "list":
        flat = pa.array(np.ascontiguousarray(array).reshape(-1))
        offsets = pa.array((np.arange(len(array) + 1, dtype=np.int64) * array.shape[1]).astype(np.int32))
        table = pa.table({"vector": pa.ListArray.from_arrays(offsets, flat)})
    else:
        flat2 = array.reshape(array.shape[0], int(np.prod(array.shape[1:])))
        table = pa.table({str(i): flat2[:, i] for i in range(flat2.shape[1])})
    return table.replace_schema_metadata({"shape": str(tuple(array.shape))})


def write_parquet(f: IO[bytes], table: pa.Table) -> None:
    """Write ``table`` as one Parquet file (pyarrow's defaults: the output bytes are pinned)."""
    pq.write_table(table, f)
