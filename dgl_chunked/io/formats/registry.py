"""The registry of file formats: one :class:`FileFormat` per format, registered by its module.

Every format module (:mod:`.csv`, :mod:`.parquet`, :mod:`.npy`, :mod:`.orc`, :mod:`.zarr`,
:mod:`.torch`, :mod:`.dgl`) declares one subclass of :class:`FileFormat` with its name,
file extensions, roles and options, and registers it with :func:`register_format` (DGL 2.1.0's
``tools/distpartitioning/array_readwriter/registry.py`` ``@register_array_parser`` and
xarray's ``backends/`` are the model). The rest of the package asks the registry
(:func:`get_format`, :func:`formats_with`, :func:`format_of_path`, :func:`open_result`)
and never tests a format's name.

Roles (what a format can be used for):

=================  ===========================================================
role               meaning
=================  ===========================================================
``edges``          edge files of a Chunked Graph Format input (``metadata.json``)
``features``       feature files of a Chunked Graph Format input
``raw_edges``      ``dgl-chunked chunk``'s raw input: an edge ``source``
``raw_features``   ``dgl-chunked chunk``'s raw input: a feature
``raw_keys``       ``dgl-chunked chunk``'s raw input: a node type's ``key``
``results``        ``remap``'s result files, read by row ranges (:mod:`.rows`)
``queries``        ``lookup``'s query files, read by pieces as ``chunk``'s raw input
``outputs``        ``remap``'s output tables, one file per block
=================  ===========================================================

A format's *kind* says how its raw pieces are read: ``"array"`` (one n-d array with
a header: row ranges), ``"table"`` (named, typed columns with a footer: row ranges),
``"text"`` (delimited text: byte ranges aligned to lines).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, ClassVar, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import UnsupportedFormatError
from dgl_chunked.io.formats.pieces import FileInfo, Piece
from dgl_chunked.io.formats.rows import RowFile, table_row_file, table_rows

__all__ = [
    "FileFormat",
    "Kind",
    "Role",
    "TableFormat",
    "format_of_path",
    "formats_with",
    "get_format",
    "inspect_file",
    "open_result",
    "register_format",
]

Role = Literal["edges", "features", "raw_edges", "raw_features", "raw_keys", "results", "queries", "outputs"]
Kind = Literal["array", "table", "text"]

_REGISTRY: dict[str, FileFormat] = {}


class FileFormat:
    """One file format: its declaration and every reader and writer of it.

    Class attributes (the declaration): ``name`` (``format.name`` in
    ``metadata.json``, ``format`` in a ``chunk`` spec), ``title`` (its name in
    messages), ``extensions`` (lower case,
    with the dot), ``roles``, ``kind``, ``options`` (the ``format`` keys a
    ``metadata.json`` entry may carry, with their JSON types), ``drops_options``
    (True: an unknown option is dropped with a note, as DGL's dispatch drops every
    option but the name; False: refused), ``raw_options`` (the keys a ``chunk`` source
    of this format may carry), ``reads_as`` (the format whose readers this one uses:
    ``tsv`` reads as ``csv``), ``delimiter`` (the default field separator of text),
    ``header_bytes`` (what opening a file reads, for the network forecast; None: the
    whole file) and ``header_proves_values`` (the header alone proves every value
    converts: no full read in ``validate``).

    A method of a role the format does not have raises :class:`UnsupportedFormatError`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]] = ()
    roles: ClassVar[frozenset[str]] = frozenset()
    kind: ClassVar[Kind]
    options: ClassVar[Mapping[str, type]] = {}
    drops_options: ClassVar[bool] = True
    raw_options: ClassVar[frozenset[str]] = frozenset()
    delimiter: ClassVar[str] = ","
    header_bytes: ClassVar[int | None] = None
    header_proves_values: ClassVar[bool] = False

    @property
    def reads_as(self) -> str:
        """The name of the format whose readers read this one (itself, but ``tsv``)."""
        return self.name

    def _unsupported(self, what: str) -> UnsupportedFormatError:
        return UnsupportedFormatError(f"format {self.name!r} cannot {what}")

    # --- Chunked Graph Format input (role "edges" / "features") -------------------

    def read_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool
    ) -> tuple[IdArray, IdArray]:
        """``(src, dst)`` int64 arrays of one edge file (``io.chunked.formats.read_edge_chunk``)."""
        raise self._unsupported("hold edges")

    def iter_edges(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, allow_empty: bool, rows: int
    ) -> Iterator[tuple[IdArray, IdArray]]:
        """``(src, dst)`` int64 arrays of one edge file in order, in pieces of at most
        ``rows`` edges (``io.chunked.chunks.iter_edge_slices``). A format that can
        decode part of a file (Parquet: by batches) holds one piece at a time; this
        default reads the file whole (:meth:`read_edges`) and yields views of it."""
        src, dst = self.read_edges(path, options, storage_options, allow_empty)
        for lo in range(0, len(src), rows):
            yield src[lo : lo + rows], dst[lo : lo + rows]

    def count_edges(self, path: str, options: Mapping[str, Any], storage_options: StorageOptions) -> int:
        """Number of edges in one edge file, from as little of it as the format allows."""
        raise self._unsupported("hold edges")

    def write_edges(self, f: IO[bytes], table: pa.Table, options: Mapping[str, Any]) -> None:
        """Write a ``src, dst`` int64 table as one edge file."""
        raise self._unsupported("hold edges")

    def read_feature(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions, mmap: bool
    ) -> npt.NDArray[Any]:
        """One whole feature file as an array (rows are per-type IDs in file order)."""
        raise self._unsupported("hold features")

    def feature_info(
        self, path: str, options: Mapping[str, Any], storage_options: StorageOptions
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        """``(rows, row_shape, dtype)`` of one feature file, from its header or footer."""
        raise self._unsupported("hold features")

    def write_feature(
        self, f: IO[bytes], array: npt.NDArray[Any], layout: Literal["columns", "list"], path: str
    ) -> None:
        """Write one feature array (``layout``: how a table format stores 2-D rows)."""
        raise self._unsupported("hold features")

    # --- chunk's raw input (roles "raw_*") -----------------------------------------

    def inspect(
        self, path: str, where: str, *, delimiter: str, header: bool, storage_options: StorageOptions
    ) -> FileInfo:
        """What one raw input file holds, from its header, footer or first line."""
        raise self._unsupported("be a raw input of chunk")

    def read_piece(
        self, piece: Piece, info: FileInfo, columns: Sequence[str], storage_options: StorageOptions
    ) -> pa.Table:
        """Rows ``[piece.start, piece.stop)`` of ``columns`` of a table file (kind ``"table"``)."""
        raise self._unsupported("read row ranges of named columns")

    # --- remap's results (role "results") --------------------------------------------

    def open_result(self, path: str, key: str | None, storage_options: StorageOptions) -> RowFile:
        """Inspect one result file (header, footer or metadata only): entry ``key``, or
        the only one (see :func:`.rows.pick_entry`)."""
        raise self._unsupported("be a result file")

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)`` of a result file this format opened."""
        raise self._unsupported("be a result file")

    def write_result_table(
        self,
        path: str,
        names: Sequence[str],
        arrays: Sequence[npt.NDArray[Any] | pa.Array],
        delimiter: str,
        storage_options: StorageOptions,
    ) -> None:
        """Write one table of ``remap``'s output: columns ``names`` holding ``arrays``
        (numpy values, 2-D for vectors; Arrow arrays of user IDs)."""
        raise self._unsupported("be an output table of remap")

    # --- row and byte ranges of raw pieces ---------------------------------------

    def read_rows(
        self, path: str, info: FileInfo, start: int, stop: int, storage_options: StorageOptions
    ) -> npt.NDArray[Any]:
        """Rows ``[start, stop)`` of an array file, all trailing dimensions (kind ``"array"``)."""
        raise self._unsupported("read row ranges of an array")

    def read_flat(
        self, path: str, info: FileInfo, first: int, count: int, storage_options: StorageOptions
    ) -> npt.NDArray[Any]:
        """Elements ``[first, first + count)`` of an array file in storage order, 1-D (kind ``"array"``)."""
        raise self._unsupported("read element ranges of an array")

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
        """The lines of a byte piece of a text file: ``(byte offset of its first data row,
        table of the ``columns`` (0-based) typed ``types``)`` (kind ``"text"``)."""
        raise self._unsupported("read byte ranges of text")

    def line_number(self, path: str, offset: int, row: int, storage_options: StorageOptions) -> int:
        """1-based line of data row ``row`` of a text piece starting at byte ``offset`` (kind ``"text"``)."""
        raise self._unsupported("number the lines of text")


class TableFormat(FileFormat):
    """A format of kind ``"table"`` (Parquet, ORC): its result files are read through its
    own :meth:`inspect` and :meth:`read_piece` (:func:`.rows.table_row_file`,
    :func:`.rows.table_rows`)."""

    kind = "table"

    def open_result(self, path: str, key: str | None, storage_options: StorageOptions) -> RowFile:
        info = self.inspect(path, "result file", delimiter=",", header=False, storage_options=storage_options)
        return table_row_file(self, self.name, info, key, storage_options)

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        return table_rows(self, file, lo, hi)


_F = TypeVar("_F", bound=type[FileFormat])


def register_format(cls: _F) -> _F:
    """Class decorator: register one instance of ``cls`` under ``cls.name``."""
    if cls.name in _REGISTRY:
        raise ValueError(f"file format {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def get_format(name: str) -> FileFormat:
    """The registered format called ``name``.

    Raises
    ------
    UnsupportedFormatError
        No format has that name.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnsupportedFormatError(f"unknown file format {name!r}; expected one of {sorted(_REGISTRY)}") from None


