"""Commands that write DGL partitions: ``dispatch`` (from an assignment) and ``run``
(partition + dispatch in one go), with the flags of DGL's dispatch_data.py."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

import dgl_chunked
from dgl_chunked import ChunkedGraph, DispatchOptions, DispatchResult, dispatch, open_chunked_graph
from dgl_chunked._typing import StorageOptions
from dgl_chunked.cli.context import command_client, input_bytes
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.options import add_options, cluster_options, parse_size, scratch_option
from dgl_chunked.cluster import ClusterOptions, choose_scheduler, parse_cluster_options

__all__ = ["CommandInputs", "dispatch_command", "parsed_inputs", "plan_command", "run_command"]

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
            help="Sparse formats stored in graph.dgl (default: coo, as DGL). With --use-graphbolt, "
            "coo among them stores _dgl2gb_eid and _gb_dst_id, as DGL >= 2.3 (csc: DGL 2.1's file).",
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
        click.option(
            "--store-eids/--no-store-eids",
            default=None,
            help="GraphBolt: store edge _ID (default: yes, as DGL >= 2.3's store_eids=True; "
            "--no-store-eids: DGL 2.1's default).",
        ),
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
            "--node-id-features",
            multiple=True,
            metavar="TYPE/FEATURE[=NTYPE],...",
            help="Features whose values are per-type node IDs (GraphStorm's hard negatives): "
            "translated to the partitioned graph's per-type IDs, -1 padding kept. TYPE is an "
            "edge type src:rel:dst (NTYPE defaults to dst) or a node type; 'gsprocessing': the "
            "edge_dst_hard_negative features of GSProcessing's config. Repeatable.",
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


@dataclass(frozen=True)
class CommandInputs:
    """What the shared flags of ``dispatch``, ``run`` and ``plan`` ask for, parsed once:
    the opened graph, the output, the cluster and the dispatch options."""

    graph: ChunkedGraph
    out_dir: str
    storage_options: StorageOptions
    cluster: ClusterOptions
    options: DispatchOptions


def parsed_inputs(command: F) -> F:
    """Call ``command`` with ``inputs=CommandInputs(...)`` in place of the shared flags:
    every flag that is not one of the command's own parameters (``--method``, when the
    command has it, also names the partition method in the options)."""
    own = set(inspect.signature(command).parameters)

    @functools.wraps(command)
    def wrapper(**kw: Any) -> Any:
        flags = {name: kw.pop(name) for name in list(kw) if name not in own}
        return command(inputs=_command_inputs(flags, part_method=kw.get("method")), **kw)

    return wrapper  # type: ignore[return-value]


def _command_inputs(flags: dict[str, Any], part_method: str | None) -> CommandInputs:
    cluster = parse_cluster_options(
        scheduler=flags["scheduler"],
        workers=flags["workers"],
        threads_per_worker=flags["threads_per_worker"],
        memory_limit=flags["memory_limit"],
    )
    graph = open_chunked_graph(
        flags["in_dir"],
        metadata_filename=flags["metadata_filename"],
        storage_options=flags["storage_options"],
        task_bytes=flags["task_size"],
    )
    options = _dispatch_options_of(flags, cluster, part_method)
    return CommandInputs(graph, flags["out_dir"], flags["storage_options"], cluster, options)


def _dispatch_options_of(flags: dict[str, Any], cluster: ClusterOptions, part_method: str | None) -> DispatchOptions:
    """The :class:`DispatchOptions` the flags of :func:`_dispatch_options` ask for."""
    if flags["dgl_launch"]:
        click.echo(
            "note: --ip-config/--ssh-port/--python-path/--master-port are ignored; "
            "use --scheduler ADDRESS to run on an existing Dask cluster",
            err=True,
        )
    stores = [f"--{k.replace('_', '-')}" for k in ("store_inner_node", "store_inner_edge") if flags[k]]
    if flags["store_eids"] is not None:
        stores.insert(0, "--store-eids" if flags["store_eids"] else "--no-store-eids")
    if stores and not flags["use_graphbolt"]:
        raise click.UsageError(f"{', '.join(stores)} only apply with --use-graphbolt")
    formats = tuple(f.strip() for f in flags["graph_formats"].split(",")) if flags["graph_formats"] else ("coo",)
    return DispatchOptions(
        save_orig_nids=flags["save_orig_nids"],
        save_orig_eids=flags["save_orig_eids"],
        graph_formats=formats,
        staging_dir=flags["staging_dir"],
        keep_staging=flags["keep_staging"],
        overwrite=flags["overwrite"],
        progress=not flags["no_progress"],
        part_method=part_method,
        halo_hops=flags["halo_hops"],
        keep_halo_edges=flags["keep_halo_edges"],
        lookup_cache_bytes=parse_size(flags["lookup_cache"], "--lookup-cache"),
        memory_limit=cluster.memory_limit,
        use_graphbolt=flags["use_graphbolt"],
        store_eids=flags["store_eids"] is not False,  # DGL >= 2.3's default
        store_inner_node=flags["store_inner_node"],
        store_inner_edge=flags["store_inner_edge"],
        graphbolt_sort_bytes=max(1, parse_size(flags["graphbolt_sort_memory"], "--graphbolt-sort-memory")),
        node_id_features=tuple(s for v in flags["node_id_features"] for s in v.split(",") if s.strip()),
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
@parsed_inputs
def dispatch_command(inputs: CommandInputs, partitions_dir: str) -> None:
    """Write DGL partitions of a chunked graph as an assignment directory says."""
    with command_client(inputs.cluster, lambda: _input_files(inputs.graph)) as client:
        result = dispatch(
            inputs.graph,
            partitions_dir,
            inputs.out_dir,
            options=inputs.options,
            client=client,
            storage_options=inputs.storage_options,
        )
    _print_result(result)


@click.command("run")
@click.option("--in-dir", required=True, help="Chunked graph directory (holds metadata.json).")
@click.option("--num-parts", required=True, type=click.IntRange(min=1))
@click.option(
    "--method", default="random", show_default=True, help="Partition algorithm: random, range, metis, kaminpar or lp."
)
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
@parsed_inputs
def run_command(
    inputs: CommandInputs,
    num_parts: int,
    method: str,
    seed: int,
    balance_ntypes: str | None,
    balance_edges: bool,
    partitions_dir: str | None,
    num_trainers_per_machine: int,
    scratch_dir: str | None,
) -> None:
    """Partition and dispatch in one go: chunked graph -> DGL partitions."""
    balance = tuple(balance_ntypes.split(",")) if balance_ntypes else None
    with command_client(inputs.cluster, lambda: _input_files(inputs.graph)) as client:
        result = dgl_chunked.run(  # run, forecast_run: looked up here, so `dispatch` never loads the partitioners
            inputs.graph,
            inputs.out_dir,
            num_parts=num_parts,
            method=method,
            partition_options=dgl_chunked.PartitionOptions(
                seed=seed, balance_ntypes=balance, balance_edges=balance_edges
            ),
            partitions_dir=partitions_dir,
            options=inputs.options,
            client=client,
            storage_options=inputs.storage_options,
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
@parsed_inputs
def plan_command(
    inputs: CommandInputs,
    num_parts: int,
    method: str,
    num_trainers_per_machine: int,
    dispatch_only: bool,
    json_path: str | None,
    hosts: int | None,
    bandwidth: str | None,
    seed: int,
    balance_ntypes: str | None,
    balance_edges: bool,
    partitions_dir: str | None,
    scratch_dir: str | None,
) -> None:
    """Forecast `run` (tasks, peak memory per worker, disk, time) from metadata.json and
    file headers alone, and refuse when the output or staging filesystem lacks the space.
    Takes `run`'s options, so `run` can be replaced by `plan` in a command line."""
    forecast = dgl_chunked.forecast_run(  # run's flags are taken and only those that change the forecast read
        inputs.graph,
        inputs.out_dir,
        num_parts=num_parts,
        method=method,
        cluster=inputs.cluster,
        num_trainers_per_machine=num_trainers_per_machine,
        options=inputs.options,
        storage_options=inputs.storage_options,
        dispatch_only=dispatch_only,
        hosts=hosts,
        bandwidth=bandwidth,
    )
    if not inputs.cluster.asked:  # what run would run on, and why
        click.echo(f"scheduler: {choose_scheduler(input_bytes(_input_files(inputs.graph))).describe()}")
    click.echo(forecast.table())
    forecast.check_space()  # the one error: line, before anything is written
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(forecast), f, indent=2)
