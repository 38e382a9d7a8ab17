"""Lazy Dask views of a Chunked Graph Format directory.

:func:`open_chunked_graph` reads ``metadata.json`` and returns a
:class:`ChunkedGraph`. Building its collections never computes anything: every
chunk's row range comes from ``metadata.json`` or from file headers and footers,
so all Dask chunks and divisions are known.

I/O at build time (never a Dask compute):

- feature files: the ``.npy`` header or Parquet footer of every file, once per
  feature, to learn rows, row shape and dtype;
- edge files, only when ``num_edges_per_chunk`` is absent and a type has more than
  one file: the Parquet footer, or a full pass over the CSV file counting its
  lines. For large CSV inputs, put ``num_edges_per_chunk`` in the metadata.

Each task reads one :class:`~dgl_chunked.io.chunked.groups.ChunkGroup`: consecutive
files of about ``task_bytes`` decoded bytes, or one larger file (tasks carry paths,
never handles), and checks every file against the metadata: row count, and for edges
the node-ID range; a mismatch raises :class:`~dgl_chunked.errors.ChunkMismatchError`
naming the file and row, a damaged file ``ChunkReadError``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from dgl_chunked._typing import IdArray, PathLike, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, UnknownNameError
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.chunks import (
    ChunkGroup,
    ChunkRef,
    chunk_refs,
    edge_id_problems,
    empty_edges,
    read_edges_partition,
    read_feature_group,
)
from dgl_chunked.io.chunked.groups import (
    EDGE_ROW_BYTES,
    FEATURE_ROW_OVERHEAD,
    group_chunks,
    group_ranges,
    resolve_task_bytes,
)
from dgl_chunked.io.chunked.metadata import ArraySource, ChunkedGraphMetadata, read_metadata
from dgl_chunked.io.formats import get_format

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = [
    "DEFAULT_NODE_CHUNK_ROWS",
    "ChunkGroup",
    "ChunkRef",
    "ChunkedGraph",
    "edge_id_problems",
    "open_chunked_graph",
    "read_edges_partition",
    "read_feature_group",
]

DEFAULT_NODE_CHUNK_ROWS = 1 << 22
"""Node chunk size used when ``num_nodes_per_chunk`` is absent."""

NODE_ROW_BYTES = 32
"""Bytes per node a node chunk's task is sized by: a few int64 per node (IDs, hashes and
their temporaries), so the default task size gives chunks of 1M nodes."""

_IO_THREADS = 16
_T = TypeVar("_T")


def _split(total: int, size: int) -> tuple[int, ...]:
    """Near-equal chunks of at most ``size`` rows; ``(0,)`` for an empty type."""
    if total == 0:
        return (0,)
    k = -(-total // size)
    return tuple(total // k + (i < total % k) for i in range(k))


def _per_file(func: Callable[..., _T], source: ArraySource, storage_options: StorageOptions) -> list[_T]:
    """``func(path, fmt=..., options=..., storage_options=...)`` for every file: in
    threads on object stores (header and footer reads wait on the network), one after
    the other for local files (parsed under the GIL: 4 threads took 2x the time of one,
    230 against 116 us per Parquet footer)."""

    def one(path: str) -> _T:
        return func(path, fmt=source.format, options=source.options, storage_options=storage_options)

    if not any("://" in p for p in source.paths):
        return [one(p) for p in source.paths]
    with ThreadPoolExecutor(min(_IO_THREADS, max(len(source.paths), 1))) as pool:
        return list(pool.map(one, source.paths))


def _counted_infos(source: ArraySource, so: StorageOptions) -> list[tuple[int, tuple[int, ...], np.dtype[Any]]] | None:
    """Each file's ``(rows, row_shape, dtype)`` from the entry's ``row_counts`` and the header or
    footer of its first non-empty file only; None without ``row_counts``, or for an integer feature
    of a table format (a null reads as float64, as DGL reads Parquet: every footer is needed)."""
    counts = source.row_counts
    first = next((k for k, n in enumerate(counts or ()) if n), None)
    if counts is None or first is None:
        return None
    path = source.paths[first]
    _, row_shape, dtype = _formats.feature_chunk_info(
        path, fmt=source.format, options=source.options, storage_options=so
    )
    if get_format(source.format).kind == "table" and dtype.kind in "iu":
        return None
    return [(n, row_shape, dtype) for n in counts]


# --- the lazy view -------------------------------------------------------------


class ChunkedGraph:
    """Lazy Dask view of a chunked graph; create it with :func:`open_chunked_graph`.

    Parameters
    ----------
    metadata
        The parsed metadata.
    storage_options
        fsspec options, carried into every task.
    node_chunk_rows
        Node chunk size when ``num_nodes_per_chunk`` is absent.
    task_bytes
        Decoded bytes a read task aims at (:mod:`~dgl_chunked.io.chunked.groups`):
        an int or a size such as ``"64MiB"``; default ``$DGLC_TASK_SIZE``, else 32 MiB.
    """

    def __init__(
        self,
        metadata: ChunkedGraphMetadata,
        *,
        storage_options: StorageOptions = None,
        node_chunk_rows: int = DEFAULT_NODE_CHUNK_ROWS,
        task_bytes: int | str | None = None,
    ) -> None:
        self.metadata = metadata
        self.storage_options = storage_options
        self.node_chunk_rows = int(node_chunk_rows)
        self.task_bytes = resolve_task_bytes(task_bytes)
        self._edge_refs: dict[str, list[ChunkRef]] = {}
        self._groups: dict[tuple[str, ...], list[ChunkGroup]] = {}
        self._feature_infos: dict[tuple[str, str, str], list[tuple[int, tuple[int, ...], np.dtype[Any]]]] = {}
        # In every read key: a handle is a snapshot of the files (their row counts are
        # read once), so another open, here or in another job on the same cluster,
        # shares no key with it and is never answered by results read before a rewrite.
        self._snapshot = uuid.uuid4().hex[:16]

    def __repr__(self) -> str:
        m = self.metadata
        return (
            f"<ChunkedGraph {m.graph_name!r}: {len(m.node_types)} node types, "
            f"{sum(m.num_nodes_per_type)} nodes, {len(m.edge_types)} edge types, base_dir={m.base_dir!r}>"
        )

    def input_locations(self) -> dict[str, str]:
        """``label -> path`` of the graph's directory and every file ``metadata.json`` names
        that the directory does not cover: outside it, or a symbolic link.

        For :func:`~dgl_chunked.storage.owned.check_no_overlap`: nothing may be written
        there. A plain file inside the directory needs no entry of its own (a location
        that overlaps it overlaps the directory), which keeps the check to one ``lstat``
        per file for a graph of thousands of part files.
        """
        m = self.metadata
        out = {"chunked graph directory": m.base_dir}
        inside = m.base_dir.rstrip("/" if "://" in m.base_dir else os.sep) + ("/" if "://" in m.base_dir else os.sep)
        sources = [*m.edges.values()]
        sources += [s for feats in (*m.node_data.values(), *m.edge_data.values()) for s in feats.values()]
        for src in sources:
            for i, p in enumerate(src.paths):
                local_link = "://" not in p and os.path.islink(p)
                if local_link or not p.startswith(inside) or ".." in p[len(inside) :].split("/"):
                    out[f"input file {src.where}[{i}]"] = p
        return out

    @property
    def node_types(self) -> tuple[str, ...]:
        """Node type names in type ID order."""
        return self.metadata.node_types

    @property
    def edge_types(self) -> tuple[str, ...]:
        """Canonical edge type strings in type ID order."""
        return self.metadata.edge_type_names

    def num_nodes(self, ntype: str) -> int:
        """Number of nodes of ``ntype``."""
        return self.metadata.num_nodes(ntype)

    def num_edges(self, etype: str) -> int:
        """Number of edges of ``etype`` (counts the files if the metadata does not say)."""
        return self.edge_chunks(etype)[-1].stop if self.edge_chunks(etype) else 0

    @property
    def edge_type_offsets(self) -> IdArray:
        """``orig_eid`` of the first edge of each type, int64 ``[E + 1]``."""
        counts = [self.num_edges(e) for e in self.edge_types]
        return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)

    def node_chunks(self, ntype: str) -> tuple[int, ...]:
        """Node chunking of ``ntype`` (the partitioners' tasks): ``num_nodes_per_chunk`` if
        given, consecutive chunks coalesced up to the task size at 32 bytes per node (as
        read tasks are, so 2,000 Spark chunks make as many tasks as 4 of the same nodes);
        else near-equal chunks of at most ``node_chunk_rows`` (``(0,)`` for an empty type)."""
        i = self.metadata.ntype_id(ntype)
        if self.metadata.num_nodes_per_chunk is not None and self.metadata.num_nodes_per_chunk[i]:
            counts = self.metadata.num_nodes_per_chunk[i]
            ranges = group_ranges([NODE_ROW_BYTES * c for c in counts], self.task_bytes)
            return tuple(sum(counts[lo:hi]) for lo, hi in ranges)
        return _split(self.metadata.num_nodes_per_type[i], self.node_chunk_rows)

    def edge_chunks(self, etype: str) -> list[ChunkRef]:
        """One :class:`ChunkRef` per edge file, ``start``/``stop`` in ``type_eid``.

        Row counts come from ``num_edges_per_chunk`` or, when absent, from the
        files (Parquet footers; a line count of CSV files: a full read).
        """
        if etype not in self._edge_refs:
            i = self.metadata.etype_id(etype)
            source = self.metadata.edges[etype]
            if self.metadata.num_edges_per_chunk is not None:
                rows: Sequence[int] = self.metadata.num_edges_per_chunk[i]
            elif source.row_counts is not None:
                rows = source.row_counts
            elif len(source.paths) == 1 and self.metadata.num_edges_per_type is not None:
                rows = (self.metadata.num_edges_per_type[i],)
            else:
                rows = self._count_edges(source)
                declared = self.metadata.num_edges_per_type
                if declared is not None and sum(rows) != declared[i]:
                    raise ChunkMismatchError(
                        f"num_edges_per_type[{i}]: expected {declared[i]} edges of {etype!r}, "
                        f"found {sum(rows)} rows in {source.where}.data ({list(rows)} per file)"
                    )
            self._edge_refs[etype] = chunk_refs(source, rows, self.storage_options)
        return list(self._edge_refs[etype])

    def edge_groups(self, etype: str) -> list[ChunkGroup]:
        """The read tasks of ``etype``'s edge files: consecutive files of about
        ``task_bytes`` decoded bytes (16 per edge) per group, in order."""
        key = ("edges", etype)
        if key not in self._groups:
            self._groups[key] = group_chunks(self.edge_chunks(etype), EDGE_ROW_BYTES, self.task_bytes)
        return list(self._groups[key])

    def feature_groups(self, kind: Literal["node", "edge"], type_name: str, feat: str) -> list[ChunkGroup]:
        """The read tasks of a feature's files (as :meth:`edge_groups`, by the row's bytes)."""
        key = (kind, type_name, feat)
        if key not in self._groups:  # the first non-empty file's row: feature_info checks the others
            infos = self._infos(kind, type_name, feat)
            _, row_shape, dtype = next((i for i in infos if i[0]), infos[0] if infos else (0, (), np.dtype("u1")))
            row_bytes = int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize + FEATURE_ROW_OVERHEAD
            self._groups[key] = group_chunks(self._feature_chunks(kind, type_name, feat), row_bytes, self.task_bytes)
        return list(self._groups[key])

    def _count_edges(self, source: ArraySource) -> list[int]:
        return _per_file(_formats.count_edge_rows, source, self.storage_options)

    def _infos(self, kind: str, type_name: str, feat: str) -> list[tuple[int, tuple[int, ...], np.dtype[Any]]]:
        key = (kind, type_name, feat)
        if key not in self._feature_infos:
            source = self._feature_source(kind, type_name, feat)
            self._feature_infos[key] = _counted_infos(source, self.storage_options) or _per_file(
                _formats.feature_chunk_info, source, self.storage_options
            )
        return self._feature_infos[key]

    def _feature_source(self, kind: str, type_name: str, feat: str) -> ArraySource:
        data = self.metadata.node_data if kind == "node" else self.metadata.edge_data
        try:
            return data[type_name][feat]
        except KeyError:
            known = {t: sorted(f) for t, f in data.items()}
            raise UnknownNameError(f"no {kind} feature {feat!r} for type {type_name!r}; known: {known}") from None

    def _feature_chunks(self, kind: Literal["node", "edge"], type_name: str, feat: str) -> list[ChunkRef]:
        infos = self._infos(kind, type_name, feat)
        return chunk_refs(
            self._feature_source(kind, type_name, feat),
            [r for r, _, _ in infos],
            self.storage_options,
        )

    def node_feature_chunks(self, ntype: str, feat: str) -> list[ChunkRef]:
        """One :class:`ChunkRef` per file of node feature ``feat`` (rows from headers)."""
        return self._feature_chunks("node", ntype, feat)

    def edge_feature_chunks(self, etype: str, feat: str) -> list[ChunkRef]:
        """One :class:`ChunkRef` per file of edge feature ``feat`` (rows from headers)."""
        return self._feature_chunks("edge", etype, feat)

    def feature_info(
        self, kind: Literal["node", "edge"], type_name: str, feat: str
    ) -> tuple[np.dtype[Any], tuple[int, ...]]:
        """``(dtype, row_shape)`` of a feature, checked across its files.

        Raises
        ------
        ChunkMismatchError
            Files disagree on dtype or row shape, the array is not 1-D or 2-D, or the
            total rows differ from the type's node or edge count.
        """
        source = self._feature_source(kind, type_name, feat)
        infos = self._infos(kind, type_name, feat)
        where = source.where
        one = _formats.feature_dtype(d for _, _, d in infos) if infos else np.dtype("float32")
        shapes = {s for r, s, _ in infos if r} or {s for _, s, _ in infos}
        if one is None or len(shapes) > 1:
            found = [f"{p}: {d} {s}" for p, (_, s, d) in zip(source.paths, infos, strict=True)]
            raise ChunkMismatchError(f"{where}: expected one dtype and row shape in all files, found {found}")
        dtype = one
        row_shape = shapes.pop() if shapes else ()
        if len(row_shape) > 1:
            raise ChunkMismatchError(
                f"{where}: expected 1-D or 2-D arrays, found row shape {row_shape}; reshape to 2-D"
            )
        total = sum(r for r, _, _ in infos)
        expected = self.num_nodes(type_name) if kind == "node" else self.num_edges(type_name)
        if total != expected:
            raise ChunkMismatchError(
                f"{where}: expected {expected} rows in total (the {kind} count of {type_name!r}), "
                f"found {total} across {len(infos)} files"
                + self.metadata.misfit_feature_files(kind, type_name, source.paths, [r for r, _, _ in infos])
            )
        return dtype, row_shape

    def edges(self, etype: str) -> dd.DataFrame:
        """Edges of ``etype`` as a lazy DataFrame.

        Returns
        -------
        dask.dataframe.DataFrame
            int64 columns ``src``, ``dst`` (per-type node IDs); int64 index
            ``type_eid``; one partition per non-empty read group (:meth:`edge_groups`),
            with known divisions.
        """
        import dask.dataframe as dd  # on demand: it costs 0.4 s to import, on every worker too

        refs = self.edge_groups(etype)
        spec = self.metadata.etype(etype)
        kwargs = {
            "num_src": self.num_nodes(spec.src_type),
            "num_dst": self.num_nodes(spec.dst_type),
        }
        meta = empty_edges(0)
        parts = [r for r in refs if r.rows]
        label = f"dglc-read-edges-{self._snapshot}"  # in the keys: dask-expr takes no token
        if not parts:  # an empty edge type: one empty partition
            return dd.from_map(  # type: ignore[no-any-return]
                empty_edges,
                [0],
                meta=meta,
                divisions=(0, 0),
                label=label,
                enforce_metadata=False,
            )
        divisions = tuple(r.start for r in parts) + (parts[-1].stop - 1,)
        return dd.from_map(  # type: ignore[no-any-return]
            read_edges_partition,
            parts,
            meta=meta,
            divisions=divisions,
            label=label,
            enforce_metadata=False,
            **kwargs,
        )

    def _feature_array(self, kind: Literal["node", "edge"], type_name: str, feat: str) -> da.Array:
        dtype, row_shape = self.feature_info(kind, type_name, feat)
        refs = self.feature_groups(kind, type_name, feat)
        if not refs:
            return da.empty((0, *row_shape), dtype=dtype)  # type: ignore[no-any-return]
        name = f"dglc-read-{kind}-feature-" + tokenize(self._snapshot, refs, row_shape, str(dtype))
        tail = (0,) * len(row_shape)
        layer: dict[Any, Any] = {
            (name, i, *tail): (read_feature_group, ref, row_shape, dtype) for i, ref in enumerate(refs)
        }
        graph = HighLevelGraph.from_collections(name, layer, dependencies=())
        chunks = (tuple(r.rows for r in refs), *((n,) for n in row_shape))
        meta = np.empty((0,) * (1 + len(row_shape)), dtype)
        return da.Array(graph, name, chunks, meta=meta)

    def node_feature(self, ntype: str, feat: str) -> da.Array:
        """Node feature ``feat`` of ``ntype``, rows in ``type_nid`` order.

        Returns
        -------
        dask.array.Array
            The files' dtype; one chunk per read group (:meth:`feature_groups`) along
            axis 0, one chunk along axis 1.
        """
        return self._feature_array("node", ntype, feat)

    def edge_feature(self, etype: str, feat: str) -> da.Array:
        """Edge feature ``feat`` of ``etype``, rows in ``type_eid`` order (chunks as
        :meth:`node_feature`; independent of the edge files' chunking)."""
        return self._feature_array("edge", etype, feat)


def open_chunked_graph(
    path: PathLike,
    *,
    storage_options: StorageOptions = None,
    metadata_filename: str = "metadata.json",
    node_chunk_rows: int = DEFAULT_NODE_CHUNK_ROWS,
    task_bytes: int | str | None = None,
) -> ChunkedGraph:
    """Open a Chunked Graph Format directory as a lazy :class:`ChunkedGraph`.

    Reads only ``metadata.json``; no Dask compute, no chunk file opened.

    Parameters
    ----------
    path
        Input directory or the metadata file; local path or fsspec URL.
    storage_options
        fsspec options for URLs, passed into every task.
    metadata_filename
        Metadata file name inside ``path``.
    node_chunk_rows
        Node chunk size when the metadata has no ``num_nodes_per_chunk``.
    task_bytes
        Decoded bytes a read task aims at: files are coalesced into tasks of about
        this size (:mod:`~dgl_chunked.io.chunked.groups`). An int or a size such as
        ``"64MiB"``; default ``$DGLC_TASK_SIZE``, else 32 MiB.

    Examples
    --------
    >>> g = open_chunked_graph("in_dir")  # doctest: +SKIP
    >>> g.edges("author:writes:paper").compute()  # doctest: +SKIP
    """
    metadata = read_metadata(path, storage_options=storage_options, metadata_filename=metadata_filename)
    return ChunkedGraph(
        metadata, storage_options=storage_options, node_chunk_rows=node_chunk_rows, task_bytes=task_bytes
    )
