"""Partition quality report: edge cut, balance, owned edges and HALO nodes, out of core.

How it is computed (:func:`compute_partition_report`, two Dask computes):

1. The assignment is materialised as a Zarr copy (one array per node type, regular
   chunks, its IDs checked and in the narrowest type: int8 up to 127 partitions) in a
   marked ``dglc-report-<token>`` directory under ``scratch_dir``.
2. Nodes: per node block, a bincount of partition IDs (and of every node feature
   whose name contains ``mask``, e.g. ``train_mask``, that is boolean or integer, the
   nodes where it is nonzero: GSProcessing writes int8 masks of 0 and 1), summed.
3. Edges: per edge read task (consecutive files of about the graph's task size), the
   partitions of both endpoints are gathered with
   :func:`dgl_chunked.storage.zarr_lookup.lookup` (the whole copy when it holds no
   more bytes than the task's IDs, else only the touched Zarr chunks, one at a time:
   bounded memory). An edge is owned by its destination's
   partition (``docs/spec/partition-config.md``, "ID spaces"); it is cut when the source lives elsewhere.
4. HALO nodes of partition ``p`` are the distinct sources, not owned by ``p``, of
   edges owned by ``p`` (DGL's chunked pipeline: in-edges, one hop). Each edge task
   writes its locally deduplicated ``(part_id, orig_nid)`` pairs to a bucket file
   (:mod:`dgl_chunked.storage.buckets`) in the scratch directory, a bucket per range of
   node IDs; one task per range reads its bucket of every file, one file at a time,
   sets a flag per pair (one byte per node of the range and partition: at most
   :data:`HALO_FLAG_BYTES`) and counts the flags per partition and node type. Memory
   per task is bounded by one read task or the flags, never by the graph: the Dask
   DataFrame ``drop_duplicates`` this replaced held every pair in pandas frames on the
   local threads the CLI uses below 4 GiB of input (``partition --method random`` of
   10M nodes / 100M edges peaked at 5.3 GB).

Balance ratios are ``max / mean`` over partitions (1.0 is perfect; None when the
mean is 0).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import compute_settled
from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.chunked.chunks import ChunkGroup, read_checked_edges
from dgl_chunked.partition.report_kernels import (
    HALO_FLAG_BYTES,
    edge_stats_block,
    halo_flag_counts,
    halo_ranges,
    narrowed,
    part_counts_block,
    part_dtype,
)
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.arrays import zarr_store
from dgl_chunked.storage.buckets import write_buckets
from dgl_chunked.storage.owned import check_no_overlap, make_scratch_dir, remove_owned
from dgl_chunked.storage.zarr_lookup import lookup

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph

__all__ = [
    "HALO_FLAG_BYTES",
    "PartitionReport",
    "compute_partition_report",
    "edge_stats_block",
    "halo_flag_counts",
    "halo_ranges",
    "part_counts_block",
]

_ZARR_CHUNK = 1 << 20


def _ratio(values: list[int]) -> float | None:
    mean = sum(values) / len(values) if values else 0.0
    return round(max(values) / mean, 6) if mean > 0 else None


@dataclass(frozen=True, kw_only=True)
class PartitionReport:
    """Quality of an assignment; every per-partition list has ``num_parts`` entries."""

    num_parts: int
    nodes: dict[str, list[int]]
    masks: dict[str, dict[str, list[int]]]
    owned_edges: dict[str, list[int]]
    cut_edges: dict[str, int]
    halo_nodes: dict[str, list[int]]

    @property
    def num_nodes(self) -> int:
        """All nodes."""
        return sum(sum(v) for v in self.nodes.values())

    @property
    def num_edges(self) -> int:
        """All edges."""
        return sum(sum(v) for v in self.owned_edges.values())

    @property
    def edge_cut(self) -> int:
        """Edges whose endpoints live in different partitions."""
        return sum(self.cut_edges.values())

    @property
    def edge_cut_fraction(self) -> float:
        """``edge_cut / num_edges`` (0.0 without edges)."""
        return self.edge_cut / self.num_edges if self.num_edges else 0.0

    def _column(self, table: Mapping[str, list[int]]) -> list[int]:
        return [sum(v[p] for v in table.values()) for p in range(self.num_parts)]

    def balance(self) -> dict[str, float | None]:
        """``max/mean`` per node type, mask, edge type, and for the totals."""
        out: dict[str, float | None] = {f"nodes/{t}": _ratio(v) for t, v in self.nodes.items()}
        out["nodes/total"] = _ratio(self._column(self.nodes))
        for t, feats in self.masks.items():
            out.update({f"mask/{t}/{f}": _ratio(v) for f, v in feats.items()})
        out.update({f"owned_edges/{e}": _ratio(v) for e, v in self.owned_edges.items()})
        out["owned_edges/total"] = _ratio(self._column(self.owned_edges))
        out["halo_nodes/total"] = _ratio(self._column(self.halo_nodes))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary: the raw counts plus derived totals and ratios."""
        inner, halo = self._column(self.nodes), self._column(self.halo_nodes)
        return {
            **asdict(self),
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "edge_cut": self.edge_cut,
            "edge_cut_fraction": self.edge_cut_fraction,
            "inner_nodes_total": inner,
            "halo_nodes_total": halo,
            "halo_fraction": [h / i if i else None for h, i in zip(halo, inner, strict=True)],
            "balance": self.balance(),
        }

    def to_json(self, path: PathLike, *, storage_options: StorageOptions = None) -> None:
        """Write :meth:`to_dict` as JSON (atomically)."""
        _fs.atomic_write_bytes(path, json.dumps(self.to_dict(), indent=2).encode(), storage_options)

    def to_table(self) -> str:
        """A readable fixed-width text table."""
        rows: list[tuple[str, list[int], float | None]] = []
        rows += [(f"nodes {t}", v, _ratio(v)) for t, v in self.nodes.items()]
        rows += [(f"{f} {t}", v, _ratio(v)) for t, feats in self.masks.items() for f, v in feats.items()]
        rows += [(f"owned edges {e}", v, _ratio(v)) for e, v in self.owned_edges.items()]
        rows.append(("owned edges (all)", self._column(self.owned_edges), _ratio(self._column(self.owned_edges))))
        rows.append(("HALO nodes (all)", self._column(self.halo_nodes), _ratio(self._column(self.halo_nodes))))
        label_w = max(len(r[0]) for r in rows)
        cells = [[str(x) for x in r[1]] for r in rows]
        col_w = max([len(f"part{self.num_parts - 1}")] + [len(c) for row in cells for c in row])
        head = " " * label_w + "".join(f"  {f'part{p}':>{col_w}}" for p in range(self.num_parts)) + "  max/mean"
        lines = [
            f"{self.num_parts} partitions, {self.num_nodes} nodes, {self.num_edges} edges",
            f"edge cut: {self.edge_cut} of {self.num_edges} edges ({100 * self.edge_cut_fraction:.2f}%)",
            "",
            head,
        ]
        for (label, _, ratio), row in zip(rows, cells, strict=True):
            shown = "-" if ratio is None else f"{ratio:.3f}"
            lines.append(f"{label:<{label_w}}" + "".join(f"  {c:>{col_w}}" for c in row) + f"  {shown:>8}")
        return "\n".join(lines)


