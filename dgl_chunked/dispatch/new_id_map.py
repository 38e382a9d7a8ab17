"""New node IDs from the owners alone: a compact map instead of a cached ID array.

Numbering (:func:`~dgl_chunked.dispatch.ids.new_ids_block`) gives node ``j`` of
block ``b`` (``block_rows`` nodes a block) the ID ``bases[b, p] + r``, where ``p``
is its owner and ``r`` the number of nodes of that block before it with the same
owner. So the new ID follows from the owners: stored as ``k`` bit planes (owner
bit ``l`` of every node, 64 nodes a word) plus, per word and partition, how many
of the block's nodes before the word belong to the partition, ``r`` is that count
plus the set bits, before the node, of the word's "same owner" mask (the planes
XOR-ed with the owner's bits and AND-ed together).

Memory per node: ``k / 8 + 4 P / 64`` bytes for ``P`` partitions (``k`` bits to
name one): 0.25 byte at 2 partitions, 0.88 at 8, 1.5 at 16, against 4 for the
int32 copy of the ``new_nid`` array, so 30M nodes need 7.5 MB instead of 120 MB.
:func:`map_bytes` says how much; callers take whichever form is smaller.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.ids import HEAP_SLICE, count_bits_below, in_slices

__all__ = ["NewIdMap", "NodeNumbering", "build_map", "map_bytes"]


@dataclass(frozen=True)
class NodeNumbering:
    """How a node type was numbered: what an edge task needs to build a :class:`NewIdMap`."""

    ntype: str
    num_nodes: int
    block_rows: int
    bases: npt.NDArray[np.int64]
    """``[num_blocks, num_parts]``, :attr:`~dgl_chunked.dispatch.ids.IdLayout.block_bases` of the type."""


def _bits(num_parts: int) -> int:
    return max(1, (num_parts - 1).bit_length())


def map_bytes(num_nodes: int, block_rows: int, num_parts: int) -> int:
    """Bytes of a :class:`NewIdMap` over ``num_nodes`` nodes."""
    words = -(-num_nodes // block_rows) * -(-min(block_rows, max(num_nodes, 1)) // 64)
    return int(words * (8 * _bits(num_parts) + 4 * num_parts))


class NewIdMap:
    """The new ID of every node of a type, from its owners (see the module docstring).

    Parameters
    ----------
    num_nodes, block_rows
        The type's node count and the numbering's block size.
    bases
        ``[num_blocks, num_parts]``: the first new ID of each partition's nodes in a block.
    """

    def __init__(self, num_nodes: int, block_rows: int, bases: npt.NDArray[np.int64]) -> None:
        self.block_rows = int(block_rows)
        self.num_parts = int(bases.shape[1])
        self.words_per_block = -(-min(self.block_rows, max(num_nodes, 1)) // 64)
        words = bases.shape[0] * self.words_per_block
        self.bases = np.ascontiguousarray(bases, dtype=np.int64).ravel()
        self.planes = np.zeros((_bits(self.num_parts), words), dtype=np.uint64)
        self.before = np.zeros(words * self.num_parts, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        return int(self.planes.nbytes + self.before.nbytes + self.bases.nbytes)

    def add_block(self, block: int, owner: npt.NDArray[np.integer]) -> None:
        """Record the owners of block ``block``'s nodes (a slice at a time: few temporaries)."""
        running = np.zeros(self.num_parts, dtype=np.int64)  # the block's nodes so far, per partition
        first_word = block * self.words_per_block
        for lo in range(0, owner.shape[0], HEAP_SLICE):
            part = np.asarray(owner[lo : lo + HEAP_SLICE], dtype=np.int64)
            w0, nw = first_word + lo // 64, -(-part.shape[0] // 64)
            for lvl in range(self.planes.shape[0]):
                bits = np.zeros(nw * 64, dtype=np.uint8)
                bits[: part.shape[0]] = (part >> lvl) & 1
                self.planes[lvl, w0 : w0 + nw] = np.packbits(bits, bitorder="little").view("<u8")
            word = np.arange(part.shape[0]) >> 6
            per_word = np.bincount(word * self.num_parts + part, minlength=nw * self.num_parts).reshape(nw, -1)
            before = np.cumsum(per_word, axis=0) - per_word + running
            self.before[w0 * self.num_parts : (w0 + nw) * self.num_parts] = before.ravel()
            running += per_word.sum(axis=0)

    def lookup(self, ids: npt.NDArray[np.integer], dtype: npt.DTypeLike = np.int64) -> npt.NDArray[np.integer]:
        """New IDs of the nodes ``ids`` (type-wise IDs), as ``dtype``."""
        return in_slices(self._lookup, ids, dtype)

    def _lookup(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        if self.block_rows & (self.block_rows - 1) == 0:  # the default: shifts, not divisions
            shift_rows = self.block_rows.bit_length() - 1
            block, offset = ids >> shift_rows, ids & (self.block_rows - 1)
        else:
            block = ids // self.block_rows
            offset = ids - block * self.block_rows
        word = block * self.words_per_block + (offset >> 6)
        shift = (offset & 63).astype(np.uint64)
        owner = np.zeros(ids.shape[0], dtype=np.int64)
        same = np.full(ids.shape[0], np.uint64(0xFFFFFFFFFFFFFFFF))
        for lvl in range(self.planes.shape[0]):
            plane = self.planes[lvl][word]
            bit = (plane >> shift) & np.uint64(1)
            owner |= bit.astype(np.int64) << lvl
            same &= plane ^ (bit - np.uint64(1))  # nodes whose bit lvl equals this node's
        rank = self.before[word * self.num_parts + owner].astype(np.int64)
        rank += count_bits_below(same, offset)
        rank += self.bases[block * self.num_parts + owner]
        return rank


def build_map(
    num_nodes: int, block_rows: int, bases: npt.NDArray[np.int64], owner_blocks: Iterable[npt.NDArray[np.integer]]
) -> NewIdMap:
    """A :class:`NewIdMap` from the owners of each block, in block order."""
    new_map = NewIdMap(num_nodes, block_rows, bases)
    for b, owner in enumerate(owner_blocks):
        new_map.add_block(b, owner)
    return new_map
