"""Per-chunk readers and writers for the file formats of the Chunked Graph Format.

One small handler per ``format.name`` sits behind a registry (DGL's
``array_readwriter`` idea). Every function here is a pure kernel: it takes a path
(local or fsspec URL) plus ``storage_options`` and returns numpy arrays; none of
them imports Dask.

========  ======  ========  =====================================================
name      edges   features  options
========  ======  ========  =====================================================
csv       yes     no        ``delimiter`` (one character, default ``","`` as in
                            DGL's ``CSVArrayParser``), ``header`` (bool, default
                            False; a dgl_chunked extension that DGL rejects)
parquet   yes     yes       ``columns`` (list of column names to use; a
                            dgl_chunked extension that DGL rejects)
numpy     no      yes       none
========  ======  ========  =====================================================

Edges: CSV rows are ``src<delim>dst[<delim>ignored...]`` with no header; Parquet
uses its first two (integer) columns. Features: ``.npy`` files are memory-mapped
locally; Parquet follows DGL's ``ParquetArrayParser``: the schema metadata key
``b"shape"`` reshapes the table, a single list column gives vector rows, otherwise
the columns are stacked (a single scalar column gives a 1-D array).
"""

from __future__ import annotations

import ast
import io
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import (
    ChunkMismatchError,
    ChunkReadError,
    UnsupportedFormatError,
)
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage import npy

__all__ = [
    "FEATURE_DTYPES",
    "FORMAT_OPTIONS",
    "count_edge_rows",
    "read_npy_header",
    "feature_chunk_info",
    "file_size",
    "normalize_options",
    "read_edge_chunk",
    "read_feature_chunk",
    "supported_formats",
    "write_edge_chunk",
    "write_feature_chunk",
]

Role = Literal["edges", "features"]

FEATURE_DTYPES: frozenset[np.dtype[Any]] = frozenset(
    np.dtype(name)
    for name in (
        "float16",
        "float32",
        "float64",
        "uint8",
        "int8",
        "int16",
        "int32",
        "int64",
        "bool",
    )
)
"""Feature dtypes DGL's pipeline accepts (spec 4.3)."""

FORMAT_OPTIONS: Mapping[str, Mapping[str, type | tuple[type, ...]]] = {
    "csv": {"delimiter": str, "header": bool},
    "parquet": {"columns": list},
    "numpy": {},
}
"""Allowed option keys (besides ``name``) and their JSON types, per format."""

_ROLES: Mapping[str, frozenset[str]] = {
    "csv": frozenset({"edges"}),
    "parquet": frozenset({"edges", "features"}),
    "numpy": frozenset({"features"}),
}
_EDGE_COLUMNS = ["f0", "f1"]
_COUNT_BLOCK = 1 << 22


def supported_formats(role: Role) -> tuple[str, ...]:
    """Names of the formats that can hold ``role`` ("edges" or "features")."""
    return tuple(name for name, roles in _ROLES.items() if role in roles)


def normalize_options(fmt: str, options: Mapping[str, Any], *, role: Role, where: str) -> dict[str, Any]:
    """Check a ``format`` object's name and options; return the options as a dict.

    Raises
    ------
    UnsupportedFormatError
        Unknown format, a format that cannot hold ``role``, or a bad option.
    """
    if fmt not in _ROLES or role not in _ROLES[fmt]:
        raise UnsupportedFormatError(
            f"{where}.format.name: expected one of {list(supported_formats(role))} for {role}, "
            f"found {fmt!r}; convert the files or fix the name"
        )
    allowed = FORMAT_OPTIONS[fmt]
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in allowed:
            raise UnsupportedFormatError(
                f"{where}.format: expected only options {sorted(allowed)} for {fmt!r}, found {key!r}; remove it"
            )
        if not isinstance(value, allowed[key]):
            raise UnsupportedFormatError(
                f"{where}.format.{key}: expected {allowed[key].__name__}, found {value!r}"  # type: ignore[union-attr]
            )
        out[key] = list(value) if isinstance(value, list) else value
    delimiter = out.get("delimiter")
    if delimiter is not None and len(delimiter) != 1:
        raise UnsupportedFormatError(f"{where}.format.delimiter: expected a single character, found {delimiter!r}")
    return out


# --- file access ---------------------------------------------------------------


def _local_path(path: str, storage_options: StorageOptions) -> str | None:
    fs, inner = _fs.filesystem(path, storage_options)
    return inner if isinstance(fs, LocalFileSystem) else None


