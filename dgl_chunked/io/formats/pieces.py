"""Pieces of raw input files: what inspection learns of a file, and how a source is cut.

A source of ``dgl-chunked chunk`` (and a query or result file of ``remap`` and
``lookup``) is split into *pieces* (:class:`Piece`): a row range of one file of an
``"array"`` or ``"table"`` format, or a byte range of one ``"text"`` file
(:mod:`dgl_chunked.io.formats.registry`). Each format module inspects its files
(``FileFormat.inspect`` in :mod:`.registry`, which reads only headers, footers and a text file's
first line, and returns a :class:`FileInfo`) and reads its pieces; readers take
paths (local or fsspec URLs), never handles, and only read the piece they are given.
Every error names the spec key (``where``), the file and, for data errors, the row
(1-based, header excluded; for text the 1-based line).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkReadError
from dgl_chunked.storage import fs as _fs

__all__ = ["FileInfo", "Piece", "raw_file_size", "split_pieces"]


@dataclass(frozen=True, kw_only=True)
class Piece:
    """Rows ``[start, stop)`` of an array or table file, or bytes of a text file."""

    path: str
    start: int
    stop: int


@dataclass(frozen=True, kw_only=True)
class FileInfo:
    """What inspection learned about one file.

    ``rows`` is None for text (unknown until parsed); ``names`` are the column
    names (a table's schema, a CSV header) or, for CSV without header, ``f0, f1, ...``
    for the fields of the first line; ``types`` are the Arrow types of a table's
    columns and ``row_groups`` the rows of each of its row groups (Parquet) or
    stripes (ORC); ``shape``/``dtype``/``offset``/``fortran`` describe an ``.npy``.
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


def raw_file_size(path: str, where: str, storage_options: StorageOptions) -> int:
    """Size of a raw input file; :class:`ChunkReadError` naming ``where`` for a missing
    file or a directory."""
    fs, inner = _fs.filesystem(path, storage_options)
    try:
        if fs.isdir(inner):
            raise ChunkReadError(f"{where}: {path!r} is a directory; name a file, a glob or 'dir/'")
        return int(fs.size(inner))
    except FileNotFoundError:
        raise ChunkReadError(f"{where}: file {path!r} does not exist; fix the path in the spec") from None


def split_pieces(infos: Sequence[FileInfo], num_tasks: int, *, by_bytes: bool) -> list[tuple[Piece, ...]]:
    """Split the concatenation of ``infos`` into ``<= num_tasks`` near-equal read tasks.

    Rows (or bytes, for CSV) are counted over all files; a read task may span files
    and is a tuple of pieces. Empty read tasks are dropped; at least one is
    returned (possibly with no piece).
    """
    sizes = [(i.size if by_bytes else int(i.rows or 0)) for i in infos]
    total = sum(sizes)
    k = max(min(num_tasks, total), 1)
    cuts = [total * b // k for b in range(k + 1)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    tasks: list[tuple[Piece, ...]] = []
    for lo, hi in itertools.pairwise(cuts):
        pieces = []
        for info, first, n in zip(infos, starts[:-1], sizes, strict=True):
            a, b = max(lo, int(first)), min(hi, int(first) + n)
            if a < b:
                pieces.append(Piece(path=info.path, start=a - int(first), stop=b - int(first)))
        if pieces:
            tasks.append(tuple(pieces))
    return tasks or [()]
