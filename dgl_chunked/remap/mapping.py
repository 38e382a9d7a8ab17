"""The map between original and new IDs of one type, one block of original IDs at a time.

Original IDs ``[bounds[k], bounds[k + 1])`` form block ``k``. When new IDs follow
ascending original ID inside each partition (dgl_chunked's own numbering, see
:mod:`~dgl_chunked.remap.spaces`), the new IDs of block ``k``'s items owned by
partition ``p`` are one contiguous run: ``offsets[p] + starts[k, p]`` onwards,
``counts[k, p]`` of them, where ``counts`` are the block's owner counts and
``starts`` their prefix sums down the blocks (:class:`Blocks`). What is left per
block is *where* in the block each partition's items sit: ascending positions per
partition, from one of three sources:

- :class:`OrigIdSource`: ``part<p>/orig_nids.dgl`` / ``orig_eids.dgl`` hold each
  partition's original IDs in new-ID order; block ``k`` reads the ``counts[k, p]``
  IDs from ``starts[k, p]`` on (one seek per partition). DGL's chunked pipeline
  writes them in any order inside a type (it sorts a partition's items by type with
  an unstable sort); counting finds out (:func:`count_orig_ids`), and such files
  take the shuffle route of :mod:`~dgl_chunked.remap.shuffled` instead;
- :class:`NodeAssignmentSource`: the assignment's block ``k`` (``<ntype>.txt``), grouped
  by owner (:func:`~dgl_chunked.dispatch.ids.sort_by_owner`, dispatch's own numbering);
- :class:`EdgeAssignmentSource`: an edge's owner is its destination's: the block's
  ``dst`` column from the chunked graph, looked up in the destination type's assignment.

Nothing here holds more than one block of IDs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.dispatch.ids import sort_by_owner
from dgl_chunked.io.chunked.chunks import ChunkGroup, ChunkRef, read_edges_partition
from dgl_chunked.io.formats.tensor_rows import TensorPayload, read_payload_rows
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.spaces import TypeSpace
from dgl_chunked.storage.arrays import zarr_store
from dgl_chunked.storage.zarr_lookup import cached_lookup

__all__ = [
    "Blocks",
    "EdgeAssignmentSource",
    "NodeAssignmentSource",
    "OrigIdSource",
    "count_orig_ids",
    "regular_bounds",
]

_SLAB = 1 << 22  # original IDs read at a time when counting


def regular_bounds(total: int, block_rows: int) -> tuple[int, ...]:
    """``0, B, 2B, ..., total``: blocks of ``block_rows`` original IDs (one empty block when ``total`` is 0)."""
    return tuple(range(0, total, max(1, block_rows))) + (total,) if total else (0, 0)


@dataclass(frozen=True)
class Blocks:
    """Blocks of original IDs and how many items of each block every partition owns.

    Attributes
    ----------
    bounds
        ``K + 1`` ascending original IDs: block ``k`` is ``[bounds[k], bounds[k + 1])``.
    counts
        int64 ``(K, P)``: items of block ``k`` owned by partition ``p``.
    """

    bounds: tuple[int, ...]
    counts: IdArray

    @property
    def num_blocks(self) -> int:
        return len(self.bounds) - 1

    @property
    def starts(self) -> IdArray:
        """int64 ``(K, P)``: rank, inside partition ``p``, of the first item block ``k`` gives it."""
        return (np.cumsum(self.counts, axis=0) - self.counts).astype(np.int64)

    def block_of(self, part: IdArray, rank: IdArray) -> IdArray:
        """Block holding the item of rank ``rank`` inside partition ``part`` (both arrays)."""
        ends = np.cumsum(self.counts, axis=0)  # (K, P)
        out = np.empty(part.shape[0], np.int64)
        for p in np.unique(part):
            sel = part == p
            out[sel] = np.searchsorted(ends[:, p], rank[sel], side="right")
        return out

    def check(self, space: TypeSpace, source: str) -> None:
        """Every partition has its size, every block its length; else the source does not fit."""
        got = self.counts.sum(axis=0)
        for p, (have, want) in enumerate(zip(got.tolist(), space.sizes, strict=True)):
            if have != want:
                raise RemapError(
                    f"{source} gives partition {p} {have} items of {space.label}, but the partition config "
                    f"says {want}: it does not belong to these partitions"
                )
        lengths = np.diff(np.asarray(self.bounds))
        bad = np.flatnonzero(self.counts.sum(axis=1) != lengths)
        if bad.size:
            k = int(bad[0])
            raise RemapError(
                f"{source}: original IDs [{self.bounds[k]}, {self.bounds[k + 1]}) of {space.label} appear "
                f"{int(self.counts[k].sum())} times over all partitions instead of once each"
            )


def count_orig_ids(
    path: str, payload: TensorPayload, bounds: tuple[int, ...], total: int, so: StorageOptions, label: str = ""
) -> tuple[IdArray, bool]:
    """Original IDs of one partition's ``orig_*.dgl`` entry per block, and whether they ascend.

    Reads the entry in slabs of 4M IDs. Any order is a valid mapping (DGL's pipeline
    does not keep original order inside a type); ascending order lets ``remap`` and
    ``lookup`` take the cheaper route. Raises :class:`RemapError` naming the file and
    position of the first ID out of ``[0, total)``.
    """
    edges = np.asarray(bounds, dtype=np.int64)
    counts = np.zeros(len(bounds) - 1, np.int64)
    last = -1
    ascending = True
    for lo in range(0, payload.rows, _SLAB):
        ids = read_payload_rows(path, payload, lo, min(lo + _SLAB, payload.rows), storage_options=so).astype(np.int64)
        if ids.size and ascending and (np.diff(ids, prepend=last) <= 0).any():
            ascending = False
        bad = (ids < 0) | (ids >= total)
        if bad.any():
            at = int(np.argmax(bad))
            what = f" of {label}" if label else ""
            raise RemapError(
                f"{path}: position {lo + at}: original ID {int(ids[at])} is outside [0, {total}){what}; "
                "is it these partitions' file?"
            )
        counts += np.bincount(np.searchsorted(edges, ids, side="right") - 1, minlength=counts.shape[0])[
            : counts.shape[0]
        ]
        last = int(ids[-1]) if ids.size else last
    return counts, ascending


@dataclass(frozen=True)
class OrigIdSource:
    """Owners from each partition's ``orig_nids.dgl`` / ``orig_eids.dgl`` entry of the type."""

    paths: tuple[str, ...]
    payloads: tuple[TensorPayload, ...]
    storage_options: dict[str, Any] | None = field(default=None, compare=False)
    ascending: bool = True
    """Every partition's IDs ascend (set after counting); else the mapping takes the shuffle route
    (:mod:`~dgl_chunked.remap.shuffled`)."""

    @property
    def label(self) -> str:
        name = self.paths[0].rstrip("/").rsplit("/", 1)[-1] if self.paths else "orig_nids.dgl"
        return f"the partitions' {name} files"

    def read(self, part: int, lo: int, hi: int) -> IdArray:
        """Original IDs of partition ``part``'s items ``[lo, hi)`` (partition-local new IDs)."""
        ids = read_payload_rows(self.paths[part], self.payloads[part], lo, hi, storage_options=self.storage_options)
        return ids.astype(np.int64, copy=False)

    def positions(self, lo: int, starts: IdArray, counts: IdArray) -> list[IdArray]:
        """Per partition, ascending positions in block ``[lo, ...)`` of the items it owns (ascending IDs only)."""
        assert self.ascending
        out = []
        for path, payload, s, c in zip(self.paths, self.payloads, starts.tolist(), counts.tolist(), strict=True):
            ids = read_payload_rows(path, payload, s, s + c, storage_options=self.storage_options)
            out.append(ids.astype(np.int64) - lo)
        return out