def file_size(path: str, storage_options: StorageOptions = None) -> int:
    """Size of a chunk file in bytes; :class:`ChunkReadError` if it does not exist."""
    fs, inner = _fs.filesystem(path, storage_options)
    try:
        return int(fs.size(inner))
    except FileNotFoundError as err:
        raise ChunkReadError(
            f"chunk file {path!r} does not exist; fix the path in metadata.json or restore the file"
        ) from err


@contextmanager
def _source(path: str, storage_options: StorageOptions) -> Iterator[str | IO[bytes]]:
    """Yield a local path (so pyarrow and numpy can mmap) or an open fsspec file."""
    local = _local_path(path, storage_options)
    if local is not None:
        if not os.path.isfile(local):
            file_size(path, storage_options)  # raises ChunkReadError for a missing file
            raise ChunkReadError(f"chunk path {path!r} is not a regular file; point to a file")
        yield local
        return
    file_size(path, storage_options)
    with _fs.open_file(path, "rb", storage_options) as f:
        yield f


def _makedirs_for(path: str, storage_options: StorageOptions) -> None:
    fs, inner = _fs.filesystem(path, storage_options)
    parent = inner.rsplit("/", 1)[0] if "/" in inner else ""
    if parent:
        fs.makedirs(parent, exist_ok=True)


# --- edges ---------------------------------------------------------------------


def read_edge_chunk(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions = None,
    allow_empty: bool = False,
) -> tuple[IdArray, IdArray]:
    """Read one edge file into ``(src, dst)`` int64 arrays of per-type node IDs.

    Parameters
    ----------
    path
        Local path or fsspec URL of the chunk.
    fmt, options
        ``format.name`` and the other ``format`` keys (see the module docstring).
    storage_options
        fsspec options for URLs.
    allow_empty
        Accept a zero-byte CSV file as zero edges (DGL v2.2.1 rejects it).

    Raises
    ------
    ChunkReadError
        Missing, unreadable or (unless ``allow_empty``) empty file.
    ChunkMismatchError
        Non-integer or missing values, rows with a wrong number of columns, a header
        row; the message names the file and the 1-based row.
    """
    normalize_options(fmt, options, role="edges", where=path)
    if fmt == "csv":
        return _read_csv_edges(path, options, storage_options, allow_empty)
    return _read_parquet_edges(path, options, storage_options)


def count_edge_rows(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions = None,
) -> int:
    """Number of edges in one edge file: the Parquet footer, or the non-empty CSV lines."""
    normalize_options(fmt, options, role="edges", where=path)
    if fmt == "parquet":
        with _source(path, storage_options) as src:
            return int(_parquet_file(src, path).metadata.num_rows)
    count, last = 0, None
    with _source(path, storage_options) as src, _binary(src) as f:
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


@contextmanager
def _binary(src: str | IO[bytes]) -> Iterator[IO[bytes]]:
    if isinstance(src, str):
        with open(src, "rb") as f:
            yield f
    else:
        yield src


class _EmptyCsv(Exception):
    """Internal: the CSV file holds no data row."""


def _parse_csv(path: str, storage_options: StorageOptions, parse: Callable[[Any], pa.Table]) -> pa.Table:
    """``parse(src)``, retried in memory when pyarrow cannot infer the columns of a
    file with one line and no final newline; :class:`_EmptyCsv` for no data rows."""
    with _source(path, storage_options) as src:
        try:
            return parse(src)
        except pa.ArrowInvalid as err:
            if not _no_rows(err):
                raise
            if not isinstance(src, str):
                src.seek(0)
            with _binary(src) as f:
                data = f.read().rstrip(b"\r\n")
    if not data.strip():
        raise _EmptyCsv
    try:
        return parse(io.BytesIO(data + b"\n"))
    except pa.ArrowInvalid as err:  # a header row and nothing else
        if _no_rows(err):
            raise _EmptyCsv from err
        raise


def _no_rows(err: Exception) -> bool:
    return "Empty CSV file" in str(err) or "Could not skip initial" in str(err)


def _read_csv_edges(
    path: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    allow_empty: bool,
) -> tuple[IdArray, IdArray]:
    delimiter = options.get("delimiter", ",")
    skip = int(bool(options.get("header", False)))

    def parse(src: Any) -> pa.Table:
        return pacsv.read_csv(
            src,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(_EDGE_COLUMNS, pa.int64()),
                include_columns=_EDGE_COLUMNS,
            ),
        )

    try:
        table = _parse_csv(path, storage_options, parse)
    except _EmptyCsv:
        if allow_empty or (skip and file_size(path, storage_options) > 0):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        raise ChunkReadError(
            f"edge file {path!r}: expected 'src{delimiter}dst' rows, found an empty file; "
            "remove it from metadata.json (DGL v2.2.1 fails on empty CSV files)"
        ) from None
    except (pa.ArrowInvalid, pa.ArrowKeyError) as err:
        raise _diagnose_csv(path, options, storage_options, err) from err
    if any(table.column(c).null_count for c in _EDGE_COLUMNS):
        raise _diagnose_csv(path, options, storage_options, None)
    return _to_int64(table.column("f0")), _to_int64(table.column("f1"))


