"""The ParMETIS round trip: ``parmetis-export`` (its input files) and ``parmetis-import``
(its output -> an assignment directory)."""

from __future__ import annotations

from typing import Any

import click

from dgl_chunked import ChunkedGraph
from dgl_chunked.cli.context import optional_client
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.flags import NUM_PARTS, cluster_flags, graph_flags, split_list
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.parmetis import export_parmetis, import_parmetis

__all__ = ["parmetis_export_command", "parmetis_import_command"]


@click.command("parmetis-export")
@user_errors
@graph_flags()
@click.option("--out-dir", required=True, help="Directory for <name>_nodes.txt, <name>_edges.txt, <name>_stats.txt.")
@click.option("--name", default=None, help="File name prefix (default: the graph name).")
@click.option(
    "--balance-masks",
    default=None,
    metavar="MASK,...",
    help="Bool node features (train_mask,...) that get a ParMETIS weight column each.",
)
@click.option(
    "--dedup",
    type=click.Choice(["unordered", "ordered"]),
    default="unordered",
    show_default=True,
    help="unordered: u->v and v->u are one edge (ParMETIS symmetrises); ordered: only repeats.",
)
@click.option("--overwrite", is_flag=True, help="Replace existing files of the same name.")
@cluster_flags
def parmetis_export_command(
    graph: ChunkedGraph,
    out_dir: str,
    name: str | None,
    balance_masks: str | None,
    dedup: str,
    overwrite: bool,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Write ParMETIS input files (pm_dglpart) without self loops or duplicate edges."""
    masks = list(split_list(balance_masks) or ())
    with optional_client(cluster):
        files = export_parmetis(
            graph,
            out_dir,
            name=name,
            balance_masks=masks,
            dedup=dedup,  # type: ignore[arg-type]
            overwrite=overwrite,
            storage_options=storage_options,
        )
    click.echo(
        f"wrote {files.nodes_path} ({files.num_nodes} nodes, {files.num_node_weights} weights), "
        f"{files.edges_path} ({files.num_edges} edges), {files.stats_path}"
    )
    click.echo(
        f"left out of the edges file: {files.self_loops_dropped} self loop(s), "
        f"{files.duplicates_dropped} duplicate ({dedup}) edge(s); dispatch still writes them"
    )


@click.command("parmetis-import")
@user_errors
@graph_flags()
@click.option(
    "--parmetis-output",
    required=True,
    multiple=True,
    metavar="PATH",
    help="ParMETIS output: p<rank>-<name>_nodes.txt or <orig_nid> <part_id> files, a directory "
    "of rank files, or a glob; repeat the flag or list more paths after it.",
)
@click.argument("more_outputs", nargs=-1, metavar="[PATH]...")
@click.option("--out-dir", required=True, help="Assignment directory to write (<ntype>.txt, partition_meta.json).")
@NUM_PARTS
@click.option("--name", default=None, help="Only read p<rank>-NAME_nodes.txt from directories.")
@click.option(
    "--form",
    type=click.Choice(["auto", "nodes", "gnid"]),
    default="auto",
    show_default=True,
    help="nodes: <ntype_id> <weights...> <type_nid> <part_id>; gnid: <orig_nid> <part_id>.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing assignment in --out-dir.")
@cluster_flags
def parmetis_import_command(
    graph: ChunkedGraph,
    parmetis_output: tuple[str, ...],
    more_outputs: tuple[str, ...],
    out_dir: str,
    num_parts: int,
    name: str | None,
    form: str,
    overwrite: bool,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Turn ParMETIS output into an assignment directory that dispatch (and DGL) accept.

    --in-dir is the chunked graph that was exported.
    """
    with optional_client(cluster):
        meta = import_parmetis(
            [*parmetis_output, *more_outputs],
            graph,
            out_dir,
            num_parts=num_parts,
            name=name,
            form=form,  # type: ignore[arg-type]
            overwrite=overwrite,
            storage_options=storage_options,
        )
    click.echo(f"assignment written to {out_dir} ({meta.num_parts} partitions, algo_name {meta.algo_name!r})")