def _group_positions(owner: npt.NDArray[np.integer[Any]], num_parts: int) -> list[IdArray]:
    order, counts = sort_by_owner(np.asarray(owner), num_parts)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    return [order[bounds[p] : bounds[p + 1]].astype(np.int64) for p in range(num_parts)]


@dataclass(frozen=True)
class NodeAssignmentSource:
    """Owners from the assignment directory (``<ntype>.txt``): a block's owners are handed to each task."""

    assignment: str
    num_parts: int

    @property
    def label(self) -> str:
        return f"the assignment {self.assignment}"

    def positions(self, owner: npt.NDArray[np.integer[Any]]) -> list[IdArray]:
        return _group_positions(owner, self.num_parts)


@dataclass(frozen=True)
class EdgeAssignmentSource:
    """Owners of edges: the owner of each edge's destination, looked up in a staged copy of its assignment.

    Attributes
    ----------
    refs
        The edge type's chunk files in the chunked graph.
    num_src, num_dst
        Node counts of the end types (checked while reading).
    owners
        The destination type's assignment, staged as a 1-D Zarr array (path or URL).
    cache_key, cache_bytes
        Per-run key and byte budget of the worker's cached copy.
    """

    assignment: str
    num_parts: int
    refs: tuple[ChunkRef, ...]
    num_src: int
    num_dst: int
    owners: str
    cache_key: str
    cache_bytes: int
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return f"the assignment {self.assignment}"

    def dst(self, lo: int, hi: int) -> IdArray:
        """``dst`` of edges ``[lo, hi)`` (type-wise edge IDs), read from the chunk files that hold them."""
        parts = []
        for ref in self.refs:
            if ref.stop <= lo or ref.start >= hi:
                continue
            frame = read_edges_partition(ChunkGroup((ref,)), num_src=self.num_src, num_dst=self.num_dst)
            parts.append(frame["dst"].to_numpy()[max(lo - ref.start, 0) : min(hi, ref.stop) - ref.start])
        return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)

    def block_owners(self, lo: int, hi: int) -> npt.NDArray[np.integer[Any]]:
        array = zarr.open_array(zarr_store(self.owners, self.storage_options, read_only=True), mode="r", zarr_format=3)
        return cached_lookup(array, self.dst(lo, hi), key=self.cache_key, budget_bytes=self.cache_bytes)

    def positions(self, lo: int, hi: int) -> list[IdArray]:
        return _group_positions(self.block_owners(lo, hi), self.num_parts)
