"""Compiled kernels of the ``lp`` rounds and refinements (numba; no Dask, no I/O): the
staging's gathering of a block's entries by node (:func:`sorted_by`), the neighbours'
partitions (:func:`gather`) and histograms (:func:`neighbour_counts`), the refinement's
best part and gain per node at the input (:func:`refinement_gains`) and on the coarse
levels (:func:`part_gains`), and the cut check (:func:`cut_entries`).

Each replaces numpy passes over the entries or the ``[rows, parts]`` histograms (casts
to int64, gathers, argmaxes) with one loop and gives the same results, bit for bit
(``tests/partition/lp/test_round_kernels.py`` compares them with the numpy steps on
random inputs). int32 inputs stay int32 (:func:`.node_kernels.ints`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dgl_chunked.partition.lp.jit import ZERO, HostKernel, compiled
from dgl_chunked.partition.lp.node_kernels import counting_offsets, ints

__all__ = ["cut_entries", "gather", "neighbour_counts", "part_gains", "refinement_gains", "sorted_by"]


def _part_gains(u: Any, v: Any, w: Any, table: Any, part: Any, num_parts: int) -> Any:  # pragma: no cover - compiled
    rows = part.size
    hist = np.zeros((rows, num_parts), np.int64)
    for i in range(u.size):
        hist[u[i], table[v[i]]] += w[i]
    best = np.zeros(rows, np.int64)
    gain = np.empty(rows, np.int64)
    for k in range(rows):
        top = hist[k, 0]
        for p in range(1, num_parts):
            if hist[k, p] > top:  # ties: the lowest part (as numpy's argmax)
                top = hist[k, p]
                best[k] = p
        own = part[k] if part[k] >= 0 else part[k] + num_parts  # -1 reads the last column (as numpy)
        gain[k] = top - hist[k, own]
    return best, gain


def _gather(table: Any, idx: Any, out: Any) -> None:  # pragma: no cover - compiled
    for i in range(idx.size):
        out[i] = table[idx[i]]


def gather(table: Any, idx: Any, out: Any) -> Any:
    """``table[idx]`` written to ``out`` (returned) in one compiled pass: ``np.take``
    first widens uint32 and int32 indices to int64, an extra pass and array per call
    (0.9 s of thread time in the neighbour histograms at 1M nodes / 10M edges,
    issue #38)."""
    _compiled("gather")(table, idx, out)
    return out


def _refinement(hist: Any, part: Any, stratum: Any, open_parts: Any) -> Any:  # pragma: no cover - compiled
    rows, num_parts = hist.shape
    best = np.empty(rows, np.int64)
    gain = np.empty(rows, np.int64)
    for k in range(rows):
        own_p = part[k] if part[k] >= 0 else part[k] + num_parts  # -1 reads the last column (as numpy)
        own = np.int64(hist[k, own_p])
        any_p, any_top, open_p, open_top = 0, np.int64(-2), 0, np.int64(-2)  # below every count and the -1s
        for p in range(num_parts):  # ties: the lowest part (as numpy's argmax)
            x = np.int64(-1) if p == own_p else np.int64(hist[k, p])
            if x > any_top:
                any_top, any_p = x, p
            if not open_parts[stratum[k], p]:
                x = np.int64(-1)
            if x > open_top:
                open_top, open_p = x, p
        if open_top - own > 0:
            best[k], gain[k] = open_p, open_top - own
        else:
            best[k], gain[k] = any_p, any_top - own
    return best, gain


def refinement_gains(hist: Any, part: Any, stratum: Any, open_parts: Any) -> tuple[Any, Any]:
    """Per row of ``hist`` (``[rows, P]`` neighbours per part): the part with the most
    neighbours among those with room (``open_parts[stratum, p]``) when that beats its
    own part ``part``, else the best other part, and the gain of moving there; in one
    compiled pass (:func:`.kernels.propose_refinement`: the numpy version took 1.3 s
    of thread time over 8M rows at 1M nodes / 10M edges, issue #38)."""
    out: tuple[Any, Any] = _compiled("refinement")(
        np.ascontiguousarray(hist), ints(part), ints(stratum), np.ascontiguousarray(open_parts, np.bool_)
    )
    return out


def part_gains(u: Any, v: Any, w: Any, table: Any, part: Any, num_parts: int) -> tuple[Any, Any]:
    """Per node ``k`` of ``part`` (its partitions): the part ``best`` its entries
    ``(u, v, w)`` weigh most to, by the partitions ``table[v]`` (ties: the lowest part),
    and the gain of moving there (that weight minus the weight to its own part); in one
    compiled pass (instead of a per-entry gather, a bincount of floats, an argmax)."""
    out: tuple[Any, Any] = _compiled("gains")(ints(u), ints(v), ints(w), ints(table), ints(part), num_parts)
    return out


def _neighbour_counts(u: Any, v_part: Any, row_of: Any, out: Any) -> None:  # pragma: no cover - compiled
    """Add one to ``out[row, v_part[i]]`` for every entry ``i`` with a placed neighbour
    (``v_part >= 0``), ``row`` its node's row (``row_of`` of the block-local node, or the
    node itself when ``row_of`` is empty); rows past ``out`` are not counted."""
    rows = out.shape[0]
    mapped = row_of.size > 0
    for i in range(u.size):
        p = v_part[i]
        if p < 0:
            continue
        k = np.int64(u[i] & np.uint32(0x7FFFFFFF))  # the block-local node (bit 31: the edge's direction)
        r = row_of[k] if mapped else k
        if r < rows:
            out[r, p] += 1


def _cut_entries(u: Any, v: Any, part: Any, table: Any) -> int:  # pragma: no cover - compiled
    """Entries ``(u, v)`` whose node ``u`` (block-local, bit 31 the edge's direction) is
    unplaced (``part`` < 0) or in another part than ``table[v]``."""
    cut = 0
    for i in range(u.size):
        p = part[np.int64(u[i] & np.uint32(0x7FFFFFFF))]
        cut += (p < 0) | (p != table[v[i]])  # no branch on the random read (see _movers)
    return cut


def cut_entries(u: Any, v: Any, part: Any, table: Any) -> int:
    """The cut entries of one group of staged entries (:func:`.projection.cut_task`) in
    one compiled pass, instead of five arrays per entry."""
    return int(_compiled("cut")(u, v, part, table))


def neighbour_counts(u: Any, v_part: Any, row_of: Any, out: Any) -> Any:
    """The compiled neighbour histogram (:func:`.kernels.neighbour_histogram`): counts
    added to ``out`` (``[rows, P]``, int32 or int64), which is returned."""
    empty = np.empty(0, np.int64)
    _compiled("hist")(u, v_part, empty if row_of is None else row_of, out)
    return out


def _sorted_by(key: Any, extent: int, x: Any, y: Any, ox: Any, oy: Any) -> None:  # pragma: no cover - compiled
    """``x`` and ``y`` into ``ox`` and ``oy`` in a stable counting sort by ``key`` (0 to
    ``extent - 1``)."""
    pos = counting_offsets(key, ZERO, extent)
    for i in range(key.size):
        k = key[i]
        p = pos[k]
        ox[p] = x[i]
        oy[p] = y[i]
        pos[k] = p + 1


def sorted_by(key: Any, extent: int, x: Any, y: Any, ox: Any, oy: Any) -> None:
    """``x`` and ``y`` written to ``ox`` and ``oy`` (arrays of their lengths) in a stable
    counting sort by ``key``, integers from 0 to ``extent - 1``: one compiled pass
    (numpy's stable sort of ints wider than 16 bits is a merge sort)."""
    _compiled("by")(key, extent, x, y, ox, oy)


_KERNELS = {
    "gains": "_part_gains",
    "by": "_sorted_by",
    "hist": "_neighbour_counts",
    "cut": "_cut_entries",
    "refinement": "_refinement",
    "gather": "_gather",
}


@functools.cache
def _compiled(name: str) -> HostKernel:
    """The compiled kernel ``name`` (:func:`.jit.compiled`)."""
    return compiled(globals(), ["counting_offsets"], _KERNELS[name])
