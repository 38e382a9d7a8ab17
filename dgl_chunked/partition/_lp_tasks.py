"""Task bodies of the ``lp`` method: scratch-store I/O around :mod:`._lp_kernels`.

Scratch layout of one run (``ROOT`` is a fresh directory under ``LPConfig.scratch_dir``)::

    ROOT/result.zarr/part            int32 [N]  the assignment (-1: not placed yet); kept
    ROOT/work/nodes.zarr/level       int8  [N]  floor(log2 degree), -1 when isolated
    ROOT/work/nodes.zarr/stratum     int32 [N]  (node type, first true balance mask)
    ROOT/work/nodes.zarr/weight      int64 [N]  owned edges (in-degree + self-loops)
    ROOT/work/nodes.zarr/target      int32 [N]  this round's proposal (-1: none)
    ROOT/work/nodes.zarr/prio        int16 [N]  this round's priority
    ROOT/work/edges/<c>-u.npy        uint32     staged entries of edge file c: block-local u
    ROOT/work/edges/<c>-v.npy        int64      ... and the neighbour's orig_nid
    ROOT/work/edges/<c>-loops.npy    int64      self-loop nodes of edge file c, sorted

Node arrays are Zarr, chunked by node block, so every block task writes its own chunk
(no races). Staged entries are ``.npy`` files that tasks memory-map and slice.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition import _lp_kernels as K

__all__: list[str] = []

FULL_READ_BYTES = 1 << 26
"""A histogram task reads the whole assignment at once below this size, else uses ``lookup``."""

ALL_LEVELS = -2
"""The ``level`` of a placement round over every unplaced node with neighbours (a retry round)."""
NODE_ARRAYS = (("level", np.int8), ("stratum", np.int32), ("weight", np.int64), ("target", np.int32),
               ("prio", np.int16))
Segments = list[tuple[int, int, int]]  # (edge file, first entry, end entry)
Groups = tuple[IdArray, IdArray, IdArray]  # (group keys, node counts, weight sums)


@functools.lru_cache(maxsize=64)
def open_node_array(root: str, name: str, mode: str = "r") -> Any:
    """A node-level Zarr array of a run (handles are cached: opening one costs milliseconds)."""
    import zarr

    sub = "result.zarr" if name == "part" else os.path.join("work", "nodes.zarr")
    return zarr.open_array(store=os.path.join(root, sub), path=name, mode=mode)


def create_node_arrays(root: str, num_nodes: int, block_rows: int) -> None:
    """Create the node arrays (``part`` filled with -1) and the staging directory."""
    import zarr

    chunk = (max(1, min(block_rows, num_nodes or 1)),)
    for name, dtype in (("part", np.int32), *NODE_ARRAYS):
        store = os.path.join(root, "result.zarr" if name == "part" else os.path.join("work", "nodes.zarr"))
        zarr.create_array(store=store, name=name, shape=(num_nodes,), chunks=chunk, dtype=dtype,
                          compressors=None, fill_value=-1 if name == "part" else 0, overwrite=True)
    os.makedirs(os.path.join(root, "work", "edges"), exist_ok=True)


def read_result(root: str, lo: int, hi: int) -> npt.NDArray[np.int32]:
    """Output chunk ``[lo, hi)`` of the homogeneous assignment."""
    if hi <= lo:
        return np.empty(0, np.int32)
    return np.asarray(open_node_array(root, "part")[lo:hi], dtype=np.int32)


def _edges_file(root: str, c: int, name: str) -> str:
    return os.path.join(root, "work", "edges", f"{c}-{name}.npy")


def _segments(root: str, segs: Segments, name: str) -> Iterator[npt.NDArray[Any]]:
    """The staged entries ``[lo, hi)`` of every listed edge file, one at a time (memory-mapped)."""
    for c, lo, hi in segs:
        yield np.asarray(np.load(_edges_file(root, c, name), mmap_mode="r")[lo:hi])


def _block(root: str, name: str, lo: int, hi: int) -> npt.NDArray[Any]:
    return np.asarray(open_node_array(root, name)[lo:hi])


def stage_task(ref: Any, *, root: str, c: int, offsets: tuple[int, int], bounds: tuple[int, int],
               block_rows: int, num_blocks: int) -> tuple[IdArray, IdArray]:
    """Stage edge file ``c``; return its entries and its self-loops per node block."""
    from dgl_chunked.io.chunked import read_edges_partition

    df = read_edges_partition(ref, num_src=bounds[0], num_dst=bounds[1])
    u, v, counts, loops = K.orient_edges(df["src"].to_numpy(np.int64) + offsets[0],
                                         df["dst"].to_numpy(np.int64) + offsets[1],
                                         block_rows=block_rows, num_blocks=num_blocks)
    loops = np.sort(loops)
    for name, arr in (("u", u), ("v", v), ("loops", loops)):
        np.save(_edges_file(root, c, name), arr)
    return counts, np.bincount(loops // block_rows, minlength=num_blocks).astype(np.int64)


def prepare_task(stratum: npt.NDArray[Any], *, root: str, b: int, block_rows: int, segs: Segments,
                 loop_segs: Segments, num_strata: int) -> tuple[IdArray, int, IdArray]:
    """Degree, owned edges, level and stratum of block ``b``; return the nodes per stratum,
    the owned edges and the nodes per level (index ``level + 1``, 64 levels)."""
    rows, lo = stratum.size, b * block_rows
    degree, owned = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    for u in _segments(root, segs, "u"):
        d, o = K.block_degrees([u], np.empty(0, np.int64), rows=rows)
        degree += d
        owned += o
    for loops in _segments(root, loop_segs, "loops"):
        owned += np.bincount(loops - lo, minlength=rows)
    level = K.degree_levels(degree)
    for name, arr in (("level", level), ("stratum", stratum.astype(np.int32)), ("weight", owned)):
        open_node_array(root, name, "r+")[lo:lo + rows] = arr
    return (np.bincount(stratum, minlength=num_strata).astype(np.int64), int(owned.sum()),
            np.bincount(level.astype(np.int64) + 1, minlength=64).astype(np.int64))


def restage_task(*, root: str, c: int, block_counts: IdArray, block_rows: int, max_level: int) -> IdArray:
    """Reorder edge file ``c``'s entries by (block, falling level of ``u``); return the
    entries per ``(block, level)``."""
    u = np.load(_edges_file(root, c, "u"))
    if u.size == 0:
        return np.zeros((block_counts.size, max_level + 1), np.int64)
    blocks = np.repeat(np.arange(block_counts.size, dtype=np.int64), block_counts)
    nodes = blocks * block_rows + (u & K.LOCAL_MASK).astype(np.int64)
    levels = open_node_array(root, "level")
    if levels.shape[0] <= FULL_READ_BYTES:
        level_of = np.asarray(levels[:])[nodes]
    else:
        from dgl_chunked.io.zarr_lookup import lookup

        level_of = lookup(levels, nodes)
    del nodes, blocks
    order, counts = K.level_order(u, block_counts, level_of, max_level=max_level)
    np.save(_edges_file(root, c, "u"), u[order])
    del u
    np.save(_edges_file(root, c, "v"), np.load(_edges_file(root, c, "v"))[order])
    return counts


def _active(root: str, lo: int, hi: int, mode: str, level: int) -> tuple[npt.NDArray[np.int32],
                                                                        npt.NDArray[np.bool_]]:
    part = _block(root, "part", lo, hi)
    if mode == "refine":
        return part, part >= 0
    levels = _block(root, "level", lo, hi)
    if level == ALL_LEVELS:
        return part, (part < 0) & (levels >= 0)
    return part, (levels == level) & (part < 0)


def hist_task(*, root: str, b: int, block_rows: int, rows: int, segs: Segments, mode: str, level: int,
              num_parts: int, after: object = None) -> npt.NDArray[np.int32]:
    """Neighbours per partition of block ``b``'s active nodes over the listed entries
    (``after``: the tasks that must finish first, e.g. the previous round's moves)."""
    from dgl_chunked.io.zarr_lookup import lookup

    lo = b * block_rows
    _, active = _active(root, lo, lo + rows, mode, level)
    row_of = K.rows_of(active)
    hist = np.zeros((int(active.sum()), num_parts), np.int32)
    parts = open_node_array(root, "part")
    full = np.asarray(parts[:]) if parts.shape[0] * 4 <= FULL_READ_BYTES else None
    for u, v in zip(_segments(root, segs, "u"), _segments(root, segs, "v"), strict=True):
        v_part = full[v] if full is not None else lookup(parts, v)
        K.neighbour_histogram(u, v_part, row_of, num_rows=hist.shape[0], num_parts=num_parts, out=hist)
    return hist


def sum_task(*hists: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """Element-wise sum of histogram parts."""
    out = hists[0].copy()
    for h in hists[1:]:
        out += h
    return out


def _block_keys(root: str, lo: int, hi: int, mode: str, num_parts: int) -> tuple[npt.NDArray[Any], ...]:
    """Partitions, targets, group keys (-1: no proposal), weights and strata of a block."""
    part, target = _block(root, "part", lo, hi), _block(root, "target", lo, hi).astype(np.int64)
    stratum, weight = _block(root, "stratum", lo, hi), _block(root, "weight", lo, hi)
    ok = target >= 0
    src = np.full(part.size, num_parts) if mode == "place" else part
    keys = np.full(part.size, -1, np.int64)
    keys[ok] = K.group_key(stratum[ok], src[ok], target[ok], _block(root, "prio", lo, hi)[ok], num_parts=num_parts)
    return part, target, keys, weight, stratum


def propose_task(hist: npt.NDArray[np.int32], *, root: str, b: int, block_rows: int, rows: int, mode: str,
                 level: int, penalties: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
                 open_parts: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]], num_parts: int) -> Groups:
    """Write block ``b``'s proposals; return them summarised per group.

    ``penalties`` are Fennel's per-node and per-unit-of-weight penalties per part;
    ``open_parts`` whether parts have node room ``[S, P]`` and weight room ``[P]``.
    """
    lo = b * block_rows
    part, active = _active(root, lo, lo + rows, mode, level)
    stratum = _block(root, "stratum", lo, lo + rows)
    if mode == "place":
        target, prio = K.propose_placement(hist, part, active, stratum, _block(root, "weight", lo, lo + rows),
                                           penalty=penalties[0], weight_penalty=penalties[1],
                                           open_parts=open_parts[0], weight_open=open_parts[1])
    else:
        target, prio = K.propose_refinement(hist, part, active, stratum, open_parts=open_parts[0])
    open_node_array(root, "target", "r+")[lo:lo + rows] = target.astype(np.int32)
    open_node_array(root, "prio", "r+")[lo:lo + rows] = prio
    _, _, keys, weight, _ = _block_keys(root, lo, lo + rows, mode, num_parts)
    ok = keys >= 0
    return K.summarise_groups(keys[ok], weight[ok])


