"""``(new ID, row)`` pairs grouped by block of original IDs: the map side of a sort-based shuffle.

A pair's new ID names its partition ``p`` and its rank ``r`` in ``p``'s run of new
IDs; the block counts (:class:`~dgl_chunked.remap.mapping.Blocks`) say which block of
original IDs rank ``r`` falls in, without reading any mapping. :func:`map_pairs`
reads one piece of a rank's files, checks the IDs, and stores the pairs sorted by
block in ``.npy`` staging files (IDs, rows and the pairs' rows in their file, for
messages), returning the block offsets; :func:`read_segment` is the reduce side's
read of one block's segment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.chunk.kernels import bucket_order
from dgl_chunked.io.formats.files import makedirs_for
from dgl_chunked.io.formats.npy import npy_header, read_npy_rows, write_npy
from dgl_chunked.remap.mapping import Blocks
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.result_sources import PairInput
from dgl_chunked.remap.spaces import TypeSpace
from dgl_chunked.storage import fs

__all__ = ["PairPiece", "map_pairs", "pair_pieces", "read_segment", "write_staged"]

_ARRAYS = ("ids", "rows", "row")


@dataclass(frozen=True)
class PairPiece:
    """Rows ``[lo, hi)`` of the ``file``-th pair of files."""

    file: int
    lo: int
    hi: int


def pair_pieces(data: PairInput, rows_per_piece: int) -> list[PairPiece]:
    """Every pair file cut into pieces of at most ``rows_per_piece`` rows."""
    out = []
    for i, f in enumerate(data.rows):
        for lo in range(0, f.rows, max(1, rows_per_piece)):
            out.append(PairPiece(i, lo, min(lo + rows_per_piece, f.rows)))
    return out


def _staged_path(scratch: str, index: int, name: str) -> str:
    return fs.join(scratch, f"{index:06d}.{name}.npy")


def map_pairs(
    data: PairInput,
    piece: PairPiece,
    index: int,
    space: TypeSpace,
    blocks: Blocks,
    scratch: str,
    so: StorageOptions = None,
) -> IdArray:
    """Stage piece ``index`` of the pairs sorted by block; return its ``K + 1`` block offsets.

    Raises
    ------
    RemapError
        A new ID outside ``[0, N)`` of the type; the message names the ID file and row.
    """
    ids_file = data.ids[piece.file]
    ids = ids_file.read(piece.lo, piece.hi).astype(np.int64, copy=False)
    bad = (ids < 0) | (ids >= space.total)
    if bad.any():
        at = int(np.argmax(bad))
        raise RemapError(
            f"{ids_file.describe()}: row {piece.lo + at}: {'original' if data.original else 'new'} ID "
            f"{int(ids[at])} is outside [0, {space.total}) of {space.label}"
        )
    rows = data.rows[piece.file].read(piece.lo, piece.hi)
    if data.original:  # the block of an original ID is known without any mapping
        block = (np.searchsorted(np.asarray(blocks.bounds), ids, side="right") - 1).astype(np.int64)
    else:
        owner = space.owner(ids)
        block = blocks.block_of(owner, ids - space.offsets[owner])
    row = np.arange(piece.lo, piece.hi, dtype=np.int64)
    return write_staged(scratch, index, {"ids": ids, "rows": rows, "row": row}, block, blocks.num_blocks, so)


def write_staged(
    scratch: str, index: int, arrays: dict[str, npt.NDArray[Any]], group: IdArray, num_groups: int, so: StorageOptions
) -> IdArray:
    """Stage ``ids``, ``rows`` and ``row`` of piece ``index`` sorted by ``group``; return the ``G + 1`` offsets."""
    if num_groups <= np.iinfo(np.uint16).max:  # numpy's stable sort of 1- and 2-byte integers is a radix sort
        group = group.astype(np.uint8 if num_groups <= np.iinfo(np.uint8).max else np.uint16)
    order, offsets = bucket_order(group, num_groups)
    for name in _ARRAYS:
        path = _staged_path(scratch, index, name)
        makedirs_for(path, so)
        with fs.open_file(path, "wb", so) as f:
            write_npy(f, np.ascontiguousarray(arrays[name][order]))
    return offsets


def read_segment(scratch: str, index: int, lo: int, hi: int, so: StorageOptions = None) -> dict[str, npt.NDArray[Any]]:
    """Rows ``[lo, hi)`` of staged piece ``index``: ``ids``, ``rows`` and ``row`` (row in its file)."""
    out = {}
    for name in _ARRAYS:
        path = _staged_path(scratch, index, name)
        out[name] = read_npy_rows(path, npy_header(path, "remap staging", so), lo, hi, so)
    return out
