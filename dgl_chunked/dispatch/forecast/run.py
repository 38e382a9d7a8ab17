"""The forecast of a whole run: its partition step and dispatch's steps, the disks.

:func:`forecast_run` -> :class:`RunForecast` is what ``dgl-chunked plan`` prints.
``plan_run`` and ``RunPlan`` are the names of one release before; they still work
(``plan_run`` warns) and go in the next release.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

from dgl_chunked._dask import ClusterOptions
from dgl_chunked._typing import Bytes, PathLike, StorageOptions, parse_memory_limit
from dgl_chunked.dispatch.forecast.calibration import CALIBRATION, Calibration
from dgl_chunked.dispatch.forecast.estimates import StepForecast, forecast_dispatch
from dgl_chunked.dispatch.forecast.network import NetworkForecast, assignment_file_bytes, forecast_network
from dgl_chunked.dispatch.forecast.space import DiskNeed, check_space, disk_needs, format_bytes
from dgl_chunked.dispatch.forecast.writes import WritePlan
from dgl_chunked.dispatch.options import DispatchOptions
from dgl_chunked.dispatch.out_dir import staging_location
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.chunked.node_id_features import parse_node_id_features
from dgl_chunked.storage import fs

__all__ = ["RunForecast", "RunPlan", "forecast_run", "plan_run"]


@dataclass(frozen=True)
class RunForecast:
    """What a ``run`` (partition + dispatch) will take, from :func:`forecast_run`.

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
    stages: tuple[StepForecast, ...]
    peak_worker_bytes: int
    staging_bytes: int
    output_bytes: int
    disks: tuple[DiskNeed, ...]
    seconds: float
    memory_limit: int | None
    notes: tuple[str, ...]
    worker_base_bytes: int
    network: NetworkForecast | None = None
    """Bytes over the network per step (and time at a bandwidth) when the storage is
    remote or ``hosts`` was given."""
    writes: WritePlan | None = None
    """The write step's files and the tasks that write them on ``workers`` threads."""

    def check_space(self) -> None:
        """Raise :class:`~dgl_chunked.errors.InsufficientSpaceError` when a filesystem lacks the space."""
        check_space(self.disks)

    def table(self) -> str:
        """The plan as printed by ``dgl-chunked plan``."""
        head = (
            f"plan: {self.graph_name!r}, {self.nodes} nodes, {self.edges} edges -> {self.num_parts} "
            f"partition(s) ({self.method}) on {self.workers} worker thread(s)"
        )
        lines = [head + " (MB = 10^6 bytes)", f"{'step':<28}{'tasks':>7}{'peak MB/worker':>16}{'seconds':>10}"]
        base = self.worker_base_bytes
        for s in self.stages:
            lines.append(f"{s.name:<28}{s.tasks:>7}{(base + s.task_bytes) / 1e6:>16.0f}{s.seconds:>10.1f}")
        lines.append(f"{'total':<28}{'':>7}{self.peak_worker_bytes / 1e6:>16.0f}{self.seconds:>10.1f}")
        if self.writes is not None:
            lines.append(self.writes.describe())
        lines.append(f"staging: {format_bytes(self.staging_bytes)}; output: {format_bytes(self.output_bytes)}")
        for d in self.disks:
            free = "unknown (not a local filesystem)" if d.free is None else format_bytes(d.free)
            mark = "  <- NOT ENOUGH" if d.short else ""
            lines.append(f"  {' + '.join(d.paths)}: needs {format_bytes(d.needed)}, free {free}{mark}")
        if self.memory_limit and self.peak_worker_bytes > 0.8 * self.memory_limit:
            lines.append("  note: the peak is above 80% of --memory-limit: Dask would pause the workers")
        lines += [f"  note: {n}" for n in self.notes]
        if self.network is not None:
            lines.append(self.network.table())
        return "\n".join(lines)


