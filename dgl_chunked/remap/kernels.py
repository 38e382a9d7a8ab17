"""Pure numpy kernels of ``remap``: one block of original IDs, built from its partitions' runs.

A block task knows, per partition ``p``, the ascending positions in the block of
the items ``p`` owns (:mod:`~dgl_chunked.remap.mapping`) and the first new ID of
their run. :func:`scatter_runs` fills the block from dense results;
:func:`place_pairs` places ``(new ID, row)`` pairs; :func:`check_cover` makes sure
the positions name every item of the block once. No I/O, no Dask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.remap.model import RemapError

__all__ = ["check_cover", "pair_positions", "place_pairs", "run_positions", "scatter_runs"]


def check_cover(positions: Sequence[IdArray], length: int, lo: int, source: str) -> None:
    """Every position in ``[0, length)`` exactly once over all partitions, else :class:`RemapError`."""
    seen = np.zeros(length, np.int64)
    for pos in positions:
        if pos.size and (pos[0] < 0 or pos[-1] >= length):
            raise RemapError(f"{source}: IDs of block [{lo}, {lo + length}) fall outside it")
        seen += np.bincount(pos, minlength=length)[:length]
    bad = np.flatnonzero(seen != 1)
    if bad.size:
        at = int(bad[0])
        raise RemapError(
            f"{source}: original ID {lo + at} is held by {int(seen[at])} partitions; each ID must be in exactly one"
        )


def scatter_runs(
    positions: Sequence[IdArray],
    run_starts: Sequence[int],
    read: Callable[[int, int], npt.NDArray[Any]],
    length: int,
    row_shape: tuple[int, ...],
    dtype: np.dtype[Any],
) -> npt.NDArray[Any]:
    """The block's rows: partition ``p``'s run of new IDs from ``run_starts[p]`` lands on ``positions[p]``.

    ``read(lo, hi)`` returns the result rows of new IDs ``[lo, hi)``.
    """
    out = np.empty((length, *row_shape), dtype=dtype)
    for pos, start in zip(positions, run_starts, strict=True):
        if pos.size:
            rows = read(int(start), int(start) + pos.size)
            out[pos] = rows.astype(dtype, copy=False)
    return out


def run_positions(positions: Sequence[IdArray], length: int) -> tuple[IdArray, IdArray]:
    """``(owner, rank)`` of every position of the block: the partition and the index in its run."""
    owner = np.full(length, -1, np.int64)
    rank = np.zeros(length, np.int64)
    for p, pos in enumerate(positions):
        owner[pos] = p
        rank[pos] = np.arange(pos.size, dtype=np.int64)
    return owner, rank


def pair_positions(positions: Sequence[IdArray], owner: IdArray, rank_in_run: IdArray) -> IdArray:
    """Position in the block of each pair whose new ID is the ``rank_in_run``-th of partition ``owner``'s run."""
    out = np.empty(owner.shape[0], np.int64)
    for p in np.unique(owner).tolist():
        sel = owner == p
        out[sel] = positions[p][rank_in_run[sel]]
    return out


def place_pairs(
    pos: IdArray,
    rows: npt.NDArray[Any],
    length: int,
    fill: Any,
    describe: Callable[[int], str],
    lo: int,
    what: str,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    """``(values, present)`` of a block from pairs landing on ``pos``; a repeated ID is an error.

    ``describe(i)`` names where pair ``i`` came from (file and row), for the message.
    """
    order = np.argsort(pos, kind="stable")
    sorted_pos = pos[order]
    repeat = np.flatnonzero(sorted_pos[1:] == sorted_pos[:-1])
    if repeat.size:
        i, j = int(order[repeat[0]]), int(order[repeat[0] + 1])
        raise RemapError(
            f"{describe(j)}: repeats the new ID of original ID {lo + int(pos[j])} of {what} "
            f"(first at {describe(i)}); each new ID may appear once"
        )
    values = np.full((length, *rows.shape[1:]), fill, dtype=rows.dtype)
    present = np.zeros(length, np.bool_)
    values[pos] = rows
    present[pos] = True
    return values, present
