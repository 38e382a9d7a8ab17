"""``dispatch``: a chunked graph plus a node assignment -> DGL partitions on disk."""

from __future__ import annotations

import fnmatch
import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.array as da

from dgl_chunked._dask import current_client, run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.finalize import (
    PartitionPlan,
    part_dir_name,
    publish_partition,
    tmp_dir_name,
    write_partition,
)
from dgl_chunked.dispatch.ids import IdLayout, layout_ids
from dgl_chunked.dispatch.staging import MISSING, STAGING_FORMAT, Staging
from dgl_chunked.dispatch.tasks import stage_edges_and_features, stage_nodes
from dgl_chunked.errors import EmptyPartitionWarning, OptionError, OutputExistsError, UnsupportedFormatError
from dgl_chunked.io.assignment.directory import open_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.dgl.partition_config import CONFIG_NAME, PartitionConfig, write_partition_config
from dgl_chunked.io.graphbolt.csc import SORT_BYTES, GraphBoltOptions
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import acquire_lease, check_no_overlap, location_token, require_owned
from dgl_chunked.storage.zarr_lookup import clear_lookup_cache

__all__ = ["DispatchOptions", "DispatchResult", "dispatch", "staging_location", "OUTPUT_KIND", "OUTPUT_ENTRIES"]

logger = logging.getLogger(__name__)

GRAPH_FORMATS = ("coo", "csr", "csc")
OUTPUT_KIND = "dispatch"
"""The kind in the output directory's ownership marker (:mod:`dgl_chunked.storage.owned`)."""
STAGING_NAME = "_staging"
OUTPUT_ENTRIES = (CONFIG_NAME, f"{CONFIG_NAME}.tmp-dglc", "part[0-9]*", "_tmp_part[0-9]*", STAGING_NAME)
"""What dispatch writes at the top of its output; ``--overwrite`` refuses anything else."""


@dataclass(frozen=True, kw_only=True)
class DispatchOptions:
    """Options of :func:`dispatch`, named after DGL's ``dispatch_data.py`` flags.

    Parameters
    ----------
    save_orig_nids, save_orig_eids
        Also write ``orig_nids.dgl`` / ``orig_eids.dgl`` per partition.
    graph_formats
        Sparse formats stored in ``graph.dgl``: any of ``"coo"``, ``"csr"``, ``"csc"``.
        DGL stores COO when unset, and so do we.
    staging_dir
        A directory (local path or URL) to create the Zarr staging in, as
        ``staging_dir/dglc-staging-<token>`` (the token names the output); default
        ``OUT/_staging``. Nothing else in ``staging_dir`` is touched.
    keep_staging
        Keep the staging after success (it is removed by default).
    overwrite
        Replace an existing output directory instead of refusing.
    block_rows
        Rows per block of the node-level staged arrays (bounds task memory).
    lookup_cache_bytes
        Per worker process: the most bytes of node-level arrays (new IDs) kept in
        memory for relabelling edges, about 4 bytes per node. A node type whose array
        fits is read once per process; a larger one is read one block at a time per
        edge chunk (slower, memory bounded by ``block_rows``). 0 disables the cache.
    progress
        Show a progress bar per stage.
    part_method
        The partition algorithm's name recorded in the config (default: from the assignment).
    halo_hops, keep_halo_edges
        Like ``partition_graph``'s ``num_hops``: with ``keep_halo_edges`` each graph.dgl
        also holds the in-edges of its HALO nodes up to ``halo_hops`` hops
        (``inner_edge = 0``) and ``part_id`` node data. ``halo_hops > 1`` implies
        ``keep_halo_edges``. The default is the chunked pipeline's: 1 hop, owned edges only.
    use_graphbolt, store_eids, store_inner_node, store_inner_edge
        Write GraphBolt's ``fused_csc_sampling_graph.pt`` per partition instead of
        ``graph.dgl`` (for ``load_partition(..., use_graphbolt=True)``), with the
        optional fields of ``dgl_partition_to_graphbolt``'s flags of the same names.
    graphbolt_sort_bytes
        Memory budget of a partition writer's sort by destination (``--use-graphbolt``);
        larger partitions are sorted in several passes.
    """

    save_orig_nids: bool = False
    save_orig_eids: bool = False
    graph_formats: tuple[str, ...] = ("coo",)
    staging_dir: str | None = None
    keep_staging: bool = False
    overwrite: bool = False
    block_rows: int = 1 << 21
    lookup_cache_bytes: int = 256 << 20
    progress: bool = False
    part_method: str | None = None
    halo_hops: int = 1
    keep_halo_edges: bool = False
    use_graphbolt: bool = False
    store_eids: bool = False
    store_inner_node: bool = False
    store_inner_edge: bool = False
    graphbolt_sort_bytes: int = SORT_BYTES

    def graphbolt(self) -> GraphBoltOptions | None:
        """The GraphBolt writer options, or None for DGL's graph.dgl."""
        if not self.use_graphbolt:
            return None
        return GraphBoltOptions(
            self.store_eids, self.store_inner_node, self.store_inner_edge, self.graphbolt_sort_bytes
        )