def apply_task(quota: Groups, *, root: str, b: int, block_rows: int, rows: int, mode: str, seed: int, salt: int,
               num_parts: int) -> Groups:
    """Move block ``b``'s proposals within its quotas; return the moves per group."""
    lo = b * block_rows
    part, target, keys, weight, _ = _block_keys(root, lo, lo + rows, mode, num_parts)
    rank = K.node_order(np.arange(lo, lo + rows, dtype=np.int64), seed=seed, salt=salt)
    new, mk, mc, mw = K.apply_quotas(part, target, keys, weight, rank, *quota, num_parts=num_parts)
    if mk.size:
        open_node_array(root, "part", "r+")[lo:lo + rows] = new
    return mk, mc, mw


def _todo(root: str, lo: int, hi: int, isolated: bool) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
    part = _block(root, "part", lo, hi)
    return part, (part < 0) & ((_block(root, "level", lo, hi) < 0) == isolated)


def unplaced_task(*, root: str, b: int, block_rows: int, rows: int, num_strata: int, isolated: bool) -> IdArray:
    """Unplaced nodes of block ``b`` per stratum: the isolated ones, or the others."""
    lo = b * block_rows
    _, todo = _todo(root, lo, lo + rows, isolated)
    return np.bincount(_block(root, "stratum", lo, lo + rows)[todo], minlength=num_strata).astype(np.int64)


def fill_task(fill: Groups, *, root: str, b: int, block_rows: int, rows: int, seed: int, salt: int,
              num_parts: int, isolated: bool) -> Groups:
    """Place block ``b``'s unplaced (isolated, or other) nodes as ``fill`` says; return the
    moves per group."""
    lo = b * block_rows
    part, todo = _todo(root, lo, lo + rows, isolated)
    stratum = _block(root, "stratum", lo, lo + rows)
    rank = K.node_order(np.arange(lo, lo + rows, dtype=np.int64), seed=seed, salt=salt)
    new = K.fill_block(part, todo, stratum, rank, *fill)
    open_node_array(root, "part", "r+")[lo:lo + rows] = new
    moved = np.flatnonzero(todo)
    keys = K.group_key(stratum[moved], np.full(moved.size, num_parts), new[moved], np.zeros(moved.size, np.int64),
                       num_parts=num_parts)
    return K.summarise_groups(keys, _block(root, "weight", lo, lo + rows)[moved])
