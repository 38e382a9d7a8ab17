"""Forecast a dispatch run from metadata alone: tasks, memory, disk and time per step.

Reads ``metadata.json`` and the feature files' headers (what
:class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` reads when opened), never a
chunk's rows, and writes nothing. The counts of tasks and of staging bytes follow
the code exactly; the partition sizes assume a balanced assignment and the HALO
counts a graph without locality (each partition's sources drawn uniformly), which
is what a random assignment of most graphs gives and an upper bound for METIS-like
ones. Times and memory come from the linear model of :mod:`.calibration`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgl_chunked.dispatch.forecast.calibration import CALIBRATION, Calibration
from dgl_chunked.dispatch.forecast.writes import PartSizes, WritePlan, plan_writes
from dgl_chunked.dispatch.halo.bitmap import HaloBitmap
from dgl_chunked.dispatch.halo.ranges import range_width
from dgl_chunked.dispatch.ids import compact_owner_dtype, staged_id_dtype
from dgl_chunked.dispatch.kernels import keeps_edge_owners
from dgl_chunked.dispatch.new_id_map import map_bytes
from dgl_chunked.dispatch.options import DispatchOptions
from dgl_chunked.dispatch.staging import default_chunks
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.io.chunked.model import ChunkedGraphMetadata

__all__ = ["StepForecast", "DispatchForecast", "forecast_dispatch", "HEADER_BYTES"]

HEADER_BYTES = 4096
"""Per tensor of a DGL file, and per staged Zarr array: headers and metadata (an upper bound)."""
NODE_STAGE_BYTES_PER_ROW = 56
"""Assignment and numbering tasks: part, new IDs, sort order and copies per node of a block."""


@dataclass(frozen=True)
class StepForecast:
    """One compute of the run."""

    name: str
    tasks: int
    task_bytes: int
    """Working set of the largest task, on top of the worker's base memory."""
    seconds: float


@dataclass(frozen=True)
class DispatchForecast:
    """The sizes a dispatch run will reach, before any of it runs."""

    nodes: int
    edges: int
    num_parts: int
    workers: int
    stages: tuple[StepForecast, ...]
    staging_bytes: int
    output_bytes: int
    halo_nodes_per_part: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    writes: WritePlan | None = None
    """The write step's files and the pieces each is written in on ``workers`` threads."""


@dataclass(frozen=True)
class _Sizes:
    """Per-partition sizes under a balanced assignment."""

    nodes: int
    edges: int
    halo: int
    node_feat_bytes: int
    edge_feat_bytes: int


def _features(graph: ChunkedGraph, kind: str) -> list[tuple[list[int], int, int]]:
    """``(rows of each read task, bytes per row, itemsize)`` of every node or edge feature."""
    meta = graph.metadata
    data = meta.node_data if kind == "node" else meta.edge_data
    out = []
    for type_name, feats in data.items():
        for feat in feats:
            dtype, shape = graph.feature_info(kind, type_name, feat)  # type: ignore[arg-type]
            itemsize = np.dtype(dtype).itemsize
            refs = graph.feature_groups(kind, type_name, feat)  # type: ignore[arg-type]
            out.append(([r.rows for r in refs], int(np.prod(shape, dtype=np.int64)) * itemsize, itemsize))
    return out


def _dtypes(graph: ChunkedGraph, kind: str, extra_row_bytes: int) -> list[np.dtype[Any]]:
    """The dtype of every feature of a partition's node or edge feature file (int64 computed node data)."""
    meta = graph.metadata
    data = meta.node_data if kind == "node" else meta.edge_data
    out = [np.dtype(graph.feature_info(kind, t, f)[0]) for t, feats in data.items() for f in feats]  # type: ignore[arg-type]
    return out + [np.dtype(np.int64)] * bool(extra_row_bytes)


