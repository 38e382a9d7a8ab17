"""Commands that write DGL partitions: ``dispatch`` (from an assignment) and ``run``
(partition + dispatch in one go), with the flags of DGL's dispatch_data.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

import dgl_chunked
from dgl_chunked import ChunkedGraph, DispatchOptions, DispatchResult, dispatch, open_chunked_graph
from dgl_chunked.cli.context import command_client
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.options import add_options, cluster_options, parse_size, scratch_option
from dgl_chunked.cluster import ClusterOptions, parse_cluster_options

__all__ = ["dispatch_command", "plan_command", "run_command"]

F = TypeVar("F", bound=Callable[..., Any])


def _dispatch_options(func: F) -> F:
    """Flags of DGL's dispatch_data.py that keep their meaning here, plus staging."""
    options = [
        click.option("--out-dir", required=True, help="Output directory (local path or fsspec URL)."),
        click.option("--metadata-filename", default="metadata.json", show_default=True),
        click.option("--save-orig-nids", is_flag=True, help="Write part<i>/orig_nids.dgl."),
        click.option("--save-orig-eids", is_flag=True, help="Write part<i>/orig_eids.dgl."),
        click.option(
            "--graph-formats",
            default=None,
            metavar="coo,csc,csr",
            help="Sparse formats stored in graph.dgl (default: coo, as DGL).",
        ),
        click.option(
            "--staging-dir",
            default=None,
            help="Folder to create the Zarr staging in, as DIR/dglc-staging-<token> (default OUT/_staging).",
        ),
        click.option("--keep-staging", is_flag=True, help="Keep the Zarr staging after success."),
        click.option("--overwrite", is_flag=True, help="Replace partitions already in --out-dir."),
        click.option(
            "--lookup-cache",
            default="256MiB",
            show_default=True,
            metavar="SIZE",
            help="Per worker: what relabels edges is kept in memory up to this size "
            "(a map of the owners, 0.25-1.5 bytes per node, or the new-ID array, 4); "
            "0 reads the array block by block.",
        ),
        click.option(
            "--halo-hops",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="HALO depth; > 1 keeps HALO edges (in-edges of HALO nodes) as partition_graph.",
        ),
        click.option(
            "--keep-halo-edges",
            is_flag=True,
            help="Keep HALO edges (inner_edge=0) and part_id node data, as partition_graph.",
        ),
        click.option(
            "--use-graphbolt",
            is_flag=True,
            help="Write GraphBolt's part<i>/fused_csc_sampling_graph.pt instead of graph.dgl "
            "(DGL_DIST_DEBUG set: every field, as DGL's converter stores in debug mode).",
        ),
        click.option("--store-eids", is_flag=True, help="GraphBolt: also store edge _ID (as DGL's flag)."),
        click.option("--store-inner-node", is_flag=True, help="GraphBolt: also store node inner_node."),
        click.option("--store-inner-edge", is_flag=True, help="GraphBolt: also store edge inner_edge."),
        click.option(
            "--graphbolt-sort-memory",
            default="1GiB",
            show_default=True,
            metavar="SIZE",
            help="GraphBolt: memory of a partition writer's sort by destination (about 32 bytes "
            "per edge); larger partitions are sorted in several passes.",
        ),
        click.option(
            "--ip-config",
            "--ssh-port",
            "--python-path",
            "--master-port",
            "dgl_launch",
            multiple=True,
            hidden=True,
            default=(),
            help="Accepted for DGL compatibility; Dask replaces ssh launching.",
        ),
        click.option(
            "--process-group-timeout",
            type=int,
            default=None,
            hidden=True,
            help="Accepted for DGL compatibility; Dask has no collective timeout.",
        ),
    ]
    return add_options(func, options)


