"""Flag groups: the one route from flags to typed options.

A flag group declares its flags once (names, types, defaults, help texts) and turns
their values into one typed value that the command receives in their place:

- :func:`graph_flags`: ``--in-dir``, ``--metadata-filename``, ``--storage-options``,
  ``--task-size`` -> ``graph``, the opened :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph`
  (``storage_options`` is passed on too: the command's outputs use it);
- :func:`cluster_flags`: ``--scheduler``, ``--workers``, ``--threads-per-worker``,
  ``--memory-limit`` -> ``cluster``, a :class:`~dgl_chunked.cluster.ClusterOptions`;
- :func:`partition_flags`: ``--method``, ``--seed``, ``--balance-ntypes``,
  ``--balance-edges``, ``--max-memory`` -> ``partition_options``, a
  :class:`~dgl_chunked.partition.PartitionOptions` (``method`` is passed on);
- :func:`dispatch_flags`: the flags of DGL's ``dispatch_data.py``, staging, HALO and
  the GraphBolt group (:data:`GRAPHBOLT_FLAGS` -> a
  :class:`~dgl_chunked.io.graphbolt.csc.GraphBoltOptions` or None, nested as
  ``DispatchOptions.graphbolt``) -> ``options``, a
  :class:`~dgl_chunked.dispatch.DispatchOptions`; it reads ``cluster`` (its memory
  limit bounds dispatch's tables) and ``method`` (the config's ``part_method``), so it
  goes below :func:`cluster_flags` and :func:`partition_flags`.

A group's conversion runs when the command is called, inside
:func:`~dgl_chunked.cli.errors.user_errors` (which goes right under ``click.command``),
so a bad value gives the command's one ``error:`` line. Flags one command alone takes,
and flags whose meaning is the command's own (``--out-dir``, ``--overwrite``), stay on
the command.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

import dgl_chunked
from dgl_chunked import ChunkedGraph, DispatchOptions, GraphBoltOptions, open_chunked_graph
from dgl_chunked.cli.options import add_options, parse_size, storage_option, task_size_option
from dgl_chunked.cluster import ClusterOptions, parse_cluster_options

__all__ = [
    "GRAPHBOLT_FLAGS",
    "GRAPH_FORMATS",
    "GraphLocation",
    "NODE_ID_FEATURES",
    "NUM_PARTS",
    "NUM_TRAINERS",
    "STORE_EIDS",
    "STORE_INNER_EDGE",
    "STORE_INNER_NODE",
    "cluster_flags",
    "dispatch_flags",
    "flag_group",
    "graph_flags",
    "partition_flags",
    "split_list",
    "split_lists",
]

F = TypeVar("F", bound=Callable[..., Any])
Option = Callable[[Any], Any]
Build = Callable[[dict[str, Any], Mapping[str, Any]], Any]


def _names(options: Sequence[Option]) -> list[str]:
    """The parameter names the click ``options`` give their values under."""
    probe = add_options(lambda: None, options)
    return [p.name for p in probe.__click_params__]  # type: ignore[attr-defined]


def flag_group(target: str, options: Sequence[Option], build: Build, *, passed: Sequence[str] = ()) -> Callable[[F], F]:
    """A decorator adding ``options`` and calling the command with ``target=build(flags, rest)``.

    ``flags`` are the values of ``options`` (taken out of the command's arguments, except
    those named in ``passed``, which the command also receives); ``rest`` are the other
    arguments, including the values earlier (outer) groups built.
    """
    names = _names(options)

    def decorator(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kw: Any) -> Any:
            flags = {n: kw[n] if n in passed else kw.pop(n) for n in names}
            kw[target] = build(flags, kw)
            return func(*args, **kw)

        return add_options(wrapper, options)  # type: ignore[return-value]

    return decorator


def split_list(text: str | None) -> tuple[str, ...] | None:
    """``"a, b,,c"`` -> ``("a", "b", "c")``; None or ``""`` (the flag not given) -> None."""
    return tuple(s.strip() for s in text.split(",") if s.strip()) if text else None


def split_lists(texts: Iterable[str]) -> tuple[str, ...]:
    """The names of a repeatable ``A,B`` flag: ``("a,b", "c,")`` -> ``("a", "b", "c")`` (an
    empty or blank name is dropped; the others are kept as written)."""
    return tuple(s for v in texts for s in v.split(",") if s.strip())


# --- the graph ---------------------------------------------------------------------


@dataclass(frozen=True)
class GraphLocation:
    """Where the chunked graph is, as ``--in-dir`` and its companions say."""

    in_dir: str
    metadata_filename: str
    storage_options: dict[str, Any] | None
    task_bytes: str | None

    def open(self) -> ChunkedGraph:
        """The lazy :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` (reads ``metadata.json`` only)."""
        return open_chunked_graph(
            self.in_dir,
            metadata_filename=self.metadata_filename,
            storage_options=self.storage_options,
            task_bytes=self.task_bytes,
        )


def graph_flags(*, required: bool = True, opened: bool = True) -> Callable[[F], F]:
    """``--in-dir`` and its companions -> ``graph``: the opened graph, or its
    :class:`GraphLocation` (``opened=False``); None when ``--in-dir`` is optional and absent."""
    options = [
        click.option(
            "--in-dir",
            required=required,
            default=None,
            help="The chunked graph: a directory holding its metadata.json (local path or fsspec URL).",
        ),
        click.option(
            "--metadata-filename", default="metadata.json", show_default=True, help="The metadata file in --in-dir."
        ),
        storage_option,
        task_size_option,
    ]

    def build(flags: dict[str, Any], rest: Mapping[str, Any]) -> Any:
        if flags["in_dir"] is None:
            return None
        where = GraphLocation(flags["in_dir"], flags["metadata_filename"], flags["storage_options"], flags["task_size"])
        return where.open() if opened else where

    return flag_group("graph", options, build, passed=("storage_options",))


# --- the cluster -------------------------------------------------------------------


def _cluster(flags: dict[str, Any], rest: Mapping[str, Any]) -> ClusterOptions:
    return parse_cluster_options(**flags)


cluster_flags = flag_group(
    "cluster",
    [
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            default=None,
            help="Run on this existing Dask scheduler (tcp://host:8786 or a scheduler file) instead of this machine.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            default=None,
            help="Run on a new LocalCluster of N worker processes. Without --scheduler, --workers or "
            "--memory-limit, run, dispatch, partition, remap, lookup and chunk choose local threads or a "
            "worker process per CPU from the machine and their input's size (the choice and its reason "
            "are logged at INFO); the other commands run on local threads.",
        ),
        click.option(
            "--threads-per-worker",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Threads of each LocalCluster worker.",
        ),
        click.option(
            "--memory-limit",
            metavar="SIZE",
            default=None,
            help="LocalCluster memory limit per worker, e.g. 2GiB; Dask spills beyond it "
            "(dispatch and run also bound their lookup and HALO tables by it).",
        ),
    ],
    _cluster,
)
"""The cluster flags -> ``cluster``: a :class:`~dgl_chunked.cluster.ClusterOptions`."""


# --- partitioning ------------------------------------------------------------------

NUM_PARTS = click.option(
    "--num-parts", type=click.IntRange(min=1), required=True, help="Number of partitions (stored as given)."
)
NUM_TRAINERS = click.option(
    "--num-trainers-per-machine",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="As DGL's partition_graph: partition per trainer, store node data trainer_id, "
    "coalesce each machine's trainers into one partition.",
)


def _partition_options(flags: dict[str, Any], rest: Mapping[str, Any]) -> Any:
    max_memory = flags["max_memory"]
    return dgl_chunked.PartitionOptions(  # looked up here: `dispatch` never loads the partitioners
        seed=flags["seed"],
        balance_ntypes=split_list(flags["balance_ntypes"]),
        balance_edges=flags["balance_edges"],
        max_memory=parse_size(max_memory, "--max-memory") if max_memory else None,
    )


partition_flags = flag_group(
    "partition_options",
    [
        click.option(
            "--method",
            default="random",
            show_default=True,
            help="random (seeded hash), range (contiguous ID ranges per node type, GraphStorm's), metis "
            "(pymetis, in memory), kaminpar (KaMinPar, in memory) or lp (multilevel + label propagation, "
            "out of core).",
        ),
        click.option(
            "--seed",
            type=click.IntRange(min=0, max=2**64 - 1),
            default=0,
            show_default=True,
            help="Seed of the method's random choices: same seed, same assignment.",
        ),
        click.option(
            "--balance-ntypes",
            default=None,
            metavar="NAME,...",
            help="Node types and bool node features (train_mask,val_mask,...) to balance (metis, lp).",
        ),
        click.option("--balance-edges", is_flag=True, help="Also balance owned edges (metis; best effort in lp)."),
        click.option("--max-memory", default=None, metavar="SIZE", help="metis: refuse above this estimate [4GiB]."),
    ],
    _partition_options,
    passed=("method",),
)
"""The partition flags -> ``partition_options``: a :class:`~dgl_chunked.partition.PartitionOptions`."""


# --- dispatch ----------------------------------------------------------------------

GRAPH_FORMATS = click.option(
    "--graph-formats",
    default=None,
    metavar="coo,csc,csr",
    help="Sparse formats of graph.dgl (dispatch's default: coo, as DGL). GraphBolt: with coo among them "
    "its graph also stores _dgl2gb_eid and _gb_dst_id, as DGL >= 2.3 (csc alone: DGL 2.1's file; "
    "convert-graphbolt's default: coo when graph.dgl stores COO).",
)
NODE_ID_FEATURES = click.option(
    "--node-id-features",
    multiple=True,
    metavar="TYPE/FEATURE[=NTYPE],...",
    help="Features whose values are per-type node IDs (GraphStorm's hard negatives): dispatch "
    "translates them to the partitioned graph's per-type IDs, -1 padding kept; verify checks they "
    "were. TYPE is an edge type src:rel:dst (NTYPE defaults to dst) or a node type; 'gsprocessing': "
    "the edge_dst_hard_negative features of GSProcessing's config. Repeatable.",
)
STORE_EIDS = click.option(
    "--store-eids/--no-store-eids",
    default=None,
    help="GraphBolt: store edge _ID (default: yes, as DGL >= 2.3's store_eids=True; "
    "--no-store-eids: DGL 2.1's default).",
)
STORE_INNER_NODE = click.option("--store-inner-node", is_flag=True, help="GraphBolt: also store node inner_node.")
STORE_INNER_EDGE = click.option("--store-inner-edge", is_flag=True, help="GraphBolt: also store edge inner_edge.")

GRAPHBOLT_FLAGS: list[Option] = [
    click.option(
        "--use-graphbolt",
        is_flag=True,
        help="Write GraphBolt's part<i>/fused_csc_sampling_graph.pt instead of graph.dgl "
        "(DGL_DIST_DEBUG set: every field, as DGL's converter stores in debug mode).",
    ),
    STORE_EIDS,
    STORE_INNER_NODE,
    STORE_INNER_EDGE,
    click.option(
        "--graphbolt-sort-memory",
        default="1GiB",
        show_default=True,
        metavar="SIZE",
        help="GraphBolt: memory of a partition writer's sort by destination (about 32 bytes "
        "per edge); larger partitions are sorted in several passes.",
    ),
]
"""The GraphBolt group of :func:`dispatch_flags`, which nests its
:class:`~dgl_chunked.io.graphbolt.csc.GraphBoltOptions` in the
:class:`~dgl_chunked.dispatch.DispatchOptions` (``convert-graphbolt`` shares its ``--store-*`` flags)."""


def _graphbolt_options(flags: dict[str, Any]) -> GraphBoltOptions | None:
    """The GraphBolt group -> :attr:`~dgl_chunked.dispatch.DispatchOptions.graphbolt`: the
    user's :class:`~dgl_chunked.io.graphbolt.csc.GraphBoltOptions`, or None without
    ``--use-graphbolt`` (the run's own facts are filled in by
    :func:`~dgl_chunked.dispatch.options.graphbolt_for_run`)."""
    stores = [f"--{k.replace('_', '-')}" for k in ("store_inner_node", "store_inner_edge") if flags[k]]
    if flags["store_eids"] is not None:
        stores.insert(0, "--store-eids" if flags["store_eids"] else "--no-store-eids")
    if stores and not flags["use_graphbolt"]:
        raise click.UsageError(f"{', '.join(stores)} only apply with --use-graphbolt")
    sort_bytes = max(1, parse_size(flags["graphbolt_sort_memory"], "--graphbolt-sort-memory"))
    if not flags["use_graphbolt"]:
        return None
    return GraphBoltOptions(
        store_eids=flags["store_eids"] is not False,  # DGL >= 2.3's default
        store_inner_node=flags["store_inner_node"],
        store_inner_edge=flags["store_inner_edge"],
        sort_bytes=sort_bytes,
    )


_DISPATCH_FLAGS: list[Option] = [
    click.option("--save-orig-nids", is_flag=True, help="Write part<i>/orig_nids.dgl."),
    click.option("--save-orig-eids", is_flag=True, help="Write part<i>/orig_eids.dgl."),
    GRAPH_FORMATS,
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
        "0 reads the array Zarr chunk by Zarr chunk.",
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
    *GRAPHBOLT_FLAGS,
    NODE_ID_FEATURES,
    click.option("--no-progress", is_flag=True, help="Do not show progress bars."),
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


def _formats(text: str | None) -> tuple[str, ...]:
    """``--graph-formats``: every name given (an empty one is refused by dispatch), else coo."""
    return tuple(f.strip() for f in text.split(",")) if text else ("coo",)


def _dispatch_options(flags: dict[str, Any], rest: Mapping[str, Any]) -> DispatchOptions:
    if flags["dgl_launch"]:
        click.echo(
            "note: --ip-config/--ssh-port/--python-path/--master-port are ignored; "
            "use --scheduler ADDRESS to run on an existing Dask cluster",
            err=True,
        )
    cluster: ClusterOptions = rest["cluster"]
    return DispatchOptions(
        save_orig_nids=flags["save_orig_nids"],
        save_orig_eids=flags["save_orig_eids"],
        graph_formats=_formats(flags["graph_formats"]),
        staging_dir=flags["staging_dir"],
        keep_staging=flags["keep_staging"],
        background_removal=True,  # the command waits for it after closing its cluster (cli.running)
        overwrite=flags["overwrite"],
        progress=not flags["no_progress"],
        part_method=rest.get("method"),
        halo_hops=flags["halo_hops"],
        keep_halo_edges=flags["keep_halo_edges"],
        lookup_cache_bytes=parse_size(flags["lookup_cache"], "--lookup-cache"),
        memory_limit=cluster.memory_limit,
        node_id_features=split_lists(flags["node_id_features"]),
        graphbolt=_graphbolt_options(flags),
    )


dispatch_flags = flag_group("options", _DISPATCH_FLAGS, _dispatch_options)
"""The dispatch flags -> ``options``: a :class:`~dgl_chunked.dispatch.DispatchOptions`
(below :func:`cluster_flags`, whose ``cluster`` it reads)."""
