"""The ``dgl-chunked`` command line.

Each command parses its flags, builds options, connects to or creates a Dask
cluster (only here), calls one public API function and prints a summary. A
:class:`~dgl_chunked.errors.DglChunkedError` becomes one line on stderr and exit
code 1 (2 for usage errors); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from dgl_chunked import __version__
from dgl_chunked.errors import DglChunkedError

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger(__name__)


# Filesystem errors that are about the environment (space, limits, permissions,
# paths), not bugs: the CLI reports them in one line, like input errors.
_SPACE_ERRNOS = {
    errno.ENOSPC: "free space on that device or choose another --out-dir / --staging-dir",
    errno.EFBIG: "the file exceeds the file-size limit (ulimit -f) or the filesystem's maximum "
    "file size; raise the limit or write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted; free space or choose another directory",
    errno.EROFS: "the filesystem is read-only; choose another directory",
}
_PATH_ERRNOS = {
    errno.EACCES: "check the permissions of that path",
    errno.EPERM: "check the permissions of that path",
    errno.ENOTDIR: "a component of that path is a file, not a directory; fix the path",
    errno.EISDIR: "a directory is in the way of a file; fix the path",
    errno.EEXIST: "something is in the way of that path; remove it or choose another path",
    errno.ENOENT: "check the path (and the bucket, for URLs)",
}


def _environment_error(err: BaseException) -> OSError | None:
    """The environment OSError that caused ``err`` (itself, or one in its cause chain:
    Dask wraps a shuffle's full disk in a RuntimeError), else None."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (
            isinstance(current, OSError)
            and not isinstance(current, DglChunkedError)
            and (current.errno in _SPACE_ERRNOS or (current.errno in _PATH_ERRNOS and current.filename))
        ):
            return current
        current = current.__cause__ or current.__context__
    return None


def _os_error_message(err: OSError, kwargs: dict[str, Any]) -> str | None:
    """One line for an environment OSError (naming the file), or None for other errors."""
    code = err.errno
    if code in _SPACE_ERRNOS:
        fix = _SPACE_ERRNOS[code]
    elif code in _PATH_ERRNOS and err.filename is not None:
        fix = _PATH_ERRNOS[code]
    else:
        return None
    name = errno.errorcode.get(code, str(code))
    if err.filename is not None:
        where = f"could not write {err.filename}" if code in _SPACE_ERRNOS else f"{err.filename}"
    else:  # e.g. inside zarr or a Dask shuffle, which do not say which file
        out = kwargs.get("out_dir")
        where = (
            f"a write failed under {out}, its staging or Dask's local directory"
            if out
            else "a write failed (possibly in Dask's local directory)"
        )
    return f"{where}: {err.strerror or err} ({name}); {fix}"


def user_errors(func: F) -> F:
    """Turn DglChunkedError (and environment OSErrors such as a full disk) into a
    one-line message and exit code 1; ``--log-level DEBUG`` also logs the traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DglChunkedError as err:
            logger.debug("user error", exc_info=True)
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        except Exception as err:  # noqa: BLE001 - re-raised unless it is the environment's fault
            cause = _environment_error(err)
            if cause is None:
                raise
            logger.debug("filesystem error", exc_info=True)
            click.echo(f"error: {_os_error_message(cause, kwargs)}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def _fail(what: str, problems: list[str]) -> NoReturn:
    """The one ``error:`` line closing a list of problems (it repeats the first), then exit 1."""
    more = f" (and {len(problems) - 1} more, listed above)" if len(problems) > 1 else ""
    click.echo(f"error: {what}: {problems[0]}{more}", err=True)
    sys.exit(1)  # main() maps SystemExit to the exit code


def _parse_storage_options(ctx: Any, param: Any, value: str | None) -> dict[str, Any] | None:
    """``--storage-options '{"endpoint_url": "http://..."}'`` -> dict (click callback)."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"expected a JSON object, found {value!r} ({err})") from err
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"expected a JSON object, found {type(parsed).__name__} {value!r}")
    return parsed