def _cluster(kw: dict[str, Any]) -> ClusterOptions:
    """The :class:`~dgl_chunked.cluster.ClusterOptions` of the cluster flags (the memory
    limit parsed here, once)."""
    return parse_cluster_options(
        scheduler=kw["scheduler"],
        workers=kw["workers"],
        threads_per_worker=kw["threads_per_worker"],
        memory_limit=kw["memory_limit"],
    )


def _make_dispatch_options(
    kw: dict[str, Any], cluster: ClusterOptions, part_method: str | None = None
) -> DispatchOptions:
    """The :class:`DispatchOptions` the flags of :func:`_dispatch_options` ask for."""
    if kw.get("dgl_launch"):
        click.echo(
            "note: --ip-config/--ssh-port/--python-path/--master-port are ignored; "
            "use --scheduler ADDRESS to run on an existing Dask cluster",
            err=True,
        )
    stores = [f"--{k.replace('_', '-')}" for k in ("store_eids", "store_inner_node", "store_inner_edge") if kw[k]]
    if stores and not kw["use_graphbolt"]:
        raise click.UsageError(f"{', '.join(stores)} only apply with --use-graphbolt")
    formats = tuple(f.strip() for f in kw["graph_formats"].split(",")) if kw["graph_formats"] else ("coo",)
    return DispatchOptions(
        save_orig_nids=kw["save_orig_nids"],
        save_orig_eids=kw["save_orig_eids"],
        graph_formats=formats,
        staging_dir=kw["staging_dir"],
        keep_staging=kw["keep_staging"],
        overwrite=kw["overwrite"],
        progress=not kw["no_progress"],
        part_method=part_method,
        halo_hops=kw["halo_hops"],
        keep_halo_edges=kw["keep_halo_edges"],
        lookup_cache_bytes=parse_size(kw["lookup_cache"], "--lookup-cache"),
        memory_limit=cluster.memory_limit,
        use_graphbolt=kw["use_graphbolt"],
        store_eids=kw["store_eids"],
        store_inner_node=kw["store_inner_node"],
        store_inner_edge=kw["store_inner_edge"],
        graphbolt_sort_bytes=max(1, parse_size(kw["graphbolt_sort_memory"], "--graphbolt-sort-memory")),
    )


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
@click.option("--in-dir", required=True, help="Chunked graph directory (holds metadata.json).")
@click.option(
    "--partitions-dir", required=True, help="Assignment directory: <ntype>.txt per node type + partition_meta.json."
)
@_dispatch_options
@cluster_options
@user_errors
def dispatch_command(in_dir: str, partitions_dir: str, **kw: Any) -> None:
    """Write DGL partitions of a chunked graph as an assignment directory says."""
    so = kw["storage_options"]
    graph = open_chunked_graph(
        in_dir, metadata_filename=kw["metadata_filename"], storage_options=so, task_bytes=kw["task_size"]
    )
    cluster = _cluster(kw)
    options = _make_dispatch_options(kw, cluster)
    with command_client(cluster, lambda: _input_files(graph)) as client:
        result = dispatch(graph, partitions_dir, kw["out_dir"], options=options, client=client, storage_options=so)
    _print_result(result)


