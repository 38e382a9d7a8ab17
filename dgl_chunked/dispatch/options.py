"""The options of :func:`~dgl_chunked.dispatch.dispatch` and their checks.

The GraphBolt writer's options are nested, as the user gives them
(:attr:`DispatchOptions.graphbolt`, a :class:`~dgl_chunked.io.graphbolt.csc.GraphBoltOptions`
or None); :func:`graphbolt_for_run` is the one place that completes them with the facts
of a run (``wide_index``, ``store_all_fields``, ``graph_formats``) before they reach the
writer and the run's fingerprint.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, replace

from dgl_chunked._typing import parse_memory_limit
from dgl_chunked.errors import OptionError, UnsupportedFormatError
from dgl_chunked.io.graphbolt.csc import GraphBoltOptions, dgl_debug_mode

__all__ = [
    "DispatchOptions",
    "GRAPH_FORMATS",
    "HALO_TABLE_BYTES",
    "BUDGET_SHARE",
    "check_formats",
    "graphbolt_for_run",
    "parse_memory_limit",
]

GRAPH_FORMATS = ("coo", "csr", "csc")
HALO_TABLE_BYTES = 64 << 20
"""Default budget of a partition writer's HALO bitmap (0.19 byte per node ID: 358M nodes)."""
BUDGET_SHARE = 8
"""With a memory limit, the node-ID cache and the HALO tables each get 1/8 of it."""


