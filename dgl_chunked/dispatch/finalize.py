"""The reduce side of dispatch: one task per partition streams staging into DGL files.

A partition's rows are one contiguous segment of every owner-sorted staged array.
Reading the segments in read-task order yields ascending original IDs inside every
(partition, type) block, which is the order the new IDs were given in. Large
arrays reach the DGL writer as :class:`~dgl_chunked.io.dgl.binary.ArraySpans`,
so memory holds one segment at a time, plus the partition's HALO node set (and
the whole edge list when CSC/CSR is requested: see ``write_graph``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.dispatch.halo.bitmap import HaloBitmap
from dgl_chunked.dispatch.halo.edges import collect_halo_edges
from dgl_chunked.dispatch.halo.ranges import HaloStreams, build_halo, owned_halo_bitmap
from dgl_chunked.dispatch.ids import IdLayout, owner_of, type_of
from dgl_chunked.dispatch.kernels import edge_array, node_array
from dgl_chunked.dispatch.plan import PartitionPlan, PartitionSummary, StagedFeature
from dgl_chunked.dispatch.staging import segment_bounds
from dgl_chunked.dispatch.write_pieces import file_kinds
from dgl_chunked.io.dgl.binary import ArraySpans, HomogeneousGraph, write_graph, write_tensor_dict
from dgl_chunked.io.graphbolt.csc import write_graphbolt_partition
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE
from dgl_chunked.storage import fs
from dgl_chunked.storage.zarr_rows import read_rows

__all__ = [
    "partition_files",
    "prepare_partition",
    "write_partition",
    "write_partition_file",
    "publish_partition",
    "part_dir_name",
    "tmp_dir_name",
]

BLOCK = 1 << 20


def part_dir_name(part: int) -> str:
    return f"part{part}"


def _blocks(shape: tuple[int, ...], dtype: Any, make: Callable[[], Iterator[npt.NDArray[Any]]]) -> ArraySpans:
    return ArraySpans(shape, np.dtype(dtype), make)


def _const_blocks(n: int, value: int, dtype: Any) -> Iterator[npt.NDArray[Any]]:
    for lo in range(0, n, BLOCK):
        yield np.full(min(BLOCK, n - lo), value, dtype=dtype)


def _type_blocks(sizes: npt.NDArray[np.int64]) -> Iterator[npt.NDArray[np.int32]]:
    """Type IDs of rows laid out type by type (``sizes[t]`` rows of type ``t``), in blocks."""
    for t, n in enumerate(sizes):
        yield from _const_blocks(int(n), t, np.int32)


def _arange_blocks(start: int, stop: int) -> Iterator[npt.NDArray[np.int64]]:
    for lo in range(start, stop, BLOCK):
        yield np.arange(lo, min(lo + BLOCK, stop), dtype=np.int64)


def _ids(bitmap: HaloBitmap) -> npt.NDArray[np.int64]:
    return np.concatenate([np.zeros(0, np.int64), *bitmap.ids()])


def _graph(plan: PartitionPlan, part: int) -> tuple[HomogeneousGraph, HaloStreams | None]:
    """The partition's graph as streams, and the HALO set they read (None: multi-hop, in memory)."""
    lo, hi = (int(x) for x in plan.node_layout.part_starts[part : part + 2])
    if plan.keep_halo_edges:
        return _halo_edges_graph(plan, part, lo, hi), None
    halo = build_halo(plan, part, lo, hi, plan.halo_table_bytes)
    return _owned_graph(plan, part, lo, hi, halo), halo


