"""One partition's ``graph.dgl`` written by several tasks, by row range of its edges.

The one-task writer (:func:`~dgl_chunked.dispatch.finalize.write_partition_file`)
streams a partition's whole graph: one pass over the staged sources for the HALO
set, a second for the local sources, destinations and edge arrays. With fewer
partitions than cores most cores then idle in the write step. Here the partition's
edges, in the order the file lists them (edge type by edge type, staged chunk by
chunk: :meth:`~dgl_chunked.dispatch.plan.PartitionPlan.edge_segments`), are cut
into row ranges of about equal size, at most one per :data:`GRAPH_TASK_EDGES` edges
(as many as :mod:`~dgl_chunked.dispatch.write_pieces` gives the file: only threads the
step's other files leave idle), and three kinds of task write the file:

1. per group of consecutive ranges (at most :data:`HALO_TASKS` groups), the HALO nodes
   among the sources (a :class:`~dgl_chunked.dispatch.halo.bitmap.HaloBitmap`, not frozen);
2. per partition (the *skeleton*): the union of those bitmaps, frozen; the file
   ``graph.dgl.parts-dglc`` with every record but the payloads of the five edge
   arrays (``src``, ``dst``, edge ``_ID``, ``_TYPE``, ``inner_edge``), which stay
   holes whose offsets it returns (:func:`~dgl_chunked.io.dgl.binary.write_graph_skeleton`);
   the node arrays (inner nodes, then the HALO nodes ascending) are written here;
3. per range, the range's rows of the five edge arrays, written at their offsets
   (``os.pwrite``): local sources relabelled through the frozen bitmap exactly as
   :class:`~dgl_chunked.dispatch.halo.ranges.MemoryHalo` does, destinations minus
   the partition's first new ID, edge IDs, type IDs and ones.

A last task per partition renames the file to ``graph.dgl`` once every range is
written and records it in the staging as the one-task writer does: a file that looks
complete is complete. The bytes are those of the one-task writer (the same records,
in the same order, with the same values). Every task may run again (a lost worker's
results are recomputed): the skeleton rewrites the same bytes around the holes
without truncating what the ranges wrote, a range writes the same bytes again, and
once the file is recorded as finished the tasks of the partition write nothing.

It applies to COO-only graph files of 1-hop partitions (``graph_formats=("coo",)``,
no HALO edges, no GraphBolt) written to a local or shared file system, whose HALO
bitmap fits the writer's budget and which have more than :data:`GRAPH_TASK_EDGES` edges
(:func:`graph_pieces`), and only where the step has idle threads for them; every other
graph file keeps the one-task writer. Memory per task: one block of
:data:`BLOCK_ROWS` rows of each column, plus the bitmap (0.19 byte per node ID).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.finalize import tmp_dir_name
from dgl_chunked.dispatch.halo.bitmap import HaloBitmap
from dgl_chunked.dispatch.ids import type_of
from dgl_chunked.dispatch.kernels import edge_array
from dgl_chunked.dispatch.plan import PartitionPlan, PartitionSummary
from dgl_chunked.dispatch.staging import MISSING, segment_bounds
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.binary import ArraySpans, HomogeneousGraph, Reserved, write_graph_skeleton
from dgl_chunked.storage import fs
from dgl_chunked.storage.zarr_rows import read_rows

__all__ = [
    "BLOCK_ROWS",
    "GRAPH_TASK_EDGES",
    "HALO_TASKS",
    "PARTIAL_NAME",
    "Skeleton",
    "edge_ranges",
    "finish_graph",
    "graph_bytes",
    "graph_pieces",
    "graph_splittable",
    "halo_ranges",
    "most_graph_pieces",
    "range_halo",
    "split_graph_tasks",
    "write_edge_rows",
    "write_skeleton",
]

GRAPH_TASK_EDGES = 1 << 20
"""Edges per row-range task of a graph file split as far as it goes (1M: 29 MB of the
file's edge arrays per task, read from 16 MB of staged endpoints); a file split into
fewer ranges has longer ones. A partition with at most this many edges is written by
one task."""

HALO_TASKS = 8
"""HALO tasks per split graph file at most (each covers consecutive row ranges): the skeleton
task holds their bitmaps at once, 0.125 byte per node ID each (at most 8 x 44 MB within
the default HALO budget of 64 MiB, 1.25 MB each at 10M nodes)."""

BLOCK_ROWS = 1 << 20
"""Rows read and written at a time inside a row-range task."""

PARTIAL_NAME = "graph.dgl.parts-dglc"
"""The graph file's name while its row ranges are being written."""

_EDGE_ARRAYS = (("src", "<i8"), ("dst", "<i8"), ("_ID", "<i8"), ("_TYPE", "<i4"), ("inner_edge", "u1"))


@dataclass(frozen=True)
class Skeleton:
    """What the row-range writers of one partition need from its skeleton task."""

    path: str
    """The partial file (local path)."""
    halo: HaloBitmap
    """The partition's HALO set, frozen."""
    offsets: dict[str, int]
    """Where each edge array's payload begins in the file."""
    num_nodes: int
    """Local nodes: inner then HALO."""
    done: bool = False
    """The file was finished (recorded in the staging) before this skeleton ran: write nothing."""


def _bounds(plan: PartitionPlan, part: int) -> tuple[int, int]:
    lo, hi = (int(x) for x in plan.node_layout.part_starts[part : part + 2])
    return lo, hi


def graph_pieces(plan: PartitionPlan, part: int) -> int:
    """The most row ranges partition ``part``'s graph file may be cut into: one per
    :data:`GRAPH_TASK_EDGES` edges, rounded up; 1 for a file that is never split (see the module)."""
    splittable = graph_splittable(
        plan.graph_formats,
        graphbolt=plan.graphbolt is not None,
        keep_halo_edges=plan.keep_halo_edges,
        out_dir=plan.out_dir,
        id_space=int(plan.node_layout.part_starts[-1]),
        halo_table_bytes=plan.halo_table_bytes,
    )
    return most_graph_pieces(int(plan.edge_layout.sizes()[part].sum()), splittable)


def graph_splittable(
    graph_formats: tuple[str, ...],
    *,
    graphbolt: bool,
    keep_halo_edges: bool,
    out_dir: str,
    id_space: int,
    halo_table_bytes: int,
) -> bool:
    """Whether a graph file of these options may be split at all: COO only, 1 hop, no GraphBolt,
    a local or shared output, a HALO bitmap of the ``id_space`` node IDs within the budget
    (the run's plan and the forecast, :mod:`~dgl_chunked.dispatch.forecast`, ask the same)."""
    if graphbolt or keep_halo_edges or tuple(graph_formats) != ("coo",):
        return False
    if fs.is_url(out_dir):  # holes need a seekable local or shared file
        return False
    return HaloBitmap.nbytes(id_space) <= halo_table_bytes


def most_graph_pieces(edges: int, splittable: bool) -> int:
    """Row ranges at most of a graph file of ``edges`` edges: one per :data:`GRAPH_TASK_EDGES`."""
    return max(1, -(-edges // GRAPH_TASK_EDGES)) if splittable else 1


def split_graph_tasks(pieces: int) -> int:
    """Tasks of a graph file written in ``pieces`` row ranges: its HALO tasks (at most
    :data:`HALO_TASKS`), the skeleton, a task per range and the rename; 1 when not split."""
    return 1 if pieces <= 1 else min(HALO_TASKS, pieces) + pieces + 2


def graph_bytes(plan: PartitionPlan, part: int) -> int:
    """About the bytes of partition ``part``'s graph file: 29 per edge (``src``, ``dst``, ``_ID``,
    ``_TYPE``, ``inner_edge``) and 13 per inner node (``_ID``, ``_TYPE``, ``inner_node``)."""
    return 29 * int(plan.edge_layout.sizes()[part].sum()) + 13 * int(plan.node_layout.sizes()[part].sum())


def edge_ranges(plan: PartitionPlan, part: int, pieces: int) -> list[tuple[int, int]]:
    """Partition ``part``'s edge rows cut into ``pieces`` ranges of about equal size (fewer where
    the partition has fewer edges)."""
    n = int(plan.edge_layout.sizes()[part].sum())
    k = max(1, min(pieces, n))
    cuts = [n * i // k for i in range(k + 1)]
    return list(zip(cuts, cuts[1:], strict=False))


def halo_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The row ranges of the HALO tasks: ``ranges`` joined into at most :data:`HALO_TASKS`."""
    n = min(HALO_TASKS, len(ranges))
    cuts = [len(ranges) * i // n for i in range(n + 1)]
    return [(ranges[a][0], ranges[b - 1][1]) for a, b in zip(cuts, cuts[1:], strict=False)]


def _column_blocks(
    plan: PartitionPlan, part: int, column: str, e0: int, e1: int
) -> Iterator[tuple[int, int, npt.NDArray[np.int64]]]:
    """``(etype id, first row, rows)`` of one staged edge column over the partition's rows ``[e0, e1)``,
    at most :data:`BLOCK_ROWS` rows at a time."""
    pos = 0
    for r, etype in enumerate(plan.etypes):
        for c, counts in enumerate(plan.edge_task_counts[r]):
            n = int(counts[part])
            a, b = max(e0, pos), min(e1, pos + n)
            if a < b:
                seg_lo, _ = segment_bounds(counts, part)
                array = plan.staging.open(edge_array(etype, c, column))
                for x in range(a, b, BLOCK_ROWS):
                    y = min(b, x + BLOCK_ROWS)
                    rows = read_rows(array, seg_lo + x - pos, seg_lo + y - pos).astype(np.int64, copy=False)
                    yield r, x, rows
            pos += n
            if pos >= e1:
                return


def range_halo(plan: PartitionPlan, part: int, e0: int, e1: int) -> HaloBitmap:
    """The sources of the partition's edge rows ``[e0, e1)`` that are not inner (not frozen)."""
    lo, hi = _bounds(plan, part)
    bitmap = HaloBitmap(0, int(plan.node_layout.part_starts[-1]))
    for _, _, src in _column_blocks(plan, part, "new_src", e0, e1):
        bitmap.add(src[(src < lo) | (src >= hi)])
    return bitmap


def _const_blocks(n: int, value: int, dtype: Any) -> Iterator[npt.NDArray[Any]]:
    for x in range(0, n, BLOCK_ROWS):
        yield np.full(min(BLOCK_ROWS, n - x), value, dtype=dtype)


def _key(part: int) -> str:
    return f"write/{part}/graph"  # the one-task writer's record of the same file


def write_skeleton(plan: PartitionPlan, part: int, stamp: str, *halos: HaloBitmap) -> Skeleton:
    """Join the ranges' HALO sets and write the partial file with holes for the edge arrays."""
    _, tmp = fs.filesystem(fs.join(plan.out_dir, tmp_dir_name(part)), plan.storage_options)
    path = os.path.join(tmp, PARTIAL_NAME)
    if plan.staging.done_value(_key(part), stamp) is not MISSING:
        return Skeleton(path, HaloBitmap(0, 0), {}, 0, done=True)
    lo, hi = _bounds(plan, part)
    halo = HaloBitmap(0, int(plan.node_layout.part_starts[-1]))
    for other in halos:
        halo.union(other)
    halo.freeze()
    n_inner = hi - lo
    n_nodes = n_inner + halo.count
    n_edges = int(plan.edge_layout.sizes()[part].sum())
    node_sizes = plan.node_layout.sizes()[part]

    def node_ids() -> Iterator[npt.NDArray[np.int64]]:
        for x in range(lo, hi, BLOCK_ROWS):
            yield np.arange(x, min(x + BLOCK_ROWS, hi), dtype=np.int64)
        yield from halo.ids()

    def node_types() -> Iterator[npt.NDArray[np.int32]]:
        for t, n in enumerate(node_sizes):
            yield from _const_blocks(int(n), t, np.int32)
        yield from (type_of(ids, plan.node_layout) for ids in halo.ids())

    def inner() -> Iterator[npt.NDArray[np.uint8]]:
        yield from _const_blocks(n_inner, 1, np.uint8)
        yield from _const_blocks(n_nodes - n_inner, 0, np.uint8)

    holes = {name: Reserved((n_edges,), dtype) for name, dtype in _EDGE_ARRAYS}
    graph = HomogeneousGraph(
        num_nodes=n_nodes,
        src=holes["src"],
        dst=holes["dst"],
        ndata={
            "_ID": ArraySpans((n_nodes,), np.int64, node_ids),
            "_TYPE": ArraySpans((n_nodes,), np.int32, node_types),
            "inner_node": ArraySpans((n_nodes,), np.uint8, inner),
        },
        edata={name: holes[name] for name in ("_ID", "_TYPE", "inner_edge")},
    )
    write_graph_skeleton(path, graph)
    offsets = {name: int(hole.offset) for name, hole in holes.items() if hole.offset is not None}
    return Skeleton(path, halo, offsets, n_nodes)


def write_edge_rows(plan: PartitionPlan, part: int, skeleton: Skeleton, e0: int, e1: int) -> int:
    """Write rows ``[e0, e1)`` of the five edge arrays into the skeleton's holes; return the rows."""
    if skeleton.done:
        return e1 - e0
    lo, hi = _bounds(plan, part)
    n_inner = hi - lo
    e_first = int(plan.edge_layout.ranges[part, 0, 0])
    at = skeleton.offsets
    fd = os.open(skeleton.path, os.O_WRONLY)
    try:

        def put(name: str, row: int, values: npt.NDArray[Any]) -> None:
            data = np.ascontiguousarray(values)
            os.pwrite(fd, data.view(np.uint8).data, at[name] + row * data.dtype.itemsize)

        for r, x, src in _column_blocks(plan, part, "new_src", e0, e1):
            local = src - lo
            outside = np.flatnonzero((src < lo) | (src >= hi))
            if outside.size:
                local[outside] = n_inner + skeleton.halo.rank(src[outside])
            put("src", x, local)
            put("_ID", x, np.arange(e_first + x, e_first + x + src.shape[0], dtype="<i8"))
            put("_TYPE", x, np.full(src.shape[0], r, dtype="<i4"))
            put("inner_edge", x, np.ones(src.shape[0], dtype=np.uint8))
        for _, x, dst in _column_blocks(plan, part, "new_dst", e0, e1):
            local = dst - lo
            if local.size and (int(local.min()) < 0 or int(local.max()) >= n_inner):
                raise DGLFormatError(
                    f"{skeleton.path}: dst: node ids must lie in [0, {n_inner}) (inner nodes), found values in "
                    f"[{int(local.min())}, {int(local.max())}] at edge rows from {x}; the staging is damaged: rerun"
                )
            put("dst", x, local)
    finally:
        os.close(fd)
    return e1 - e0


def finish_graph(plan: PartitionPlan, part: int, stamp: str, skeleton: Skeleton, *written: int) -> PartitionSummary:
    """Rename the partial file to ``graph.dgl`` once every row range is written (``written``: their
    rows) and record it in the staging; return the partition's summary."""
    done = plan.staging.done_value(_key(part), stamp)
    if done is not MISSING:
        return PartitionSummary.from_dict(done)
    n_edges = int(plan.edge_layout.sizes()[part].sum())
    if sum(written) != n_edges:  # pragma: no cover - the ranges cover the rows by construction
        raise RuntimeError(f"partition {part}: {sum(written)} of {n_edges} edge rows written")
    os.replace(skeleton.path, os.path.join(os.path.dirname(skeleton.path), "graph.dgl"))
    n_inner = int(plan.node_layout.sizes()[part].sum())
    summary = PartitionSummary(inner_nodes=n_inner, halo_nodes=skeleton.num_nodes - n_inner, edges=n_edges)
    plan.staging.mark_done(_key(part), summary.to_dict(), stamp)
    return summary
