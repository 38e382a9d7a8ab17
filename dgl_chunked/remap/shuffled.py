"""The shuffle route: ``orig_*.dgl`` files whose IDs do not ascend inside a partition.

DGL 2.1.0's chunked pipeline sorts each partition's nodes (and edges) by type with
numpy's default, unstable ``argsort`` (``tools/distpartitioning/data_shuffle.py``,
``reorder_data``, called with ``constants.NTYPE_ID`` and ``constants.ETYPE_ID``), so
inside a type its new IDs do not follow original IDs. The partitions'
``orig_nids.dgl`` / ``orig_eids.dgl`` still name each new ID's original ID; this
module joins by them out of core, with sort-based shuffles over **slabs** (each
partition's new IDs cut into runs of at most ``B``, :func:`slabs`) and **blocks**
(original IDs ``[bounds[k], bounds[k + 1])``), no task holding more than one slab or
block:

- remap, pairs only: :func:`~dgl_chunked.remap.pairs.map_pairs` groups the pairs by
  slab (the slabs are a :class:`~dgl_chunked.remap.mapping.Blocks` over new IDs);
- remap, :func:`stage_slab`: a slab's rows (dense results: one run of rows; pairs:
  the slab's staged segments, checked for repeated new IDs) with the slab's original
  IDs (one read of the partition's file), staged by block;
- remap, :func:`write_shuffled_block`: a block's staged rows placed at their
  original IDs and written;
- lookup, :func:`stage_inverse` then :func:`inverse_block`: a slab's
  ``(original ID, new ID)`` staged by block; a block's new ID of every original ID.

An original ID named twice (or not at all) by the files is an error naming both files
and positions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
from dask.delayed import Delayed, delayed

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.remap.mapping import Blocks, OrigIdSource
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.pairs import map_pairs, pair_pieces, read_segment, write_staged
from dgl_chunked.remap.result_sources import PairInput, RowInput
from dgl_chunked.remap.spaces import TypeSpace
from dgl_chunked.remap.tasks import TypeJob
from dgl_chunked.storage import fs

__all__ = [
    "inverse_block",
    "is_shuffled",
    "job_slabs",
    "pair_slab_tasks",
    "slab_range",
    "slab_tasks",
    "slabs",
    "shuffled_block_tasks",
    "stage_inverse",
    "stage_slab",
    "write_shuffled_block",
]


def is_shuffled(job: TypeJob) -> bool:
    """The job maps new IDs through ``orig_*.dgl`` files whose IDs do not ascend (known after counting).

    Pairs that name original IDs (``--id-space original``) need no mapping: they take the block route.
    """
    if isinstance(job.data, PairInput) and job.data.original:
        return False
    return isinstance(job.source, OrigIdSource) and not job.source.ascending


def slabs(space: TypeSpace, rows: int) -> Blocks:
    """Each partition's new IDs in runs of at most ``rows``, as :class:`Blocks` over type-wise new IDs.

    Slab ``s`` holds new IDs ``[bounds[s], bounds[s + 1])``, all in one partition
    (``counts[s]`` is zero but there).
    """
    bounds: list[int] = []
    counts: list[IdArray] = []
    offsets = space.offsets.tolist()
    for p, size in enumerate(space.sizes):
        for a in range(0, size, max(1, rows)):
            b = min(a + max(1, rows), size)
            bounds.append(int(offsets[p]) + a)
            row = np.zeros(space.num_parts, np.int64)
            row[p] = b - a
            counts.append(row)
    bounds.append(space.total)
    matrix = np.stack(counts) if counts else np.zeros((0, space.num_parts), np.int64)
    return Blocks(tuple(bounds), matrix)


def job_slabs(job: TypeJob) -> Blocks:
    """The slabs of a job: as many new IDs as its blocks hold original IDs."""
    rows = job.bounds[1] - job.bounds[0] if len(job.bounds) > 1 else 1
    return slabs(job.space, rows)


def slab_range(space: TypeSpace, grid: Blocks, s: int) -> tuple[int, int, int]:
    """``(partition, lo, hi)``: slab ``s`` is the partition's local new IDs ``[lo, hi)``."""
    p = int(np.argmax(grid.counts[s]))
    lo = grid.bounds[s] - int(space.offsets[p])
    return p, lo, lo + int(grid.counts[s, p])


def _scratch(job: TypeJob, name: str) -> str:
    return fs.join(job.scratch, name)


def _so(job: TypeJob) -> StorageOptions:
    return job.output.storage_options if job.output is not None else None


