"""Commands that make or check a chunked graph: ``validate``, ``synth``, ``chunk``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from dgl_chunked import SynthSpec, chunk_graph, validate_chunked_graph, write_synthetic_graph
from dgl_chunked.cli.context import chosen_client, optional_client
from dgl_chunked.cli.errors import fail, user_errors
from dgl_chunked.cli.flags import GraphLocation, cluster_flags, graph_flags
from dgl_chunked.cli.options import add_options, storage_option
from dgl_chunked.cli.sizing import InputSize, input_bytes
from dgl_chunked.cluster import ClusterOptions

__all__ = ["chunk_command", "synth_command", "validate_command"]

F = TypeVar("F", bound=Callable[..., Any])


@click.command("validate")
@user_errors
@graph_flags(opened=False)
@cluster_flags
def validate_command(graph: GraphLocation, cluster: ClusterOptions, storage_options: dict[str, Any] | None) -> None:
    """Check metadata.json and every chunk file; print a summary or every problem."""
    in_dir = graph.in_dir
    with optional_client(cluster):
        report = validate_chunked_graph(
            in_dir,
            metadata_filename=graph.metadata_filename,
            storage_options=storage_options,
            task_bytes=graph.task_bytes,
        )
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not report.ok:
        click.echo(f"{len(report.problems)} problem(s) found in {in_dir}:")
        for problem in report.problems:
            click.echo(f"  - {problem}")
        fail(f"{in_dir} is not a valid chunked graph", report.problems)
    click.echo(report.summary_table())
    click.echo(f"ok: {in_dir} is a valid chunked graph")


def _synth_options(func: F) -> F:
    """The ``synth`` flags (kept apart so the command stays short)."""
    choice = click.Choice
    options = [
        click.option("--out-dir", required=True, help="Output directory (or URL)."),
        click.option("--preset", type=choice(["homogeneous", "heterogeneous"]),
                     default="homogeneous", show_default=True),
        click.option("--num-nodes", type=int, default=10_000, show_default=True,
                     help="homogeneous preset"),
        click.option("--num-edges", type=int, default=100_000, show_default=True,
                     help="homogeneous preset"),
        click.option("--feat-dim", type=int, default=16, show_default=True,
                     help="homogeneous preset"),
        click.option("--scale", type=int, default=1, show_default=True,
                     help="heterogeneous preset: multiplies every count"),
        click.option("--distribution", type=choice(["uniform", "powerlaw"]), default="uniform",
                     show_default=True),
        click.option("--num-chunks", type=click.IntRange(min=1), default=2, show_default=True,
                     help="Files per edge type, and node chunks per node type."),
        click.option("--num-feature-chunks", type=click.IntRange(min=1), default=None,
                     help="Files per feature (default: --num-chunks)."),
        click.option("--edge-format", type=choice(["csv", "parquet"]), default="csv",
                     show_default=True),
        click.option("--feature-format", type=choice(["numpy", "parquet"]), default="numpy",
                     show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--overwrite", is_flag=True, help="Replace an existing output directory."),
    ]  # fmt: skip
    return add_options(func, options)


@click.command("synth")
@user_errors
@_synth_options
@cluster_flags
@storage_option
def synth_command(
    out_dir: str, preset: str, num_chunks: int, overwrite: bool, cluster: ClusterOptions,
    storage_options: dict[str, Any] | None, **kw: Any,
) -> None:  # fmt: skip
    """Write a synthetic graph in the Chunked Graph Format."""
    sizes = {k: kw.pop(k) for k in ("num_nodes", "num_edges", "feat_dim", "scale")}
    if preset == "homogeneous":
        n, m, dim = sizes["num_nodes"], sizes["num_edges"], sizes["feat_dim"]
        spec = SynthSpec.homogeneous(n, m, feat_dim=dim, num_chunks=num_chunks, **kw)
    else:
        chunks = {"num_node_chunks": num_chunks, "num_edge_chunks": num_chunks}
        spec = SynthSpec.heterogeneous(sizes["scale"], **chunks, **kw)
    start = time.perf_counter()
    with optional_client(cluster):
        meta = write_synthetic_graph(out_dir, spec, overwrite=overwrite, storage_options=storage_options)
    click.echo(
        f"wrote {meta.graph_name!r} to {out_dir}: {sum(meta.num_nodes_per_type)} nodes, "
        f"{sum(meta.num_edges_per_type or ())} edges in {time.perf_counter() - start:.2f} s"
    )


def _raw_size(spec_path: str) -> InputSize:
    """Bytes of the raw files a spec names (a bad spec fails here with chunk's own error line)."""
    from dgl_chunked.chunk.spec import read_spec

    return InputSize(input_bytes(read_spec(spec_path).input_paths()), "raw input")


@click.command("chunk")
@user_errors
@click.option(
    "--spec",
    "spec_path",
    required=True,
    metavar="SPEC.{json,yaml}",
    help="Raw-input spec (format: see the dgl_chunked.chunk docstring / README).",
)
@click.option("--out-dir", required=True, help="Chunked graph directory to write (or URL).")
@click.option(
    "--num-chunks",
    type=click.IntRange(min=1),
    required=True,
    help="Output chunks per type (memory per task is about one chunk).",
)
@click.option(
    "--num-buckets",
    type=click.IntRange(min=1),
    default=None,
    help="Hash buckets of the key join and dedup (default: --num-chunks).",
)
@click.option("--edge-format", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option(
    "--staging-dir",
    default=None,
    help="Folder to create the scratch in, as DIR/dglc-chunk-staging-<token> (default OUT/_staging).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing output directory.")
@cluster_flags
def chunk_command(
    spec_path: str,
    out_dir: str,
    num_chunks: int,
    num_buckets: int | None,
    edge_format: str,
    staging_dir: str | None,
    overwrite: bool,
    cluster: ClusterOptions,
) -> None:
    """Turn raw arrays (NPY, CSV/TSV, Parquet) described by a spec into a chunked graph."""
    start = time.perf_counter()
    with chosen_client(cluster, "chunk", lambda: _raw_size(spec_path)):
        meta = chunk_graph(
            spec_path,
            out_dir,
            num_chunks=num_chunks,
            num_buckets=num_buckets,
            edge_format=edge_format,
            staging_dir=staging_dir,
            overwrite=overwrite,
        )
    click.echo(
        f"wrote {meta.graph_name!r} to {out_dir}: {sum(meta.num_nodes_per_type)} nodes in "
        f"{len(meta.node_types)} types, {sum(meta.num_edges_per_type or ())} edges in "
        f"{len(meta.edge_types)} types, in {time.perf_counter() - start:.2f} s"
    )