@click.command("run")
@click.option("--in-dir", required=True, help="Chunked graph directory (holds metadata.json).")
@click.option("--num-parts", required=True, type=click.IntRange(min=1))
@click.option("--method", default="random", show_default=True, help="Partition algorithm.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--balance-ntypes",
    default=None,
    metavar="MASK,...",
    help="Balance these bool node-data masks (methods that support it).",
)
@click.option("--balance-edges", is_flag=True)
@click.option("--partitions-dir", default=None, help="Also keep the assignment here (DGL layout).")
@click.option(
    "--num-trainers-per-machine",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="As DGL's partition_graph: partition per trainer, store node data trainer_id, "
    "coalesce each machine's trainers into one partition.",
)
@scratch_option("--out-dir")
@_dispatch_options
@cluster_options
@user_errors
def run_command(
    in_dir: str,
    num_parts: int,
    method: str,
    seed: int,
    balance_ntypes: str | None,
    balance_edges: bool,
    partitions_dir: str | None,
    num_trainers_per_machine: int,
    scratch_dir: str | None,
    **kw: Any,
) -> None:
    """Partition and dispatch in one go: chunked graph -> DGL partitions."""
    so = kw["storage_options"]
    graph = open_chunked_graph(
        in_dir, metadata_filename=kw["metadata_filename"], storage_options=so, task_bytes=kw["task_size"]
    )
    cluster = _cluster(kw)
    options = _make_dispatch_options(kw, cluster, part_method=method)
    balance = tuple(balance_ntypes.split(",")) if balance_ntypes else None
    with command_client(cluster, lambda: _input_files(graph)) as client:
        result = dgl_chunked.run(  # run, forecast_run: looked up here, so `dispatch` never loads the partitioners
            graph,
            kw["out_dir"],
            num_parts=num_parts,
            method=method,
            partition_options=dgl_chunked.PartitionOptions(
                seed=seed, balance_ntypes=balance, balance_edges=balance_edges
            ),
            partitions_dir=partitions_dir,
            options=options,
            client=client,
            storage_options=so,
            num_trainers_per_machine=num_trainers_per_machine,
            scratch_dir=scratch_dir,
        )
    _print_result(result)


@click.command("plan")
@click.option("--in-dir", required=True, help="Chunked graph directory (holds metadata.json).")
@click.option("--num-parts", required=True, type=click.IntRange(min=1))
@click.option("--method", default="random", show_default=True, help="Partition algorithm of the run.")
@click.option("--num-trainers-per-machine", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--dispatch-only", is_flag=True, help="Plan `dispatch` of an existing assignment (no partition stage).")
@click.option("--json", "json_path", default=None, metavar="FILE", help="Also write the plan as JSON.")
@click.option(
    "--hosts",
    type=click.IntRange(min=1),
    default=None,
    help="Hosts of the cluster, each running --workers processes: forecast the bytes over the network per stage "
    "(also printed when --out-dir is remote).",
)
@click.option(
    "--bandwidth",
    default=None,
    metavar="RATE",
    help="Every host's link, each direction ('1gbit', '100mbit', '125MB/s'): the network forecast's time.",
)
@click.option("--seed", type=int, default=0, hidden=True)
@click.option("--balance-ntypes", default=None, hidden=True)
@click.option("--balance-edges", is_flag=True, hidden=True)
@click.option("--partitions-dir", default=None, hidden=True)
@scratch_option("--out-dir")
@_dispatch_options
@cluster_options
@user_errors
def plan_command(
    in_dir: str,
    num_parts: int,
    method: str,
    num_trainers_per_machine: int,
    dispatch_only: bool,
    json_path: str | None,
    hosts: int | None,
    bandwidth: str | None,
    **kw: Any,
) -> None:
    """Forecast `run` (tasks, peak memory per worker, disk, time) from metadata.json and
    file headers alone, and refuse when the output or staging filesystem lacks the space.
    Takes `run`'s options, so `run` can be replaced by `plan` in a command line."""
    so = kw["storage_options"]
    graph = open_chunked_graph(
        in_dir, metadata_filename=kw["metadata_filename"], storage_options=so, task_bytes=kw["task_size"]
    )
    cluster = _cluster(kw)
    forecast = dgl_chunked.forecast_run(
        graph,
        kw["out_dir"],
        num_parts=num_parts,
        method=method,
        cluster=cluster,
        num_trainers_per_machine=num_trainers_per_machine,
        options=_make_dispatch_options(kw, cluster, part_method=method),
        storage_options=so,
        dispatch_only=dispatch_only,
        hosts=hosts,
        bandwidth=bandwidth,
    )
    click.echo(forecast.table())
    forecast.check_space()  # the one error: line, before anything is written
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(forecast), f, indent=2)
