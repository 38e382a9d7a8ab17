"""A partition's graph as GraphBolt CSC, built in bounded memory, and written.

:func:`write_graphbolt_partition` takes the same :class:`HomogeneousGraph` a
partition's ``graph.dgl`` is written from (local ``src``/``dst`` in edge-id order,
``ndata``/``edata`` with ``_ID``, ``_TYPE``, ``inner_node``, ``inner_edge``) and
writes what ``dgl.distributed.dgl_partition_to_graphbolt`` (DGL 2.1 to 2.4, per
:class:`GraphBoltOptions`) makes of that ``graph.dgl``: CSC by local destination with
every destination's in-edges in edge-id order, the fields it keeps and the dtypes it
casts them to, and DGL >= 2.3's ``_dgl2gb_eid`` / ``_gb_dst_id`` (:meth:`CscSorter.slots`,
:meth:`CscSorter.destinations`: one more pass over the destinations, and 8 bytes per
local node for a running count, as ``indptr``).

Sorting by destination is a stable counting sort (:class:`CscSorter`): a pass
counts in-degrees, a second one places each edge. When the order (4 bytes per edge)
and one column fit ``sort_bytes`` it is computed once and reused for every edge
column. Otherwise destinations are split into ranges whose in-edges fit (about
:data:`BYTES_PER_EDGE` per edge), each sorted on its own per column, so memory stays
at one range whatever the partition's size.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.binary import ArraySpans
from dgl_chunked.io.dgl.model import HomogeneousGraph
from dgl_chunked.io.dgl.partition_config import by_type_id
from dgl_chunked.io.dgl.spans import Stream, as_stream
from dgl_chunked.io.graphbolt.graph_file import write_graphbolt_graph

__all__ = [
    "BYTES_PER_EDGE",
    "DGL2GB_EID",
    "DGL_DEBUG_ENV",
    "GB_DST_ID",
    "SORT_BYTES",
    "CscSorter",
    "GraphBoltOptions",
    "dgl_debug_mode",
    "min_dtype",
    "saves_coo",
    "write_graphbolt_partition",
]

SORT_BYTES = 1 << 30
"""Default memory budget of the destination sort (per partition writer)."""
BYTES_PER_EDGE = 40
"""Sort memory per edge of a destination range: order, its inverse, one column, copies."""
OUT_SPAN_ROWS = 1 << 21
"""Rows per span of the arrays this module streams out of memory (``indptr``, CSC slots)."""


@dataclass(frozen=True)
class GraphBoltOptions:
    """``dgl_partition_to_graphbolt``'s flags (DGL's names, DGL 2.3 / 2.4 defaults) and the sort budget.

    DGL 2.1's converter had ``store_eids=False`` and no ``graph_formats``: its output is
    ``GraphBoltOptions(store_eids=False, graph_formats=("csc",))``.

    The user's options are the three flags and ``sort_bytes``; ``wide_index``,
    ``store_all_fields`` and ``graph_formats`` are facts of a run, which its caller fills
    in: for ``dispatch``, :func:`~dgl_chunked.dispatch.options.graphbolt_for_run` (nested
    in ``DispatchOptions.graphbolt``, whose ``graph_formats`` it takes from the dispatch
    options); for ``convert-graphbolt``, :func:`~dgl_chunked.convert_to_graphbolt`.
    """

    store_eids: bool = True
    store_inner_node: bool = False
    store_inner_edge: bool = False
    sort_bytes: int = SORT_BYTES
    wide_index: bool = False
    """For tests: sort with int64 edge positions as beyond 2**31 edges (same output)."""
    store_all_fields: bool = False
    """DGL's debug mode (:func:`dgl_debug_mode`): every ``ndata`` / ``edata`` field of the
    partition graph is stored, whatever the three flags say."""
    graph_formats: tuple[str, ...] | None = None
    """DGL 2.3's ``graph_formats``: with ``"coo"`` among them the edge attributes
    ``_dgl2gb_eid`` and ``_gb_dst_id`` are stored; ``None`` decides by the formats the
    partition's ``graph.dgl`` holds (:func:`saves_coo`)."""


