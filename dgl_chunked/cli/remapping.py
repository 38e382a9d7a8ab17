"""Commands between the partitions and the user's own IDs: ``remap`` and ``lookup``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from dgl_chunked import ChunkedGraph
from dgl_chunked.cli.context import chosen_client
from dgl_chunked.cli.errors import user_errors
from dgl_chunked.cli.flags import cluster_flags, graph_flags
from dgl_chunked.cli.options import add_options, parse_size
from dgl_chunked.cli.sizing import InputSize, input_bytes
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.lookup import lookup_ids
from dgl_chunked.remap import ResultFile, ResultSource, remap_results

__all__ = ["lookup_command", "parse_files", "remap_command"]

_START = re.compile(r"^(.*)@(\d+)$")
F = TypeVar("F", bound=Callable[..., Any])


def _split_type(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise click.BadParameter(f"expected TYPE=FILES, found {text!r}", param_hint=flag)
    return name, value


def _split(text: str, sep: str, limit: int = -1) -> list[list[tuple[str, bool]]]:
    """``text`` as (character, escaped) pairs, split at unescaped ``sep`` (at most ``limit`` times)."""
    parts: list[list[tuple[str, bool]]] = [[]]
    chars = iter(text)
    for c in chars:
        if c == "\\":
            nxt = next(chars, None)
            if nxt is None:
                raise click.BadParameter(f"{text!r} ends with a lone backslash; write \\\\ for a backslash")
            parts[-1].append((nxt, True))
        elif c == sep and (limit < 0 or len(parts) <= limit):
            parts.append([])
        else:
            parts[-1].append((c, False))
    return parts


def _text(chars: list[tuple[str, bool]]) -> str:
    return "".join(c for c, _ in chars)


def parse_files(value: str) -> list[ResultFile]:
    """``FILES`` of ``--result``/``--ids``: comma-separated ``PATH[#KEY][@START]`` entries (globs allowed).

    A backslash takes the next character literally: ``\\,``, ``\\#`` and ``\\@`` put
    those characters into a path or key (``\\\\`` is a backslash). Quote the argument
    for the shell.

    Examples
    --------
    >>> parse_files("pred-0.pt#pred@0,pred-1.pt#pred@500")
    [ResultFile(path='pred-0.pt', key='pred', start=0), ResultFile(path='pred-1.pt', key='pred', start=500)]
    >>> parse_files(r"run\\#3/a\\,b.npy")
    [ResultFile(path='run#3/a,b.npy', key=None, start=None)]
    """
    out = []
    for entry in _split(value, ","):
        start = None
        at = max((i for i, (c, escaped) in enumerate(entry) if c == "@" and not escaped), default=-1)
        if at >= 0 and at + 1 < len(entry) and all(c.isdigit() and not e for c, e in entry[at + 1 :]):
            start = int(_text(entry[at + 1 :]))
            entry = entry[:at]
        fields = [_text(part) for part in _split_chars(entry, "#")]
        path, key = fields[0], fields[1] if len(fields) > 1 else ""
        out.append(ResultFile(path, key or None, start))
    return out


def _split_chars(chars: list[tuple[str, bool]], sep: str) -> list[list[tuple[str, bool]]]:
    """Split already-unescaped characters at the first unescaped ``sep``."""
    for i, (c, escaped) in enumerate(chars):
        if c == sep and not escaped:
            return [chars[:i], chars[i + 1 :]]
    return [chars]


def _sources(
    results: tuple[str, ...], ids: tuple[str, ...], names: tuple[str, ...], original: bool = False
) -> dict[str, ResultSource]:
    files = {}
    for text in results:
        name, value = _split_type(text, "--result")
        if name in files:
            raise click.BadParameter(f"type {name!r} is given twice", param_hint="--result")
        files[name] = parse_files(value)
    id_files = {}
    for text in ids:
        name, value = _split_type(text, "--ids")
        if name not in files:
            raise click.BadParameter(f"type {name!r} has no --result", param_hint="--ids")
        if value.startswith("#"):  # the IDs are another entry of the same files
            id_files[name] = [ResultFile(f.path, value[1:]) for f in files[name]]
        else:
            id_files[name] = parse_files(value)
    labels = dict(_split_type(text, "--name") for text in names)
    return {
        name: ResultSource(
            tuple(f),
            tuple(id_files[name]) if name in id_files else None,
            labels.get(name),
            original=original and name in id_files,
        )
        for name, f in files.items()
    }


def _rename(text: str) -> tuple[str, str]:
    old, sep, new = text.partition(",")
    if not sep or not old or not new or "," in new:
        raise click.BadParameter(f"expected OLD,NEW (e.g. nid,~id), found {text!r}", param_hint="--column-names")
    return old, new


def _where(func: F) -> F:
    """``--partitions`` and ``--out-dir``, first in ``--help``."""
    return add_options(
        func,
        [
            click.option(
                "--partitions", required=True, metavar="OUT", help="The partition output (directory or metadata.json)."
            ),
            click.option("--out-dir", required=True, help="Output directory (new, empty, or ours with --overwrite)."),
        ],
    )


def _mapping_and_cluster(func: F) -> F:
    """Where the ID map may come from (the graph of ``--in-dir``, ``--partitions-dir``,
    ``--id-mappings``), ``--overwrite``, and where the tasks run."""
    options = [
        graph_flags(required=False),
        click.option(
            "--partitions-dir", default=None, metavar="ASSIGN", help="The assignment the partitions were made from."
        ),
        click.option(
            "--id-mappings",
            default=None,
            metavar="DIR",
            help="GSProcessing's raw_id_mappings directory (<ntype>/ Parquet files of orig, new): the node types' "
            "user IDs. Default: the --in-dir graph's keys or raw_id_mappings, else the partitions' raw_id_mappings.",
        ),
        click.option("--overwrite", is_flag=True, help="Replace an earlier output of this command in --out-dir."),
        cluster_flags,
    ]
    return add_options(func, options)


@click.command("remap")
@user_errors
@_where
@click.option(
    "--result",
    "results",
    multiple=True,
    required=True,
    metavar="TYPE=FILES",
    help="Results of a node type, canonical edge type or relation, indexed by DGL's type-wise new IDs. FILES: "
    "one file, a glob, or a comma-separated list of PATH[#KEY][@START] (KEY: tensor, column or Zarr array; "
    "START: first new ID of a row-range file; a backslash takes the next character literally: \\, \\# \\@ \\\\). "
    "Several files are row ranges per rank, in natural order.",
)
@click.option(
    "--ids",
    multiple=True,
    metavar="TYPE=FILES",
    help="Make TYPE's results (new ID, row) pairs: FILES hold the new IDs, aligned with the result files; "
    "TYPE=#KEY reads them from entry KEY of the same files (e.g. account=#ids for torch.save dicts).",
)
@click.option(
    "--id-space",
    type=click.Choice(["new", "original"]),
    default="new",
    show_default=True,
    help="What the --ids files hold: DGL's new IDs (DistGraph's), or original type-wise IDs, as GraphStorm's "
    "trainers save predict_nids-*.pt / embed_nids-*.pt.",
)
@click.option("--name", "names", multiple=True, metavar="TYPE=NAME", help="Name of TYPE's value column or array.")
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(["npy", "zarr", "parquet", "csv"]),
    default="npy",
    show_default=True,
    help="npy / zarr: arrays in original-ID order; parquet / csv (GraphStorm's remap_result formats): tables of "
    "<value>, nid (the user's ID, where known), type_nid, one file per block; edge types: <value>, src_nid, "
    "dst_nid (the endpoints' user IDs, else original IDs; needs --in-dir), type_eid.",
)
@click.option(
    "--column-names",
    "column_names",
    multiple=True,
    metavar="OLD,NEW",
    help="Rename a column of parquet / csv output, e.g. nid,~id (repeatable; as GraphStorm's --column-names).",
)
@click.option("--output-delimiter", default=",", show_default=True, help="Delimiter of csv output.")
@click.option("--block-size", default="64MiB", show_default=True, help="Result bytes per task.")
@_mapping_and_cluster
def remap_command(
    partitions: str,
    out_dir: str,
    results: tuple[str, ...],
    ids: tuple[str, ...],
    id_space: str,
    names: tuple[str, ...],
    graph: ChunkedGraph | None,
    partitions_dir: str | None,
    id_mappings: str | None,
    fmt: str,
    column_names: tuple[str, ...],
    output_delimiter: str,
    block_size: str,
    overwrite: bool,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Put results indexed by DGL's new IDs back in original-ID order, with the original keys.

    Writes per type OUT/nodes/<ntype>.npy (row i = original ID i), a Zarr group, or a
    Parquet / CSV dataset of the value, the user's ID (nid: node types chunked with a key
    or with GSProcessing's raw_id_mappings) and the original ID (an edge's: its endpoints'
    user IDs, src_nid and dst_nid, from the --in-dir graph's edge files), then OUT/remap.json.
    The optional --in-dir graph gives the node types' keys, the edges' endpoints (parquet /
    csv output), and with --partitions-dir the ID map when the partitions have no
    orig_nids.dgl / orig_eids.dgl.
    """
    sources = _sources(results, ids, names, id_space == "original")
    renames = dict(_rename(text) for text in column_names)
    result_paths = [f.path for s in sources.values() for f in (*s.files, *(s.ids or ()))]
    with chosen_client(cluster, "remap", lambda: InputSize(input_bytes(result_paths), "results")):
        result = remap_results(
            partitions,
            sources,
            out_dir,
            graph=graph,
            assignment=partitions_dir,
            format=fmt,  # type: ignore[arg-type]
            id_mappings=id_mappings,
            column_names=renames,
            delimiter=output_delimiter,
            block_bytes=parse_size(block_size, "--block-size"),
            overwrite=overwrite,
            storage_options=storage_options,
        )
    for key, t in result.types.items():
        files = ", ".join(t.files.values())
        users = f"; user IDs: {t.user_ids}" if t.user_ids else ""
        click.echo(f"{key}: {t.present} of {t.rows} rows -> {files} (mapping: {t.mapping}{users})")
    click.echo(f"wrote {result.manifest}")


@click.command("lookup")
@user_errors
@_where
@click.option(
    "--queries",
    "queries",
    multiple=True,
    required=True,
    metavar="FILE",
    help="Parquet, CSV/TSV or .npy file(s) (globs allowed) holding original keys or IDs.",
)
@click.option("--type", "type_", default=None, help="Node type of the queries (default: the only one).")
@click.option("--column", default=None, help="The key or ID column: name, or 0-based index (default: the first).")
@click.option(
    "--label", "labels", multiple=True, help="A column to carry along, aligned with the new IDs (repeatable)."
)
@click.option(
    "--by",
    type=click.Choice(["key", "id"]),
    default=None,
    help="The type's keys (the chunked graph's node_keys or GSProcessing's raw_id_mappings), or original "
    "type-wise IDs (default: key when the type has keys).",
)
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(["npy", "pt"]),
    default=("npy", "pt"),
    show_default=True,
    help="Output formats (repeatable).",
)
@click.option("--delimiter", default=",", show_default=True, help="CSV delimiter (tab for .tsv files).")
@click.option("--no-header", is_flag=True, help="CSV files have no header line.")
@_mapping_and_cluster
def lookup_command(
    partitions: str,
    out_dir: str,
    queries: tuple[str, ...],
    type_: str | None,
    column: str | None,
    labels: tuple[str, ...],
    by: str | None,
    graph: ChunkedGraph | None,
    partitions_dir: str | None,
    id_mappings: str | None,
    formats: tuple[str, ...],
    delimiter: str,
    no_header: bool,
    overwrite: bool,
    cluster: ClusterOptions,
    storage_options: dict[str, Any] | None,
) -> None:
    """Turn original keys or IDs (and label columns) into the new IDs each partition's trainer loads.

    Writes OUT/part<p>/<type>.nids.npy (DGL's type-wise new IDs, ascending), .orig_nids.npy,
    one .npy per --label, and <type>.pt holding all of them for torch.load, then OUT/lookup.json.
    The optional --in-dir graph gives the node types' keys, and with --partitions-dir the
    ID map when the partitions have no orig_nids.dgl / orig_eids.dgl.
    """
    if any(q.lower().endswith(".tsv") for q in queries) and delimiter == ",":
        delimiter = "\t"
    col: Any = int(column) if column is not None and column.isdigit() else column
    with chosen_client(cluster, "lookup", lambda: InputSize(input_bytes(queries), "queries")):
        result = lookup_ids(
            partitions,
            list(queries),
            out_dir,
            type=type_,
            column=col,
            labels=[int(c) if c.isdigit() else c for c in labels],
            by=by,  # type: ignore[arg-type]
            graph=graph,
            assignment=partitions_dir,
            id_mappings=id_mappings,
            formats=formats,
            delimiter=delimiter,
            header=not no_header,
            overwrite=overwrite,
            storage_options=storage_options,
        )
    for p, (rows, files) in enumerate(zip(result.rows, result.files, strict=True)):
        click.echo(f"part{p}: {rows} {result.type} rows -> {', '.join(files.values())}")
    click.echo(f"wrote {result.manifest}")
