"""The Dask tasks of ``remap``, one type at a time: count, (pairs: stage), write blocks.

A :class:`TypeJob` is everything one type's tasks need, small and picklable (paths,
counts, no data). Its tasks, every key carrying the run token:

1. **count** (:func:`count_tasks`): owner counts per block of original IDs, one task
   per partition (``orig_*.dgl``) or per block (assignment), combined into
   :class:`~dgl_chunked.remap.mapping.Blocks`;
2. **stage pairs** (:func:`pair_tasks`, pairs only): one task per piece of the ID
   and row files, grouping them by block (:mod:`~dgl_chunked.remap.pairs`);
3. **blocks** (:func:`block_tasks`): one task per block: the partitions' positions
   in the block, then the rows (dense: one read per partition run; pairs: the
   block's staged segments), written at the block's place (:mod:`~dgl_chunked.remap.result_files`).

Memory per task: one block of rows and IDs (plus, for edges recomputed from the
assignment, the worker's cached copy of the destination type's owners).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from dask.delayed import Delayed, delayed

from dgl_chunked._typing import IdArray
from dgl_chunked.dispatch.ids import count_owners
from dgl_chunked.remap.kernels import check_cover, pair_positions, place_pairs, scatter_runs
from dgl_chunked.remap.mapping import Blocks, EdgeAssignmentSource, NodeAssignmentSource, OrigIdSource, count_orig_ids
from dgl_chunked.remap.pairs import PairPiece, map_pairs, read_segment
from dgl_chunked.remap.result_files import TypeOutput
from dgl_chunked.remap.result_sources import PairInput, RowInput
from dgl_chunked.remap.spaces import TypeSpace

__all__ = ["Source", "TypeJob", "block_positions", "block_tasks", "collect_counts", "count_tasks", "pair_tasks"]

Source = OrigIdSource | NodeAssignmentSource | EdgeAssignmentSource


@dataclass(frozen=True)
class TypeJob:
    """One type's remap: its ID space, blocks, mapping source, results and output.

    ``tag`` is a short key-safe label of the type (``n0``, ``e1``) for task keys.
    ``owner_blocks`` (assignment of a node type only) are the Dask blocks of the
    assignment, chunked like ``bounds``; ``blocks`` is set after counting,
    ``pieces`` and ``offsets`` after staging pairs.
    """

    tag: str
    space: TypeSpace
    bounds: tuple[int, ...]
    source: Source
    data: RowInput | PairInput | None
    output: TypeOutput | None
    scratch: str = ""
    blocks: Blocks | None = None
    pieces: tuple[PairPiece, ...] = ()
    offsets: tuple[IdArray, ...] = ()
    owner_blocks: Any = None

    def lean(self) -> TypeJob:
        """This job without the Dask collections (what a task receives)."""
        return replace(self, owner_blocks=None)


# --- 1. counts -----------------------------------------------------------------------


def _edge_counts(source: EdgeAssignmentSource, lo: int, hi: int) -> IdArray:
    return count_owners(source.block_owners(lo, hi), source.num_parts)


def count_tasks(job: TypeJob, token: str) -> list[Delayed]:
    """Tasks whose results :func:`collect_counts` turns into the job's :class:`Blocks`."""
    src, sp, bounds = job.source, job.space, job.bounds
    name = f"dglc-remap-count-{job.tag}-{token}"
    if isinstance(src, OrigIdSource):
        return [
            delayed(count_orig_ids, pure=False)(
                path, payload, bounds, sp.total, src.storage_options, sp.label, dask_key_name=f"{name}-p{p}"
            )
            for p, (path, payload) in enumerate(zip(src.paths, src.payloads, strict=True))
        ]
    if isinstance(src, NodeAssignmentSource):
        return [
            delayed(count_owners, pure=False)(block, sp.num_parts, dask_key_name=f"{name}-b{k}")
            for k, block in enumerate(job.owner_blocks)
        ]
    return [
        delayed(_edge_counts, pure=False)(src, bounds[k], bounds[k + 1], dask_key_name=f"{name}-b{k}")
        for k in range(len(bounds) - 1)
    ]


def collect_counts(job: TypeJob, results: list[Any]) -> TypeJob:
    """The job with its :class:`Blocks`, checked against the partition config.

    For ``orig_*.dgl`` files the results are ``(counts, ascending)`` per partition;
    the source records whether every partition's IDs ascend.
    """
    source = job.source
    if isinstance(source, OrigIdSource):
        parts = [c for c, _ in results]
        counts = np.stack(parts, axis=1) if parts else np.zeros((len(job.bounds) - 1, 0), np.int64)
        source = replace(source, ascending=all(a for _, a in results))
    else:
        counts = np.stack(results, axis=0)
    blocks = Blocks(job.bounds, counts.astype(np.int64))
    blocks.check(job.space, job.source.label)
    return replace(job, blocks=blocks, source=source)


