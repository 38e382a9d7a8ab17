"""ID-space arithmetic of dispatch: counts, prefix sums, new IDs. Pure numpy.

ID spaces (see ``docs/architecture.md``):

``type_nid`` / ``type_eid``
    Per-type input ID: the row in a type's concatenated chunk files.
``new_nid`` / ``new_eid``
    Homogeneous ID after dispatch (``_ID`` in ``graph.dgl``). Partition-major, then
    type-major: partition ``p``'s nodes of type ``t`` are ``node_map[t][p] = [s, e)``
    and the blocks abut in the order (p0,t0), (p0,t1), ..., (p1,t0), ...
    Inside a (partition, type) block IDs follow ascending ``type_nid``.
``local_nid``
    Index inside one partition's ``graph.dgl``: inner nodes first
    (``new_nid - start(p)``), HALO nodes after, sorted by ``new_nid``.

Nothing here sorts globally. A block of rows (a node block, an edge read task) knows
its per-partition counts; prefix sums over blocks turn those counts into the
first new ID each partition gets inside each block, and a stable sort of the
block by owner numbers its rows from there. The result depends only on the
order of rows, never on how they were cut into blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "IdLayout",
    "layout_ids",
    "count_owners",
    "sort_by_owner",
    "compact_owner_dtype",
    "HEAP_SLICE",
    "in_slices",
    "count_bits_below",
    "new_ids_block",
    "owner_of",
    "staged_id_dtype",
    "type_of",
]

Int64s = npt.NDArray[np.int64]

HEAP_SLICE = 1 << 13
"""Items a vectorised lookup handles at a time (a multiple of 64). The temporaries of a
slice (64 KiB each at 8 bytes per item) stay under glibc's mmap threshold (128 KiB, which
a set ``MALLOC_TRIM_THRESHOLD_`` keeps from growing), so they reuse heap memory: with
slices of 2^18 items every temporary was a fresh mmap whose pages the kernel faulted in
and zeroed, and the edge tasks spent about 40% of their time in the kernel
(``bench_pipeline.py`` 1x: edge task 0.65 -> 0.42 s, worker page faults 714k -> 480k).
The reuse needs a trim threshold above a slice's temporaries: at Dask's 64 KiB the
freed heap went back to the kernel after every slice, hence
:data:`dgl_chunked.cluster.WORKER_ENVIRONMENT`'s 1 MiB."""


def in_slices(
    func: Callable[[Int64s], npt.NDArray[Any]], ids: npt.NDArray[np.integer], dtype: npt.DTypeLike
) -> npt.NDArray[Any]:
    """``func`` of ``ids`` (as int64), :data:`HEAP_SLICE` items at a time, gathered as ``dtype``."""
    ids = np.asarray(ids)
    out = np.empty(ids.shape[0], dtype=dtype)
    for lo in range(0, ids.shape[0], HEAP_SLICE):
        out[lo : lo + HEAP_SLICE] = func(ids[lo : lo + HEAP_SLICE].astype(np.int64, copy=False))
    return out


_BELOW = (np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64)) - np.uint64(1)).astype(np.uint64)


def count_bits_below(words: npt.NDArray[np.uint64], offset: npt.NDArray[np.integer]) -> npt.NDArray[np.uint8]:
    """Set bits of each 64-bit word below bit ``offset % 64`` (bit ``k`` of word ``w`` is
    item ``64 w + k``): the rank of an item inside its word. ``words`` is overwritten."""
    words &= _BELOW[offset & 63]
    return np.bitwise_count(words)


@dataclass(frozen=True)
class IdLayout:
    """Where every (partition, type) block lands in the new ID space.

    Attributes
    ----------
    ranges
        int64 ``(P, T, 2)``: ``[start, end)`` of partition ``p``'s type ``t`` block.
    block_bases
        One int64 ``(B_t, P)`` array per type: the first new ID that partition ``p``
        gives to a row of block ``b`` of type ``t``.
    """

    ranges: Int64s
    block_bases: tuple[Int64s, ...]

    @property
    def num_parts(self) -> int:
        return int(self.ranges.shape[0])

    @property
    def part_starts(self) -> Int64s:
        """int64 ``(P + 1,)``: partition ``p`` owns new IDs ``[part_starts[p], part_starts[p+1])``."""
        return np.append(self.ranges[:, 0, 0], self.ranges[-1, -1, 1]).astype(np.int64)

    def sizes(self) -> Int64s:
        """int64 ``(P, T)``: number of IDs in each (partition, type) block."""
        return (self.ranges[:, :, 1] - self.ranges[:, :, 0]).astype(np.int64)

    def to_map(self, names: Sequence[str]) -> dict[str, list[list[int]]]:
        """DGL's ``node_map`` / ``edge_map``: ``{type name: [[start, end], ...per partition]}``."""
        return {name: [[int(s), int(e)] for s, e in self.ranges[:, t, :]] for t, name in enumerate(names)}


