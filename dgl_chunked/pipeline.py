"""Both steps in one call: assign partitions, then dispatch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.api import DispatchOptions, DispatchResult, dispatch
from dgl_chunked.dispatch.forecast.calibration import CALIBRATION, Calibration
from dgl_chunked.dispatch.forecast.estimates import StagePlan, forecast_dispatch
from dgl_chunked.dispatch.forecast.space import DiskNeed, check_space, disk_needs, format_bytes
from dgl_chunked.dispatch.options import parse_memory_limit
from dgl_chunked.dispatch.output import staging_location
from dgl_chunked.errors import DglChunkedError, OptionError
from dgl_chunked.io.assignment import retract_assignment, write_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, make_scratch_dir, remove_owned

__all__ = ["run", "plan_run", "RunPlan"]


def run(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    seed: int = 0,
    balance_ntypes: Sequence[str] | None = None,
    balance_edges: bool = False,
    partitions_dir: PathLike | None = None,
    num_trainers_per_machine: int = 1,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
    scratch_dir: PathLike | None = None,
) -> DispatchResult:
    """Partition ``graph`` with ``method`` and write DGL partitions to ``out_dir``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` or a chunked graph directory.
    out_dir
        Output directory for ``metadata.json`` and ``part<i>/``.
    num_parts, method, seed, balance_ntypes, balance_edges
        Passed to :func:`~dgl_chunked.partition.assign_partitions`.
    partitions_dir
        Also keep the assignment there, in DGL's layout (``<ntype>.txt``).
    num_trainers_per_machine
        As in DGL's ``partition_graph``: assign ``num_parts * T`` parts, store each
        node's part as node data ``trainer_id`` (``node_feat.dgl`` key
        ``<ntype>/trainer_id``), and coalesce parts ``[p*T, (p+1)*T)`` into partition ``p``.
    options, storage_options, client
        As for :func:`~dgl_chunked.dispatch.dispatch`.
    scratch_dir
        Parent of this run's scratch directory ``dglc-run-<token>`` (partitioner
        data, e.g. ``lp``'s), removed at the end; default ``out_dir``. Local or a URL
        (with ``storage_options``): every worker must reach it.

    Returns
    -------
    DispatchResult
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    parent = str(out_dir if scratch_dir is None else scratch_dir)
    # named after the output: a rerun (resume) finds the same scratch, so the same task keys
    scratch_name = f"dglc-run-{tokenize(str(out_dir), parent)[:16]}"
    check_no_overlap(  # before anything (the scratch first) is written
        {"--out-dir": str(out_dir), "scratch directory": fs.join(parent, scratch_name)},
        graph.input_locations(),
        storage_options=storage_options,
    )
    if partitions_dir is not None:
        check_no_overlap(
            {"--partitions-dir": str(partitions_dir)},
            {**graph.input_locations(), "--out-dir": str(out_dir)},
            storage_options=storage_options,
        )
    trainers = num_trainers_per_machine
    if trainers < 1:
        raise OptionError(f"num_trainers_per_machine must be >= 1, found {trainers}")
    if (options or DispatchOptions()).check_space:  # before anything is written
        _check_space(graph, out_dir, num_parts, method, trainers, options, storage_options)
    so = storage_options if fs.is_url(parent) else None
    scratch = make_scratch_dir(parent, "run", scratch_name.removeprefix("dglc-run-"), storage_options=so)
    try:
        return _run(
            graph,
            out_dir,
            scratch,
            so,
            num_parts=num_parts,
            method=method,
            seed=seed,
            balance_ntypes=balance_ntypes,
            balance_edges=balance_edges,
            partitions_dir=partitions_dir,
            trainers=trainers,
            options=options,
            storage_options=storage_options,
            client=client,
        )
    finally:
        remove_owned(scratch, storage_options=so)


def _check_space(
    graph: ChunkedGraph,
    out_dir: PathLike,
    num_parts: int,
    method: str,
    trainers: int,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
) -> None:
    """Refuse a run the disks cannot hold; input the forecast cannot read is left to the run."""
    try:
        plan = plan_run(
            graph,
            out_dir,
            num_parts=num_parts,
            method=method,
            workers=1,
            num_trainers_per_machine=trainers,
            options=options,
            storage_options=storage_options,
        )
    except (DglChunkedError, OSError):
        return
    plan.check_space()


def _run(
    graph: ChunkedGraph,
    out_dir: PathLike,
    scratch: str,
    scratch_options: StorageOptions,
    *,
    num_parts: int,
    method: str,
    seed: int,
    balance_ntypes: Sequence[str] | None,
    balance_edges: bool,
    partitions_dir: PathLike | None,
    trainers: int,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
    client: Any,
) -> DispatchResult:
    parts = assign_partitions(
        graph,
        num_parts * trainers,
        method=method,
        seed=seed,
        balance_ntypes=balance_ntypes,
        balance_edges=balance_edges,
        scratch_dir=scratch,
        storage_options=scratch_options,
    )
    extra: dict[str, dict[str, da.Array]] = {}
    if trainers > 1:
        # Like DGL's partition_graph: partition per trainer, keep the trainer in node data
        # "trainer_id", then coalesce each machine's trainers into one partition.
        extra = {t: {"trainer_id": p.astype(np.int64)} for t, p in parts.items()}
        parts = {t: (p // trainers).astype(np.int32) for t, p in parts.items()}
    if partitions_dir is not None:
        write_assignment(
            partitions_dir,
            parts,
            num_parts=num_parts,
            algo_name=method,
            storage_options=storage_options,
            overwrite=True,
        )
        assignment: Any = partitions_dir
    else:
        assignment = parts
    opts = options or DispatchOptions()
    if opts.part_method is None:
        opts = replace(opts, part_method=method)
    try:
        return dispatch(
            graph,
            assignment,
            out_dir,
            num_parts=num_parts,
            options=opts,
            storage_options=storage_options,
            client=client,
            extra_node_data=extra,
        )
    except BaseException:
        if partitions_dir is not None:  # a failed run leaves no complete-looking assignment
            retract_assignment(partitions_dir, storage_options=storage_options)
        raise


@dataclass(frozen=True)
class RunPlan:
    """What a ``run`` (partition + dispatch) will take, from :func:`plan_run`.

    ``stages`` lists every compute with its task count, the working set of its
    largest task and its estimated seconds; ``peak_worker_bytes`` adds the
    worker's base memory to the largest working set; ``disks`` has one entry per
    filesystem written (staging and output share one when on the same device).
    """

    graph_name: str
    nodes: int
    edges: int
    num_parts: int
    workers: int
    method: str
    stages: tuple[StagePlan, ...]
    peak_worker_bytes: int
    staging_bytes: int
    output_bytes: int
    disks: tuple[DiskNeed, ...]
    seconds: float
    memory_limit: int | None
    notes: tuple[str, ...]
    worker_base_bytes: int

    def check_space(self) -> None:
        """Raise :class:`~dgl_chunked.errors.InsufficientSpaceError` when a filesystem lacks the space."""
        check_space(self.disks)

    def table(self) -> str:
        """The plan as printed by ``dgl-chunked plan``."""
        head = (
            f"plan: {self.graph_name!r}, {self.nodes} nodes, {self.edges} edges -> {self.num_parts} "
            f"partition(s) ({self.method}) on {self.workers} worker thread(s)"
        )
        lines = [head, f"{'stage':<28}{'tasks':>7}{'peak MB/worker':>16}{'seconds':>10}"]
        base = self.worker_base_bytes
        for s in self.stages:
            lines.append(f"{s.name:<28}{s.tasks:>7}{(base + s.task_bytes) / 2**20:>16.0f}{s.seconds:>10.1f}")
        lines.append(f"{'total':<28}{'':>7}{self.peak_worker_bytes / 2**20:>16.0f}{self.seconds:>10.1f}")
        lines.append(f"staging: {format_bytes(self.staging_bytes)}; output: {format_bytes(self.output_bytes)}")
        for d in self.disks:
            free = "unknown (not a local filesystem)" if d.free is None else format_bytes(d.free)
            mark = "  <- NOT ENOUGH" if d.short else ""
            lines.append(f"  {' + '.join(d.paths)}: needs {format_bytes(d.needed)}, free {free}{mark}")
        if self.memory_limit and self.peak_worker_bytes > 0.8 * self.memory_limit:
            lines.append("  note: the peak is above 80% of --memory-limit: Dask would pause the workers")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def plan_run(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: str | int | None = None,
    num_trainers_per_machine: int = 1,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    dispatch_only: bool = False,
    calibration: Calibration = CALIBRATION,
) -> RunPlan:
    """Forecast :func:`run` (or only :func:`~dgl_chunked.dispatch.dispatch`) without running it.

    Reads ``metadata.json`` and the feature files' headers only and writes nothing.

    Parameters
    ----------
    graph
        A chunked graph or its directory.
    out_dir
        The output directory the run would write (its filesystem is measured).
    num_parts, method, num_trainers_per_machine, options, storage_options
        As for :func:`run`.
    workers, threads_per_worker
        The cluster: default one worker per CPU, 1 thread each (the CLI's LocalCluster).
    memory_limit
        Per-worker memory limit (``"4GiB"`` or bytes); sizes the node-ID cache and
        HALO tables as it would in the run.
    dispatch_only
        Plan only the dispatch (the assignment exists already): no partition stage.
    calibration
        The cost model's constants (default: measured on the project's VM).

    Returns
    -------
    RunPlan
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    limit = parse_memory_limit(memory_limit)
    opts = options or DispatchOptions()
    if limit is not None:
        opts = replace(opts, memory_limit=limit)
    threads = (workers or os.cpu_count() or 1) * threads_per_worker
    forecast = forecast_dispatch(
        graph,
        num_parts,
        options=opts,
        workers=threads,
        extra_node_row_bytes=8 if num_trainers_per_machine > 1 else 0,
        calibration=calibration,
    )
    stages = forecast.stages
    notes = list(forecast.notes)
    if not dispatch_only:
        stages = (_partition_stage(graph, method, calibration), *stages)
        if method != "random":
            notes.append(f"the time of method {method!r} is not calibrated: only dispatch's is counted")
    out = str(out_dir)
    staging_root = staging_location(out, opts.staging_dir, storage_options)
    disks = disk_needs([(staging_root, forecast.staging_bytes), (out, forecast.output_bytes)], storage_options)
    return RunPlan(
        graph_name=graph.metadata.graph_name,
        nodes=forecast.nodes,
        edges=forecast.edges,
        num_parts=num_parts,
        workers=threads,
        method=method,
        stages=stages,
        peak_worker_bytes=calibration.worker_base_bytes + max(s.task_bytes for s in stages),
        staging_bytes=forecast.staging_bytes,
        output_bytes=forecast.output_bytes,
        disks=disks,
        seconds=sum(s.seconds for s in stages),
        memory_limit=opts.memory_limit,
        notes=tuple(notes),
        worker_base_bytes=calibration.worker_base_bytes,
    )


def _partition_stage(graph: ChunkedGraph, method: str, cal: Calibration) -> StagePlan:
    """The assignment (random: one task per node chunk, the assignment directory written after)."""
    meta = graph.metadata
    nodes = sum(meta.num_nodes(t) for t in meta.node_types)
    tasks = sum(len(graph.node_chunks(t)) for t in meta.node_types)
    seconds = 0.0
    if method == "random":
        seconds = cal.partition_overhead_s + cal.partition_s_per_node * nodes
    return StagePlan(f"partition ({method})", tasks, 0, seconds)