def _owned_graph(plan: PartitionPlan, part: int, lo: int, hi: int, halo: HaloStreams) -> HomogeneousGraph:
    """Owned edges and 1-hop HALO nodes, the HALO set and local sources read from ``halo``."""
    n_inner = hi - lo
    e_lo = int(plan.edge_layout.ranges[part, 0, 0])
    e_sizes = plan.edge_layout.sizes()[part]
    n_edges = int(e_sizes.sum())
    n_nodes = n_inner + halo.num_halo

    def node_ids() -> Iterator[npt.NDArray[np.int64]]:
        yield from _arange_blocks(lo, hi)
        yield from halo.halo_blocks()

    def node_types() -> Iterator[npt.NDArray[np.int32]]:
        yield from _type_blocks(plan.node_layout.sizes()[part])
        yield from (type_of(ids, plan.node_layout) for ids in halo.halo_blocks())

    def local_dst() -> Iterator[npt.NDArray[np.int64]]:
        for _, dst in plan.edge_segments(part, "new_dst"):
            yield dst - lo

    return HomogeneousGraph(
        num_nodes=n_nodes,
        src=_blocks((n_edges,), np.int64, halo.local_src_blocks),
        dst=_blocks((n_edges,), np.int64, local_dst),
        ndata={
            "_ID": _blocks((n_nodes,), np.int64, node_ids),
            "_TYPE": _blocks((n_nodes,), np.int32, node_types),
            "inner_node": _blocks((n_nodes,), np.uint8, lambda: _flag_blocks(n_inner, n_nodes)),
        },
        edata={
            "_ID": _blocks((n_edges,), np.int64, lambda: _arange_blocks(e_lo, e_lo + n_edges)),
            "_TYPE": _blocks((n_edges,), np.int32, lambda: _type_blocks(e_sizes)),
            "inner_edge": _blocks((n_edges,), np.uint8, lambda: _flag_blocks(n_edges, n_edges)),
        },
    )