DGL2GB_EID = "_dgl2gb_eid"
"""Edge attribute (DGL >= 2.3, ``dgl/distributed/constants.py``): each local DGL edge's slot in CSC order."""
GB_DST_ID = "_gb_dst_id"
"""Edge attribute (DGL >= 2.3): each CSC slot's local destination (the expanded ``indptr``)."""


def saves_coo(graph_formats: tuple[str, ...] | None, stored_formats: tuple[str, ...] = ("coo",)) -> bool:
    """DGL 2.3 / 2.4's ``save_coo``: whether ``_dgl2gb_eid`` and ``_gb_dst_id`` are stored.

    ``"coo"`` in ``graph_formats`` when given, else ``"coo"`` in the formats the loaded
    ``graph.dgl`` was created with, which are the formats stored in the file
    (``gb_convert_single_dgl_partition``, ``dgl/distributed/partition.py``, v2.4.0;
    ``adj_tensors("csc")`` runs first but only adds CSC).
    """
    return "coo" in (stored_formats if graph_formats is None else graph_formats)


DGL_DEBUG_ENV = "DGL_DIST_DEBUG"
"""The environment variable whose presence (any value) puts DGL's converter in debug mode."""


def dgl_debug_mode() -> bool:
    """Whether DGL 2.1's ``dgl_partition_to_graphbolt`` would run in debug mode here.

    It tests ``"DGL_DIST_DEBUG" in os.environ``: set to anything, even ``0`` or the
    empty string, the converter stores every field of the partition graph
    (``docs/spec/graphbolt.md``, "Environment switches"). It is the only switch in
    DGL 2.1's ``dgl/distributed/partition.py`` that changes what is stored.
    """
    return DGL_DEBUG_ENV in os.environ


def min_dtype(bound: int, candidates: tuple[Any, ...] = (np.int32, np.int64)) -> np.dtype[Any]:
    """DGL's ``_cast_to_minimum_dtype``: the first candidate with ``bound < max``."""
    for dtype in candidates:
        if bound < np.iinfo(dtype).max:
            found: np.dtype[Any] = np.dtype(dtype)
            return found
    last: np.dtype[Any] = np.dtype(candidates[-1])
    return last


def _full(stream: Stream, dtype: Any = None) -> npt.NDArray[Any]:
    """The whole stream in memory, cast span by span to ``dtype`` (default: its own)."""
    out = np.empty(stream.shape, dtype=stream.dtype if dtype is None else dtype)
    pos = 0
    for span in stream.spans():
        out[pos : pos + span.shape[0]] = span
        pos += span.shape[0]
    return out


