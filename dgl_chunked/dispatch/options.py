"""The options of :func:`~dgl_chunked.dispatch.dispatch` and their checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dgl_chunked._typing import parse_memory_limit
from dgl_chunked.errors import UnsupportedFormatError
from dgl_chunked.io.graphbolt.csc import SORT_BYTES, GraphBoltOptions, dgl_debug_mode

__all__ = [
    "DispatchOptions",
    "GRAPH_FORMATS",
    "HALO_TABLE_BYTES",
    "BUDGET_SHARE",
    "check_formats",
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
        DGL stores COO when unset, and so do we. With ``use_graphbolt`` no ``graph.dgl``
        is written; ``"coo"`` among them stores ``_dgl2gb_eid`` and ``_gb_dst_id``.
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
        Per worker process: the most bytes kept in memory for relabelling edges. Per
        node type, a map of the owners the new IDs are computed from (0.25 byte per
        node at 2 partitions, 0.88 at 8, 1.5 at 16), or the ``new_nid`` array (4 bytes
        per node) where that is smaller; built or read once per process. Beyond it the
        array's Zarr ranges that fit are kept and the others read per edge chunk
        (slower, memory bounded). 0 disables both.
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
        optional fields of ``dgl_partition_to_graphbolt``'s flags of the same names,
        with DGL 2.3 / 2.4's defaults: edge ``_ID`` stored, and with ``"coo"`` in
        ``graph_formats`` (the default) the edge attributes ``_dgl2gb_eid`` and
        ``_gb_dst_id`` too, as ``partition_graph(..., graph_formats, use_graphbolt=True)``
        passes its formats to the converter. DGL 2.1's output: ``store_eids=False,
        graph_formats=("csc",)``.
        With ``DGL_DIST_DEBUG`` in the client's environment every field is stored, as
        DGL's converter does in its debug mode.
    graphbolt_sort_bytes
        Memory budget of a partition writer's sort by destination (``--use-graphbolt``);
        larger partitions are sorted in several passes.
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
    overwrite: bool = False
    block_rows: int = 1 << 21
    lookup_cache_bytes: int = 256 << 20
    progress: bool = False
    part_method: str | None = None
    halo_hops: int = 1
    keep_halo_edges: bool = False
    use_graphbolt: bool = False
    store_eids: bool = True
    store_inner_node: bool = False
    store_inner_edge: bool = False
    graphbolt_sort_bytes: int = SORT_BYTES
    memory_limit: int | None = None
    halo_table_bytes: int | None = None
    wide_ids: bool = False
    check_space: bool = True
    node_id_features: tuple[str, ...] = ()

    def __post_init__(self) -> None:
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

    def graphbolt(self) -> GraphBoltOptions | None:
        """The GraphBolt writer options, or None for DGL's graph.dgl.

        As DGL's converter, the client's ``DGL_DIST_DEBUG`` (set to anything) stores
        every field of the partition graph (:func:`~dgl_chunked.io.graphbolt.csc.dgl_debug_mode`).
        """
        if not self.use_graphbolt:
            return None
        return GraphBoltOptions(
            self.store_eids,
            self.store_inner_node,
            self.store_inner_edge,
            self.graphbolt_sort_bytes,
            wide_index=self.wide_ids,
            store_all_fields=dgl_debug_mode(),
            graph_formats=self.graph_formats,
        )


def check_formats(formats: Sequence[str]) -> None:
    """Refuse an empty or unknown set of graph formats."""
    unknown = [f for f in formats if f not in GRAPH_FORMATS]
    if unknown or not formats:
        raise UnsupportedFormatError(
            f"graph formats {list(formats)!r}: expected a non-empty subset of {list(GRAPH_FORMATS)}"
        )
