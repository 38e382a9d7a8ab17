"""Per-chunk readers and writers of the Chunked Graph Format, over the format registry.

One module per ``format.name`` registers itself in :mod:`dgl_chunked.io.formats`
(DGL's ``array_readwriter`` idea); this module checks a ``format`` object against
the format's declared roles and options and calls its reader or writer. Every
function is a pure kernel: it takes a path (local or fsspec URL) plus
``storage_options`` and returns numpy arrays; none of them imports Dask.

Each format declares its roles (``edges``, ``features``) and its ``format`` options
in its own module (:mod:`dgl_chunked.io.formats.csv`, ``.parquet``, ``.npy``); the
options are listed in ``docs/spec/chunked-format.md``. Edges: CSV rows are
``src<delim>dst[<delim>ignored...]`` with no header; a table format uses its first
two (integer) columns. Features: ``.npy`` files are memory-mapped locally; a table
format follows DGL 2.1.0's ``ParquetArrayParser``: ``(rows, columns)`` (one scalar
column gives ``(rows, 1)``), a single list column gives vector rows, and the schema
metadata key ``b"shape"`` reshapes the array (``(rows,)``: 1-D).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import UnsupportedFormatError
from dgl_chunked.io.formats import FileFormat, formats_with, get_format
from dgl_chunked.io.formats.files import file_size, makedirs_for, read_errors
from dgl_chunked.io.formats.npy import read_npy_header
from dgl_chunked.storage import fs

__all__ = [
    "FEATURE_DTYPES",
    "count_edge_rows",
    "feature_dtype",
    "read_npy_header",
    "feature_chunk_info",
    "file_size",
    "iter_edge_chunk",
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
"""Feature dtypes DGL's pipeline accepts (``docs/spec/chunked-format.md``, "Feature files")."""


def feature_dtype(dtypes: Iterable[np.dtype[Any]]) -> np.dtype[Any] | None:
    """The one dtype of a feature whose files have ``dtypes``; None when they disagree.

    Integer files beside float64 files give float64, as DGL's concatenation of the
    files makes them: a nullable integer Parquet column reads as float64 in the files
    that hold a null (:func:`read_feature_chunk`) and as integers in the others.
    """
    found = set(dtypes)
    if len(found) == 1:
        return found.pop()
    if np.dtype(np.float64) in found and all(d.kind in "iu" for d in found - {np.dtype(np.float64)}):
        return np.dtype(np.float64)
    return None


def supported_formats(role: Role) -> tuple[str, ...]:
    """Names of the formats that can hold ``role`` ("edges" or "features")."""
    return formats_with(role)


def normalize_options(
    fmt: str, options: Mapping[str, Any], *, role: Role, where: str, ignored: list[str] | None = None
) -> dict[str, Any]:
    """Check a ``format`` object's name and options; return the options as a dict.

    An option a binary format cannot use (any key but ``columns`` for ``parquet``, any
    key for ``numpy``: GSProcessing writes ``"delimiter": ""`` on every entry) is
    dropped, as DGL 2.1.0's dispatch drops every option but the name
    (``tools/distpartitioning/dataset_utils.py`` passes ``{"name": ...}`` to
    ``get_array_parser``); its JSON path is appended to ``ignored`` when given. An
    unknown CSV option stays an error: it would change how the text is read.

    Raises
    ------
    UnsupportedFormatError
        Unknown format, a format that cannot hold ``role``, or a bad option.
    """
    if fmt not in supported_formats(role):
        raise UnsupportedFormatError(
            f"{where}.format.name: expected one of {list(supported_formats(role))} for {role}, "
            f"found {fmt!r}; convert the files or fix the name"
        )
    allowed = get_format(fmt).options
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in allowed and get_format(fmt).drops_options:
            if ignored is not None:
                ignored.append(f"{where}.format.{key}")
            continue
        if key not in allowed:
            raise UnsupportedFormatError(
                f"{where}.format: expected only options {sorted(allowed)} for {fmt!r}, found {key!r}; remove it"
            )
        if not isinstance(value, allowed[key]):
            raise UnsupportedFormatError(f"{where}.format.{key}: expected {allowed[key].__name__}, found {value!r}")
        out[key] = list(value) if isinstance(value, list) else value
    delimiter = out.get("delimiter")
    if delimiter is not None and len(delimiter) != 1:
        raise UnsupportedFormatError(f"{where}.format.delimiter: expected a single character, found {delimiter!r}")
    return out


@contextmanager
def _reading(path: str, fmt: str, options: Mapping[str, Any], role: Role) -> Iterator[FileFormat]:
    """The format that reads a ``role`` file, its options checked; a read error in the
    block names ``path`` (:func:`~dgl_chunked.io.formats.files.read_errors`)."""
    normalize_options(fmt, options, role=role, where=path)
    with read_errors(path, "edge file" if role == "edges" else "feature file"):
        yield get_format(fmt)


@contextmanager
def _writing(path: str, fmt: str, storage_options: StorageOptions) -> Iterator[tuple[FileFormat, IO[bytes]]]:
    """The format and the open binary file that write ``path``, its folder made."""
    makedirs_for(path, storage_options)
    with fs.open_file(path, "wb", storage_options) as f:
        yield get_format(fmt), f


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
    with _reading(path, fmt, options, "edges") as reader:
        return reader.read_edges(path, options, storage_options, allow_empty)


def iter_edge_chunk(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    rows: int,
    storage_options: StorageOptions = None,
    allow_empty: bool = False,
) -> Iterator[tuple[IdArray, IdArray]]:
    """:func:`read_edge_chunk`'s ``(src, dst)`` in order, in pieces of at most ``rows``
    edges: a Parquet file is decoded batch by batch, so one piece is in memory at a
    time; other formats are read whole and yielded in pieces. Raises as
    :func:`read_edge_chunk` does, while iterating."""
    with _reading(path, fmt, options, "edges") as reader:
        yield from reader.iter_edges(path, options, storage_options, allow_empty, rows)


def count_edge_rows(
    path: str,
    *,
    fmt: str,
    options: Mapping[str, Any],
    storage_options: StorageOptions = None,
) -> int:
    """Number of edges in one edge file: a table's footer, or the non-empty CSV lines."""
    with _reading(path, fmt, options, "edges") as reader:
        return reader.count_edges(path, options, storage_options)


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
    with _writing(path, fmt, storage_options) as (writer, f):
        writer.write_edges(f, table, options)


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
    with _reading(path, fmt, options, "features") as reader:
        return reader.read_feature(path, options, storage_options, mmap)


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
    with _reading(path, fmt, options, "features") as reader:
        return reader.feature_info(path, options, storage_options)


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
    with _writing(path, fmt, storage_options) as (writer, f):
        writer.write_feature(f, array, parquet_layout, path)