@dataclass(frozen=True)
class DispatchResult:
    """What :func:`dispatch` wrote."""

    config_path: str
    config: PartitionConfig
    partitions: list[dict[str, int]] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)


def dispatch(
    graph: ChunkedGraph | PathLike,
    assignment: PathLike | Mapping[str, da.Array],
    out_dir: PathLike,
    *,
    num_parts: int | None = None,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
    extra_node_data: Mapping[str, Mapping[str, da.Array]] | None = None,
) -> DispatchResult:
    """Write DGL distributed partitions of ``graph`` as assigned by ``assignment``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` or the chunked graph directory.
    assignment
        An assignment directory in DGL's layout (``<ntype>.txt`` + ``partition_meta.json``)
        or a mapping ``ntype -> int32 dask array`` (then ``num_parts`` is required).
    out_dir
        Output directory (local or fsspec URL). Gets ``metadata.json`` and ``part<i>/``.
    num_parts
        Number of partitions; read from ``partition_meta.json`` for directories.
    options
        :class:`DispatchOptions`.
    storage_options
        fsspec options for ``out_dir`` and the staging.
    client
        A ``distributed.Client``; default: the current scheduler.
    extra_node_data
        More node data to write into ``node_feat.dgl``, computed rather than read:
        ``{ntype: {name: dask array with one row per node}}`` (e.g. ``trainer_id``).

    Returns
    -------
    DispatchResult
        The config path, the config, and per-partition node/edge counts.

    Notes
    -----
    Three computes run: owner counts (planning), staging, and one writer task per
    partition. Output bytes depend only on the input and the assignment, never on
    the input chunking or the number of workers.
    """
    opts = options or DispatchOptions()
    _check_formats(opts.graph_formats)
    if opts.halo_hops < 1:
        raise OptionError(f"halo_hops must be >= 1, found {opts.halo_hops}")
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    parts, num_parts, method = _resolve_assignment(graph, assignment, num_parts, storage_options)
    out = str(out_dir)
    staging_root = staging_location(out, opts.staging_dir, storage_options)
    inputs = graph.input_locations()
    if not isinstance(assignment, Mapping):
        inputs["assignment directory"] = str(assignment)
    check_no_overlap({"--out-dir": out, "staging directory": staging_root}, inputs, storage_options=storage_options)
    with acquire_lease(out, OUTPUT_KIND, storage_options=storage_options) as lease:
        _prepare_out_dir(out, opts.overwrite, storage_options)
        fingerprint = _fingerprint(graph, assignment, parts, num_parts, opts, storage_options, extra_node_data or {})
        staging = Staging(
            staging_root,
            storage_options,
            token=run_token(fingerprint, out, staging_root),  # names every task of this run
            lookup_cache_bytes=opts.lookup_cache_bytes,
        )
        if staging.start(fingerprint):
            logger.info("resuming from the staging in %s", staging.root)
        runner = _Runner(client=client, progress=opts.progress)
        plan = _stage(graph, parts, num_parts, staging, opts, runner, extra_node_data or {}, out, storage_options)
        writes = [
            dask.delayed(_write_partition_once, pure=False)(
                plan, p, dask_key_name=(f"dglc-write-partition-{staging.token}", p)
            )
            for p in range(num_parts)
        ]
        summaries = list(runner.compute(writes, "write partitions"))
        lease.check()  # never publish over a run that took this output over
        for p in range(num_parts):  # only now: a failed run leaves no part<i>/ that looks complete
            publish_partition(out, p, storage_options)
        meta = graph.metadata
        config = PartitionConfig(
            graph_name=meta.graph_name,
            num_parts=num_parts,
            node_map=plan.node_layout.to_map(meta.node_types),
            edge_map=plan.edge_layout.to_map(plan.etypes),
            ntypes={t: i for i, t in enumerate(meta.node_types)},
            etypes={e: i for i, e in enumerate(plan.etypes)},
            part_method=opts.part_method or method,
            halo_hops=opts.halo_hops,
            graphbolt=opts.use_graphbolt,
        )
        path = write_partition_config(out, config, storage_options=storage_options)
        if not opts.keep_staging:
            staging.wipe()
    return DispatchResult(config_path=path, config=config, partitions=summaries, stage_seconds=dict(runner.seconds))