def _where(source: OrigIdSource, space: TypeSpace, new_id: int) -> str:
    p = int(space.owner(np.asarray([new_id], np.int64))[0])
    return f"{source.paths[p]} position {new_id - int(space.offsets[p])}"


def _check_unique(job: TypeJob, orig: IdArray, new: IdArray) -> None:
    """Each original ID once among ``orig`` (new IDs ``new``), else an error naming both places."""
    assert isinstance(job.source, OrigIdSource)
    order = np.argsort(orig, kind="stable")
    repeat = np.flatnonzero(orig[order][1:] == orig[order][:-1])
    if repeat.size:
        i, j = int(order[repeat[0]]), int(order[repeat[0] + 1])
        raise RemapError(
            f"{_where(job.source, job.space, int(new[j]))}: original ID {int(orig[j])} of {job.space.label} is "
            f"also at {_where(job.source, job.space, int(new[i]))}; each original ID must have one new ID"
        )


# --- remap ----------------------------------------------------------------------------------


def _pair_rows(job: TypeJob, s: int, first: int, last: int) -> tuple[IdArray, npt.NDArray[Any]]:
    """The new IDs and rows of slab ``s``'s pairs (staged by :func:`map_pairs`), checked for repeats."""
    data = job.data
    assert isinstance(data, PairInput)
    so = _so(job)
    used = [i for i, o in enumerate(job.offsets) if o[s + 1] > o[s]]
    segs = [
        read_segment(_scratch(job, "pairs"), i, int(job.offsets[i][s]), int(job.offsets[i][s + 1]), so) for i in used
    ]
    if not segs:
        return np.empty(0, np.int64), np.empty((0, *data.row_shape), data.dtype)
    ids = np.concatenate([g["ids"] for g in segs]).astype(np.int64, copy=False)
    order = np.argsort(ids, kind="stable")
    repeat = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if repeat.size:
        origin = np.repeat(np.asarray(used, dtype=np.int64), [g["ids"].shape[0] for g in segs])
        row = np.concatenate([g["row"] for g in segs])

        def describe(i: int) -> str:
            return f"{data.ids[job.pieces[int(origin[i])].file].describe()} row {int(row[i])}"

        i, j = int(order[repeat[0]]), int(order[repeat[0] + 1])
        raise RemapError(
            f"{describe(j)}: repeats new ID {int(ids[j])} of {job.space.label} (first at {describe(i)}); "
            "each new ID may appear once"
        )
    assert ids.size == 0 or (ids.min() >= first and ids.max() < last)
    return ids, np.concatenate([g["rows"] for g in segs])


def stage_slab(job: TypeJob, grid: Blocks, s: int) -> IdArray:
    """Stage slab ``s``'s rows by block of original IDs; return the ``K + 1`` block offsets."""
    assert isinstance(job.source, OrigIdSource) and job.data is not None
    p, lo, hi = slab_range(job.space, grid, s)
    first = grid.bounds[s]
    orig = job.source.read(p, lo, hi)
    if isinstance(job.data, RowInput):
        new = np.arange(first, first + hi - lo, dtype=np.int64)
        rows = job.data.read(first, first + hi - lo)
    else:
        new, rows = _pair_rows(job, s, first, first + hi - lo)
        orig = orig[new - first]
    block = (np.searchsorted(np.asarray(job.bounds), orig, side="right") - 1).astype(np.int64)
    arrays = {"ids": orig, "rows": rows, "row": new}
    return write_staged(_scratch(job, "slabs"), s, arrays, block, len(job.bounds) - 1, _so(job))


def _read_block(job: TypeJob, k: int, offsets: tuple[IdArray, ...], scratch: str) -> dict[str, npt.NDArray[Any]] | None:
    used = [s for s, o in enumerate(offsets) if o[k + 1] > o[k]]
    segs = [read_segment(scratch, s, int(offsets[s][k]), int(offsets[s][k + 1]), _so(job)) for s in used]
    if not segs:
        return None
    return {name: np.concatenate([g[name] for g in segs]) for name in ("ids", "rows", "row")}


