"""A :class:`~dgl_chunked.remap.model.ResultSource` resolved against one type's new-ID space.

:func:`resolve_source` expands globs (natural order: ``rank-2`` before ``rank-10``),
inspects every file from its header and checks, before any task runs, what headers
can tell: row files tile the new IDs ``[0, N)`` exactly (:class:`RowInput`), or ID
files and row files pair up row for row (:class:`PairInput`); dtypes and row shapes
agree. Each problem is one :class:`~dgl_chunked.remap.model.RemapError` naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.formats import open_result
from dgl_chunked.io.formats.rows import RowFile
from dgl_chunked.remap.model import RemapError, ResultFile, ResultSource
from dgl_chunked.remap.spaces import TypeSpace
from dgl_chunked.storage import fs

__all__ = ["PairInput", "RowInput", "expand_files", "natural_key", "resolve_source"]

_GLOB = re.compile(r"[*?\[]")


def natural_key(path: str) -> list[Any]:
    """Sort key that orders embedded numbers by value (``rank-2`` < ``rank-10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def expand_files(files: tuple[ResultFile, ...], so: StorageOptions) -> list[ResultFile]:
    """Every glob replaced by the files it matches, in natural order; a glob matching nothing, or a file
    that does not exist, is an error."""
    out = []
    for f in files:
        if not _GLOB.search(f.path):
            if not fs.exists(f.path, so):
                raise RemapError(f"{f.path}: does not exist; check the path")
            out.append(f)
            continue
        found = sorted(fs.list_files(f.path, so, glob=True), key=natural_key)
        if not found:
            raise RemapError(f"{f.path}: matches no file")
        if f.start is not None and len(found) > 1:
            raise RemapError(f"{f.path}: a start ({f.start}) needs one file, but the glob matches {len(found)}")
        out += [ResultFile(p, f.key, f.start) for p in found]
    return out


@dataclass(frozen=True)
class RowInput:
    """Row files that tile the type-wise new IDs: ``files[i]`` holds IDs from ``starts[i]`` on."""

    files: tuple[RowFile, ...]
    starts: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.files[0].dtype

    @property
    def row_shape(self) -> tuple[int, ...]:
        return self.files[0].row_shape

    def read(self, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows of new IDs ``[lo, hi)``, from whichever files hold them."""
        parts = []
        for f, s in zip(self.files, self.starts, strict=True):
            a, b = max(lo, s), min(hi, s + f.rows)
            if a < b:
                parts.append(f.read(a - s, b - s))
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty((0, *self.row_shape), self.dtype)


@dataclass(frozen=True)
class PairInput:
    """``ids[i]`` (new IDs, or original IDs when ``original``) aligned row by row with ``rows[i]``."""

    rows: tuple[RowFile, ...]
    ids: tuple[RowFile, ...]
    original: bool = False

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.rows[0].dtype

    @property
    def row_shape(self) -> tuple[int, ...]:
        return self.rows[0].row_shape


def _same_layout(files: list[RowFile], what: str) -> None:
    first = files[0]
    for f in files:
        if f.dtype.kind not in "biuf":
            raise RemapError(f"{f.describe()}: holds {f.dtype}; expected numbers ({what})")
        if (f.dtype, f.row_shape) != (first.dtype, first.row_shape):
            raise RemapError(
                f"{f.describe()}: rows of {f.row_shape} {f.dtype}, but {first.describe()} has "
                f"{first.row_shape} {first.dtype}; every file of one type must agree"
            )


def _tile(files: list[RowFile], wanted: list[int | None], space: TypeSpace) -> RowInput:
    starts, nxt = [], 0
    for f, s in zip(files, wanted, strict=True):
        starts.append(nxt if s is None else int(s))
        nxt = starts[-1] + f.rows
    order = sorted(range(len(files)), key=lambda i: (starts[i], files[i].rows))
    total = space.total
    if len(files) == 1 and starts[0] == 0 and files[0].rows != total:
        raise RemapError(
            f"{files[0].describe()}: holds {files[0].rows} rows, but {space.label} has {total} new IDs "
            "(the partition config); one array needs one row per new ID"
        )
    pos, prev = 0, None
    for i in order:
        f, s = files[i], starts[i]
        after = f" ({prev.describe()} ends there)" if prev is not None else ""
        if s > pos:
            raise RemapError(
                f"{f.describe()}: starts at new ID {s}, leaving new IDs [{pos}, {s}) of {space.label} without "
                f"a row{after}; the row ranges must tile [0, {total})"
            )
        if s < pos:
            raise RemapError(
                f"{f.describe()}: starts at new ID {s}, inside rows up to {pos}{after}: the row ranges of "
                f"{space.label} overlap; they must tile [0, {total})"
            )
        pos, prev = s + f.rows, f
    if pos != total:
        last = prev.describe() if prev is not None else "the row files"
        raise RemapError(
            f"{last}: the row ranges end at new ID {pos}, but {space.label} has {total} new IDs; "
            f"they must tile [0, {total})"
        )
    return RowInput(tuple(files[i] for i in order), tuple(starts[i] for i in order))


def _open_rows(ref: ResultFile, so: StorageOptions) -> RowFile:
    """Inspect one result file through the registry's result formats (header only)."""
    try:
        return open_result(ref.path, ref.key, so)
    except FileNotFoundError:
        raise RemapError(f"{ref.path}: does not exist") from None
    except (DglChunkedError, OSError, ValueError) as err:
        text = str(err)
        raise RemapError(text if ref.path in text else f"{ref.path}: {text}") from None


def resolve_source(source: ResultSource, space: TypeSpace, so: StorageOptions = None) -> RowInput | PairInput:
    """Inspect ``source``'s files and check them against ``space`` (headers only).

    Raises
    ------
    RemapError
        A missing file or entry, files that disagree in dtype or row shape, row
        ranges that do not tile the new IDs, ID and row files of different lengths,
        non-integer IDs; the message names the file.
    """
    row_refs = expand_files(source.files, so)
    rows = [_open_rows(f, so) for f in row_refs]
    if not rows:
        raise RemapError(f"{space.label}: no result file given")
    _same_layout(rows, f"results of {space.label}")
    if source.ids is None:
        return _tile(rows, [f.start for f in row_refs], space)
    id_refs = expand_files(source.ids, so)
    if len(id_refs) != len(rows):
        raise RemapError(
            f"{space.label}: {len(rows)} row file(s) but {len(id_refs)} ID file(s); pair each rank's IDs with its rows"
        )
    ids = [_open_rows(f, so) for f in id_refs]
    for i, r in zip(ids, rows, strict=True):
        if i.row_shape or i.dtype.kind not in "iu":
            raise RemapError(f"{i.describe()}: holds {i.row_shape} {i.dtype}; new IDs must be a 1-D integer array")
        if i.rows != r.rows:
            raise RemapError(
                f"{i.describe()}: holds {i.rows} IDs, but {r.describe()} holds {r.rows} rows; they must align"
            )
    return PairInput(tuple(rows), tuple(ids), source.original)
