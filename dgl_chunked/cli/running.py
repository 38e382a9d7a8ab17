"""Commands that write DGL partitions: ``dispatch`` (from an assignment) and ``run``
(partition + dispatch in one go), with the flags of DGL's dispatch_data.py."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import click

import dgl_chunked
from dgl_chunked import ChunkedGraph, DispatchOptions, DispatchResult, dispatch
from dgl_chunked.cli.context import command_client
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.flags import NUM_PARTS, NUM_TRAINERS, cluster_flags, dispatch_flags, graph_flags, partition_flags
from dgl_chunked.cli.options import scratch_option
from dgl_chunked.cli.sizing import InputSize, input_bytes, resolve_scheduler
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.dispatch import wait_for_staging_removal

if TYPE_CHECKING:
    from dgl_chunked.partition import PartitionOptions  # loaded by run and plan only

__all__ = ["dispatch_command", "plan_command", "run_command"]

OUT_DIR = click.option("--out-dir", required=True, help="Output directory (local path or fsspec URL).")
KEEP_ASSIGNMENT = click.option("--partitions-dir", default=None, help="Also keep the assignment here (DGL layout).")


def _input_files(graph: ChunkedGraph) -> list[str]:
    """Every edge and feature file the graph's ``metadata.json`` names."""
    m = graph.metadata
    sources = [
        *m.edges.values(),
        *(s for data in (m.node_data, m.edge_data) for f in data.values() for s in f.values()),
    ]
    return [p for source in sources for p in source.paths]


def _print_result(result: DispatchResult) -> None:
    config = result.config
    click.echo(
        f"wrote {config.num_parts} partition(s) of {config.graph_name!r}: "
        f"{config.num_nodes} nodes, {config.num_edges} edges"
    )
    for p, summary in enumerate(result.partitions):
        click.echo(
            f"  part{p}: {summary.inner_nodes} inner nodes, {summary.halo_nodes} HALO nodes, {summary.edges} edges"
        )
    click.echo(f"partition config: {result.config_path}")


@click.command("dispatch")
@user_errors
@graph_flags()
@click.option(
    "--partitions-dir", required=True, help="Assignment directory: <ntype>.txt per node type + partition_meta.json."
)
@OUT_DIR
@cluster_flags
@dispatch_flags
def dispatch_command(
    graph: ChunkedGraph,
    partitions_dir: str,
    out_dir: str,
    cluster: ClusterOptions,
    options: DispatchOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Write DGL partitions of a chunked graph as an assignment directory says."""
    with command_client(cluster, lambda: _input_files(graph)) as client:
        result = dispatch(
            graph, partitions_dir, out_dir, options=options, client=client, storage_options=storage_options
        )
    _print_result(result)
    wait_for_staging_removal()  # removed in the background while the cluster closed (DispatchOptions)


@click.command("run")
@user_errors
@graph_flags()
@OUT_DIR
@NUM_PARTS
@partition_flags
@KEEP_ASSIGNMENT
@NUM_TRAINERS
@scratch_option("--out-dir")
@cluster_flags
@dispatch_flags
def run_command(
    graph: ChunkedGraph,
    out_dir: str,
    num_parts: int,
    method: str,
    partition_options: PartitionOptions,
    partitions_dir: str | None,
    num_trainers_per_machine: int,
    scratch_dir: str | None,
    cluster: ClusterOptions,
    options: DispatchOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Partition and dispatch in one go: chunked graph -> DGL partitions."""
    with command_client(cluster, lambda: _input_files(graph)) as client:
        result = dgl_chunked.run(  # run, forecast_run: looked up here, so `dispatch` never loads the partitioners
            graph,
            out_dir,
            num_parts=num_parts,
            method=method,
            partition_options=partition_options,
            partitions_dir=partitions_dir,
            options=options,
            client=client,
            storage_options=storage_options,
            num_trainers_per_machine=num_trainers_per_machine,
            scratch_dir=scratch_dir,
        )
    _print_result(result)
    wait_for_staging_removal()  # removed in the background while the cluster closed (DispatchOptions)


@click.command("plan")
@user_errors
@graph_flags()
@OUT_DIR
@NUM_PARTS
@partition_flags
@NUM_TRAINERS
@click.option("--dispatch-only", is_flag=True, help="Plan `dispatch` of an existing assignment (no partition step).")
@click.option("--json", "json_path", default=None, metavar="FILE", help="Also write the plan as JSON.")
@click.option(
    "--hosts",
    type=click.IntRange(min=1),
    default=None,
    help="Hosts of the cluster, each running --workers processes: forecast the bytes over the network per step "
    "(also printed when --out-dir is remote).",
)
@click.option(
    "--bandwidth",
    default=None,
    metavar="RATE",
    help="Every host's link, each direction ('1gbit', '100mbit', '125MB/s'): the network forecast's time.",
)
@KEEP_ASSIGNMENT
@scratch_option("--out-dir")
@cluster_flags
@dispatch_flags
def plan_command(
    graph: ChunkedGraph,
    out_dir: str,
    num_parts: int,
    method: str,
    num_trainers_per_machine: int,
    dispatch_only: bool,
    json_path: str | None,
    hosts: int | None,
    bandwidth: str | None,
    partitions_dir: str | None,
    cluster: ClusterOptions,
    options: DispatchOptions,
    storage_options: dict[str, Any] | None,
    **_run_only: Any,
) -> None:
    """Forecast `run` (tasks, peak memory per worker, disk, time) from metadata.json and
    file headers alone, and refuse when the output or staging filesystem lacks the space.
    Takes `run`'s options, so `run` can be replaced by `plan` in a command line."""
    chosen = resolve_scheduler(cluster, "plan", lambda: InputSize(input_bytes(_input_files(graph)))).choice
    if (
        chosen is not None and hosts is None
    ):  # forecast the cluster run would choose here: its threads split the write step
        cluster = dataclasses.replace(cluster, workers=chosen.workers, threads_per_worker=chosen.threads)
    forecast = dgl_chunked.forecast_run(  # run's flags are taken and only those that change the forecast read
        graph,
        out_dir,
        num_parts=num_parts,
        method=method,
        cluster=cluster,
        num_trainers_per_machine=num_trainers_per_machine,
        options=options,
        storage_options=storage_options,
        dispatch_only=dispatch_only,
        hosts=hosts,
        bandwidth=bandwidth,
        partitions_dir=partitions_dir,
    )
    if chosen is not None:  # what run would run on, and why
        click.echo(f"scheduler: {chosen.describe()}")
    click.echo(forecast.table())
    forecast.check_space()  # the one error: line, before anything is written
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(forecast), f, indent=2)