def _storage_option(func: F) -> F:
    """The ``--storage-options JSON`` flag: fsspec options for every path and URL."""
    return click.option(
        "--storage-options",
        "storage_options",
        metavar="JSON",
        default=None,
        callback=_parse_storage_options,
        help='fsspec options for URLs, e.g. \'{"endpoint_url": "http://127.0.0.1:9000"}\' '
        "(s3fs also reads AWS_* and FSSPEC_S3_* environment variables).",
    )(func)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dgl-chunked")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
    default="WARNING",
    show_default=True,
)
def cli(log_level: str) -> None:
    """Partition Chunked Graph Format data into DGL distributed partitions, on Dask."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")


# --- commands: validate, synth (io) -------------------------------------------


def _io_cluster(scheduler: str | None, workers: int | None) -> Any:
    """A Dask client when ``--scheduler`` or ``--workers`` is given; else the local
    threaded scheduler (a no-op context)."""
    import contextlib

    if not scheduler and not workers:
        return contextlib.nullcontext()
    import distributed  # noqa: F401  (its import sets the "distributed" logger to INFO)

    from dgl_chunked.cluster import dask_client

    logging.getLogger("distributed").setLevel(logging.getLogger().level)  # honour --log-level
    return dask_client(scheduler, workers=workers)


_SCHEDULER_HELP = "Existing Dask scheduler address or file (default: local threads)."


@cli.command("validate")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@click.option("--scheduler", metavar="ADDRESS", default=None, help=_SCHEDULER_HELP)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Use a LocalCluster.")
@_storage_option
@user_errors
def validate_command(
    in_dir: str,
    metadata_filename: str,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
) -> None:
    """Check metadata.json and every chunk file; print a summary or every problem."""
    from dgl_chunked.io.chunked.validate import validate_chunked_graph

    with _io_cluster(scheduler, workers):
        report = validate_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=storage_options)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not report.ok:
        click.echo(f"{len(report.problems)} problem(s) found in {in_dir}:")
        for problem in report.problems:
            click.echo(f"  - {problem}")
        _fail(f"{in_dir} is not a valid chunked graph", report.problems)
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
        click.option("--scheduler", metavar="ADDRESS", default=None, help=_SCHEDULER_HELP),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Use a LocalCluster."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


@cli.command("synth")
@_synth_options
@_storage_option
@user_errors
def synth_command(
    out_dir: str, preset: str, num_chunks: int, overwrite: bool, scheduler: str | None,
    workers: int | None, storage_options: dict[str, Any] | None, **kw: Any,
) -> None:  # fmt: skip
    """Write a synthetic graph in the Chunked Graph Format."""
    import time

    from dgl_chunked.synth import SynthSpec, write_synthetic_graph

    sizes = {k: kw.pop(k) for k in ("num_nodes", "num_edges", "feat_dim", "scale")}
    if preset == "homogeneous":
        n, m, dim = sizes["num_nodes"], sizes["num_edges"], sizes["feat_dim"]
        spec = SynthSpec.homogeneous(n, m, feat_dim=dim, num_chunks=num_chunks, **kw)
    else:
        chunks = {"num_node_chunks": num_chunks, "num_edge_chunks": num_chunks}
        spec = SynthSpec.heterogeneous(sizes["scale"], **chunks, **kw)
    start = time.perf_counter()
    with _io_cluster(scheduler, workers):
        meta = write_synthetic_graph(out_dir, spec, overwrite=overwrite, storage_options=storage_options)
    click.echo(
        f"wrote {meta.graph_name!r} to {out_dir}: {sum(meta.num_nodes_per_type)} nodes, "
        f"{sum(meta.num_edges_per_type or ())} edges in {time.perf_counter() - start:.2f} s"
    )


# --- commands: inspect (DGL binary files) -------------------------------------


@cli.command("inspect")
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
@_storage_option
@user_errors
def inspect_command(file: str, values: int, annotate: bool, storage_options: dict[str, Any] | None) -> None:
    """Show what a DGL .dgl file (tensor dict or graph file) or GraphBolt .pt file holds.

    FILE is a local path or an fsspec URL. Tensor dicts list key, dtype and shape;
    graph files list node/edge types and counts, stored formats, idtype, ndata/edata
    and labels.
    """
    from dgl_chunked.io.dgl.binary import annotate_dgl_file, describe_dgl_file, format_annotation
    from dgl_chunked.io.graphbolt.graph_file import describe_graphbolt_file, is_torch_zip
    from dgl_chunked.storage.fs import filesystem

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


# --- commands: partition, report (assignment) ---------------------------------


def _assignment_cluster(scheduler: str | None, workers: int | None) -> Any:
    """A Dask client when ``--scheduler``/``--workers`` is given, else the default scheduler."""
    import contextlib

    if not scheduler and not workers:
        return contextlib.nullcontext()
    from dgl_chunked.cluster import dask_client

    return dask_client(scheduler, workers=workers)


def _assignment_cluster_options(func: F) -> F:
    func = click.option(
        "--workers", type=click.IntRange(min=1), default=None, help="Run on a new LocalCluster with N worker processes."
    )(func)
    return click.option(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="Run on this existing Dask scheduler (address or scheduler file).",
    )(func)


def _scratch_option(default: str) -> Callable[[F], F]:
    return click.option(
        "--scratch-dir",
        default=None,
        metavar="DIR",
        help=f"Where intermediate data goes, in a dglc-* folder removed afterwards (default: {default}); "
        "on a cluster without a shared disk, a URL every worker reaches (s3://...).",
    )


@contextlib.contextmanager
def _owned_scratch(
    parent: str,
    kind: str,
    storage_options: dict[str, Any] | None,
    *,
    outputs: dict[str, str],
    inputs: dict[str, str],
) -> Any:
    """A marked scratch folder ``parent/dglc-<kind>-<token>``, removed afterwards; yields
    ``(path, fsspec options for it)``. ``outputs`` (the scratch parent among them) are
    checked against ``inputs`` first, so a refused command creates nothing."""
    from dask.base import tokenize

    from dgl_chunked.storage.fs import is_url, join
    from dgl_chunked.storage.owned import check_no_overlap, remove_owned, scratch_dir

    token = tokenize(parent, kind)[:16]
    where = join(parent, f"dglc-{kind}-{token}")  # what is written; ``parent`` is only created if missing
    check_no_overlap({**outputs, "scratch directory": where}, inputs, storage_options=storage_options)
    so = storage_options if is_url(parent) else None
    path = scratch_dir(parent, kind, token, storage_options=so)
    try:
        yield path, so
    finally:
        remove_owned(path, storage_options=so)


@cli.command("partition")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
@click.option("--out-dir", required=True, help="Assignment directory to write (<ntype>.txt, partition_meta.json).")
@click.option("--num-parts", type=click.IntRange(min=1), required=True)
@click.option(
    "--method",
    default="random",
    show_default=True,
    help="random (seeded hash), metis (pymetis, in memory) or lp (streaming + label propagation, out of core).",
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
@_scratch_option("--out-dir")
@_assignment_cluster_options
@_storage_option
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
) -> None:
    """Assign every node to a partition; write ASSIGN/ and ASSIGN/report.json."""
    from dgl_chunked.io.assignment.directory import open_assignment, retract_assignment, write_assignment
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.partition import assign_partitions, compute_partition_report
    from dgl_chunked.storage.fs import join

    so = storage_options
    balance = [b.strip() for b in balance_ntypes.split(",") if b.strip()] if balance_ntypes else None
    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=so)
    with (
        _assignment_cluster(scheduler, workers),
        _owned_scratch(
            scratch_dir or out_dir,
            "partition",
            so,
            outputs={"--out-dir": out_dir},
            inputs=graph.input_locations(),
        ) as (scratch, scratch_so),
    ):
        parts = assign_partitions(
            graph,
            num_parts,
            method=method,
            seed=seed,
            balance_ntypes=balance,
            balance_edges=balance_edges,
            max_memory=_parse_size(max_memory, "--max-memory") if max_memory else None,
            scratch_dir=scratch,
            storage_options=scratch_so,
        )
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


@cli.command("report")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
@click.option("--partitions-dir", required=True, help="Assignment directory (DGL's or ours).")
@click.option("--json", "json_path", default=None, metavar="OUT", help="Also write the report as JSON.")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@_scratch_option("--partitions-dir")
@_assignment_cluster_options
@_storage_option
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
) -> None:
    """Print edge cut, balance and HALO counts of an assignment directory."""
    from dgl_chunked.io.assignment.directory import open_assignment
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.partition import compute_partition_report

    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=storage_options)
    with _assignment_cluster(scheduler, workers):
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


# --- commands: parmetis-export, parmetis-import (ParMETIS round trip) ---------


@cli.command("parmetis-export")
@click.option("--in-dir", required=True, help="Chunked graph directory (or URL).")
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
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@_assignment_cluster_options
@_storage_option
@user_errors
def parmetis_export_command(
    in_dir: str,
    out_dir: str,
    name: str | None,
    balance_masks: str | None,
    dedup: str,
    overwrite: bool,
    metadata_filename: str,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
) -> None:
    """Write ParMETIS input files (pm_dglpart) without self loops or duplicate edges."""
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.parmetis import export_parmetis

    masks = [m.strip() for m in balance_masks.split(",") if m.strip()] if balance_masks else []
    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=storage_options)
    with _assignment_cluster(scheduler, workers):
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


@cli.command("parmetis-import")
@click.option("--in-dir", required=True, help="The chunked graph that was exported (or URL).")
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
@click.option("--num-parts", type=click.IntRange(min=1), required=True, help="Stored as given, never inferred.")
@click.option("--name", default=None, help="Only read p<rank>-NAME_nodes.txt from directories.")
@click.option(
    "--form",
    type=click.Choice(["auto", "nodes", "gnid"]),
    default="auto",
    show_default=True,
    help="nodes: <ntype_id> <weights...> <type_nid> <part_id>; gnid: <orig_nid> <part_id>.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing assignment in --out-dir.")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@_assignment_cluster_options
@_storage_option
@user_errors
def parmetis_import_command(
    in_dir: str,
    parmetis_output: tuple[str, ...],
    more_outputs: tuple[str, ...],
    out_dir: str,
    num_parts: int,
    name: str | None,
    form: str,
    overwrite: bool,
    metadata_filename: str,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
) -> None:
    """Turn ParMETIS output into an assignment directory that dispatch (and DGL) accept."""
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.parmetis import import_parmetis

    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=storage_options)
    with _assignment_cluster(scheduler, workers):
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


# --- commands: chunk (raw inputs -> chunked graph) ----------------------------


@cli.command("chunk")
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
@click.option("--scheduler", metavar="ADDRESS", default=None, help=_SCHEDULER_HELP)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Use a LocalCluster.")
@click.option(
    "--memory-limit",
    metavar="SIZE",
    default=None,
    help="LocalCluster memory limit per worker, e.g. 2GiB (with --workers).",
)
@user_errors
def chunk_command(
    spec_path: str,
    out_dir: str,
    num_chunks: int,
    num_buckets: int | None,
    edge_format: str,
    staging_dir: str | None,
    overwrite: bool,
    scheduler: str | None,
    workers: int | None,
    memory_limit: str | None,
) -> None:
    """Turn raw arrays (NPY, CSV/TSV, Parquet) described by a spec into a chunked graph."""
    import contextlib
    import time

    from dgl_chunked.chunk import chunk_graph
    from dgl_chunked.cluster import dask_client

    use_cluster = bool(scheduler or workers)
    start = time.perf_counter()
    with (
        dask_client(scheduler, workers=workers, memory_limit=memory_limit) if use_cluster else contextlib.nullcontext()
    ):
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


# --- commands: dispatch, run, verify ------------------------------------------


def _cluster_options(func: F) -> F:
    """Flags shared by every command that runs on a Dask cluster."""
    options = [
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            help="Use this existing Dask scheduler (tcp://host:8786 or a scheduler file) "
            "instead of starting a LocalCluster.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            default=None,
            help="LocalCluster worker processes (default: number of CPUs).",
        ),
        click.option("--threads-per-worker", type=click.IntRange(min=1), default=1, show_default=True),
        click.option(
            "--memory-limit",
            metavar="SIZE",
            default=None,
            help="LocalCluster memory limit per worker, e.g. 2GiB; Dask spills beyond it.",
        ),
        click.option("--no-progress", is_flag=True, help="Do not show progress bars."),
    ]
    for option in reversed(options):
        func = option(func)
    return _storage_option(func)


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
            help="Per worker: node-ID arrays up to this size are kept in memory to "
            "relabel edges (about 4 bytes per node); 0 reads them block by block.",
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
            help="Write GraphBolt's part<i>/fused_csc_sampling_graph.pt instead of graph.dgl.",
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
    for option in reversed(options):
        func = option(func)
    return func


def _make_dispatch_options(kw: dict[str, Any], part_method: str | None = None) -> Any:
    from dgl_chunked.dispatch import DispatchOptions

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
        lookup_cache_bytes=_parse_size(kw["lookup_cache"], "--lookup-cache"),
        use_graphbolt=kw["use_graphbolt"],
        store_eids=kw["store_eids"],
        store_inner_node=kw["store_inner_node"],
        store_inner_edge=kw["store_inner_edge"],
        graphbolt_sort_bytes=max(1, _parse_size(kw["graphbolt_sort_memory"], "--graphbolt-sort-memory")),
    )


def _parse_size(text: str, flag: str) -> int:
    from dask.utils import parse_bytes

    try:
        return int(parse_bytes(text))
    except (ValueError, TypeError) as err:
        raise click.BadParameter(f"{text!r} is not a size such as 256MiB or 0", param_hint=flag) from err


def _quiet_task_errors() -> None:
    """On a worker of the CLI's own LocalCluster: do not log failed tasks (their
    exception reaches the client, which reports it once)."""
    logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def _client(kw: dict[str, Any]) -> Any:
    import distributed  # noqa: F401  (its import sets the "distributed" logger to INFO)

    from dgl_chunked.cluster import dask_client

    level = logging.getLogger().level
    logging.getLogger("distributed").setLevel(level)  # honour --log-level
    with dask_client(
        kw["scheduler"],
        workers=kw["workers"],
        threads_per_worker=kw["threads_per_worker"],
        memory_limit=kw["memory_limit"],
    ) as client:
        if not kw["scheduler"] and level >= logging.WARNING:  # our workers share our stderr
            client.run(_quiet_task_errors)
        yield client


def _print_result(result: Any) -> None:
    config = result.config
    click.echo(
        f"wrote {config.num_parts} partition(s) of {config.graph_name!r}: "
        f"{config.num_nodes} nodes, {config.num_edges} edges"
    )
    for p, summary in enumerate(result.partitions):
        click.echo(
            f"  part{p}: {summary['inner_nodes']} inner nodes, "
            f"{summary['halo_nodes']} HALO nodes, {summary['edges']} edges"
        )
    click.echo(f"partition config: {result.config_path}")


@cli.command("dispatch")
@click.option("--in-dir", required=True, help="Chunked graph directory (holds metadata.json).")
@click.option(
    "--partitions-dir", required=True, help="Assignment directory: <ntype>.txt per node type + partition_meta.json."
)
@_dispatch_options
@_cluster_options
@user_errors
def dispatch_command(in_dir: str, partitions_dir: str, **kw: Any) -> None:
    """Write DGL partitions of a chunked graph as an assignment directory says."""
    from dgl_chunked.dispatch import dispatch
    from dgl_chunked.io.chunked.graph import open_chunked_graph

    so = kw["storage_options"]
    graph = open_chunked_graph(in_dir, metadata_filename=kw["metadata_filename"], storage_options=so)
    options = _make_dispatch_options(kw)
    with _client(kw) as client:
        click.echo(f"dashboard: {client.dashboard_link}")
        result = dispatch(graph, partitions_dir, kw["out_dir"], options=options, client=client, storage_options=so)
    _print_result(result)


@cli.command("run")
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
@_scratch_option("--out-dir")
@_dispatch_options
@_cluster_options
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
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.pipeline import run

    so = kw["storage_options"]
    graph = open_chunked_graph(in_dir, metadata_filename=kw["metadata_filename"], storage_options=so)
    options = _make_dispatch_options(kw, part_method=method)
    balance = tuple(balance_ntypes.split(",")) if balance_ntypes else None
    with _client(kw) as client:
        click.echo(f"dashboard: {client.dashboard_link}")
        result = run(
            graph,
            kw["out_dir"],
            num_parts=num_parts,
            method=method,
            seed=seed,
            balance_ntypes=balance,
            balance_edges=balance_edges,
            partitions_dir=partitions_dir,
            options=options,
            client=client,
            storage_options=so,
            num_trainers_per_machine=num_trainers_per_machine,
            scratch_dir=scratch_dir,
        )
    _print_result(result)


@cli.command("convert-graphbolt")
@click.argument("out_dir", metavar="OUT")
@click.option("--store-eids", is_flag=True, help="Also store edge _ID (DGL's flag).")
@click.option("--store-inner-node", is_flag=True, help="Also store node inner_node.")
@click.option("--store-inner-edge", is_flag=True, help="Also store edge inner_edge.")
@click.option("--overwrite", is_flag=True, help="Replace fused_csc_sampling_graph.pt files that exist.")
@click.option("--scheduler", metavar="ADDRESS", default=None, help=_SCHEDULER_HELP)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Use a LocalCluster.")
@_storage_option
@user_errors
def convert_graphbolt_command(
    out_dir: str,
    store_eids: bool,
    store_inner_node: bool,
    store_inner_edge: bool,
    overwrite: bool,
    scheduler: str | None,
    workers: int | None,
    storage_options: dict[str, Any] | None,
) -> None:
    """Add GraphBolt graphs to finished partitions (ours or DGL's), without torch.

    Writes part<i>/fused_csc_sampling_graph.pt next to each graph.dgl (one task per
    partition) and adds part_graph_graphbolt and int64 node/edge_map_dtype to the
    config, as dgl.distributed.dgl_partition_to_graphbolt does. An output dgl_chunked did not
    write keeps its config: the GraphBolt one is written beside it as <name>_graphbolt.json.
    """
    from dgl_chunked import convert_to_graphbolt

    with _io_cluster(scheduler, workers):
        path = convert_to_graphbolt(
            out_dir,
            store_eids=store_eids,
            store_inner_node=store_inner_node,
            store_inner_edge=store_inner_edge,
            overwrite=overwrite,
            storage_options=storage_options,
        )
    click.echo(f"partition config: {path} (load with use_graphbolt=True)")


@cli.command("verify")
@click.option("--in-dir", required=True, help="The chunked input graph directory.")
@click.option("--out-dir", required=True, help="The partition output directory.")
@click.option("--metadata-filename", default="metadata.json", show_default=True)
@click.option("--scheduler", metavar="ADDRESS", default=None, help=_SCHEDULER_HELP)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Use a LocalCluster.")
@_scratch_option("--out-dir")
@_storage_option
@user_errors
def verify_command(
    in_dir: str,
    out_dir: str,
    metadata_filename: str,
    scheduler: str | None,
    workers: int | None,
    scratch_dir: str | None,
    storage_options: dict[str, Any] | None,
) -> None:
    """Check a finished output against its input: every node, edge and feature row, out of core."""
    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.verify import verify_partitions

    graph = open_chunked_graph(in_dir, metadata_filename=metadata_filename, storage_options=storage_options)
    with _io_cluster(scheduler, workers):
        report = verify_partitions(graph, out_dir, storage_options=storage_options, scratch_dir=scratch_dir or out_dir)
    if not report.ok:
        for problem in report.problems:
            click.echo(f"problem: {problem}", err=True)
        _fail(f"{out_dir} does not match {in_dir}", report.problems)
    checked = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(report.checked.items()))
    click.echo(f"ok: {checked} checked against {in_dir}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        rv = cli.main(args=argv, prog_name="dgl-chunked", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except SystemExit as exc:
        return int(exc.code or 0)
    return int(rv or 0)