def _to_int64(column: pa.ChunkedArray) -> IdArray:
    return np.ascontiguousarray(column.to_numpy(), dtype=np.int64)


def _diagnose_csv(
    path: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions,
    err: Exception | None,
) -> Exception:
    """Re-read a failing CSV slowly (as strings) to name the first bad row."""
    delimiter = options.get("delimiter", ",")
    skip = int(bool(options.get("header", False)))
    bad: list[Any] = []

    def handler(row: Any) -> str:
        bad.append(row)
        return "skip"

    def parse(src: Any) -> pa.Table:
        return pacsv.read_csv(
            src,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip, use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter,
                invalid_row_handler=handler,
            ),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(_EDGE_COLUMNS, pa.string())),
        )

    try:
        table = _parse_csv(path, storage_options, parse)
    except (_EmptyCsv, pa.ArrowInvalid) as exc:
        return ChunkReadError(f"edge file {path!r} could not be parsed as CSV: {err or exc}")
    if bad:
        row = bad[0]
        return ChunkMismatchError(
            f"edge file {path!r}: row {row.number}: expected {row.expected_columns} columns "
            f"separated by {delimiter!r} (as on the first row), found {row.actual_columns}: "
            f"{row.text!r}; every row must have the same number of columns"
        )
    if table.num_columns < 2:
        return ChunkMismatchError(
            f"edge file {path!r}: expected at least 2 columns (src, dst) separated by "
            f"{delimiter!r}, found {table.num_columns}; check format.delimiter in metadata.json"
        )
    for col in _EDGE_COLUMNS:
        message = _bad_integer(table.column(col), skip=skip)
        if message:
            return ChunkMismatchError(f"edge file {path!r}: {message.replace('#', col[1], 1)}")
    return ChunkReadError(f"edge file {path!r} could not be parsed as CSV: {err}")


def _bad_integer(column: pa.ChunkedArray, *, skip: int) -> str | None:
    """Describe the first value of a string column that is not an int64, if any."""
    ok = pc.fill_null(pc.match_substring_regex(column, r"^[+-]?[0-9]+$"), False)
    first = pc.index(ok, False).as_py()
    if first >= 0:
        value = column[first].as_py()
        header = first == 0 and not skip
        hint = "; it looks like a header row: DGL edge files have no header" if header else ""
        hint += " (remove it, or set format.header=true)" if header else ""
        return f"row {first + 1 + skip}, column #: expected an integer node ID, found {value!r}{hint}"
    lengths = pc.utf8_length(column).to_numpy(zero_copy_only=False)
    for row in np.flatnonzero(lengths >= 19):  # only 19+ characters can overflow int64
        value = column[int(row)].as_py()
        if not -(2**63) <= int(value) < 2**63:
            return f"row {row + 1 + skip}, column #: expected an int64 node ID, found {value!r}"
    return None


