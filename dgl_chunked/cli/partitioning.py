"""Commands on assignments: ``partition`` (write one) and ``report`` (measure one)."""

from __future__ import annotations

from typing import Any

import click

from dgl_chunked import ChunkedGraph, compute_partition_report, make_assignment, open_assignment
from dgl_chunked.cli.context import chosen_client, optional_client
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.flags import NUM_PARTS, cluster_flags, graph_flags, partition_flags
from dgl_chunked.cli.options import scratch_option
from dgl_chunked.cli.sizing import InputSize, input_bytes
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.partition import PartitionOptions
from dgl_chunked.storage.fs import join

__all__ = ["partition_command", "report_command"]


def _edge_size(graph: ChunkedGraph) -> InputSize:
    """Bytes of the graph's edge files: the methods that read edges, and the report after any
    method, read each of them (the node-wise work is a few bytes per node beside them)."""
    paths = [p for source in graph.metadata.edges.values() for p in source.paths]
    return InputSize(input_bytes(paths), "edge files")


@click.command("partition")
@user_errors
@graph_flags()
@click.option("--out-dir", required=True, help="Assignment directory to write (<ntype>.txt, partition_meta.json).")
@NUM_PARTS
@partition_flags
@click.option("--overwrite", is_flag=True, help="Replace an existing assignment in --out-dir.")
@scratch_option("--out-dir")
@cluster_flags
def partition_command(
    graph: ChunkedGraph,
    out_dir: str,
    num_parts: int,
    method: str,
    partition_options: PartitionOptions,
    overwrite: bool,
    scratch_dir: str | None,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Assign every node to a partition; write ASSIGN/ and ASSIGN/report.json."""
    with chosen_client(cluster, "partition", lambda: _edge_size(graph)):
        report = make_assignment(
            graph,
            out_dir,
            num_parts=num_parts,
            method=method,
            options=partition_options,
            overwrite=overwrite,
            scratch_dir=scratch_dir,
            storage_options=storage_options,
        )
    click.echo(report.to_table())
    click.echo(f"assignment written to {out_dir} (report: {join(out_dir, 'report.json')})")


@click.command("report")
@user_errors
@graph_flags()
@click.option("--partitions-dir", required=True, help="Assignment directory (DGL's or ours).")
@click.option("--json", "json_path", default=None, metavar="OUT", help="Also write the report as JSON.")
@scratch_option("--partitions-dir")
@cluster_flags
def report_command(
    graph: ChunkedGraph,
    partitions_dir: str,
    json_path: str | None,
    scratch_dir: str | None,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Print edge cut, balance and HALO counts of an assignment directory."""
    with optional_client(cluster):
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