def _halo_edges_graph(plan: PartitionPlan, part: int, lo: int, hi: int) -> HomogeneousGraph:
    """Owned edges plus the in-edges of HALO nodes up to ``halo_hops``, the HALO set in memory."""
    total = int(plan.node_layout.part_starts[-1])
    halo_index = owned_halo_bitmap(plan, part, lo, hi, 0, total)
    extra = collect_halo_edges(plan, part, _ids(halo_index), plan.halo_hops)
    halo_index.add(extra.src)  # the multi-hop HALO nodes join the 1-hop ones
    halo_index.remove_range(lo, hi)
    halo_index.freeze()
    halo = _ids(halo_index)
    n_inner = hi - lo
    e_lo = int(plan.edge_layout.ranges[part, 0, 0])
    e_sizes = plan.edge_layout.sizes()[part]
    n_owned = int(e_sizes.sum())
    n_edges = n_owned + int(extra.eid.shape[0])

    def local(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out = ids - lo
        outside = np.flatnonzero((ids < lo) | (ids >= hi))
        out[outside] = n_inner + halo_index.rank(ids[outside])
        return out

    def local_src() -> Iterator[npt.NDArray[np.int64]]:
        for _, src in plan.edge_segments(part, "new_src"):
            yield local(src)
        yield local(extra.src)

    def local_dst() -> Iterator[npt.NDArray[np.int64]]:
        for _, dst in plan.edge_segments(part, "new_dst"):
            yield dst - lo
        yield local(extra.dst)

    def node_ids() -> Iterator[npt.NDArray[np.int64]]:
        yield from _arange_blocks(lo, hi)
        yield halo

    def node_types() -> Iterator[npt.NDArray[np.int32]]:
        yield from _type_blocks(plan.node_layout.sizes()[part])
        yield type_of(halo, plan.node_layout)

    def edge_ids() -> Iterator[npt.NDArray[np.int64]]:
        yield from _arange_blocks(e_lo, e_lo + n_owned)
        yield extra.eid

    def edge_types() -> Iterator[npt.NDArray[np.int32]]:
        yield from _type_blocks(e_sizes)
        yield extra.etype

    n_nodes = n_inner + int(halo.shape[0])
    ndata = {
        "_ID": _blocks((n_nodes,), np.int64, node_ids),
        "_TYPE": _blocks((n_nodes,), np.int32, node_types),
        "inner_node": _blocks((n_nodes,), np.uint8, lambda: _flag_blocks(n_inner, n_nodes)),
    }
    if plan.keep_halo_edges:  # as partition_graph: the owner of every local node
        ndata["part_id"] = _blocks(
            (n_nodes,),
            np.int64,
            lambda: (owner_of(ids, plan.node_layout.part_starts).astype(np.int64) for ids in node_ids()),
        )
    return HomogeneousGraph(
        num_nodes=n_nodes,
        src=_blocks((n_edges,), np.int64, local_src),
        dst=_blocks((n_edges,), np.int64, local_dst),
        ndata=ndata,
        edata={
            "_ID": _blocks((n_edges,), np.int64, edge_ids),
            "_TYPE": _blocks((n_edges,), np.int32, edge_types),
            "inner_edge": _blocks((n_edges,), np.uint8, lambda: _flag_blocks(n_owned, n_edges)),
        },
    )


def _flag_blocks(ones: int, total: int) -> Iterator[npt.NDArray[np.uint8]]:
    """``ones`` ones then zeros up to ``total`` (inner_node / inner_edge)."""
    yield from _const_blocks(ones, 1, np.uint8)
    yield from _const_blocks(total - ones, 0, np.uint8)


def _feature_tensors(
    plan: PartitionPlan, features: tuple[StagedFeature, ...], layout: IdLayout, part: int
) -> dict[str, ArraySpans]:
    sizes = layout.sizes()[part]
    out = {}
    for feat in features:
        rows = int(sizes[feat.type_index])

        def segments(feat: StagedFeature = feat) -> Iterator[npt.NDArray[Any]]:
            return plan.staging.iter_segments(feat.arrays, feat.counts, part)

        out[feat.key] = _blocks((rows, *feat.row_shape), feat.dtype, segments)
    return out


def _orig_nids(plan: PartitionPlan, part: int) -> dict[str, ArraySpans]:
    sizes = plan.node_layout.sizes()[part]
    out = {}
    for t, ntype in enumerate(plan.ntypes):
        starts = plan.node_block_starts[t]
        counts = plan.node_block_counts[t]

        def segments(
            t: int = t, ntype: str = ntype, starts: tuple[int, ...] = starts, counts: npt.NDArray[np.int64] = counts
        ) -> Iterator[npt.NDArray[np.int64]]:
            arr = plan.staging.open(node_array(ntype, "sorted_type_nid"))
            for b, start in enumerate(starts):
                lo, hi = segment_bounds(counts[b], part)
                if hi > lo:
                    yield read_rows(arr, start + lo, start + hi)

        out[ntype] = _blocks((int(sizes[t]),), np.int64, segments)
    return out


def _orig_eids(plan: PartitionPlan, part: int) -> dict[str, ArraySpans]:
    sizes = plan.edge_layout.sizes()[part]
    out = {}
    for r, etype in enumerate(plan.etypes):

        def segments(r: int = r, etype: str = etype) -> Iterator[npt.NDArray[np.int64]]:
            # a read task's edges owned by this partition, in input order: where its owner is us
            counts = plan.edge_task_counts[r]
            starts = np.concatenate([[0], np.cumsum(counts.sum(axis=1))])
            for c in range(counts.shape[0]):
                if counts[c, part]:
                    owner = np.asarray(plan.staging.open(edge_array(etype, c, "owner"))[:])
                    yield np.flatnonzero(owner == part).astype(np.int64) + int(starts[c])

        out[etype] = _blocks((int(sizes[r]),), np.int64, segments)
    return out


def _write_graph_file(plan: PartitionPlan, tmp: str, graph: HomogeneousGraph) -> None:
    """``graph.dgl``, or GraphBolt's ``fused_csc_sampling_graph.pt``."""
    if plan.graphbolt is not None:
        write_graphbolt_partition(
            fs.join(tmp, GRAPHBOLT_FILE),
            graph,
            ntypes={t: i for i, t in enumerate(plan.ntypes)},
            etypes={e: i for i, e in enumerate(plan.etypes)},
            options=plan.graphbolt,
            num_parts=plan.node_layout.num_parts,
            totals=(int(np.sum(plan.node_layout.sizes())), int(np.sum(plan.edge_layout.sizes()))),
            storage_options=plan.storage_options,
        )
    else:
        write_graph(fs.join(tmp, "graph.dgl"), graph, formats=plan.graph_formats, storage_options=plan.storage_options)


def partition_files(plan: PartitionPlan) -> tuple[str, ...]:
    """The files of a partition, each written by a task of its own (the graph first).

    ``"graph"`` is ``graph.dgl`` (or GraphBolt's file) with the HALO set; the others are
    ``<name>.dgl`` tensor dicts. Each file depends only on the staging, so a partition's
    files are written side by side: ``2 partitions`` give 6 tasks, not 2.
    """
    return file_kinds(plan.save_orig_nids, plan.save_orig_eids)


def prepare_partition(plan: PartitionPlan, part: int, *, fresh: bool) -> None:
    """Make ``_tmp_part<part>/``; ``fresh``: empty it first (no file of it is kept from an earlier run)."""
    tmp = fs.join(plan.out_dir, tmp_dir_name(part))
    filesystem, tmp_inner = fs.filesystem(tmp, plan.storage_options)
    if fresh and filesystem.exists(tmp_inner):
        filesystem.rm(tmp_inner, recursive=True)
    filesystem.makedirs(tmp_inner, exist_ok=True)


def write_partition_file(plan: PartitionPlan, part: int, kind: str) -> PartitionSummary | None:
    """Write one of :func:`partition_files` of partition ``part`` into ``_tmp_part<part>/``.

    Returns
    -------
    PartitionSummary or None
        For ``"graph"``: the partition's inner and HALO node counts, owned and HALO
        edge counts; None for the other files.
    """
    tmp = fs.join(plan.out_dir, tmp_dir_name(part))
    so = plan.storage_options
    filesystem, tmp_inner = fs.filesystem(tmp, so)
    filesystem.makedirs(tmp_inner, exist_ok=True)  # also made by prepare_partition: a task may run first
    if kind == "graph":
        graph, halo = _graph(plan, part)
        try:
            _write_graph_file(plan, tmp, graph)
        finally:
            if halo is not None:
                halo.remove()
        n_inner = int(plan.node_layout.sizes()[part].sum())
        n_owned = int(plan.edge_layout.sizes()[part].sum())
        return PartitionSummary(
            inner_nodes=n_inner,
            halo_nodes=graph.num_nodes - n_inner,
            edges=n_owned,
            halo_edges=int(graph.edata["_ID"].shape[0]) - n_owned,
        )
    tensors = {
        "node_feat": lambda: _feature_tensors(plan, plan.node_features, plan.node_layout, part),
        "edge_feat": lambda: _feature_tensors(plan, plan.edge_features, plan.edge_layout, part),
        "orig_nids": lambda: _orig_nids(plan, part),
        "orig_eids": lambda: _orig_eids(plan, part),
    }
    write_tensor_dict(fs.join(tmp, f"{kind}.dgl"), tensors[kind](), storage_options=so)
    return None


def write_partition(plan: PartitionPlan, part: int) -> PartitionSummary:
    """Write partition ``part``'s files into ``_tmp_part<part>/``, one after another.

    :func:`publish_partition` renames it to ``part<part>/`` once every partition is
    written, so a failed run never leaves a ``part<i>/`` that looks complete. Dispatch
    writes the files as tasks of their own (:func:`write_partition_file`).

    Returns
    -------
    PartitionSummary
        The partition's inner and HALO node counts, owned and HALO edge counts.
    """
    prepare_partition(plan, part, fresh=True)
    summary = write_partition_file(plan, part, "graph")
    for kind in partition_files(plan)[1:]:
        write_partition_file(plan, part, kind)
    if summary is None:  # pragma: no cover - "graph" always returns one
        raise RuntimeError("the graph writer returned no summary")
    return summary


def tmp_dir_name(part: int) -> str:
    return f"_tmp_{part_dir_name(part)}"


def publish_partition(out_dir: str, part: int, storage_options: StorageOptions) -> None:
    """Rename ``_tmp_part<part>/`` to ``part<part>/`` (a no-op when already published)."""
    filesystem, tmp_inner = fs.filesystem(fs.join(out_dir, tmp_dir_name(part)), storage_options)
    _, final_inner = fs.filesystem(fs.join(out_dir, part_dir_name(part)), storage_options)
    if not filesystem.exists(tmp_inner):
        return
    if filesystem.exists(final_inner):
        filesystem.rm(final_inner, recursive=True)
    if fs.is_url(out_dir) and not out_dir.startswith("file://"):
        # object stores have no directories: move the objects one by one, as listed now
        # (workers wrote them: a listing cached in this process may be stale)
        filesystem.invalidate_cache(tmp_inner)
        for src in filesystem.find(tmp_inner):
            filesystem.mv(src, final_inner + src[len(tmp_inner) :])
    else:
        filesystem.mv(tmp_inner, final_inner, recursive=True)