def _parquet_file(src: str | IO[bytes], path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(src, memory_map=isinstance(src, str))
    except (pa.ArrowInvalid, OSError) as err:
        raise ChunkReadError(f"chunk file {path!r} is not a readable Parquet file ({err}); rewrite it") from err


def _read_parquet_edges(
    path: str, options: Mapping[str, Any], storage_options: StorageOptions
) -> tuple[IdArray, IdArray]:
    with _source(path, storage_options) as src:
        pf = _parquet_file(src, path)
        columns = list(options.get("columns") or pf.schema_arrow.names[:2])
        if len(columns) < 2:
            raise ChunkMismatchError(
                f"edge file {path!r}: expected 2 columns (src, dst), found {pf.schema_arrow.names}"
            )
        table = pf.read(columns=columns[:2])
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
            out.append(_to_int64(column.cast(pa.int64())))
        except pa.ArrowInvalid as err:
            raise ChunkMismatchError(f"edge file {path!r}: column {name!r}: {err}") from err
    return out[0], out[1]


def write_edge_chunk(
    path: str,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    *,
    fmt: str,
    options: Mapping[str, Any] | None = None,
    storage_options: StorageOptions = None,
) -> None:
    """Write one edge file (CSV without header, or a two-column Parquet file)."""
    options = normalize_options(fmt, options or {}, role="edges", where=path)
    table = pa.table({"src": np.asarray(src, np.int64), "dst": np.asarray(dst, np.int64)})
    _makedirs_for(path, storage_options)
    with _fs.open_file(path, "wb", storage_options) as f:
        if fmt == "parquet":
            pq.write_table(table, f)
        else:
            write_options = pacsv.WriteOptions(
                include_header=bool(options.get("header", False)),
                delimiter=options.get("delimiter", ","),
                quoting_style="none",
            )
            pacsv.write_csv(table, f, write_options=write_options)


# --- features ------------------------------------------------------------------


def read_feature_chunk(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions = None,
    mmap: bool = True,
) -> npt.NDArray[Any]:
    """Read one feature file; rows are per-type IDs in file order.

    ``.npy`` files are memory-mapped (read-only) when local and ``mmap`` is True,
    and read whole from URLs.

    Raises
    ------
    ChunkReadError
        Missing, truncated or corrupt file.
    ChunkMismatchError
        Parquet content that is not a numeric array (strings, nulls, ragged lists).
    """
    normalize_options(fmt, options, role="features", where=path)
    if fmt == "numpy":
        return _read_npy(path, storage_options, mmap)
    return _read_parquet_feature(path, options, storage_options)


def _read_npy(path: str, storage_options: StorageOptions, mmap: bool) -> npt.NDArray[Any]:
    with _source(path, storage_options) as src:
        try:
            return npy.load(src, mmap=mmap)
        except (ValueError, OSError, EOFError) as err:
            raise ChunkReadError(
                f"feature file {path!r} is not a valid .npy file or is truncated ({err}); rewrite it with numpy.save"
            ) from err


def _parquet_shape(schema: pa.Schema, path: str) -> tuple[int, ...] | None:
    raw = (schema.metadata or {}).get(b"shape")
    if raw is None:
        return None
    try:
        with npy.HEADER_LOCK:
            shape = ast.literal_eval(raw.decode())
        return tuple(int(s) for s in shape)
    except (ValueError, SyntaxError, TypeError) as err:
        raise ChunkReadError(
            f"feature file {path!r}: schema metadata 'shape' should be a tuple like '(10, 4)', found {raw!r}"
        ) from err


def _is_list(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype))


def _column_numpy(column: pa.ChunkedArray, name: str, path: str) -> npt.NDArray[Any]:
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_boolean(column.type)):
        raise ChunkMismatchError(
            f"feature file {path!r}: column {name!r}: expected a numeric or bool type, found {column.type}"
        )
    if column.null_count:
        row = pc.index(pc.is_null(column), True).as_py()
        raise ChunkMismatchError(f"feature file {path!r}: row {row + 1}, column {name!r}: found null")
    return np.asarray(column.to_numpy())