def staging_location(out: str, staging_dir: str | None, storage_options: StorageOptions = None) -> str:
    """Where dispatch stages: ``OUT/_staging``, or ``DIR/dglc-staging-<token>`` for ``--staging-dir DIR``.

    The token names the output, so a rerun into the same output finds (and resumes)
    its staging, and runs into different outputs can share ``DIR``. ``DIR`` itself
    is never marked, emptied or removed.
    """
    if staging_dir is None:
        return fs.join(out, STAGING_NAME)
    token = location_token(out, storage_options=storage_options)
    return fs.join(str(staging_dir), f"dglc-staging-{token}")


def _stage(
    graph: ChunkedGraph,
    parts: Mapping[str, da.Array],
    num_parts: int,
    staging: Staging,
    opts: DispatchOptions,
    runner: _Runner,
    extra_node_data: Mapping[str, Mapping[str, da.Array]],
    out: str,
    storage_options: StorageOptions,
) -> PartitionPlan:
    """Stage nodes, edges and features; return the plan of the partition writers."""
    meta = graph.metadata
    node_layout, node_starts, node_counts = stage_nodes(graph, parts, num_parts, staging, opts.block_rows, runner)
    _warn_empty(meta.node_data, meta.node_types, node_layout, "node")
    try:
        edge_counts, node_feats, edge_feats = stage_edges_and_features(
            graph,
            staging,
            node_layout,
            num_parts,
            runner,
            extra_node_data=extra_node_data,
            block_rows=opts.block_rows,
        )
    finally:  # only the edge staging uses the node-ID cache: free the workers' memory
        runner.run_everywhere(clear_lookup_cache)
    edge_layout = layout_ids(edge_counts)
    etypes = tuple(e.name for e in meta.edge_types)
    _warn_empty(meta.edge_data, etypes, edge_layout, "edge")
    return PartitionPlan(
        staging=staging,
        out_dir=out,
        storage_options=storage_options,
        ntypes=tuple(meta.node_types),
        etypes=etypes,
        node_layout=node_layout,
        edge_layout=edge_layout,
        node_block_starts=node_starts,
        node_block_counts=node_counts,
        edge_chunk_counts=tuple(edge_counts),
        node_features=node_feats,
        edge_features=edge_feats,
        graph_formats=tuple(f for f in GRAPH_FORMATS if f in opts.graph_formats),
        save_orig_nids=opts.save_orig_nids,
        save_orig_eids=opts.save_orig_eids,
        halo_hops=opts.halo_hops,
        keep_halo_edges=opts.keep_halo_edges or opts.halo_hops > 1,
        graphbolt=opts.graphbolt(),
    )