def _edge_task(
    group: ChunkGroup,
    *,
    num_src: int,
    num_dst: int,
    store: str,
    storage_options: StorageOptions,
    src_type: str,
    dst_type: str,
    src_offset: int,
    num_parts: int,
    halo_file: str,
    width: int,
    num_ranges: int,
) -> tuple[npt.NDArray[np.int64], int, str]:
    """Owned and cut edges of one read task; its HALO pairs written to ``halo_file``,
    bucketed by node range (column ``flag``: the pair's flag in its range)."""
    import zarr

    src, dst = read_checked_edges(group, num_src=num_src, num_dst=num_dst)
    opened = zarr_store(store, storage_options)
    src_part = lookup(zarr.open_array(store=opened, path=src_type, mode="r"), src)
    dst_part = lookup(zarr.open_array(store=opened, path=dst_type, mode="r"), dst)
    del dst
    owned, cut, pairs = edge_stats_block(src_part, dst_part, src, num_parts=num_parts, src_offset=src_offset)
    del src, src_part, dst_part
    orig = pairs["orig_nid"]
    flag = ((orig % width) * num_parts + pairs["part_id"]).astype(np.uint32)  # < HALO_FLAG_BYTES
    write_buckets(halo_file, {"flag": flag}, orig // width, num_ranges, storage_options)
    return owned, cut, halo_file


# --- wiring -----------------------------------------------------------------------------


def _materialise(
    parts: Mapping[str, da.Array], store: str, storage_options: StorageOptions, num_parts: int
) -> dict[str, da.Array]:
    """Store the assignment as Zarr (one compute), checked and narrowed
    (:func:`~dgl_chunked.partition.report_kernels.part_dtype`); return lazy views of the
    copy, so nothing upstream of ``parts`` (e.g. a METIS task) is evaluated twice."""
    import dask.array as da
    import zarr

    group = zarr.open_group(zarr_store(store, storage_options), mode="w")
    dtype = part_dtype(num_parts)
    writes = []
    for ntype, arr in parts.items():
        n = int(arr.shape[0])
        chunk = max(1, min(n, _ZARR_CHUNK))
        target: Any = group.create_array(
            ntype, shape=(n,), chunks=(chunk,), dtype=dtype, fill_value=0, compressors=None
        )
        if n:
            where = f"assignment of {ntype!r}"
            narrow = da.map_blocks(
                narrowed, arr, num_parts=num_parts, where=where, dtype=dtype, meta=np.empty(0, dtype)
            )
            writes.append(da.store(narrow.rechunk(chunk), target, lock=False, compute=False))
    compute_settled(*writes)
    return {
        t: da.from_zarr(
            group[t], chunks=parts[t].chunks, name=f"dglc-report-parts-{t}-{run_token(store, parts[t].name)}"
        )
        for t in parts
    }


def _node_counts(graph: ChunkedGraph, parts: Mapping[str, da.Array], num_parts: int) -> dict[str, Any]:
    import dask.array as da

    def counts(arr: da.Array, weights: da.Array | None, where: str) -> da.Array:
        args = [arr] if weights is None else [arr, weights.reshape(-1).rechunk(arr.chunks)]
        return da.map_blocks(  # type: ignore[no-any-return]
            part_counts_block,
            *args,
            num_parts=num_parts,
            where=where,
            dtype=np.int64,
            chunks=((1,) * arr.numblocks[0], (num_parts,)),
            new_axis=1,
            meta=np.empty((0, 0), np.int64),
            token="dglc-report-counts",
        ).sum(axis=0)

    out: dict[str, Any] = {"nodes": {}, "masks": {}}
    for ntype in graph.metadata.node_types:
        out["nodes"][ntype] = counts(parts[ntype], None, f"assignment of {ntype!r}")
        for feat in graph.metadata.node_data.get(ntype, {}):
            if "mask" not in feat.lower():
                continue
            arr = graph.node_feature(ntype, feat)
            if (arr.dtype == np.bool_ or arr.dtype.kind in "iu") and (arr.ndim == 1 or arr.shape[1:] == (1,)):
                out["masks"].setdefault(ntype, {})[feat] = counts(parts[ntype], arr, f"assignment of {ntype!r}")
    return out


def _edge_stats(
    graph: ChunkedGraph, store: str, root: str, storage_options: StorageOptions, num_parts: int
) -> tuple[dict[str, Any], Any]:
    """Per edge type the owned and cut edges of every read task, and the HALO counts
    (``[P, T]``, :func:`halo_flag_counts` summed over the node ranges)."""
    import dask

    md = graph.metadata
    width, num_ranges = halo_ranges(int(md.node_type_offsets[-1]), num_parts)
    task = dask.delayed(_edge_task, pure=True, nout=3)
    stats: dict[str, Any] = {}
    files: list[Any] = []
    for e, spec in enumerate(md.edge_types):
        kw = {
            "store": store,
            "storage_options": storage_options,
            "src_type": spec.src_type,
            "dst_type": spec.dst_type,
            "num_parts": num_parts,
            "src_offset": int(md.node_type_offsets[md.ntype_id(spec.src_type)]),
            "num_src": graph.num_nodes(spec.src_type),
            "num_dst": graph.num_nodes(spec.dst_type),
            "width": width,
            "num_ranges": num_ranges,
        }
        groups = [g for g in graph.edge_groups(spec.name) if g.rows]  # tasks read their files by path
        results = [task(g, halo_file=_fs.join(root, f"halo/{e}-{i}.arrow"), **kw) for i, g in enumerate(groups)]
        stats[spec.name] = ([r[0] for r in results], [r[1] for r in results])
        files += [r[2] for r in results]
    count = dask.delayed(halo_flag_counts, pure=True)
    offsets = np.asarray(md.node_type_offsets, np.int64)
    ranges = [
        count(files, r, width=width, num_parts=num_parts, type_offsets=offsets, storage_options=storage_options)
        for r in range(num_ranges)
    ]
    return stats, dask.delayed(sum)(ranges)


def compute_partition_report(
    graph: ChunkedGraph,
    parts: Mapping[str, da.Array],
    num_parts: int,
    *,
    scratch_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
) -> PartitionReport:
    """Compute the quality report of an assignment (two Dask computes; see the module docs).

    Parameters
    ----------
    graph
        The chunked graph.
    parts
        Per node type the partition of every node (e.g. from ``assign_partitions`` or
        ``open_assignment``), int dtype, length ``num_nodes(ntype)``.
    num_parts
        Number of partitions; IDs outside ``[0, num_parts)`` raise AssignmentError.
    scratch_dir
        Where the temporary Zarr copy of the assignment goes, in a new directory
        ``dglc-report-<token>`` removed afterwards: a local path or an fsspec URL
        (default: the system temp dir). On a cluster whose workers share no local
        disk give a URL every worker can reach (``s3://bucket/scratch``).
    storage_options
        fsspec options for a ``scratch_dir`` URL.

    Returns
    -------
    PartitionReport
    """

    for ntype in graph.metadata.node_types:
        arr = parts.get(ntype)
        if arr is None or arr.ndim != 1 or arr.shape[0] != graph.num_nodes(ntype):
            raise AssignmentError(
                f"parts[{ntype!r}]: expected {graph.num_nodes(ntype)} partition IDs, "
                f"found {None if arr is None else arr.shape}"
            )
    if graph.metadata.node_type_offsets[-1] >= 1 << 40 or num_parts >= 1 << 23:
        raise AssignmentError(
            f"report: supports fewer than 2**40 nodes and 2**23 partitions, found "
            f"{int(graph.metadata.node_type_offsets[-1])} nodes and {num_parts} partitions"
        )
    parent = tempfile.gettempdir() if scratch_dir is None else os.fspath(scratch_dir)
    so = storage_options if _fs.is_url(parent) else None
    token = run_token(parent)
    # where we write is the marked child, never scratch_dir itself: only it must avoid the input
    check_no_overlap({"scratch directory": _fs.join(parent, f"dglc-report-{token}")}, graph.input_locations())
    root = make_scratch_dir(parent, "report", token, storage_options=so)
    store = _fs.join(root, "assignment.zarr")
    try:
        stored = _materialise({t: parts[t] for t in graph.metadata.node_types}, store, so, num_parts)
        nodes = _node_counts(graph, stored, num_parts)
        edges, halo = _edge_stats(graph, store, root, so, num_parts)
        nodes, edges, halo = compute_settled(nodes, edges, halo)
    finally:
        remove_owned(root, storage_options=so)
    halo_nodes = {t: [int(n) for n in halo[:, i]] for i, t in enumerate(graph.metadata.node_types)}
    return PartitionReport(
        num_parts=num_parts,
        nodes={t: v.tolist() for t, v in nodes["nodes"].items()},
        masks={t: {f: v.tolist() for f, v in feats.items()} for t, feats in nodes["masks"].items()},
        owned_edges={
            e: np.sum(o, axis=0).astype(np.int64).tolist() if o else [0] * num_parts for e, (o, _) in edges.items()
        },
        cut_edges={e: int(sum(c)) for e, (_, c) in edges.items()},
        halo_nodes=halo_nodes,
    )
