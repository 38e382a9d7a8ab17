"""The partition report's pure kernels (:mod:`dgl_chunked.partition.report`): per-block
partition counts and their checks, an edge read task's owned and cut edges and distinct
HALO pairs, and the HALO count by node range. numpy only: no Dask, no files but the
HALO buckets :func:`halo_flag_counts` reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import AssignmentError
from dgl_chunked.partition.metis import sorted_unique
from dgl_chunked.storage.buckets import read_bucket

__all__ = [
    "HALO_FLAG_BYTES",
    "edge_stats_block",
    "halo_flag_counts",
    "halo_ranges",
    "narrowed",
    "part_counts_block",
    "part_dtype",
]

HALO_FLAG_BYTES = 1 << 25
"""Most flags one HALO counting task holds: one byte per (node, partition) of its range."""


def _check_part_ids(part: npt.NDArray[np.integer[Any]], num_parts: int, where: str, row: str) -> None:
    """Raise :class:`AssignmentError` naming the first partition ID of ``part`` outside
    ``[0, num_parts)`` and its ``row``; two reductions when all are in range."""
    if part.size == 0 or 0 <= int(part.min()) <= int(part.max()) < num_parts:
        return
    bad = int(np.flatnonzero((part < 0) | (part >= num_parts))[0])
    raise AssignmentError(f"{where}: expected partition IDs in [0, {num_parts}), found {int(part[bad])} ({row} {bad})")


def part_counts_block(
    part: npt.NDArray[np.integer[Any]],
    weights: npt.NDArray[Any] | None = None,
    *,
    num_parts: int,
    where: str = "assignment",
) -> npt.NDArray[np.int64]:
    """Per-partition counts (of nodes, or of nonzero ``weights``) as int64 ``[1, num_parts]``."""
    part = np.asarray(part)
    _check_part_ids(part, num_parts, where, "block row")
    w = None if weights is None else np.asarray(weights).reshape(-1).astype(bool)
    counts = np.bincount(part, minlength=num_parts) if w is None else np.bincount(part[w], minlength=num_parts)
    return counts.astype(np.int64).reshape(1, num_parts)


def edge_stats_block(
    src_part: npt.NDArray[np.integer[Any]],
    dst_part: npt.NDArray[np.integer[Any]],
    src_orig: IdArray,
    *,
    num_parts: int,
    src_offset: int = 0,
) -> tuple[npt.NDArray[np.int64], int, dict[str, IdArray]]:
    """Owned edges per partition, cut edges, and the distinct HALO pairs
    (``part_id``, ``orig_nid``: the owning partition and the source's homogeneous ID,
    ``src_orig + src_offset``), sorted by ``orig_nid`` then ``part_id``."""
    for part in (src_part, dst_part):  # the report's own copy is checked before (narrowed); other callers' not
        _check_part_ids(part, num_parts, "assignment", "edge row of a read task")
    owned = np.bincount(dst_part, minlength=num_parts).astype(np.int64)
    cross = src_part != dst_part
    # the offset on the cut edges alone: no copy of every source
    keys = np.add(src_orig[cross], src_offset, dtype=np.int64)
    keys *= num_parts
    keys += dst_part[cross]
    keys = sorted_unique(keys)
    return owned, int(np.count_nonzero(cross)), {"part_id": keys % num_parts, "orig_nid": keys // num_parts}


def halo_ranges(num_nodes: int, num_parts: int) -> tuple[int, int]:
    """Nodes per range of the HALO count and the number of ranges: each range's flags
    (one byte per node and partition) within :data:`HALO_FLAG_BYTES`."""
    width = max(1, min(HALO_FLAG_BYTES // num_parts, num_nodes))
    return width, max(1, -(-num_nodes // width))


def halo_flag_counts(
    files: list[str],
    r: int,
    *,
    width: int,
    num_parts: int,
    type_offsets: IdArray,
    storage_options: StorageOptions = None,
) -> npt.NDArray[np.int64]:
    """HALO nodes per partition and node type (``[P, T]``) of the nodes of range ``r``
    (``[r * width, (r + 1) * width)``): its bucket of every file, flagged one file at a
    time (a pair flagged twice counts once)."""
    flags = np.zeros(width * num_parts, np.uint8)
    for path in files:
        flags[read_bucket(path, r, storage_options)["flag"]] = 1
    grid = flags.reshape(width, num_parts)
    lo = r * width
    counts = np.zeros((num_parts, len(type_offsets) - 1), np.int64)
    for t in range(counts.shape[1]):
        a, b = max(int(type_offsets[t]) - lo, 0), min(int(type_offsets[t + 1]) - lo, width)
        if b > a:
            counts[:, t] = grid[a:b].sum(axis=0, dtype=np.int64)
    return counts


def part_dtype(num_parts: int) -> np.dtype[Any]:
    """The narrowest integer type of the report's copy of an assignment of ``num_parts``
    partitions: 1 byte per node up to 127 partitions (the edge tasks' lookups read the
    copy whole when it is no larger than their IDs, and gather 1 byte per endpoint)."""
    return np.dtype(np.int8 if num_parts <= 127 else np.int16 if num_parts <= 32767 else np.int32)


def narrowed(part: npt.NDArray[np.integer[Any]], *, num_parts: int, where: str) -> npt.NDArray[Any]:
    """A block of partition IDs in :func:`part_dtype`, checked first: a cast would turn an
    ID out of range into one in range."""
    part = np.asarray(part)
    _check_part_ids(part, num_parts, where, "block row")
    return part.astype(part_dtype(num_parts), copy=False)
