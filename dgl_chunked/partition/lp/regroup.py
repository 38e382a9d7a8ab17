"""Coarse levels in fewer, larger blocks.

A coarse level is contracted into one block per block of the level above it (block
``b`` holds the clusters named by block ``b``'s nodes, :mod:`.coarsen_tasks`), so
without regrouping every level keeps level 0's block count however small it gets.
Issue #38: at 10M nodes / 100M edges (39 blocks) a coarse level of 2M entries took
1.7-2.9 s, against 0.2-0.4 s for a level of that size in the 4 blocks of the 1M-node
graph: each clustering round is a task per block and step, and a file piece per pair
of blocks.

After the contraction, :func:`block_groups` joins consecutive blocks while a block's
entries stay within the largest level-0 block's (a block task's memory does not
grow) and within a share of the level that leaves :data:`~.config.MIN_BLOCKS` blocks
for the workers; a graph of at most that many blocks keeps its blocks. The writers'
files keep their pieces: a merged block reads its pieces in a row
(:meth:`.coarsen_tasks.Level.piece_range`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from dgl_chunked.partition.lp.coarsen_tasks import Level
from dgl_chunked.partition.lp.config import MIN_BLOCKS

__all__ = ["block_groups", "merged_level"]


def block_groups(
    entries: Sequence[int], nodes: Sequence[int], *, max_entries: int, max_nodes: int, min_blocks: int = MIN_BLOCKS
) -> tuple[int, ...]:
    """Boundaries of the runs of consecutive blocks to merge (``groups[k]`` to
    ``groups[k + 1]``): a run grows while its ``entries`` stay within ``max_entries``
    and within ``total // min_blocks`` (so at least ``min_blocks`` runs when no block is
    above it), and its ``nodes`` within ``max_nodes`` (a block above them stays alone).
    Every block alone when there are at most ``min_blocks`` or no entries."""
    total = sum(entries)
    if len(entries) <= min_blocks or total == 0:
        return tuple(range(len(entries) + 1))
    limit = min(max_entries, max(1, total // min_blocks))
    bounds, held, rows = [0], 0, 0
    for j, (e, n) in enumerate(zip(entries, nodes, strict=True)):
        if j > bounds[-1] and (held + e > limit or rows + n > max_nodes):
            bounds.append(j)
            held = rows = 0
        held, rows = held + e, rows + n
    bounds.append(len(entries))
    return tuple(bounds)


def merged_level(level: Level, groups: tuple[int, ...]) -> Level:
    """``level`` (freshly contracted: one piece per block) with its blocks merged into
    ``groups`` (:func:`block_groups`); the same level when no block is merged."""
    if len(groups) == level.num_blocks + 1:
        return level
    offsets = tuple(level.offsets[g] for g in groups)
    return dataclasses.replace(level, offsets=offsets, writers=level.num_writers, pieces=level.offsets, groups=groups)
