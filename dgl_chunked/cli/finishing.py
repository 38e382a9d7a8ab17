"""Commands on finished outputs: ``inspect``, ``verify``, ``convert-graphbolt``."""

from __future__ import annotations

from typing import Any

import click

from dgl_chunked import convert_to_graphbolt, verify_partitions
from dgl_chunked.cli.context import optional_client
from dgl_chunked.cli.errors import fail, user_errors
from dgl_chunked.cli.flags import (
    GRAPH_FORMATS,
    NODE_ID_FEATURES,
    STORE_EIDS,
    STORE_INNER_EDGE,
    STORE_INNER_NODE,
    GraphLocation,
    cluster_flags,
    graph_flags,
    split_lists,
)
from dgl_chunked.cli.options import scratch_option, storage_option
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.io.dgl import annotate_dgl_file, describe_dgl_file, format_annotation
from dgl_chunked.io.graphbolt import describe_graphbolt_file, is_torch_zip
from dgl_chunked.storage.fs import filesystem

__all__ = ["convert_graphbolt_command", "inspect_command", "verify_command"]


@click.command("inspect")
@user_errors
@click.argument("file", metavar="FILE")
@click.option(
    "--values",
    "values",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also print the first N values of every array.",
)
@click.option("--annotate", is_flag=True, help="Print every field with its byte offset and size instead.")
@storage_option
def inspect_command(file: str, values: int, annotate: bool, storage_options: dict[str, Any] | None) -> None:
    """Show what a DGL .dgl file (tensor dict or graph file) or GraphBolt .pt file holds.

    FILE is a local path or an fsspec URL. Tensor dicts list key, dtype and shape;
    graph files list node/edge types and counts, stored formats, idtype, ndata/edata
    and labels.
    """
    if is_torch_zip(file, storage_options=storage_options):  # a torch.save file: GraphBolt's graph
        if annotate:
            raise click.UsageError("--annotate is for .dgl files; GraphBolt .pt files support --values")
        click.echo(describe_graphbolt_file(file, values=values, storage_options=storage_options))
        return
    if annotate:
        fs, inner = filesystem(file, storage_options)
        rows = annotate_dgl_file(file, storage_options=storage_options)
        click.echo(format_annotation(rows, int(fs.size(inner))), nl=False)
    else:
        click.echo(describe_dgl_file(file, values=values, storage_options=storage_options), nl=False)


@click.command("verify")
@user_errors
@graph_flags(opened=False)
@click.option("--out-dir", required=True, help="The partition output directory.")
@NODE_ID_FEATURES
@scratch_option("--out-dir")
@cluster_flags
def verify_command(
    graph: GraphLocation,
    out_dir: str,
    node_id_features: tuple[str, ...],
    scratch_dir: str | None,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Check a finished output against its input: every node, edge and feature row, out of core."""
    in_dir, chunked = graph.in_dir, graph.open()
    with optional_client(cluster):
        report = verify_partitions(
            chunked,
            out_dir,
            storage_options=storage_options,
            scratch_dir=scratch_dir or out_dir,
            node_id_features=list(split_lists(node_id_features)),
        )
    if not report.ok:
        for problem in report.problems:
            click.echo(f"problem: {problem}", err=True)
        fail(f"{out_dir} does not match {in_dir}", report.problems)
    click.echo(f"ok: {report.checked.summary()} checked against {in_dir}")


@click.command("convert-graphbolt")
@user_errors
@click.argument("out_dir", metavar="OUT")
@STORE_EIDS
@STORE_INNER_NODE
@STORE_INNER_EDGE
@GRAPH_FORMATS
@click.option(
    "--graphbolt-dir",
    default=None,
    metavar="DIR",
    help="Write the GraphBolt partitions and their config into this new folder, leaving OUT as it is "
    "(the layout DGL's main branch loads: no graph.dgl beside the .pt).",
)
@click.option("--overwrite", is_flag=True, help="Replace fused_csc_sampling_graph.pt files that exist.")
@cluster_flags
@storage_option
def convert_graphbolt_command(
    out_dir: str,
    store_eids: bool | None,
    store_inner_node: bool,
    store_inner_edge: bool,
    graph_formats: str | None,
    graphbolt_dir: str | None,
    overwrite: bool,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Add GraphBolt graphs to finished partitions (ours or DGL's), without torch.

    Writes part<i>/fused_csc_sampling_graph.pt next to each graph.dgl (one task per
    partition) and adds part_graph_graphbolt and int64 node/edge_map_dtype to the
    config, as dgl.distributed.dgl_partition_to_graphbolt does (DGL 2.3 / 2.4 defaults:
    edge _ID, _dgl2gb_eid and _gb_dst_id stored; DGL 2.1's file: --no-store-eids
    --graph-formats csc). An output dgl_chunked did not write keeps its config: the
    GraphBolt one is written beside it as <name>_graphbolt.json. With --graphbolt-dir the
    GraphBolt partitions go into a new folder instead. Type IDs come from the config's
    values. With DGL_DIST_DEBUG set (to anything), every field of the partition graphs is
    stored, as DGL's converter does in debug mode.
    """
    formats = [f.strip() for f in graph_formats.split(",")] if graph_formats else None
    with optional_client(cluster):
        path = convert_to_graphbolt(
            out_dir,
            store_eids=store_eids is not False,  # DGL >= 2.3's default
            store_inner_node=store_inner_node,
            store_inner_edge=store_inner_edge,
            graph_formats=formats,
            graphbolt_dir=graphbolt_dir,
            overwrite=overwrite,
            storage_options=storage_options,
        )
    click.echo(f"partition config: {path} (load with use_graphbolt=True)")
