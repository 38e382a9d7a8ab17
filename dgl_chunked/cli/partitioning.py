"""Commands on assignments: ``partition`` (write one) and ``report`` (measure one)."""

from __future__ import annotations

from typing import Any

import click

from dgl_chunked import (
    assign_partitions,
    compute_partition_report,
    open_assignment,
    open_chunked_graph,
    write_assignment,
)
from dgl_chunked.cli.context import optional_client, owned_scratch
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.options import (
    assignment_cluster_options,
    parse_size,
    scratch_option,
    storage_option,
    task_size_option,
)
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.io.assignment import retract_assignment
from dgl_chunked.partition import PartitionOptions
from dgl_chunked.storage.fs import join

__all__ = ["partition_command", "report_command"]


@click.command("partition")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
@click.option("--out-dir", required=True, help="Assignment directory to write (<ntype>.txt, partition_meta.json).")
@click.option("--num-parts", type=click.IntRange(min=1), required=True)
@click.option(
    "--method",
    default="random",
    show_default=True,
    help="random (seeded hash), range (contiguous ID ranges per node type, GraphStorm's), metis (pymetis, "
    "in memory), kaminpar (KaMinPar, in memory) or lp (multilevel + label propagation, out of core).",
)
@click.option("--seed", type=click.IntRange(min=0, max=2**64 - 1), default=0, show_default=True)
@click.option(
    "--balance-ntypes",
    default=None,
    metavar="NAME,...",
    help="Node types and bool node features (train_mask,val_mask,...) to balance (metis, lp).",
)
@click.option("--balance-edges", is_flag=True, help="Also balance owned edges (metis; best effort in lp).")
@click.option("--max-memory", default=None, metavar="SIZE", help="metis: refuse above this estimate [4GiB].")
@click.option("--overwrite", is_flag=True, help="Replace an existing assignment in --out-dir.")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@scratch_option("--out-dir")
@assignment_cluster_options
@storage_option
@task_size_option
@user_errors
def partition_command(
    in_dir: str,
    out_dir: str,
    num_parts: int,
    method: str,
    seed: int,
    balance_ntypes: str | None,
    balance_edges: bool,
    max_memory: str | None,
    overwrite: bool,
    metadata_filename: str,
    scratch_dir: str | None,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
    task_size: str | None,
) -> None:
    """Assign every node to a partition; write ASSIGN/ and ASSIGN/report.json."""
    so = storage_options
    balance = [b.strip() for b in balance_ntypes.split(",") if b.strip()] if balance_ntypes else None
    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=so, task_bytes=task_size)
    with (
        optional_client(ClusterOptions(scheduler=scheduler, workers=workers)),
        owned_scratch(
            scratch_dir or out_dir,
            "partition",
            so,
            outputs={"--out-dir": out_dir},
            inputs=graph.input_locations(),
        ) as (scratch, scratch_so),
    ):
        options = PartitionOptions(
            seed=seed,
            balance_ntypes=None if balance is None else tuple(balance),
            balance_edges=balance_edges,
            max_memory=parse_size(max_memory, "--max-memory") if max_memory else None,
            scratch_dir=scratch,
            storage_options=scratch_so,
        )
        parts = assign_partitions(graph, num_parts, method=method, options=options)
        write_assignment(
            out_dir,
            parts,
            num_parts=num_parts,
            algo_name=method,
            overwrite=overwrite,
            provenance={"seed": seed, "balance_ntypes": balance, "balance_edges": balance_edges},
            storage_options=so,
            inputs=graph.input_locations(),
        )
        try:  # the report reads every edge: a bad input fails here, after the assignment
            _, written = open_assignment(
                out_dir,
                graph.metadata,
                num_parts=num_parts,
                storage_options=so,
                chunks={t: graph.node_chunks(t) for t in graph.node_types},
            )
            report = compute_partition_report(
                graph, written, num_parts, scratch_dir=scratch, storage_options=scratch_so
            )
            report.to_json(join(out_dir, "report.json"), storage_options=so)
        except BaseException:
            retract_assignment(out_dir, storage_options=so)  # a failed command leaves nothing complete
            raise
    click.echo(report.to_table())
    click.echo(f"assignment written to {out_dir} (report: {join(out_dir, 'report.json')})")


@click.command("report")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
@click.option("--partitions-dir", required=True, help="Assignment directory (DGL's or ours).")
@click.option("--json", "json_path", default=None, metavar="OUT", help="Also write the report as JSON.")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@scratch_option("--partitions-dir")
@assignment_cluster_options
@storage_option
@task_size_option
@user_errors
def report_command(
    in_dir: str,
    partitions_dir: str,
    json_path: str | None,
    metadata_filename: str,
    scratch_dir: str | None,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
    task_size: str | None,
) -> None:
    """Print edge cut, balance and HALO counts of an assignment directory."""
    graph = open_chunked_graph(
        in_dir, metadata_filename=metadata_filename, storage_options=storage_options, task_bytes=task_size
    )
    with optional_client(ClusterOptions(scheduler=scheduler, workers=workers)):
        meta, parts = open_assignment(
            partitions_dir,
            graph.metadata,
            storage_options=storage_options,
            chunks={t: graph.node_chunks(t) for t in graph.node_types},
        )
        report = compute_partition_report(
            graph, parts, meta.num_parts, scratch_dir=scratch_dir or partitions_dir, storage_options=storage_options
        )
    if json_path:
        report.to_json(json_path, storage_options=storage_options)
    click.echo(report.to_table())