def _read_parquet_feature(path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> npt.NDArray[Any]:
    with _source(path, storage_options) as src:
        pf = _parquet_file(src, path)
        table = pf.read(columns=options.get("columns"))
    shape = _parquet_shape(pf.schema_arrow, path)
    if table.num_columns == 1 and _is_list(table.schema.types[0]):
        column = table.column(0).combine_chunks()
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        if lengths.size and (lengths.min() != lengths.max()):
            raise ChunkMismatchError(
                f"feature file {path!r}: list column {table.schema.names[0]!r}: expected vectors of "
                f"one length, found lengths {int(lengths.min())}..{int(lengths.max())}"
            )
        values = _column_numpy(pa.chunked_array([column.flatten()]), table.schema.names[0], path)
        array = values.reshape(len(column), int(lengths[0]) if lengths.size else 0)
    else:
        arrays = [_column_numpy(table.column(i), n, path) for i, n in enumerate(table.schema.names)]
        array = arrays[0] if len(arrays) == 1 else np.column_stack(arrays)
    if shape is not None:
        if int(np.prod(shape)) != array.size:
            raise ChunkMismatchError(
                f"feature file {path!r}: schema metadata shape {shape} does not fit "
                f"{array.size} values; fix or drop the 'shape' metadata"
            )
        array = array.reshape(shape)
    return array


def feature_chunk_info(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions = None,
) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    """``(rows, row_shape, dtype)`` of a feature file from its header or footer only.

    A ``.npy`` file shorter than its header promises raises :class:`ChunkReadError`.
    For a Parquet list column of variable size, the first row is read to learn the
    vector length (``row_shape`` is ``(0,)`` for a zero-row file).
    """
    normalize_options(fmt, options, role="features", where=path)
    if fmt == "numpy":
        return _npy_info(path, storage_options)
    with _source(path, storage_options) as src:
        pf = _parquet_file(src, path)
        return _parquet_info(pf, options, path)


def read_npy_header(
    path: str, storage_options: StorageOptions = None
) -> tuple[tuple[int, ...], np.dtype[Any], int, bool]:
    """``(shape, dtype, data offset, fortran order)`` from an ``.npy`` header only.

    Raises the ``ValueError`` / ``OSError`` / ``EOFError`` numpy raises for a bad header.
    """
    with _source(path, storage_options) as src, _binary(src) as f:
        header = npy.read_header(f)
        return header.shape, header.dtype, header.offset, header.fortran_order


def _npy_info(path: str, storage_options: StorageOptions) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    size = file_size(path, storage_options)
    try:
        shape, dtype, offset, _ = read_npy_header(path, storage_options)
    except (ValueError, OSError, EOFError) as err:
        raise ChunkReadError(
            f"feature file {path!r} has no valid .npy header ({err}); rewrite it with numpy.save"
        ) from err
    if dtype.hasobject:
        raise ChunkReadError(f"feature file {path!r}: expected a numeric dtype, found {dtype} (pickled objects)")
    expected = offset + int(np.prod(shape)) * dtype.itemsize
    if size < expected:
        raise ChunkReadError(
            f"feature file {path!r} is truncated: header promises shape {tuple(shape)} {dtype} "
            f"({expected} bytes), file has {size} bytes; rewrite it"
        )
    if len(shape) == 0:
        return 1, (), dtype
    return int(shape[0]), tuple(int(s) for s in shape[1:]), dtype


def _parquet_info(
    pf: pq.ParquetFile, options: Mapping[str, Any], path: str
) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
    rows = int(pf.metadata.num_rows)
    schema = pf.schema_arrow
    names = list(options.get("columns") or schema.names)
    types = [schema.field(n).type for n in names]
    if len(types) == 1 and _is_list(types[0]):
        dtype = np.dtype(types[0].value_type.to_pandas_dtype())
        if pa.types.is_fixed_size_list(types[0]):
            row_shape: tuple[int, ...] = (types[0].list_size,)
        elif rows:
            first = next(pf.iter_batches(batch_size=1, columns=names))
            row_shape = (int(pc.list_value_length(first.column(0))[0].as_py()),)
        else:
            row_shape = (0,)
    else:
        try:
            dtype = np.result_type(*[np.dtype(t.to_pandas_dtype()) for t in types])
        except (NotImplementedError, TypeError) as err:
            raise ChunkMismatchError(f"feature file {path!r}: expected numeric columns, found types {types}") from err
        row_shape = () if len(types) == 1 else (len(types),)
    shape = _parquet_shape(schema, path)
    if shape is not None:
        if not shape or shape[0] != rows:
            raise ChunkMismatchError(
                f"feature file {path!r}: schema metadata shape {shape} does not start with the "
                f"file's {rows} rows; fix the 'shape' metadata"
            )
        row_shape = shape[1:]
    return rows, row_shape, dtype


def write_feature_chunk(
    path: str,
    array: npt.ArrayLike,
    *,
    fmt: str,
    storage_options: StorageOptions = None,
    parquet_layout: Literal["columns", "list"] = "columns",
) -> None:
    """Write one feature file as ``.npy`` or Parquet.

    Parquet files carry the ``b"shape"`` schema metadata; 2-D arrays are written
    as one column per dimension (``parquet_layout="columns"``) or as a single
    list column of vectors (``"list"``, the Spark ML layout).
    """
    normalize_options(fmt, {}, role="features", where=path)
    array = np.asarray(array)
    _makedirs_for(path, storage_options)
    if fmt == "numpy":
        with _fs.open_file(path, "wb", storage_options) as f:
            np.save(f, array, allow_pickle=False)
        return
    if array.ndim == 1:
        table = pa.table({"0": array})
    elif parquet_layout == "list":
        flat = pa.array(np.ascontiguousarray(array).reshape(-1))
        table = pa.table({"vector": pa.FixedSizeListArray.from_arrays(flat, array.shape[1])})
    else:
        flat2 = array.reshape(array.shape[0], int(np.prod(array.shape[1:])))
        table = pa.table({str(i): flat2[:, i] for i in range(flat2.shape[1])})
    table = table.replace_schema_metadata({"shape": str(tuple(array.shape))})
    with _fs.open_file(path, "wb", storage_options) as f:
        pq.write_table(table, f)