def write_shuffled_block(job: TypeJob, k: int, offsets: tuple[IdArray, ...]) -> int:
    """Place block ``k``'s staged rows at their original IDs and write the block; return rows present."""
    data, output = job.data, job.output
    assert data is not None and output is not None
    lo, hi = job.bounds[k], job.bounds[k + 1]
    got = _read_block(job, k, offsets, _scratch(job, "slabs"))
    if got is None:
        got = {"ids": np.empty(0, np.int64), "rows": np.empty((0, *data.row_shape), data.dtype), "row": np.empty(0)}
    orig, new = got["ids"].astype(np.int64, copy=False), got["row"].astype(np.int64, copy=False)
    pos = orig - lo
    if (np.bincount(pos, minlength=hi - lo) > 1).any():  # sort only to name the places
        _check_unique(job, orig, new)
    values = np.full((hi - lo, *data.row_shape), output.fill_value(), dtype=data.dtype)
    present = np.zeros(hi - lo, np.bool_)
    values[pos] = got["rows"]
    present[pos] = True
    if not output.subset and not present.all():
        at = lo + int(np.argmax(~present))
        raise RemapError(
            f"{job.source.label}: no new ID of {job.space.label} has original ID {at}; are they these partitions'?"
        )
    output.write_block(k, lo, values, present if output.subset else None)
    return int(present.sum())


def pair_slab_tasks(job: TypeJob, grid: Blocks, rows_per_piece: int, token: str) -> tuple[TypeJob, list[Delayed]]:
    """Pairs only: the job with its pieces, and the tasks grouping them by slab (results: offsets)."""
    assert isinstance(job.data, PairInput)
    pieces = pair_pieces(job.data, rows_per_piece)
    job = replace(job, pieces=tuple(pieces))
    lean = job.lean()
    scratch = _scratch(job, "pairs")
    return job, [
        delayed(map_pairs, pure=False)(
            lean.data,
            piece,
            i,
            job.space,
            grid,
            scratch,
            _so(job),
            dask_key_name=f"dglc-remap-spairs-{job.tag}-{token}-{i}",
        )
        for i, piece in enumerate(pieces)
    ]


def slab_tasks(job: TypeJob, grid: Blocks, token: str) -> list[Delayed]:
    """One :func:`stage_slab` task per slab (results: offsets by block)."""
    lean = job.lean()
    return [
        delayed(stage_slab, pure=False)(lean, grid, s, dask_key_name=f"dglc-remap-slab-{job.tag}-{token}-{s}")
        for s in range(grid.num_blocks)
    ]


def shuffled_block_tasks(job: TypeJob, offsets: tuple[IdArray, ...], token: str) -> list[Delayed]:
    """One :func:`write_shuffled_block` task per block of original IDs."""
    lean = job.lean()
    return [
        delayed(write_shuffled_block, pure=False)(
            lean, k, offsets, dask_key_name=f"dglc-remap-sblock-{job.tag}-{token}-{k}"
        )
        for k in range(len(job.bounds) - 1)
    ]


# --- lookup ---------------------------------------------------------------------------------


def stage_inverse(job: TypeJob, grid: Blocks, s: int, scratch: str, so: StorageOptions) -> IdArray:
    """Stage slab ``s``'s ``(original ID, new ID)`` by block of original IDs; return the block offsets."""
    assert isinstance(job.source, OrigIdSource)
    p, lo, hi = slab_range(job.space, grid, s)
    orig = job.source.read(p, lo, hi)
    new = np.arange(grid.bounds[s], grid.bounds[s] + hi - lo, dtype=np.int64)
    block = (np.searchsorted(np.asarray(job.bounds), orig, side="right") - 1).astype(np.int64)
    return write_staged(scratch, s, {"ids": orig, "rows": new, "row": new}, block, len(job.bounds) - 1, so)


def inverse_block(job: TypeJob, k: int, offsets: tuple[IdArray, ...], scratch: str, so: StorageOptions) -> IdArray:
    """The type-wise new ID of every original ID of block ``k``."""
    lo, hi = job.bounds[k], job.bounds[k + 1]
    used = [s for s, o in enumerate(offsets) if o[k + 1] > o[k]]
    segs = [read_segment(scratch, s, int(offsets[s][k]), int(offsets[s][k + 1]), so) for s in used]
    orig = np.concatenate([g["ids"] for g in segs]).astype(np.int64) if segs else np.empty(0, np.int64)
    new = np.concatenate([g["row"] for g in segs]).astype(np.int64) if segs else np.empty(0, np.int64)
    if (np.bincount(orig - lo, minlength=hi - lo) > 1).any():  # sort only to name the places
        _check_unique(job, orig, new)
    out = np.full(hi - lo, -1, np.int64)
    out[orig - lo] = new
    if (out < 0).any():
        at = lo + int(np.argmax(out < 0))
        raise RemapError(
            f"{job.source.label}: no new ID of {job.space.label} has original ID {at}; are they these partitions'?"
        )
    return out