def forecast_run(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: Bytes | str | None = None,
    num_trainers_per_machine: int = 1,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    dispatch_only: bool = False,
    calibration: Calibration = CALIBRATION,
    cluster: ClusterOptions | None = None,
    hosts: int | None = None,
    bandwidth: str | float | None = None,
    partitions_dir: PathLike | None = None,
) -> RunForecast:
    """Forecast :func:`~dgl_chunked.run` (or only :func:`~dgl_chunked.dispatch.dispatch`) without running it.

    Reads ``metadata.json`` and the feature files' headers only and writes nothing.

    Parameters
    ----------
    graph
        A chunked graph or its directory.
    out_dir
        The output directory the run would write (its filesystem is measured).
    num_parts, method, num_trainers_per_machine, options, storage_options
        As for :func:`~dgl_chunked.run`.
    workers, threads_per_worker
        The cluster: default one worker per CPU, 1 thread each (the CLI's LocalCluster).
    memory_limit
        Per-worker memory limit in bytes (a size such as ``"4GiB"`` is parsed, as
        before); sizes the node-ID cache and HALO tables as it would in the run.
    dispatch_only
        Plan only the dispatch (the assignment exists already): no partition step.
    calibration
        The cost model's constants (default: measured on the project's VM).
    cluster
        ``workers``, ``threads_per_worker`` and ``memory_limit`` as one
        :class:`~dgl_chunked.cluster.ClusterOptions`, as the CLI passes them (those
        keywords then keep their defaults).
    hosts
        Hosts of the cluster, each with ``workers`` processes (``workers`` counts the
        processes of one host then, default 1); with it, or when the output is on a
        remote filesystem, the forecast counts the bytes over the network per step
        (:func:`~dgl_chunked.dispatch.forecast.network.forecast_network`).
    bandwidth
        Every host's link, each direction (``"1gbit"``, ``"125MB/s"``, bytes per
        second): the network forecast's time.
    partitions_dir
        ``run --partitions-dir``: the network forecast has a step ``write assignment``
        (ignored with ``dispatch_only``).

    Returns
    -------
    RunForecast
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    if cluster is not None:
        workers, threads_per_worker, memory_limit = cluster.workers, cluster.threads_per_worker, cluster.memory_limit
    limit = parse_memory_limit(memory_limit)
    opts = options or DispatchOptions()
    parse_node_id_features(graph, opts.node_id_features)  # refuse what the run would refuse
    if limit is not None:
        opts = replace(opts, memory_limit=limit)
    processes = workers or (1 if hosts else os.cpu_count() or 1)
    threads = processes * threads_per_worker * (hosts or 1)
    forecast = forecast_dispatch(
        graph,
        num_parts,
        options=opts,
        workers=threads,
        extra_node_row_bytes=8 if num_trainers_per_machine > 1 else 0,
        calibration=calibration,
        out_dir=str(out_dir),
    )
    stages = forecast.stages
    notes = list(forecast.notes)
    if not dispatch_only:
        stages = (_partition_step(graph, method, calibration), *stages)
        if method not in _HASH_LIKE_METHODS:
            notes.append(f"the time of method {method!r} is not calibrated: only dispatch's is counted")
    out = str(out_dir)
    staging_root = staging_location(out, opts.staging_dir, storage_options)
    disks = disk_needs([(staging_root, forecast.staging_bytes), (out, forecast.output_bytes)], storage_options)
    network = None
    if hosts or bandwidth is not None or fs.is_url(out):
        network = forecast_network(
            graph,
            num_parts,
            forecast,
            options=opts,
            hosts=hosts or 1,
            processes_per_host=processes,
            threads_per_process=threads_per_worker,
            bandwidth=bandwidth,
            assignment_bytes=assignment_file_bytes(forecast.nodes, num_parts) if dispatch_only else 0,
            partition_step=None if dispatch_only else stages[0],
            extra_node_row_bytes=8 if num_trainers_per_machine > 1 else 0,
            partitions_dir=None if dispatch_only or partitions_dir is None else str(partitions_dir),
        )
    return RunForecast(
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
        network=network,
        writes=forecast.writes,
    )


_HASH_LIKE_METHODS = ("random", "range")
"""Methods of one task per node chunk and no edge reads, timed by the ``random`` calibration."""


def _partition_step(graph: ChunkedGraph, method: str, cal: Calibration) -> StepForecast:
    """The assignment (random: one task per node chunk, the assignment directory written after)."""
    meta = graph.metadata
    nodes = sum(meta.num_nodes(t) for t in meta.node_types)
    tasks = sum(len(graph.node_chunks(t)) for t in meta.node_types)
    seconds = 0.0
    if method in _HASH_LIKE_METHODS:  # range's kernel (a searchsorted) costs less than the hash
        seconds = cal.partition_overhead_s + cal.partition_s_per_node * nodes
    return StepForecast(f"partition ({method})", tasks, 0, seconds)


RunPlan = RunForecast
"""Deprecated name of :class:`RunForecast` (one release)."""


def plan_run(*args: Any, **kwargs: Any) -> RunForecast:
    """Deprecated name of :func:`forecast_run` (one release): same arguments, same result."""
    warnings.warn("plan_run is deprecated: use forecast_run", DeprecationWarning, stacklevel=2)
    return forecast_run(*args, **kwargs)
