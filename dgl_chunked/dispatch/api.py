"""``dispatch``: a chunked graph plus a node assignment -> DGL partitions on disk."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.array as da

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import StepRunner
from dgl_chunked.dispatch.carry import carry_id_mappings
from dgl_chunked.dispatch.finalize import (
    part_dir_name,
    partition_files,
    prepare_partition,
    publish_partition,
    tmp_dir_name,
    write_partition_file,
)
from dgl_chunked.dispatch.fingerprint import FileStamps, file_stamps, run_fingerprint
from dgl_chunked.dispatch.forecast.estimates import forecast_dispatch
from dgl_chunked.dispatch.forecast.space import check_space, disk_needs
from dgl_chunked.dispatch.ids import IdLayout, layout_ids
from dgl_chunked.dispatch.options import GRAPH_FORMATS, DispatchOptions, check_formats, graphbolt_for_run
from dgl_chunked.dispatch.out_dir import OUTPUT_ENTRIES, OUTPUT_KIND, prepare_out_dir, staging_location
from dgl_chunked.dispatch.plan import PartitionPlan, PartitionSummary
from dgl_chunked.dispatch.staging import MISSING, Staging
from dgl_chunked.dispatch.tasks import stage_edges_and_features, stage_nodes, staged_assignment
from dgl_chunked.dispatch.write_pieces import cluster_threads
from dgl_chunked.dispatch.write_tasks import write_step_tasks
from dgl_chunked.errors import DglChunkedError, EmptyPartitionWarning, OptionError
from dgl_chunked.io.assignment import open_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.chunked.node_id_features import NodeIdFeature, parse_node_id_features
from dgl_chunked.io.dgl.partition_config import PartitionConfig, write_partition_config
from dgl_chunked.io.graphbolt.csc import DGL_DEBUG_ENV, GraphBoltOptions, dgl_debug_mode
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import acquire_lease, check_no_overlap
from dgl_chunked.storage.trash import wait_for_removals
from dgl_chunked.storage.zarr_lookup import clear_lookup_cache

__all__ = [
    "DispatchOptions",
    "DispatchResult",
    "PartitionSummary",
    "dispatch",
    "staging_location",
    "wait_for_staging_removal",
    "OUTPUT_KIND",
    "OUTPUT_ENTRIES",
]

logger = logging.getLogger(__name__)


def wait_for_staging_removal() -> None:
    """Wait until the stagings this process's runs remove in the background are gone
    (:attr:`DispatchOptions.background_removal`)."""
    wait_for_removals()


@dataclass(frozen=True)
class DispatchResult:
    """What :func:`dispatch` wrote."""

    config_path: str
    config: PartitionConfig
    partitions: list[PartitionSummary] = field(default_factory=list)
    step_seconds: dict[str, float] = field(default_factory=dict)
    step_tasks: dict[str, int] = field(default_factory=dict)
    """Tasks each step ran (what :func:`~dgl_chunked.forecast_run` forecasts)."""


def dispatch(
    graph: ChunkedGraph | PathLike,
    assignment: PathLike | Mapping[str, da.Array],
    out_dir: PathLike,
    *,
    num_parts: int | None = None,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
    extra_node_data: Mapping[str, Mapping[str, da.Array]] | None = None,
    on_assignment: Callable[[Mapping[str, da.Array]], Any] | None = None,
    prechecked: bool = False,
) -> DispatchResult:
    """Write DGL distributed partitions of ``graph`` as assigned by ``assignment``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` or the chunked graph directory.
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
    extra_node_data
        More node data to write into ``node_feat.dgl``, computed rather than read:
        ``{ntype: {name: dask array with one row per node}}`` (e.g. ``trainer_id``).
    on_assignment
        Called once the assignment is staged, with it as lazy int32 arrays read from the
        staging (``run --partitions-dir`` writes DGL's assignment directory from them, so
        a partitioner's result is computed once and never read back from text).
    prechecked
        The caller checked, before writing anything, that no location this call writes
        (output, staging) overlaps the input, and (with ``options.check_space``) that
        the disks hold the run: skip those checks here. :func:`~dgl_chunked.run` checks
        them once for its whole run (output, staging, scratch and assignment locations).

    Returns
    -------
    DispatchResult
        The config path, the config, and per-partition node/edge counts.

    Notes
    -----
    Three computes run: owner counts (planning), staging, and one writer task per
    file of a partition. Output bytes depend only on the input and the assignment, never on
    the input chunking or the number of workers.
    """
    return _dispatch(
        graph,
        assignment,
        out_dir,
        num_parts,
        options,
        storage_options,
        client,
        extra_node_data,
        not prechecked,
        on_assignment,
    )


def _dispatch(
    graph: ChunkedGraph | PathLike,
    assignment: PathLike | Mapping[str, da.Array],
    out_dir: PathLike,
    num_parts: int | None,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
    client: Any,
    extra_node_data: Mapping[str, Mapping[str, da.Array]] | None,
    check: bool,
    on_assignment: Callable[[Mapping[str, da.Array]], Any] | None = None,
) -> DispatchResult:
    opts = options or DispatchOptions()
    check_formats(opts.graph_formats)
    if opts.halo_hops < 1:
        raise OptionError(f"halo_hops must be >= 1, found {opts.halo_hops}")
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    parts, num_parts, method = _resolve_assignment(graph, assignment, num_parts, storage_options)
    id_features = parse_node_id_features(graph, opts.node_id_features)
    out = str(out_dir)
    staging_root = staging_location(out, opts.staging_dir, storage_options)
    if check:  # before anything is written
        inputs = graph.input_locations()
        if not isinstance(assignment, Mapping):
            inputs["assignment directory"] = str(assignment)
        check_no_overlap({"--out-dir": out, "staging directory": staging_root}, inputs, storage_options=storage_options)
        if opts.check_space:
            _check_space(graph, num_parts, opts, out, staging_root, extra_node_data, storage_options)
    graphbolt = graphbolt_for_run(opts)  # the writers' options: the user's, completed for this run
    if graphbolt is not None and dgl_debug_mode():
        logger.warning("%s is set: every field of the partition graphs goes into the GraphBolt graphs", DGL_DEBUG_ENV)
    with acquire_lease(out, OUTPUT_KIND, storage_options=storage_options) as lease:
        prepare_out_dir(out, opts.overwrite, storage_options)
        fingerprint = run_fingerprint(graph, assignment, parts, num_parts, opts, storage_options, extra_node_data or {})
        stamps = file_stamps(graph, storage_options)
        staging = Staging(
            staging_root,
            storage_options,
            token=run_token(fingerprint, out, staging_root),  # names every task of this run
            lookup_cache_bytes=opts.lookup_budget(),
            wide_ids=opts.wide_ids,
        )
        staging.remove_leftovers()  # trash directories of stagings whose removal a killed run left
        if staging.start(fingerprint):
            logger.info("resuming from the staging in %s", staging.root)
        runner = StepRunner(client=client, progress=opts.progress, command="dispatch", log=logger)
        plan = _stage(
            graph,
            parts,
            num_parts,
            staging,
            opts,
            runner,
            extra_node_data or {},
            out,
            stamps,
            id_features,
            graphbolt,
            on_assignment,
        )
        every_file = stamps.everything()
        kinds = partition_files(plan)
        finished = {(p, k) for p in range(num_parts) for k in kinds if _done(plan, p, k, every_file) is not MISSING}
        for p in range(num_parts):  # a partition none of whose files a resumed run finished starts empty
            prepare_partition(plan, p, fresh=not any((p, k) in finished for k in kinds))
        writes, graph_at, ends = write_step_tasks(  # a large file by several tasks where threads would idle
            plan,
            kinds,
            every_file,
            staging.token,
            _write_file_once,
            lambda p, k: (p, k) in finished,
            cluster_threads(client),
        )
        written = runner.compute(writes, "write partitions", keep=ends)  # the HALO bitmaps stay in the workers
        summaries = [written[i] for i in graph_at]  # each partition's graph file
        lease.check()  # never publish over a run that took this output over
        for p in range(num_parts):  # only now: a failed run leaves no part<i>/ that looks complete
            publish_partition(out, p, storage_options)
        carry_id_mappings(graph.metadata.base_dir, out, runner, staging.token, storage_options)
        meta = graph.metadata
        config = PartitionConfig(
            graph_name=meta.graph_name,
            num_parts=num_parts,
            node_map=plan.node_layout.to_map(meta.node_types),
            edge_map=plan.edge_layout.to_map(plan.etypes),
            ntypes={t: i for i, t in enumerate(meta.node_types)},
            etypes={e: i for i, e in enumerate(plan.etypes)},
            part_method=opts.part_method or method,
            halo_hops=opts.halo_hops,
            graphbolt=graphbolt is not None,
        )
        path = write_partition_config(out, config, storage_options=storage_options)
        if not opts.keep_staging:
            staging.wipe(background=opts.background_removal)
    return DispatchResult(
        config_path=path,
        config=config,
        partitions=summaries,
        step_seconds=dict(runner.seconds),
        step_tasks=dict(runner.tasks),
    )


def _stage(
    graph: ChunkedGraph,
    parts: Mapping[str, da.Array],
    num_parts: int,
    staging: Staging,
    opts: DispatchOptions,
    runner: StepRunner,
    extra_node_data: Mapping[str, Mapping[str, da.Array]],
    out: str,
    stamps: FileStamps,
    id_features: tuple[NodeIdFeature, ...],
    graphbolt: GraphBoltOptions | None,
    on_assignment: Callable[[Mapping[str, da.Array]], Any] | None = None,
) -> PartitionPlan:
    """Stage nodes, edges and features; return the plan of the partition writers."""
    storage_options = staging.storage_options
    meta = graph.metadata
    node_layout, node_starts, node_counts = stage_nodes(
        graph, parts, num_parts, staging, opts.block_rows, runner, keep_sorted_ids=opts.save_orig_nids
    )
    if on_assignment is not None:
        on_assignment(staged_assignment(graph, staging, opts.block_rows))
    _warn_empty(meta.node_data, meta.node_types, node_layout, "node")
    try:
        edge_counts, node_feats, edge_feats = stage_edges_and_features(
            graph,
            staging,
            node_layout,
            num_parts,
            runner,
            stamps=stamps,
            extra_node_data=extra_node_data,
            block_rows=opts.block_rows,
            save_orig_eids=opts.save_orig_eids,
            node_id_features=id_features,
        )
    finally:  # only the edge staging uses the node-ID cache: free the workers' memory
        runner.run_everywhere(clear_lookup_cache)
    edge_layout = layout_ids(edge_counts)
    etypes = tuple(e.name for e in meta.edge_types)
    _warn_empty(meta.edge_data, etypes, edge_layout, "edge")
    return PartitionPlan(
        staging=staging,
        out_dir=out,
        storage_options=storage_options,
        ntypes=tuple(meta.node_types),
        etypes=etypes,
        node_layout=node_layout,
        edge_layout=edge_layout,
        node_block_starts=node_starts,
        node_block_counts=node_counts,
        edge_task_counts=tuple(edge_counts),
        node_features=node_feats,
        edge_features=edge_feats,
        graph_formats=tuple(f for f in GRAPH_FORMATS if f in opts.graph_formats),
        save_orig_nids=opts.save_orig_nids,
        save_orig_eids=opts.save_orig_eids,
        halo_hops=opts.halo_hops,
        keep_halo_edges=opts.keep_halo_edges or opts.halo_hops > 1,
        graphbolt=graphbolt,
        halo_table_bytes=opts.halo_budget(),
    )


def _check_space(
    graph: ChunkedGraph,
    num_parts: int,
    opts: DispatchOptions,
    out: str,
    staging_root: str,
    extra_node_data: Mapping[str, Mapping[str, da.Array]] | None,
    storage_options: StorageOptions,
) -> None:
    """Refuse before writing anything when the output or staging filesystem is too small.

    Input the forecast cannot read (a bad feature file, ...) is left to the run,
    which reports it where it always did.
    """
    try:
        forecast = forecast_dispatch(graph, num_parts, options=opts, extra_node_row_bytes=8 if extra_node_data else 0)
    except (DglChunkedError, OSError):
        logger.debug("space check skipped: the forecast could not read the input", exc_info=True)
        return
    wants = [(staging_root, forecast.staging_bytes), (out, forecast.output_bytes)]
    check_space(disk_needs(wants, storage_options))


def _resolve_assignment(
    graph: ChunkedGraph,
    assignment: PathLike | Mapping[str, da.Array],
    num_parts: int | None,
    storage_options: StorageOptions,
) -> tuple[dict[str, da.Array], int, str]:
    if isinstance(assignment, Mapping):
        if num_parts is None:
            raise OptionError("num_parts is required when the assignment is given as arrays")
        return dict(assignment), num_parts, "custom"
    meta, parts = open_assignment(assignment, graph.metadata, num_parts=num_parts, storage_options=storage_options)
    return parts, meta.num_parts, meta.method or meta.algo_name  # method: the real one, from our sidecar


def _done(plan: PartitionPlan, part: int, kind: str, stamp: str) -> Any:
    """What a resumed run recorded for this file of the partition, if it is still there; else MISSING."""
    done = plan.staging.done_value(f"write/{part}/{kind}", stamp)
    if done is not MISSING and any(
        fs.exists(fs.join(plan.out_dir, name), plan.storage_options)
        for name in (part_dir_name(part), tmp_dir_name(part))
    ):
        return done
    return MISSING


def _write_file_once(plan: PartitionPlan, part: int, kind: str, stamp: str) -> PartitionSummary | None:
    """Write one file of a partition unless a resumed run already finished it from these input files."""
    done = _done(plan, part, kind, stamp)
    if done is not MISSING:
        return PartitionSummary.from_dict(done) if kind == "graph" else None
    summary = write_partition_file(plan, part, kind)
    plan.staging.mark_done(f"write/{part}/{kind}", summary.to_dict() if summary else {}, stamp)
    return summary


def _warn_empty(data: Mapping[str, Mapping[str, Any]], names: Sequence[str], layout: IdLayout, kind: str) -> None:
    sizes = layout.sizes()
    for t, name in enumerate(names):
        if not data.get(name):
            continue
        empty = [p for p in range(layout.num_parts) if sizes[p, t] == 0]
        if empty:
            warnings.warn(
                f"partition(s) {empty} own no {kind} of type {name!r}, which has features "
                f"{sorted(data[name])}; DistGraphServer cannot host zero-row feature tensors "
                "(docs/spec/partition-config.md, 'Feature files'): use fewer partitions or an "
                "assignment that gives every partition at least one such " + kind,
                EmptyPartitionWarning,
                stacklevel=3,
            )