def _feature_bytes(graph: ChunkedGraph, kind: str) -> tuple[int, list[int]]:
    """(total bytes, bytes of each chunk) of node or edge features."""
    chunks = [rows * row for rows_list, row, _ in _features(graph, kind) for rows in rows_list]
    return sum(chunks), chunks


def _staged_bytes(rows: int, row_bytes: int, itemsize: int) -> int:
    """Disk of one staged owner-sorted array (Zarr pads its last chunk), plus its metadata."""
    shape = (rows, row_bytes // itemsize) if row_bytes > itemsize else (rows,)
    chunk = default_chunks(shape, np.dtype(f"u{itemsize}") if itemsize in (1, 2, 4, 8) else np.dtype("u1"))[0]
    return -(-rows // chunk) * chunk * row_bytes + HEADER_BYTES if rows else HEADER_BYTES


def _staging_bytes(graph: ChunkedGraph, opts: DispatchOptions, num_parts: int, extra_row_bytes: int) -> int:
    meta = graph.metadata
    nodes = sum(meta.num_nodes(t) for t in meta.node_types)
    total = 0
    id_size = staged_id_dtype(nodes, wide=opts.wide_ids).itemsize
    node_row = 4 + id_size + 8 * opts.save_orig_nids  # part int32, new_nid, sorted_type_nid int64
    for t in meta.node_types:  # in chunks of block_rows
        n = meta.num_nodes(t)
        chunk = max(1, min(opts.block_rows, n))
        total += (-(-n // chunk) * chunk) * node_row + (2 + opts.save_orig_nids) * HEADER_BYTES
    owner_size = compact_owner_dtype(num_parts).itemsize
    for spec in meta.edge_types:
        keep_owner = keeps_edge_owners(meta, spec.name, opts.save_orig_eids)
        for ref in graph.edge_groups(spec.name):
            total += 2 * _staged_bytes(ref.rows, id_size, id_size)
            total += _staged_bytes(ref.rows, owner_size, owner_size) if keep_owner else 0
    for kind in ("node", "edge"):
        for rows_list, row, itemsize in _features(graph, kind):
            total += sum(_staged_bytes(rows, row, itemsize) for rows in rows_list)
    if extra_row_bytes:  # computed node data (trainer_id): int64 blocks of block_rows
        for t in meta.node_types:
            n = meta.num_nodes(t)
            total += -(-n // opts.block_rows) * _staged_bytes(min(n, opts.block_rows), extra_row_bytes, 8)
    return total


def _output_bytes(sizes: _Sizes, graph: ChunkedGraph, opts: DispatchOptions, extra_row_bytes: int) -> int:
    """One partition's files."""
    local = sizes.nodes + sizes.halo
    e = sizes.edges
    ntensors = 6
    gb = opts.graphbolt
    if gb is not None:
        idx = 4 if e < 2**31 else 8
        graph_bytes = (local + 1) * idx + e * (4 if local < 2**31 else 8) + 8 * local
        if len(graph.metadata.edge_types) > 1 or len(graph.metadata.node_types) > 1:
            graph_bytes += e + 8 * (len(graph.metadata.node_types) + 1)
        graph_bytes += 8 * e * gb.store_eids + local * gb.store_inner_node + e * gb.store_inner_edge
        if "coo" in opts.graph_formats:  # _dgl2gb_eid and _gb_dst_id (int32 below 2^31 - 1 edges / nodes)
            meta = graph.metadata
            graph_bytes += e * (4 if sum(meta.num_edges_per_type or ()) < 2**31 - 1 else 8)
            graph_bytes += e * (4 if sum(meta.num_nodes_per_type) < 2**31 - 1 else 8)
    else:
        per_format = {"coo": 16 * e, "csr": 8 * (local + 1) + 16 * e, "csc": 8 * (local + 1) + 16 * e}
        graph_bytes = sum(per_format[f] for f in set(opts.graph_formats)) + 13 * e + 13 * local
        graph_bytes += 8 * local if opts.keep_halo_edges or opts.halo_hops > 1 else 0
    feats = sizes.node_feat_bytes + sizes.edge_feat_bytes + sizes.nodes * extra_row_bytes
    orig = 8 * sizes.nodes * opts.save_orig_nids + 8 * e * opts.save_orig_eids
    ntensors += len(graph.metadata.node_data) + len(graph.metadata.edge_data) + 4
    return int(graph_bytes + feats + orig + ntensors * HEADER_BYTES)


def _task_seconds(work: Iterable[float], workers: int) -> float:
    """Makespan of independent tasks on ``workers`` threads (largest first, greedy)."""
    loads = [0.0] * max(1, workers)
    for w in sorted(work, reverse=True):
        loads[loads.index(min(loads))] += w
    return max(loads)


def forecast_dispatch(
    graph: ChunkedGraph,
    num_parts: int,
    *,
    options: DispatchOptions | None = None,
    workers: int = 1,
    extra_node_row_bytes: int = 0,
    calibration: Calibration = CALIBRATION,
    out_dir: str = "",
) -> DispatchForecast:
    """Forecast :func:`~dgl_chunked.dispatch.dispatch` of ``graph`` into ``num_parts`` parts.

    Parameters
    ----------
    graph
        The opened chunked graph (only metadata and file headers are read).
    num_parts
        Number of partitions.
    options
        The dispatch options of the run (block rows, formats, budgets, ...).
    workers
        Worker threads of the cluster (processes x threads): the write step splits files
        into the threads its files would leave idle (:mod:`.writes`).
    extra_node_row_bytes
        Bytes per node of computed node data (``trainer_id``: 8 with trainers > 1).
    calibration
        The cost model's constants.
    out_dir
        The run's output directory (files of a URL's partitions are never split); default local.

    Returns
    -------
    DispatchForecast
    """
    opts = options or DispatchOptions()
    cal = calibration
    meta = graph.metadata
    n_total = sum(meta.num_nodes(t) for t in meta.node_types)
    edge_rows = [ref.rows for s in meta.edge_types for ref in graph.edge_groups(s.name)]
    e_total = sum(edge_rows)
    node_feat, node_feat_chunks = _feature_bytes(graph, "node")
    edge_feat, edge_feat_chunks = _feature_bytes(graph, "edge")
    per_part = _Sizes(
        nodes=-(-n_total // num_parts),
        edges=-(-e_total // num_parts),
        halo=_halo_estimate(n_total, e_total, num_parts),
        node_feat_bytes=-(-node_feat // num_parts),
        edge_feat_bytes=-(-edge_feat // num_parts),
    )
    node_work = [
        min(opts.block_rows, meta.num_nodes(t) - start) * cal.node_step_s_per_node
        for t in meta.node_types
        for start in range(0, meta.num_nodes(t), opts.block_rows)
    ]
    node_step = StepForecast(
        "stage assignment",
        len(node_work),
        NODE_STAGE_BYTES_PER_ROW * min(opts.block_rows, max(n_total, 1)),
        cal.step_overhead_s + _task_seconds(node_work, workers),
    )
    number_step = StepForecast("number nodes", node_step.tasks, node_step.task_bytes, node_step.seconds)
    cache = _lookup_bytes(meta, num_parts, opts)
    edge_work = [r * cal.edge_s_per_edge for r in edge_rows] + [
        b * cal.feature_s_per_byte for b in node_feat_chunks + edge_feat_chunks
    ]
    edge_step = StepForecast(
        "stage edges and features",
        len(edge_rows)
        + len(node_feat_chunks)
        + len(edge_feat_chunks)
        + (len(node_work) if extra_node_row_bytes else 0),
        int(
            max(
                cache + cal.edge_task_bytes_per_edge * max(edge_rows, default=0),
                3 * max(node_feat_chunks + edge_feat_chunks, default=0),
            )
        ),
        cal.edge_overhead_s + _task_seconds(edge_work, workers),
    )
    # every file of a partition is a task of its own (dispatch.finalize.partition_files), split into
    # several where the cluster's threads outnumber the files (dispatch.write_pieces): forecast.writes
    writes = plan_writes(
        PartSizes(
            per_part.nodes,
            per_part.edges,
            per_part.halo,
            per_part.node_feat_bytes + per_part.nodes * extra_node_row_bytes,
            per_part.edge_feat_bytes,
        ),
        num_parts,
        n_total,
        {"node_feat": _dtypes(graph, "node", extra_node_row_bytes), "edge_feat": _dtypes(graph, "edge", 0)},
        opts,
        out_dir,
        workers,
        cal,
    )
    write_step = StepForecast(
        "write partitions",
        writes.tasks,
        _writer_bytes(per_part, n_total, max(edge_rows, default=0), num_parts, opts, cal),
        cal.write_overhead_s + max(_task_seconds(writes.work, workers), writes.chain),
    )
    notes = ["partition sizes assume a balanced assignment; HALO counts a graph without locality"]
    if opts.keep_halo_edges or opts.halo_hops > 1:
        notes.append("HALO edges (keep_halo_edges / halo_hops > 1) are not counted in the output size")
    return DispatchForecast(
        nodes=n_total,
        edges=e_total,
        num_parts=num_parts,
        workers=workers,
        stages=(node_step, number_step, edge_step, write_step),
        staging_bytes=_staging_bytes(graph, opts, num_parts, extra_node_row_bytes),
        output_bytes=num_parts * _output_bytes(per_part, graph, opts, extra_node_row_bytes) + HEADER_BYTES,
        halo_nodes_per_part=per_part.halo,
        notes=tuple(notes),
        writes=writes,
    )


def _lookup_bytes(meta: ChunkedGraphMetadata, num_parts: int, opts: DispatchOptions) -> int:
    """What a worker keeps to find new node IDs: the owners' map of each type, or its ID array
    (int32) where that is smaller, within the lookup budget (see ``kernels.new_ids``)."""
    kept = 0
    for t in meta.node_types:
        n = meta.num_nodes(t)
        kept += min(map_bytes(n, opts.block_rows, num_parts), 4 * n)
    return min(kept, opts.lookup_budget())


def _halo_estimate(nodes: int, edges: int, num_parts: int) -> int:
    """Expected distinct outside sources of a partition's edges, sources drawn uniformly."""
    if nodes == 0 or num_parts == 1:
        return 0
    outside = nodes - nodes / num_parts
    return int(outside * -math.expm1(-(edges / num_parts) / nodes))


def _writer_bytes(
    sizes: _Sizes, n_total: int, max_chunk: int, num_parts: int, opts: DispatchOptions, cal: Calibration
) -> int:
    """A partition writer's working set: HALO tables, one staged segment, format extras."""
    halo = sizes.halo
    budget = opts.halo_budget()
    if opts.keep_halo_edges:  # multi-hop HALO: a bitmap of the ID space, the HALO IDs and edges in memory
        tables = HaloBitmap.nbytes(n_total) + 8 * halo + 32 * halo
    elif HaloBitmap.nbytes(n_total) <= budget:  # a bitmap of the ID space (halo/bitmap.py)
        tables = HaloBitmap.nbytes(n_total)
    else:  # range by range (halo/ranges.py)
        tables = HaloBitmap.nbytes(range_width(budget)) + 2 * 8 * max_chunk // num_parts
    segment = cal.writer_bytes_per_segment_edge * max_chunk / num_parts  # one chunk's rows of this partition
    extra = 0.0
    if opts.graphbolt is not None:
        extra = min(opts.graphbolt.sort_bytes, 24 * sizes.edges) + 8 * sizes.edges
    elif set(opts.graph_formats) - {"coo"}:
        extra = 40 * sizes.edges  # CSR/CSC are built from the whole edge list in memory
    return int(tables + segment + extra)