# --- 2. pairs ------------------------------------------------------------------------


def pair_tasks(job: TypeJob, pieces: list[PairPiece], token: str) -> list[Delayed]:
    """One staging task per piece of the pair files."""
    assert isinstance(job.data, PairInput) and job.blocks is not None
    assert job.output is not None
    so = job.output.storage_options
    lean = job.lean()
    return [
        delayed(map_pairs, pure=False)(
            lean.data,
            piece,
            i,
            job.space,
            job.blocks,
            job.scratch,
            so,
            dask_key_name=f"dglc-remap-pairs-{job.tag}-{token}-{i}",
        )
        for i, piece in enumerate(pieces)
    ]


# --- 3. blocks -----------------------------------------------------------------------


def block_positions(job: TypeJob, k: int, owner: Any) -> list[IdArray]:
    """Per partition, ascending positions in block ``k`` of the items it owns."""
    assert job.blocks is not None
    lo, hi = job.bounds[k], job.bounds[k + 1]
    src = job.source
    if isinstance(src, OrigIdSource):
        positions = src.positions(lo, job.blocks.starts[k], job.blocks.counts[k])
        check_cover(positions, hi - lo, lo, src.label)
        return positions
    if isinstance(src, NodeAssignmentSource):
        return src.positions(owner)
    return src.positions(lo, hi)


def _pair_block(job: TypeJob, k: int, positions: list[IdArray]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
    data = job.data
    assert isinstance(data, PairInput) and job.blocks is not None and job.output is not None
    lo, hi = job.bounds[k], job.bounds[k + 1]
    so = job.output.storage_options
    used = [i for i, o in enumerate(job.offsets) if o[k + 1] > o[k]]
    segs = [read_segment(job.scratch, i, int(job.offsets[i][k]), int(job.offsets[i][k + 1]), so) for i in used]
    origin = np.repeat(np.asarray(used, dtype=np.int64), [s["ids"].shape[0] for s in segs])
    ids = np.concatenate([s["ids"] for s in segs]) if segs else np.empty(0, np.int64)
    rows = np.concatenate([s["rows"] for s in segs]) if segs else np.empty((0, *data.row_shape), data.dtype)
    row_in_file = np.concatenate([s["row"] for s in segs]) if segs else np.empty(0, np.int64)
    if data.original:
        pos = ids - lo
    else:
        part = job.space.owner(ids)
        rank = ids - job.space.offsets[part] - job.blocks.starts[k][part]
        pos = pair_positions(positions, part, rank)

    def describe(i: int) -> str:
        return f"{data.ids[job.pieces[int(origin[i])].file].describe()} row {int(row_in_file[i])}"

    return place_pairs(pos, rows, hi - lo, job.output.fill_value(), describe, lo, job.space.label)


def write_block(job: TypeJob, k: int, owner: Any) -> int:
    """Build block ``k`` of the output and write it; return how many rows hold a result."""
    assert job.blocks is not None and job.output is not None and job.data is not None
    lo, hi = job.bounds[k], job.bounds[k + 1]
    present: npt.NDArray[np.bool_] | None = None
    if isinstance(job.data, PairInput) and job.data.original:  # pairs by original ID place without the mapping
        values, present = _pair_block(job, k, [])
    elif isinstance(job.data, RowInput):
        runs = (job.space.offsets[:-1] + job.blocks.starts[k]).tolist()
        positions = block_positions(job, k, owner)
        values = scatter_runs(positions, runs, job.data.read, hi - lo, job.data.row_shape, job.data.dtype)
    else:
        values, present = _pair_block(job, k, block_positions(job, k, owner))
    job.output.write_block(k, lo, values, present if job.output.subset else None)
    return hi - lo if present is None else int(present.sum())


def block_tasks(job: TypeJob, token: str) -> list[Delayed]:
    """One task per block of original IDs."""
    owners = list(job.owner_blocks) if job.owner_blocks is not None else [None] * (len(job.bounds) - 1)
    lean = job.lean()
    return [
        delayed(write_block, pure=False)(lean, k, owner, dask_key_name=f"dglc-remap-block-{job.tag}-{token}-{k}")
        for k, owner in enumerate(owners)
    ]