def formats_with(role: Role) -> tuple[str, ...]:
    """Names of the formats that can play ``role``, in registration order."""
    return tuple(name for name, fmt in _REGISTRY.items() if role in fmt.roles)


def format_of_path(path: str, role: Role | None = None) -> str | None:
    """The name of the format (of ``role``, when given) whose extensions include the
    extension of ``path`` (lower-cased); None if none does."""
    ext = posixpath.splitext(path.rstrip("/"))[1].lower()
    names = formats_with(role) if role is not None else tuple(_REGISTRY)
    for name in names:
        if ext in _REGISTRY[name].extensions:
            return name
    return None


def open_result(path: str, key: str | None = None, storage_options: StorageOptions = None) -> RowFile:
    """Inspect one result file of the format its extension names (role ``results``),
    from its header, footer or metadata only: entry ``key``, or the only one.

    Raises
    ------
    UnsupportedFormatError
        No result format has the extension of ``path``; the message lists those that do.
    ChunkMismatchError, DGLFormatError, OSError
        As the format's :meth:`FileFormat.open_result`; the message names the file.
    """
    fmt = format_of_path(path, "results")
    if fmt is None:
        ext = posixpath.splitext(path.rstrip("/"))[1].lower()
        known = sorted(e for name in formats_with("results") for e in _REGISTRY[name].extensions)
        raise UnsupportedFormatError(
            f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; expected one of {known}"
        )
    return _REGISTRY[fmt].open_result(path, key, storage_options)


def inspect_file(
    path: str,
    fmt: str,
    where: str,
    *,
    delimiter: str = ",",
    header: bool = False,
    storage_options: StorageOptions = None,
) -> FileInfo:
    """Inspect one file of a source of format ``fmt`` from its header, footer or first line.

    Raises
    ------
    ChunkReadError
        Missing, unreadable, truncated or corrupt file.
    """
    return get_format(fmt).inspect(path, where, delimiter=delimiter, header=header, storage_options=storage_options)
