"""Arrow tables as arrays: the conversions every table format (Parquet, ORC) shares.

Edges are two integer columns (:func:`edge_columns`). Features follow DGL 2.1.0's
``ParquetArrayParser.read`` (``tools/distpartitioning/array_readwriter/parquet.py``):
``table.to_pandas().to_numpy()``, so ``(rows, columns)`` even for one scalar column; a
single list column is ``(rows, length)``; then the ``b"shape"`` schema metadata
reshapes the array (:func:`table_feature`). Nulls become NaN (an integer column with a
null is float64), as pandas makes them. :func:`feature_table` is the writer's side.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError
from dgl_chunked.storage import npy

__all__ = [
    "checked_row_shape",
    "common_dtype",
    "edge_columns",
    "feature_table",
    "fixed_size_rows",
    "is_list",
    "read_dtype",
    "shape_metadata",
    "slice_batches",
    "table_feature",
]

_SHAPE = re.compile(rb"\(\s*\d+\s*(,\s*\d+\s*)*,?\s*\)")


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


def edge_columns(table: pa.Table, columns: Sequence[str], path: str, *, first_row: int = 0) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 arrays of the two ``columns`` of an edge file's table (rows
    ``first_row`` on of the file: the row an error names)."""
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
                f"edge file {path!r}: row {first_row + row + 1}, column {name!r}: expected a node ID, found null"
            )
        try:
            out.append(np.ascontiguousarray(column.cast(pa.int64()).to_numpy(), dtype=np.int64))
        except pa.ArrowInvalid as err:
            raise ChunkMismatchError(f"edge file {path!r}: column {name!r}: {err}") from err
    return out[0], out[1]


def _numeric(dtype: pa.DataType, name: str, path: str) -> None:
    if not (pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_boolean(dtype)):
        raise ChunkMismatchError(
            f"feature file {path!r}: column {name!r}: expected a numeric or bool type, found {dtype}"
        )


def read_dtype(dtype: pa.DataType, nulls: int, name: str, path: str) -> np.dtype[Any]:
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


def common_dtype(dtypes: list[np.dtype[Any]], names: list[str], path: str) -> np.dtype[Any]:
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
    values = _values(flat, read_dtype(flat.type, flat.null_count, name, path))
    return values.reshape(len(column), int(lengths[0]) if lengths.size else 0)


def table_feature(table: pa.Table, shape: tuple[int, ...] | None, path: str) -> npt.NDArray[Any]:
    """A feature file's table as one array, as DGL's reader makes it (module docstring);
    ``shape`` is the file's ``b"shape"`` metadata (:func:`shape_metadata`)."""
    names = table.schema.names
    if table.num_columns == 1 and is_list(table.schema.types[0]):
        array = _vectors(table.column(0), names[0], path)
    else:
        dtypes = [read_dtype(table.column(i).type, table.column(i).null_count, n, path) for i, n in enumerate(names)]
        common = common_dtype(dtypes, names, path)
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


def checked_row_shape(
    shape: tuple[int, ...] | None, rows: int, row_shape: tuple[int, ...], path: str
) -> tuple[int, ...]:
    """The row shape of a feature file of ``rows`` rows of ``row_shape`` after its
    ``b"shape"`` metadata, which must start with ``rows`` and fit the values."""
    if shape is not None:
        if not shape or shape[0] != rows or int(np.prod(shape)) != rows * int(np.prod(row_shape)):
            raise ChunkMismatchError(
                f"feature file {path!r}: schema metadata shape {shape} does not start with the "
                f"file's {rows} rows or does not fit its values; fix the 'shape' metadata"
            )
        row_shape = shape[1:]
    return row_shape


def slice_batches(
    batches: Any, first_row: int, start: int, stop: int, schema: pa.Schema, columns: Sequence[str]
) -> pa.Table:
    """Rows ``[start, stop)`` of a file from ``batches`` that begin at its row ``first_row``
    (only the kept slices are held: the piece plus one batch)."""
    kept: list[pa.RecordBatch] = []
    row = first_row
    for batch in batches:
        lo, hi = max(start - row, 0), min(stop - row, batch.num_rows)
        if lo < hi:
            kept.append(batch.slice(lo, hi - lo))
        row += batch.num_rows
        if row >= stop:
            break
    if kept:
        return pa.Table.from_batches(kept)
    return schema.empty_table().select(list(columns))


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


def fixed_size_rows(values: npt.NDArray[Any]) -> pa.Array:
    """A 1-D array as an Arrow array, a 2-D (or more) one as fixed-size lists of its rows."""
    if values.ndim == 1:
        return pa.array(values)
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    flat = np.ascontiguousarray(values).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat), width)