@dataclass(frozen=True, kw_only=True)
class DispatchOptions:
    """Options of :func:`dispatch`, named after DGL's ``dispatch_data.py`` flags.

    Parameters
    ----------
    save_orig_nids, save_orig_eids
        Also write ``orig_nids.dgl`` / ``orig_eids.dgl`` per partition.
    graph_formats
        Sparse formats stored in ``graph.dgl``: any of ``"coo"``, ``"csr"``, ``"csc"``.
        DGL stores COO when unset, and so do we. With ``graphbolt`` no ``graph.dgl``
        is written; ``"coo"`` among them stores ``_dgl2gb_eid`` and ``_gb_dst_id``.
    staging_dir
        A directory (local path or URL) to create the Zarr staging in, as
        ``staging_dir/dglc-staging-<token>`` (the token names the output); default
        ``OUT/_staging``. Nothing else in ``staging_dir`` is touched.
    keep_staging
        Keep the staging after success (it is removed by default).
    background_removal
        Remove the staging after success off the run's path: renamed at once to a trash
        name beside it (``_staging.trash-dglc-<random>``), then removed by a background
        thread while ``dispatch`` returns (local stagings; an object store's is removed
        before). :func:`~dgl_chunked.dispatch.wait_for_staging_removal` waits for it, and so
        does the end of the process; a trash directory a killed process left is removed by
        the next run into the same output. The command line sets it and waits after closing
        its cluster.
    overwrite
        Replace an existing output directory instead of refusing.
    block_rows
        Rows per block of the node-level staged arrays (bounds task memory).
    lookup_cache_bytes
        Per worker process: the most bytes kept in memory for relabelling edges. Per
        node type, a map of the owners the new IDs are computed from (0.25 byte per
        node at 2 partitions, 0.88 at 8, 1.5 at 16), or the ``new_nid`` array (4 bytes
        per node) where that is smaller; built or read once per process. Beyond it the
        array's Zarr ranges that fit are kept and the others read per edge read task
        (slower, memory bounded). 0 disables both.
    progress
        Show a progress bar per step.
    part_method
        The partition algorithm's name recorded in the config (default: from the assignment).
    halo_hops, keep_halo_edges
        Like ``partition_graph``'s ``num_hops``: with ``keep_halo_edges`` each graph.dgl
        also holds the in-edges of its HALO nodes up to ``halo_hops`` hops
        (``inner_edge = 0``) and ``part_id`` node data. ``halo_hops > 1`` implies
        ``keep_halo_edges``. The default is the chunked pipeline's: 1 hop, owned edges only.
    graphbolt
        Write GraphBolt's ``fused_csc_sampling_graph.pt`` per partition instead of
        ``graph.dgl`` (for ``load_partition(..., use_graphbolt=True)``), with these
        :class:`~dgl_chunked.io.graphbolt.csc.GraphBoltOptions`: the optional fields of
        ``dgl_partition_to_graphbolt``'s flags of the same names, with DGL 2.3 / 2.4's
        defaults (``GraphBoltOptions()``: edge ``_ID`` stored, and with ``"coo"`` in
        ``graph_formats`` (the default) the edge attributes ``_dgl2gb_eid`` and
        ``_gb_dst_id`` too, as ``partition_graph(..., graph_formats, use_graphbolt=True)``
        passes its formats to the converter), and ``sort_bytes``, the memory budget of
        a partition writer's sort by destination (larger partitions are sorted in
        several passes). DGL 2.1's output:
        ``graphbolt=GraphBoltOptions(store_eids=False), graph_formats=("csc",)``.
        None (the default): DGL's ``graph.dgl``. The run fills in its own facts
        (:func:`~dgl_chunked.dispatch.options.graphbolt_for_run`): the formats come
        from ``graph_formats`` (leave the nested ``graph_formats`` None),
        ``wide_index`` from ``wide_ids``, and with ``DGL_DIST_DEBUG`` in the client's
        environment every field is stored, as DGL's converter does in its debug mode.
    use_graphbolt, store_eids, store_inner_node, store_inner_edge, graphbolt_sort_bytes
        Deprecated (they warn, and go in a later release): the flat form of
        ``graphbolt``. ``use_graphbolt=True`` is ``graphbolt=GraphBoltOptions()``,
        the others its ``store_eids``, ``store_inner_node``, ``store_inner_edge`` and
        ``sort_bytes``; given alone, they change the ``graphbolt`` given beside them
        (so ``dataclasses.replace(options, store_eids=False)`` still works).
    memory_limit
        Memory per worker (bytes), e.g. from ``--memory-limit``. When set, the node-ID
        cache and the writers' HALO bitmaps each get at most 1/8 of it
        (:meth:`lookup_budget`, :meth:`halo_budget`); beyond their budgets both fall
        back to range-partitioned structures whose memory does not grow with the node
        count (ranges of the Zarr arrays for the cache, ranges of the ID space with
        worker-local temporary files for the HALO sets).
    halo_table_bytes
        Budget of a partition writer's HALO bitmap (a bit per node ID of the graph
        and a running count per 64 IDs, 0.19 byte per ID): default 64 MiB (358M
        nodes), or 1/8 of ``memory_limit`` when smaller. A larger graph's HALO sets
        are built range by range (two reads of the partition's staged sources per
        range) into worker-local temporary files.
    check_space
        Refuse to start (before writing anything) when the output or staging
        filesystem has less free space than :func:`~dgl_chunked.forecast_run` forecasts.
    node_id_features
        Features whose values are node IDs, translated from per-type input IDs to
        per-type new IDs (GraphStorm's hard negatives, see
        :mod:`~dgl_chunked.dispatch.node_id_features`): ``"TYPE/FEATURE"`` or
        ``"TYPE/FEATURE=NTYPE"`` strings (an edge type's default ``NTYPE`` is its
        destination type), or a mapping ``{"TYPE/FEATURE": NTYPE or None}``. Negative
        values (``-1`` padding) are kept.
    wide_ids
        For tests: take the paths of graphs beyond 2**31 nodes or edges on any graph
        (int64 staged edge endpoints, int64 node-ID cache, int64 CSC sort order).
        The output is byte-identical either way; only staging size and speed differ.
    """

    save_orig_nids: bool = False
    save_orig_eids: bool = False
    graph_formats: tuple[str, ...] = ("coo",)
    staging_dir: str | None = None
    keep_staging: bool = False
    background_removal: bool = False
    overwrite: bool = False
    block_rows: int = 1 << 21
    lookup_cache_bytes: int = 256 << 20
    progress: bool = False
    part_method: str | None = None
    halo_hops: int = 1
    keep_halo_edges: bool = False
    graphbolt: GraphBoltOptions | None = None
    memory_limit: int | None = None
    halo_table_bytes: int | None = None
    wide_ids: bool = False
    check_space: bool = True
    node_id_features: tuple[str, ...] = ()
    use_graphbolt: InitVar[bool | None] = None
    store_eids: InitVar[bool | None] = None
    store_inner_node: InitVar[bool | None] = None
    store_inner_edge: InitVar[bool | None] = None
    graphbolt_sort_bytes: InitVar[int | None] = None

    def __post_init__(
        self,
        use_graphbolt: bool | None,
        store_eids: bool | None,
        store_inner_node: bool | None,
        store_inner_edge: bool | None,
        graphbolt_sort_bytes: int | None,
    ) -> None:
        flat = {
            "store_eids": store_eids,
            "store_inner_node": store_inner_node,
            "store_inner_edge": store_inner_edge,
            "sort_bytes": graphbolt_sort_bytes,
        }
        if use_graphbolt is not None or any(v is not None for v in flat.values()):
            object.__setattr__(self, "graphbolt", _from_flat(self.graphbolt, use_graphbolt, flat))
        if self.graphbolt is not None and self.graphbolt.graph_formats is not None:
            raise OptionError(
                f"DispatchOptions: graphbolt.graph_formats={self.graphbolt.graph_formats!r}: dispatch "
                "takes the GraphBolt graph's formats from DispatchOptions.graph_formats; set that instead"
            )
        specs: object = self.node_id_features or ()
        if isinstance(specs, str):
            specs = [s for s in specs.split(",") if s.strip()]
        elif isinstance(specs, Mapping):
            specs = [f"{k}={v}" if v else str(k) for k, v in specs.items()]
        object.__setattr__(self, "node_id_features", tuple(str(s).strip() for s in specs))  # type: ignore[attr-defined]

    def lookup_budget(self) -> int:
        """Bytes of node-ID arrays a worker keeps in memory (``lookup_cache_bytes``, capped by the limit)."""
        if self.memory_limit is None:
            return self.lookup_cache_bytes
        return min(self.lookup_cache_bytes, self.memory_limit // BUDGET_SHARE)

    def halo_budget(self) -> int:
        """Bytes a partition writer may spend on its HALO bitmap."""
        budget = HALO_TABLE_BYTES if self.halo_table_bytes is None else self.halo_table_bytes
        if self.memory_limit is None:
            return budget
        return min(budget, self.memory_limit // BUDGET_SHARE)


def graphbolt_for_run(options: DispatchOptions) -> GraphBoltOptions | None:
    """The GraphBolt writer options of a run of ``options``, or None for DGL's graph.dgl.

    The one place where the user's :attr:`DispatchOptions.graphbolt` is completed with
    the facts of the run: ``graph_formats`` from :attr:`DispatchOptions.graph_formats`
    (as ``partition_graph(..., use_graphbolt=True)`` passes its formats to the
    converter), ``wide_index`` from :attr:`DispatchOptions.wide_ids`, and, as DGL's
    converter, ``store_all_fields`` when the client's ``DGL_DIST_DEBUG`` is set (to
    anything, :func:`~dgl_chunked.io.graphbolt.csc.dgl_debug_mode`). ``wide_index``
    and ``store_all_fields`` set by the user are kept. Called on the client: the
    partition writers and the run's fingerprint receive the result.
    """
    given = options.graphbolt
    if given is None:
        return None
    return replace(
        given,
        wide_index=given.wide_index or options.wide_ids,
        store_all_fields=given.store_all_fields or dgl_debug_mode(),
        graph_formats=options.graph_formats,
    )


def _from_flat(
    given: GraphBoltOptions | None, use_graphbolt: bool | None, flat: dict[str, bool | int | None]
) -> GraphBoltOptions | None:
    """``graphbolt`` from the deprecated flat keywords (changing ``given``), with a DeprecationWarning."""
    named = {k: v for k, v in flat.items() if v is not None}
    new = ", ".join(f"{k}={v!r}" for k, v in named.items())
    warnings.warn(
        "DispatchOptions(use_graphbolt=..., store_eids=..., store_inner_node=..., store_inner_edge=..., "
        "graphbolt_sort_bytes=...) are deprecated and go in a later release: pass "
        f"DispatchOptions(graphbolt=GraphBoltOptions({new})) (GraphBoltOptions from "
        "dgl_chunked.io.graphbolt), or graphbolt=None for graph.dgl",
        DeprecationWarning,
        stacklevel=4,
    )
    if use_graphbolt is False:
        return None  # as before: the store flags apply only with use_graphbolt
    if given is None and not use_graphbolt:
        return None
    return replace(given or GraphBoltOptions(), **named)  # type: ignore[arg-type]


def check_formats(formats: Sequence[str]) -> None:
    """Refuse an empty or unknown set of graph formats."""
    unknown = [f for f in formats if f not in GRAPH_FORMATS]
    if unknown or not formats:
        raise UnsupportedFormatError(
            f"graph formats {list(formats)!r}: expected a non-empty subset of {list(GRAPH_FORMATS)}"
        )