def layout_ids(counts: Sequence[npt.NDArray[np.integer]]) -> IdLayout:
    """Lay out new IDs from per-block owner counts.

    Parameters
    ----------
    counts
        One array per type, shape ``(B_t, P)``: rows of block ``b`` owned by ``p``.
        A type with no rows passes shape ``(0, P)``.

    Returns
    -------
    IdLayout
    """
    if not counts:
        raise ValueError("layout_ids needs at least one type")
    num_parts = counts[0].shape[1]
    sizes = np.stack([c.sum(axis=0, dtype=np.int64) for c in counts], axis=1)  # (P, T)
    flat_ends = np.cumsum(sizes.ravel())
    flat_starts = flat_ends - sizes.ravel()
    ranges = np.stack([flat_starts, flat_ends], axis=1).reshape(num_parts, len(counts), 2)
    bases = []
    for t, c in enumerate(counts):
        before = np.cumsum(c, axis=0, dtype=np.int64) - c  # rows of earlier blocks
        bases.append((ranges[:, t, 0][None, :] + before).astype(np.int64))
    return IdLayout(ranges=ranges.astype(np.int64), block_bases=tuple(bases))


def count_owners(owner: npt.NDArray[np.integer], num_parts: int) -> Int64s:
    """int64 ``(P,)``: how many rows each partition owns."""
    return np.bincount(owner, minlength=num_parts).astype(np.int64)[:num_parts]


def sort_by_owner(owner: npt.NDArray[np.integer], num_parts: int) -> tuple[npt.NDArray[np.intp], Int64s]:
    """Stable order that groups rows by owner, and the per-owner counts."""
    if num_parts <= 4:  # a pass per owner beats a sort when there are few owners
        groups = [np.flatnonzero(owner == p) for p in range(num_parts)]
        counts = np.array([g.shape[0] for g in groups], dtype=np.int64)
        return np.concatenate(groups) if groups else np.zeros(0, np.intp), counts
    # numpy's stable sort of 8/16-bit integers is a one-pass radix sort
    order = np.argsort(owner.astype(compact_owner_dtype(num_parts), copy=False), kind="stable")
    return order, count_owners(owner, num_parts)


def compact_owner_dtype(num_parts: int) -> np.dtype[Any]:
    """The smallest unsigned dtype holding partition IDs ``0 ... num_parts - 1``."""
    if num_parts <= 1 << 8:
        return np.dtype(np.uint8)
    return np.dtype(np.uint16 if num_parts <= 1 << 16 else np.uint32)


def new_ids_block(owner: npt.NDArray[np.integer], bases: Int64s) -> Int64s:
    """New IDs of one block's rows: ``bases[owner] +`` rank among the block's rows of that owner."""
    order, counts = sort_by_owner(owner, bases.shape[0])
    group_starts = np.cumsum(counts) - counts
    sorted_owner = owner[order]
    rank = np.arange(owner.shape[0], dtype=np.int64) - group_starts[sorted_owner]
    out = np.empty(owner.shape[0], dtype=np.int64)
    out[order] = bases[sorted_owner] + rank
    return out


def owner_of(new_ids: Int64s, part_starts: Int64s) -> npt.NDArray[np.int32]:
    """Partition owning each new ID (``part_starts`` from :attr:`IdLayout.part_starts`).

    Empty partitions are skipped correctly: the owner is the last partition whose
    range starts at or before the ID.
    """
    if part_starts.shape[0] <= 17:  # a compare per boundary beats a binary search per ID
        owner = np.zeros(new_ids.shape[0], dtype=np.int32)
        for start in part_starts[1:-1]:
            owner += new_ids >= start
        return owner
    return (np.searchsorted(part_starts[:-1], new_ids, side="right") - 1).astype(np.int32)


INT32_IDS_BELOW = 1 << 31
"""Staged edge endpoints are int32 when the graph has fewer nodes than this."""


def staged_id_dtype(num_nodes: int, *, wide: bool = False) -> np.dtype[Any]:
    """dtype of staged new node IDs: int32 when every ID fits (half the staging bytes).

    ``wide`` forces int64, the dtype of graphs with 2**31 nodes or more (tests use it
    to run that path on small graphs).
    """
    return np.dtype(np.int32 if num_nodes < INT32_IDS_BELOW and not wide else np.int64)


def type_of(new_ids: Int64s, layout: IdLayout) -> npt.NDArray[np.int32]:
    """Type ID of each new ID, from the (partition, type) block that contains it."""
    flat_starts = layout.ranges[:, :, 0].ravel()
    block = np.searchsorted(flat_starts, new_ids, side="right") - 1
    return np.asarray(block % layout.ranges.shape[1], dtype=np.int32)