class CscSorter:
    """The CSC order of edges by destination (stable), in bounded memory.

    When the partition fits the budget, one in-place sort of the unique keys
    ``dst * E + edge ID`` (8 bytes per edge) gives the stable order. Otherwise a
    counting sort per destination range: one pass counts in-degrees, one more pass
    places every edge at ``indptr[dst] + (earlier edges with that dst)``, span by
    span. The result is the edge IDs in CSC order (int32 below 2^31 edges).

    Parameters
    ----------
    num_nodes
        Local node count (destinations lie in ``[0, num_nodes)``).
    dst
        Destination stream in edge-id order.
    sort_bytes
        Memory budget. When the keys (8 bytes per edge), then the order and one column
        (about 12) fit, the order is computed once for every column; otherwise destinations are split into
        ranges of at most ``sort_bytes // BYTES_PER_EDGE`` in-edges, each sorted on its
        own for every column.
    """

    def __init__(self, num_nodes: int, dst: Stream, sort_bytes: int = SORT_BYTES, *, wide: bool = False) -> None:
        self.num_nodes = num_nodes
        self.num_edges = dst.shape[0]
        self.dst = dst
        self.index_dtype = np.dtype(np.int32 if self.num_edges < 2**31 and not wide else np.int64)
        self._single: npt.NDArray[Any] | None = None
        e = self.num_edges
        if e * (self.index_dtype.itemsize + 8) <= sort_bytes and num_nodes * max(e, 1) < 2**62:
            # everything fits: one sort of the unique keys dst * E + edge ID is the stable order
            key = _full(dst, np.int64)
            self.degree = np.bincount(key, minlength=num_nodes).astype(np.int64)
            self._indptr = self.indptr()
            self.ranges = [(0, num_nodes)]
            key *= e
            for lo in range(0, e, OUT_SPAN_ROWS):
                key[lo : lo + OUT_SPAN_ROWS] += np.arange(lo, min(lo + OUT_SPAN_ROWS, e))
            key.sort()
            np.remainder(key, max(e, 1), out=key)
            self._single = key.astype(self.index_dtype)
            return
        self.degree = np.zeros(num_nodes, dtype=np.int64)
        for span in dst.spans():
            self.degree += np.bincount(span, minlength=num_nodes)
        self._indptr = self.indptr()
        self.ranges = _ranges(self.degree, max(1, sort_bytes // BYTES_PER_EDGE))

    def indptr(self) -> npt.NDArray[np.int64]:
        out = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(self.degree, out=out[1:])
        return out

    def _order(self, lo: int, hi: int) -> npt.NDArray[Any]:
        """IDs of the edges with destination in ``[lo, hi)``, in CSC order (one pass)."""
        base = int(self._indptr[lo])
        fill = self._indptr[lo:hi] - base  # next free slot per destination
        order = np.empty(int(self._indptr[hi]) - base, dtype=self.index_dtype)
        whole = (lo, hi) == (0, self.num_nodes)
        pos = 0
        for span in self.dst.spans():
            if whole:
                ids, d = np.arange(pos, pos + span.shape[0]), span
            else:
                keep = np.flatnonzero((span >= lo) & (span < hi))
                ids, d = keep + pos, span[keep]
            pos += span.shape[0]
            if d.size == 0:
                continue
            o = np.argsort(d, kind="stable")  # within the span only
            ds = d[o] - lo
            first = np.flatnonzero(np.concatenate([[True], ds[1:] != ds[:-1]]))
            runs = np.diff(np.append(first, ds.shape[0]))
            rank = np.arange(ds.shape[0]) - np.repeat(first, runs)
            order[fill[ds] + rank] = ids[o]
            fill[ds[first]] += runs
        return order

    def column(self, stream: Stream, dtype: Any) -> ArraySpans:
        """``stream`` (an edge column in edge-id order) permuted into CSC order, as ``dtype``."""
        dtype = np.dtype(dtype)
        shape = (self.num_edges, *stream.shape[1:])

        def spans() -> Iterator[npt.NDArray[Any]]:
            if self._single is not None:
                values = _full(stream, dtype)
                for lo in range(0, self.num_edges, OUT_SPAN_ROWS):
                    yield values[self._single[lo : lo + OUT_SPAN_ROWS]]
                return
            for lo, hi in self.ranges:
                order = self._order(lo, hi)
                inverse = np.argsort(order, kind="stable")  # CSC slot of each edge, by edge ID
                out = np.empty((order.shape[0], *stream.shape[1:]), dtype=dtype)
                out[inverse] = _take(stream, order[inverse])
                del order, inverse
                yield out

        return ArraySpans(shape, dtype, spans)

    def slots(self, dtype: Any) -> ArraySpans:
        """Each edge's slot in CSC order, in edge-ID order, as ``dtype``: DGL's
        ``torch.argsort(edge_ids)`` (``_dgl2gb_eid``).

        One pass over the destinations: an edge's slot is ``indptr[dst]`` plus the
        number of earlier edges with the same destination (a running count per node,
        8 bytes per local node, as ``indptr``).
        """
        dtype = np.dtype(dtype)

        def spans() -> Iterator[npt.NDArray[Any]]:
            seen = self._indptr[:-1].copy()  # next free slot per destination
            for span in self.dst.spans():
                if span.shape[0] == 0:
                    continue
                o = np.argsort(span, kind="stable")
                ds = span[o]
                first = np.flatnonzero(np.concatenate([[True], ds[1:] != ds[:-1]]))
                runs = np.diff(np.append(first, ds.shape[0]))
                out = np.empty(ds.shape[0], dtype=dtype)
                out[o] = seen[ds] + (np.arange(ds.shape[0]) - np.repeat(first, runs))
                seen[ds[first]] += runs
                yield out

        return ArraySpans((self.num_edges,), dtype, spans)

    def destinations(self, dtype: Any) -> ArraySpans:
        """The local destination of every CSC slot, as ``dtype``: GraphBolt's
        ``expand_indptr(indptr)`` (``_gb_dst_id``)."""
        dtype = np.dtype(dtype)

        def spans() -> Iterator[npt.NDArray[Any]]:
            for lo in range(0, self.num_edges, OUT_SPAN_ROWS):
                slots = np.arange(lo, min(lo + OUT_SPAN_ROWS, self.num_edges))
                yield (np.searchsorted(self._indptr, slots, side="right") - 1).astype(dtype)

        return ArraySpans((self.num_edges,), dtype, spans)


def _ranges(degree: npt.NDArray[np.int64], budget: int) -> list[tuple[int, int]]:
    """Split ``[0, n)`` into destination ranges of at most ``budget`` in-edges (one node may exceed)."""
    ends = np.cumsum(degree)
    ranges, lo, base = [], 0, 0
    n = degree.shape[0]
    while lo < n:
        hi = int(np.searchsorted(ends, base + budget, side="right"))
        hi = max(hi, lo + 1)
        ranges.append((lo, hi))
        base = int(ends[hi - 1])
        lo = hi
    return ranges or [(0, 0)]


def _take(stream: Stream, edges: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """Rows ``edges`` (ascending) of a stream, reading it once."""
    out = np.empty((edges.shape[0], *stream.shape[1:]), dtype=stream.dtype)
    pos, got = 0, 0
    for span in stream.spans():
        a, b = np.searchsorted(edges, [pos, pos + span.shape[0]])
        out[got : got + b - a] = span[edges[a:b] - pos]
        got += b - a
        pos += span.shape[0]
    return out


def write_graphbolt_partition(
    path: PathLike,
    graph: HomogeneousGraph,
    *,
    ntypes: Mapping[str, int],
    etypes: Mapping[str, int],
    options: GraphBoltOptions = GraphBoltOptions(),
    num_parts: int | None = None,
    type_per_edge: Any = None,
    totals: tuple[int, int] | None = None,
    stored_formats: tuple[str, ...] = ("coo",),
    storage_options: StorageOptions = None,
    archive: str | None = None,
) -> dict[str, Any]:
    """Write ``fused_csc_sampling_graph.pt`` for one partition graph.

    Parameters
    ----------
    path
        Output file.
    graph
        The partition's graph as for ``graph.dgl``; ``ndata["_ID"]`` is required,
        ``ndata["inner_node"]``, ``edata["_ID"]``, ``edata["_TYPE"]`` and
        ``edata["inner_edge"]`` when the options or a heterogeneous graph need them.
    ntypes, etypes
        The partition config's ``ntypes`` / ``etypes`` (name -> id, config order;
        etypes as ``"src:rel:dst"``). One of each means homogeneous: no type fields.
    options
        Which optional fields to store, and the sort budget.
    num_parts
        The output's partition count: the bound DGL casts a stored ``part_id`` field
        to (only read with ``options.store_all_fields``).
    type_per_edge
        The etype ID of every edge in edge-ID order, for GraphBolt's ``type_per_edge``
        (default ``edata["_TYPE"]``; DGL's converter takes it from the partition book).
    totals
        The config's ``(num_nodes, num_edges)`` of the whole graph: the bounds DGL >= 2.3
        casts ``_gb_dst_id`` and ``_dgl2gb_eid`` by (int32 when below 2^31 - 1); default
        the partition's own counts.
    stored_formats
        The formats the partition's ``graph.dgl`` holds (what DGL's converter decides
        by when ``options.graph_formats`` is None, :func:`saves_coo`).
    archive
        The zip's top directory when ``path`` is a temporary name (see
        :func:`~dgl_chunked.io.graphbolt.graph_file.write_graphbolt_graph`).

    Returns
    -------
    dict
        ``{"field": dtype name}`` of what was written (for logs and tests).
    """
    where = str(path)
    n = graph.num_nodes
    src = as_stream(graph.src, f"{where}: src", ids=(np.dtype(np.int64), n))  # checked to lie in [0, n)
    dst = as_stream(graph.dst, f"{where}: dst", ids=(np.dtype(np.int64), n))
    sorter = CscSorter(n, dst, options.sort_bytes, wide=options.wide_index)
    e = sorter.num_edges
    homo = len(ntypes) == 1 and len(etypes) == 1
    edata = {k: as_stream(v, f"{where}: edata[{k!r}]") for k, v in graph.edata.items()}
    indptr_dtype = min_dtype(e)
    indptr = sorter.indptr()
    fields: dict[str, Any] = {
        "indptr": _array_spans(indptr, indptr_dtype),
        "indices": sorter.column(src, min_dtype(n)),
    }
    type_ids = None
    if not homo:
        types = edata["_TYPE"] if type_per_edge is None else as_stream(type_per_edge, f"{where}: type_per_edge")
        type_ids = sorter.column(types, min_dtype(len(etypes), TYPE_DTYPES))
    bounds = {"_TYPE": len(etypes), "part_id": num_parts}  # DGL's cast predicates (NTYPE's is lost to ETYPE's)
    if options.store_all_fields:
        node_names, edge_names = list(graph.ndata), list(edata)
    else:
        node_names = ["_ID", *(["inner_node"] if options.store_inner_node else [])]
        edge_names = [*(["_ID"] if options.store_eids else []), *(["inner_edge"] if options.store_inner_edge else [])]
    node_attributes: dict[str, Any] = {}
    for name in node_names:
        dtype = _attribute_dtype(name, as_stream(graph.ndata[name], f"{where}: ndata[{name!r}]").dtype, bounds)
        node_attributes[name] = _cast(graph.ndata[name], dtype)
    missing = [name for name in edge_names if name not in edata]
    if missing:
        raise DGLFormatError(f"{where}: the partition graph has no edge {missing[0]!r} to store")
    edge_attributes = {
        name: sorter.column(edata[name], _attribute_dtype(name, edata[name].dtype, bounds)) for name in edge_names
    }
    if saves_coo(options.graph_formats, stored_formats):
        # DGL 2.3 / 2.4: argsort(edge_ids) and expand_indptr, after the other attributes, cast
        # by the whole graph's edge and node counts (gb_convert_single_dgl_partition, v2.4.0)
        total_nodes, total_edges = totals if totals is not None else (n, e)
        edge_attributes[DGL2GB_EID] = sorter.slots(min_dtype(total_edges))
        edge_attributes[GB_DST_ID] = sorter.destinations(min_dtype(total_nodes))
    write_graphbolt_graph(
        path,
        indptr=fields["indptr"],
        indices=fields["indices"],
        type_per_edge=type_ids,
        # the config's own type IDs, in ID order: what DGL's converter makes of a config
        # laid out as DGL's pipeline writes it (it enumerates the keys of ``ntypes``)
        node_type_to_id=None if homo else by_type_id(ntypes),
        edge_type_to_id=None if homo else by_type_id(etypes),
        node_attributes=node_attributes,
        edge_attributes=edge_attributes,
        storage_options=storage_options,
        archive=archive,
    )
    return {"indptr": str(indptr_dtype), "indices": str(fields["indices"].dtype), "ranges": len(sorter.ranges)}


def _array_spans(values: npt.NDArray[Any], dtype: Any) -> ArraySpans:
    def spans() -> Iterator[npt.NDArray[Any]]:
        for lo in range(0, values.shape[0], OUT_SPAN_ROWS):
            yield values[lo : lo + OUT_SPAN_ROWS].astype(dtype, copy=False)

    return ArraySpans(values.shape, dtype, spans)


TYPE_DTYPES = (np.int8, np.int16, np.int32, np.int64)


def _attribute_dtype(name: str, dtype: np.dtype[Any], bounds: Mapping[str, int | None]) -> np.dtype[Any]:
    """The dtype DGL 2.1's converter stores attribute ``name`` as (``_cast_to_minimum_dtype``).

    ``_ID`` may only be int64; ``_TYPE`` and ``part_id`` become the smallest signed
    integer above their bound (the etype count, the partition count); a field of
    another dtype than those, and every other field, keeps its dtype.
    """
    if name == "_ID":
        return dtype
    bound = bounds.get(name)
    if bound is None or dtype not in {np.dtype(t) for t in TYPE_DTYPES}:
        return dtype
    return min_dtype(bound, TYPE_DTYPES)


def _cast(value: Any, dtype: Any) -> Any:
    stream = as_stream(value, "ndata")
    if stream.dtype == np.dtype(dtype):
        return value
    make: Callable[[], Iterator[npt.NDArray[Any]]] = lambda: (b.astype(dtype) for b in stream.spans())  # noqa: E731
    return ArraySpans(stream.shape, dtype, make)