def _check_formats(formats: Sequence[str]) -> None:
    unknown = [f for f in formats if f not in GRAPH_FORMATS]
    if unknown or not formats:
        raise UnsupportedFormatError(
            f"graph formats {list(formats)!r}: expected a non-empty subset of {list(GRAPH_FORMATS)}"
        )


def _resolve_assignment(
    graph: ChunkedGraph,
    assignment: PathLike | Mapping[str, da.Array],
    num_parts: int | None,
    storage_options: StorageOptions,
) -> tuple[dict[str, da.Array], int, str]:
    if isinstance(assignment, Mapping):
        if num_parts is None:
            raise OptionError("num_parts is required when the assignment is given as arrays")
        return dict(assignment), num_parts, "custom"
    meta, parts = open_assignment(assignment, graph.metadata, num_parts=num_parts, storage_options=storage_options)
    return parts, meta.num_parts, meta.method or meta.algo_name  # method: the real one, from our sidecar


def _prepare_out_dir(out: str, overwrite: bool, storage_options: StorageOptions) -> None:
    """Refuse a complete output unless overwriting; keep a crashed run's parts for resume.

    ``out`` is already ours (marked, leased). An output is complete when its
    partition config exists (it is written last). Partition directories without a
    config belong to an interrupted run: the staging fingerprint decides later
    whether they are reused or rewritten. Overwriting removes only the entries
    dispatch writes, and refuses (before removing anything) when ``out`` holds others.
    """
    config = fs.join(out, CONFIG_NAME)
    if not fs.exists(config, storage_options):
        return
    if not overwrite:
        raise OutputExistsError(
            f"output directory {out!r} already holds a partitioned graph ({CONFIG_NAME}); "
            "pass overwrite (--overwrite) to replace it or choose another --out-dir"
        )
    require_owned(out, expected=OUTPUT_ENTRIES, verb="overwritten", storage_options=storage_options)
    filesystem, inner = fs.filesystem(out, storage_options)
    _, config_inner = fs.filesystem(config, storage_options)
    filesystem.rm(config_inner)  # first, so the output never looks complete meanwhile
    for path in filesystem.ls(inner, detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name != STAGING_NAME and any(fnmatch.fnmatchcase(name, p) for p in OUTPUT_ENTRIES):
            filesystem.rm(path, recursive=True)


def _write_partition_once(plan: PartitionPlan, part: int) -> dict[str, int]:
    """Write a partition unless a resumed run already finished it."""
    key = f"write/{part}"
    done = plan.staging.done_value(key)
    if done is not MISSING and any(
        fs.exists(fs.join(plan.out_dir, name), plan.storage_options)
        for name in (part_dir_name(part), tmp_dir_name(part))
    ):
        return dict(done)
    summary = write_partition(plan, part)
    plan.staging.mark_done(key, summary)
    return summary


def _fingerprint(
    graph: ChunkedGraph,
    assignment: Any,
    parts: Mapping[str, da.Array],
    num_parts: int,
    opts: DispatchOptions,
    storage_options: StorageOptions,
    extra_node_data: Mapping[str, Mapping[str, da.Array]],
) -> str:
    """Identify the input files, the assignment and the options: a resumed run must match."""
    from dask.base import tokenize

    files = [ref.path for etype in graph.metadata.edges for ref in graph.edge_chunks(etype)]
    for kind, data in (("node", graph.metadata.node_data), ("edge", graph.metadata.edge_data)):
        for type_name, feats in data.items():
            for feat in feats:
                refs = (
                    graph.node_feature_chunks(type_name, feat)
                    if kind == "node"
                    else graph.edge_feature_chunks(type_name, feat)
                )
                files += [r.path for r in refs]
    if isinstance(assignment, Mapping):
        assign_token = tokenize(*(parts[t] for t in graph.metadata.node_types))
    else:
        names = [*(f"{t}.txt" for t in graph.metadata.node_types), "partition_meta.json"]
        assign_token = tokenize(*(_stat(fs.join(str(assignment), n), storage_options) for n in names))
    option_token = tokenize(
        opts.save_orig_nids,
        opts.save_orig_eids,
        opts.graph_formats,
        opts.block_rows,
        opts.part_method,
        opts.halo_hops,
        opts.keep_halo_edges,
        opts.graphbolt(),
        sorted((t, n, tokenize(a)) for t, d in extra_node_data.items() for n, a in d.items()),
    )
    return str(
        tokenize(
            STAGING_FORMAT,
            graph.metadata.fingerprint(),
            [_stat(f, storage_options) for f in files],
            assign_token,
            num_parts,
            option_token,
        )
    )


def _stat(path: str, storage_options: StorageOptions) -> tuple[str, Any, Any]:
    """(path, size, mtime) of a file: a cheap change detector (one stat per file)."""
    filesystem, inner = fs.filesystem(path, storage_options)
    try:
        info = filesystem.info(inner)
    except FileNotFoundError:
        return (path, None, None)
    mtime = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    return (path, info.get("size"), str(mtime))


class _Runner:
    """Runs one stage's tasks on the given client or the current scheduler."""

    def __init__(self, *, client: Any, progress: bool) -> None:
        self.client = client
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def compute(self, tasks: Sequence[Any], stage: str) -> tuple[Any, ...]:
        logger.info("dispatch stage: %s (%d tasks)", stage, len(tasks))
        start = time.perf_counter()
        try:
            return self._compute(tasks, stage)
        finally:
            self.seconds[stage] = time.perf_counter() - start

    def run_everywhere(self, func: Callable[[], Any]) -> None:
        """Call ``func()`` in every worker process (and here, for in-process schedulers)."""
        func()
        client = current_client(self.client)
        if client is not None:
            client.run(func)

    def _compute(self, tasks: Sequence[Any], stage: str) -> tuple[Any, ...]:
        """Results in the order of ``tasks``, matched to them by task key."""
        if not tasks:
            return ()
        by_key = {task.key: task for task in tasks}
        if len(by_key) != len(tasks):  # a key named twice would silently share one result
            raise RuntimeError(f"dispatch stage {stage!r}: {len(tasks) - len(by_key)} task key(s) repeat")
        client = current_client(self.client)
        if client is not None:
            futures = client.compute(list(by_key.values()))  # a future's key is its task's
            if self.progress:
                from distributed import progress

                print(f"[dgl-chunked] {stage}")
                progress(futures)
                print()
            results = {f.key: value for f, value in zip(futures, client.gather(futures), strict=True)}
        else:
            from dask.diagnostics import ProgressBar

            with ProgressBar() if self.progress else nullcontext():
                (results,) = dask.compute(by_key)
        return tuple(results[task.key] for task in tasks)


def _warn_empty(data: Mapping[str, Mapping[str, Any]], names: Sequence[str], layout: IdLayout, kind: str) -> None:
    sizes = layout.sizes()
    for t, name in enumerate(names):
        if not data.get(name):
            continue
        empty = [p for p in range(layout.num_parts) if sizes[p, t] == 0]
        if empty:
            warnings.warn(
                f"partition(s) {empty} own no {kind} of type {name!r}, which has features "
                f"{sorted(data[name])}; DistGraphServer cannot host zero-row feature tensors "
                "(spec section 3.5): use fewer partitions or an assignment that gives every "
                "partition at least one such " + kind,
                EmptyPartitionWarning,
                stacklevel=3,
            )
