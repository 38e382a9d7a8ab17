"""``dispatch``: a chunked graph plus a node assignment -> DGL partitions on disk."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.array as da
import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.finalize import FeatureStage, PartitionPlan, part_dir_name, write_partition
from dgl_chunked.dispatch.ids import IdLayout, layout_ids
from dgl_chunked.dispatch.stages import (
    feature_array,
    node_array,
    stage_edge_chunk,
    stage_edge_feature_chunk,
    stage_new_nid_block,
    stage_node_feature_chunk,
    stage_part_block,
)
from dgl_chunked.dispatch.staging import MISSING, Staging, resumable
from dgl_chunked.errors import EmptyPartitionWarning, OutputExistsError, UnsupportedFormatError
from dgl_chunked.io import fs
from dgl_chunked.io.assignment import open_assignment
from dgl_chunked.io.chunked import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.partition_config import CONFIG_NAME, PartitionConfig, write_partition_config

__all__ = ["DispatchOptions", "DispatchResult", "dispatch"]

logger = logging.getLogger(__name__)

GRAPH_FORMATS = ("coo", "csr", "csc")


@dataclass(frozen=True, kw_only=True)
class DispatchOptions:
    """Options of :func:`dispatch`, named after DGL's ``dispatch_data.py`` flags.

    Parameters
    ----------
    save_orig_nids, save_orig_eids
        Also write ``orig_nids.dgl`` / ``orig_eids.dgl`` per partition.
    graph_formats
        Sparse formats stored in ``graph.dgl``: any of ``"coo"``, ``"csr"``, ``"csc"``.
        DGL stores COO when unset, and so do we.
    staging_dir
        Where the Zarr staging lives (default ``OUT/_staging``); local path or URL.
    keep_staging
        Keep the staging after success (it is removed by default).
    overwrite
        Replace an existing output directory instead of refusing.
    block_rows
        Rows per block of the node-level staged arrays (bounds task memory).
    progress
        Show a progress bar per stage.
    """

    save_orig_nids: bool = False
    save_orig_eids: bool = False
    graph_formats: tuple[str, ...] = ("coo",)
    staging_dir: str | None = None
    keep_staging: bool = False
    overwrite: bool = False
    block_rows: int = 1 << 21
    progress: bool = False
    part_method: str | None = None


@dataclass(frozen=True)
class DispatchResult:
    """What :func:`dispatch` wrote."""

    config_path: str
    config: PartitionConfig
    partitions: list[dict[str, int]] = field(default_factory=list)


def dispatch(
    graph: ChunkedGraph | PathLike,
    assignment: PathLike | Mapping[str, da.Array],
    out_dir: PathLike,
    *,
    num_parts: int | None = None,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
) -> DispatchResult:
    """Write DGL distributed partitions of ``graph`` as assigned by ``assignment``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.ChunkedGraph` or the chunked graph directory.
    assignment
        An assignment directory in DGL's layout (``<ntype>.txt`` + ``partition_meta.json``)
        or a mapping ``ntype -> int32 dask array`` (then ``num_parts`` is required).
    out_dir
        Output directory (local or fsspec URL). Gets ``metadata.json`` and ``part<i>/``.
    num_parts
        Number of partitions; read from ``partition_meta.json`` for directories.
    options
        :class:`DispatchOptions`.
    storage_options
        fsspec options for ``out_dir`` and the staging.
    client
        A ``distributed.Client``; default: the current scheduler.

    Returns
    -------
    DispatchResult
        The config path, the config, and per-partition node/edge counts.

    Notes
    -----
    Three computes run: owner counts (planning), staging, and one writer task per
    partition. Output bytes depend only on the input and the assignment, never on
    the input chunking or the number of workers.
    """
    opts = options or DispatchOptions()
    _check_formats(opts.graph_formats)
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    parts, num_parts, method = _resolve_assignment(graph, assignment, num_parts, storage_options)
    out = str(out_dir)
    _prepare_out_dir(out, opts.overwrite, storage_options)
    staging = Staging(opts.staging_dir or fs.join(out, "_staging"), storage_options)
    fingerprint = _fingerprint(graph, assignment, parts, num_parts, opts, storage_options)
    if staging.start(fingerprint):
        logger.info("resuming from the staging in %s", staging.root)
    runner = _Runner(client=client, progress=opts.progress)
    meta = graph.metadata

    node_layout, node_starts, node_counts = _stage_nodes(graph, parts, num_parts, staging, opts, runner)
    _warn_empty(meta.node_data, meta.node_types, node_layout, "node")
    edge_counts, node_feats, edge_feats = _stage_edges_and_features(
        graph, staging, node_layout, num_parts, runner)
    edge_layout = layout_ids(edge_counts)
    etypes = tuple(e.name for e in meta.edge_types)
    _warn_empty(meta.edge_data, etypes, edge_layout, "edge")

    plan = PartitionPlan(
        staging=staging, out_dir=out, storage_options=storage_options,
        ntypes=tuple(meta.node_types), etypes=etypes,
        node_layout=node_layout, edge_layout=edge_layout,
        node_block_starts=node_starts, node_block_counts=node_counts,
        edge_chunk_counts=tuple(edge_counts),
        node_features=node_feats, edge_features=edge_feats,
        graph_formats=tuple(f for f in GRAPH_FORMATS if f in opts.graph_formats),
        save_orig_nids=opts.save_orig_nids, save_orig_eids=opts.save_orig_eids,
    )
    writes = [dask.delayed(_write_partition_once, pure=False)(plan, p, dask_key_name=("dglc-write-partition", p))
              for p in range(num_parts)]
    summaries = list(runner.compute(writes, "write partitions"))
    config = PartitionConfig(
        graph_name=meta.graph_name, num_parts=num_parts,
        node_map=node_layout.to_map(meta.node_types), edge_map=edge_layout.to_map(etypes),
        ntypes={t: i for i, t in enumerate(meta.node_types)},
        etypes={e: i for i, e in enumerate(etypes)},
        part_method=opts.part_method or method,
    )
    path = write_partition_config(out, config, storage_options=storage_options)
    if not opts.keep_staging:
        staging.wipe()
    return DispatchResult(config_path=path, config=config, partitions=summaries)


def _check_formats(formats: Sequence[str]) -> None:
    unknown = [f for f in formats if f not in GRAPH_FORMATS]
    if unknown or not formats:
        raise UnsupportedFormatError(
            f"graph formats {list(formats)!r}: expected a non-empty subset of {list(GRAPH_FORMATS)}"
        )


def _resolve_assignment(
    graph: ChunkedGraph, assignment: PathLike | Mapping[str, da.Array], num_parts: int | None,
    storage_options: StorageOptions,
) -> tuple[dict[str, da.Array], int, str]:
    if isinstance(assignment, Mapping):
        if num_parts is None:
            raise ValueError("num_parts is required when the assignment is given as arrays")
        return dict(assignment), num_parts, "custom"
    meta, parts = open_assignment(assignment, graph.metadata, num_parts=num_parts,
                                  storage_options=storage_options)
    return parts, meta.num_parts, _method_name(assignment, meta.algo_name, storage_options)


def _method_name(assign_dir: PathLike, algo_name: str, storage_options: StorageOptions) -> str:
    """Our own sidecar records the real method (DGL's meta only allows random/metis)."""
    path = fs.join(str(assign_dir), "dglc_partition.json")
    if fs.exists(path, storage_options):
        with fs.open_file(path, "rb", storage_options) as f:
            return str(json.load(f).get("method", algo_name))
    return algo_name


def _prepare_out_dir(out: str, overwrite: bool, storage_options: StorageOptions) -> None:
    """Refuse a complete output unless overwriting; keep a crashed run's parts for resume.

    An output is complete when its partition config exists (it is written last).
    Partition directories without a config belong to an interrupted run: the
    staging fingerprint decides later whether they are reused or rewritten.
    """
    filesystem, inner = fs.filesystem(out, storage_options)
    if not filesystem.exists(inner):
        filesystem.makedirs(inner, exist_ok=True)
        return
    config = fs.join(out, CONFIG_NAME)
    if not fs.exists(config, storage_options):
        return
    if not overwrite:
        raise OutputExistsError(
            f"output directory {out!r} already holds a partitioned graph ({CONFIG_NAME}); "
            "pass overwrite (--overwrite) to replace it or choose another --out-dir"
        )
    _, config_inner = fs.filesystem(config, storage_options)
    filesystem.rm(config_inner)  # first, so the output never looks complete meanwhile
    for path in filesystem.ls(inner, detail=False):
        if path.rstrip("/").rsplit("/", 1)[-1].startswith("part"):
            filesystem.rm(path, recursive=True)


def _write_partition_once(plan: PartitionPlan, part: int) -> dict[str, int]:
    """Write a partition unless a resumed run already finished it."""
    key = f"write/{part}"
    done = plan.staging.done_value(key)
    if done is not MISSING and fs.exists(fs.join(plan.out_dir, part_dir_name(part)), plan.storage_options):
        return dict(done)
    summary = write_partition(plan, part)
    plan.staging.mark_done(key, summary)
    return summary


def _fingerprint(graph: ChunkedGraph, assignment: Any, parts: Mapping[str, da.Array], num_parts: int,
                 opts: DispatchOptions, storage_options: StorageOptions) -> str:
    """Identify the input files, the assignment and the options: a resumed run must match."""
    from dask.base import tokenize

    files = [ref.path for etype in graph.metadata.edges for ref in graph.edge_chunks(etype)]
    for kind, data in (("node", graph.metadata.node_data), ("edge", graph.metadata.edge_data)):
        for type_name, feats in data.items():
            for feat in feats:
                refs = (graph.node_feature_chunks(type_name, feat) if kind == "node"
                        else graph.edge_feature_chunks(type_name, feat))
                files += [r.path for r in refs]
    if isinstance(assignment, Mapping):
        assign_token = tokenize(*(parts[t] for t in graph.metadata.node_types))
    else:
        names = [*(f"{t}.txt" for t in graph.metadata.node_types), "partition_meta.json"]
        assign_token = tokenize(*(_stat(fs.join(str(assignment), n), storage_options) for n in names))
    option_token = tokenize(opts.save_orig_nids, opts.save_orig_eids, opts.graph_formats,
                            opts.block_rows, opts.part_method)
    return str(tokenize(graph.metadata.fingerprint(), [_stat(f, storage_options) for f in files],
                        assign_token, num_parts, option_token))


def _stat(path: str, storage_options: StorageOptions) -> tuple[str, Any, Any]:
    """(path, size, mtime) of a file: a cheap change detector (one stat per file)."""
    filesystem, inner = fs.filesystem(path, storage_options)
    try:
        info = filesystem.info(inner)
    except FileNotFoundError:
        return (path, None, None)
    mtime = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    return (path, info.get("size"), str(mtime))


class _Runner:
    """Runs one stage's tasks on the given client or the current scheduler."""

    def __init__(self, *, client: Any, progress: bool) -> None:
        self.client = client
        self.progress = progress

    def compute(self, tasks: Sequence[Any], stage: str) -> tuple[Any, ...]:
        logger.info("dispatch stage: %s (%d tasks)", stage, len(tasks))
        if not tasks:
            return ()
        client = self.client or _current_client()
        if client is not None:
            futures = client.compute(list(tasks))
            if self.progress:
                from distributed import progress

                print(f"[dgl-chunked] {stage}")
                progress(futures)
                print()
            return tuple(client.gather(futures))
        from dask.diagnostics import ProgressBar

        with ProgressBar() if self.progress else nullcontext():
            return tuple(dask.compute(*tasks))


def _current_client() -> Any:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _stage_nodes(
    graph: ChunkedGraph, parts: Mapping[str, da.Array], num_parts: int, staging: Staging,
    opts: DispatchOptions, runner: _Runner,
) -> tuple[IdLayout, tuple[tuple[int, ...], ...], tuple[npt.NDArray[np.int64], ...]]:
    """Store the assignment, lay out new node IDs, number every node."""
    meta = graph.metadata
    count_tasks: list[Any] = []
    starts_per_type = []
    for ntype in meta.node_types:
        n = meta.num_nodes(ntype)
        arr = parts[ntype].astype(np.int32).rechunk(opts.block_rows) if n else None
        for what, dtype in (("part", np.int32), ("new_nid", np.int64), ("sorted_type_nid", np.int64)):
            staging.ensure(node_array(ntype, what), (n,), dtype, chunks=(max(1, min(opts.block_rows, n)),))
        starts = tuple(range(0, n, opts.block_rows))
        starts_per_type.append(starts)
        if arr is None:
            continue
        for b, block in enumerate(arr.to_delayed().ravel()):
            count_tasks.append(dask.delayed(resumable, pure=False)(
                staging, f"assign/{ntype}/{b}", stage_part_block,
                staging, ntype, starts[b], block, num_parts, f"assignment of {ntype!r}",
                dask_key_name=("dglc-stage-assignment", len(count_tasks))))
    flat = iter(runner.compute(count_tasks, "stage assignment"))
    counts = tuple(np.array([next(flat) for _ in s], dtype=np.int64).reshape(len(s), num_parts)
                   for s in starts_per_type)
    layout = layout_ids(counts)
    number_tasks = [
        dask.delayed(resumable, pure=False)(
            staging, f"number/{ntype}/{b}", stage_new_nid_block,
            staging, ntype, start, min(start + opts.block_rows, meta.num_nodes(ntype)),
            layout.block_bases[t][b], dask_key_name=("dglc-number-nodes", t, b))
        for t, ntype in enumerate(meta.node_types)
        for b, start in enumerate(starts_per_type[t])
    ]
    runner.compute(number_tasks, "number nodes")
    return layout, tuple(starts_per_type), counts


def _stage_edges_and_features(
    graph: ChunkedGraph, staging: Staging, node_layout: IdLayout, num_parts: int, runner: _Runner,
) -> tuple[list[npt.NDArray[np.int64]], tuple[FeatureStage, ...], tuple[FeatureStage, ...]]:
    meta = graph.metadata
    part_starts = node_layout.part_starts
    edge_tasks: dict[str, list[Any]] = {}
    for spec in meta.edge_types:
        edge_tasks[spec.name] = [
            dask.delayed(resumable, pure=False)(
                staging, f"edges/{spec.name}/{c}", stage_edge_chunk,
                staging, spec.name, c, ref, spec.src_type, spec.dst_type,
                meta.num_nodes(spec.src_type), meta.num_nodes(spec.dst_type), part_starts,
                dask_key_name=("dglc-stage-edges", meta.etype_id(spec.name), c))
            for c, ref in enumerate(graph.edge_chunks(spec.name))
        ]
    node_feat_tasks = _node_feature_tasks(graph, staging, num_parts)
    edge_feat_tasks = _edge_feature_tasks(graph, staging, num_parts, edge_tasks)
    all_edge = [t for tasks in edge_tasks.values() for t in tasks]
    all_feat = [t for _, tasks in node_feat_tasks + edge_feat_tasks for t in tasks]
    results = iter(runner.compute(all_edge + all_feat, "stage edges and features"))
    edge_counts = [np.array([next(results) for _ in edge_tasks[s.name]], dtype=np.int64)
                   .reshape(len(edge_tasks[s.name]), num_parts) for s in meta.edge_types]
    node_feats = _feature_stages(graph, "node", node_feat_tasks, results)
    edge_feats = _feature_stages(graph, "edge", edge_feat_tasks, results)
    return edge_counts, node_feats, edge_feats


FeatureTasks = list[tuple[tuple[str, str], list[Any]]]


def _node_feature_tasks(graph: ChunkedGraph, staging: Staging, num_parts: int) -> FeatureTasks:
    out: FeatureTasks = []
    for ntype, feats in graph.metadata.node_data.items():
        for feat in feats:
            refs = graph.node_feature_chunks(ntype, feat)
            out.append(((ntype, feat), [
                dask.delayed(resumable, pure=False)(
                    staging, f"node_feat/{ntype}/{feat}/{k}", stage_node_feature_chunk,
                    staging, ntype, feat, k, ref, num_parts,
                    dask_key_name=("dglc-stage-node-features", ntype, feat, k))
                for k, ref in enumerate(refs)]))
    return out


def _edge_feature_tasks(graph: ChunkedGraph, staging: Staging, num_parts: int,
                        edge_tasks: Mapping[str, list[Any]]) -> FeatureTasks:
    out: FeatureTasks = []
    for etype, feats in graph.metadata.edge_data.items():
        refs_e = graph.edge_chunks(etype)
        bounds = [r.start for r in refs_e] + [refs_e[-1].stop if refs_e else 0]
        for feat in feats:
            refs = graph.edge_feature_chunks(etype, feat)
            out.append(((etype, feat), [
                dask.delayed(resumable, pure=False)(
                    staging, f"edge_feat/{etype}/{feat}/{k}", stage_edge_feature_chunk,
                    staging, etype, feat, k, ref, num_parts, bounds, *edge_tasks[etype],
                    dask_key_name=("dglc-stage-edge-features", etype, feat, k))
                for k, ref in enumerate(refs)]))
    return out


def _feature_stages(graph: ChunkedGraph, kind: str, tasks: FeatureTasks,
                    results: Any) -> tuple[FeatureStage, ...]:
    meta = graph.metadata
    stages = []
    for (type_name, feat), feat_tasks in tasks:
        counts = tuple(tuple(int(x) for x in next(results)) for _ in feat_tasks)
        dtype, row_shape = graph.feature_info(kind, type_name, feat)  # type: ignore[arg-type]
        type_index = meta.ntype_id(type_name) if kind == "node" else meta.etype_id(type_name)
        stages.append(FeatureStage(
            key=f"{type_name}/{feat}",
            arrays=tuple(feature_array(kind, type_name, feat, k) for k in range(len(feat_tasks))),
            counts=counts, dtype=np.dtype(dtype).str, row_shape=tuple(row_shape),
            type_index=type_index))
    return tuple(stages)


def _warn_empty(data: Mapping[str, Mapping[str, Any]], names: Sequence[str], layout: IdLayout,
                kind: str) -> None:
    sizes = layout.sizes()
    for t, name in enumerate(names):
        if not data.get(name):
            continue
        empty = [p for p in range(layout.num_parts) if sizes[p, t] == 0]
        if empty:
            warnings.warn(
                f"partition(s) {empty} own no {kind} of type {name!r}, which has features "
                f"{sorted(data[name])}; DistGraphServer cannot host zero-row feature tensors "
                "(spec section 3.5): use fewer partitions or an assignment that gives every "
                "partition at least one such " + kind,
                EmptyPartitionWarning,
                stacklevel=3,
            )
