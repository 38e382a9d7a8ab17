"""What ``remap`` reads: result sources as trainers write them, and the error it raises.

A trainer's results for one node or edge type arrive in one of three shapes, all
indexed by DGL's **type-wise new IDs** (``0 .. N-1`` per type, partition by
partition, the IDs a ``DistGraph`` hands out: ``g.nodes(ntype)``, ``node_split``):

- **one array** over all IDs (``ResultSource.whole``): row ``i`` is new ID ``i``;
- **row ranges** (``ResultSource.ranges``): one file per rank, rank ``r``'s file
  holds new IDs ``[start_r, start_r + rows_r)``; the files must tile ``[0, N)``
  exactly. Without explicit starts the files follow each other in the order given;
- **pairs** (``ResultSource.pairs``): per rank a file of new IDs and a file (or, in
  a ``.pt`` dict or a Parquet table, another entry) of rows aligned with them, as
  ``node_split`` hands IDs out. Any subset of the IDs, each at most once.

Files are ``.npy``, Parquet (one column; a list column gives rows of a 2-D array),
Zarr arrays, ``torch.save`` files of plain tensors (``.pt``: a tensor, or a dict or
list of tensors, read without torch) or DGL tensor dicts (``.dgl``). A ``key``
selects the tensor of a ``.pt``/``.dgl`` dict, the column of a Parquet file or the
array inside a Zarr group.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from dgl_chunked._typing import PathLike
from dgl_chunked.errors import DglChunkedError

__all__ = ["RemapError", "ResultFile", "ResultSource"]


class RemapError(DglChunkedError, ValueError):
    """A result file or ID list that does not fit the partitions; the message names the file."""


@dataclass(frozen=True)
class ResultFile:
    """One result file (or a glob of files, expanded in natural order: ``rank-2`` before ``rank-10``).

    Attributes
    ----------
    path
        Local path, fsspec URL or glob.
    key
        The tensor (``.pt``, ``.dgl``), column (Parquet) or array (Zarr group) to read;
        default: the only one (a ``.pt`` dict or Parquet table with two entries and
        ``ids``/``nids`` as one of them: the other).
    start
        Row-range files only: the first new ID the file holds (default: right after
        the previous file).
    """

    path: str
    key: str | None = None
    start: int | None = None


def _files(paths: PathLike | ResultFile | Sequence[PathLike | ResultFile], key: str | None) -> tuple[ResultFile, ...]:
    if isinstance(paths, ResultFile | str | os.PathLike):
        paths = [paths]
    out = []
    for p in paths:
        out.append(p if isinstance(p, ResultFile) else ResultFile(os.fspath(p), key=key))
    return tuple(out)


@dataclass(frozen=True)
class ResultSource:
    """Where the results of one type are: row files, and for pairs the aligned new-ID files.

    Build one with :meth:`whole`, :meth:`ranges` or :meth:`pairs`.

    Attributes
    ----------
    files
        The row files, in rank order.
    ids
        For pairs: the new-ID files, ``ids[i]`` aligned row by row with ``files[i]``.
    name
        Name of the value column in Parquet output (default: the input column's
        name, else ``"value"``).
    original
        For pairs: the ID files hold *original* type-wise IDs instead of new IDs, as
        GraphStorm's trainers save ``predict_nids-*.pt`` (they map new IDs back through
        ``orig_nids.dgl`` first: ``NodeIDShuffler`` in ``python/graphstorm/model/utils.py``).
    """

    files: tuple[ResultFile, ...]
    ids: tuple[ResultFile, ...] | None = None
    name: str | None = None
    original: bool = False

    @classmethod
    def whole(cls, path: PathLike, *, key: str | None = None, name: str | None = None) -> ResultSource:
        """One array over all new IDs (row ``i`` = new ID ``i``)."""
        return cls(_files(path, key), name=name)

    @classmethod
    def ranges(
        cls,
        paths: PathLike | Sequence[PathLike | ResultFile],
        *,
        starts: Sequence[int] | None = None,
        key: str | None = None,
        name: str | None = None,
    ) -> ResultSource:
        """Row-range files per rank, tiling the new IDs (``starts``: first new ID of each file)."""
        files = _files(paths, key)
        if starts is not None:
            if len(starts) != len(files):
                raise RemapError(f"ranges: {len(files)} file(s) but {len(starts)} start(s); give one start per file")
            files = tuple(ResultFile(f.path, f.key, int(s)) for f, s in zip(files, starts, strict=True))
        return cls(files, name=name)

    @classmethod
    def pairs(
        cls,
        rows: PathLike | Sequence[PathLike | ResultFile],
        ids: PathLike | Sequence[PathLike | ResultFile] | None = None,
        *,
        rows_key: str | None = None,
        ids_key: str = "ids",
        name: str | None = None,
        original: bool = False,
    ) -> ResultSource:
        """``(new IDs, rows)`` per rank: ``ids[i]`` aligned with ``rows[i]``.

        Without ``ids``, each rows file holds both: the entry ``ids_key`` of a ``.pt``
        dict, ``.dgl`` dict or Parquet table holds the new IDs, ``rows_key`` (default:
        the other entry) the rows. ``original``: the IDs are original type-wise IDs.
        """
        row_files = _files(rows, rows_key)
        id_files = tuple(ResultFile(f.path, ids_key) for f in row_files) if ids is None else _files(ids, None)
        return cls(row_files, ids=id_files, name=name, original=original)
