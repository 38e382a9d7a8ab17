"""Dask wiring of the staging kernels: one delayed task per node block or read task.

A read task is a group of consecutive chunk files of about the graph's task size
(:meth:`~dgl_chunked.io.chunked.graph.ChunkedGraph.edge_groups`), so the number of
tasks follows the input's bytes, not its number of files. Every task goes through
:func:`~dgl_chunked.dispatch.staging.resumable` with the stamps of the files it
reads, so a rerun after a crash (or after a damaged file was replaced) skips what
already finished from unchanged files. Each ``stage_*`` function here runs one
compute and returns the small counts the next layout step needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import dask
import dask.array as da
import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.fingerprint import FileStamps
from dgl_chunked.dispatch.ids import IdLayout, layout_ids, staged_id_dtype
from dgl_chunked.dispatch.kernels import (
    NodeIds,
    feature_array,
    keeps_edge_owners,
    node_array,
    read_part_block,
    stage_edge_feature_task,
    stage_edge_task,
    stage_new_nid_block,
    stage_node_data_block,
    stage_node_feature_task,
    stage_part_block,
)
from dgl_chunked.dispatch.new_id_map import NodeNumbering
from dgl_chunked.dispatch.node_id_features import NodeIdValues
from dgl_chunked.dispatch.plan import StagedFeature
from dgl_chunked.dispatch.staging import Staging, node_zarr_chunk_rows, resumable
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.io.chunked.node_id_features import NodeIdFeature

__all__ = ["Runner", "stage_nodes", "staged_assignment", "stage_edges_and_features"]

ExtraNodeData = Mapping[str, Mapping[str, da.Array]]


class Runner(Protocol):
    def compute(self, tasks: list[Any], step: str) -> tuple[Any, ...]: ...


def stage_nodes(
    graph: ChunkedGraph,
    parts: Mapping[str, da.Array],
    num_parts: int,
    staging: Staging,
    block_rows: int,
    runner: Runner,
    *,
    keep_sorted_ids: bool,
) -> tuple[IdLayout, tuple[tuple[int, ...], ...], tuple[npt.NDArray[np.int64], ...]]:
    """Store the assignment, lay out new node IDs, number every node (and, with
    ``keep_sorted_ids``, stage the type_nids grouped by owner that ``orig_nids.dgl`` needs)."""
    meta = graph.metadata
    count_tasks: list[Any] = []
    starts_per_type = []
    new_nid_dtype = staged_id_dtype(sum(meta.num_nodes(t) for t in meta.node_types), wide=staging.wide_ids)
    for ntype in meta.node_types:
        n = meta.num_nodes(ntype)
        arr = parts[ntype].astype(np.int32).rechunk(block_rows) if n else None
        arrays = [("part", np.int32), ("new_nid", new_nid_dtype)]
        arrays += [("sorted_type_nid", np.int64)] if keep_sorted_ids else []
        for what, dtype in arrays:
            staging.ensure(node_array(ntype, what), (n,), dtype, chunks=(node_zarr_chunk_rows(block_rows, n),))
        starts = tuple(range(0, n, block_rows))
        starts_per_type.append(starts)
        if arr is None:
            continue
        for b, block in enumerate(arr.to_delayed().ravel()):
            count_tasks.append(
                dask.delayed(resumable, pure=False)(
                    staging,
                    f"assign/{ntype}/{b}",
                    "",  # the assignment is in the run's fingerprint
                    stage_part_block,
                    staging,
                    ntype,
                    starts[b],
                    block,
                    num_parts,
                    f"assignment of {ntype!r}",
                    dask_key_name=(f"dglc-stage-assignment-{staging.token}", len(count_tasks)),
                )
            )
    flat = iter(runner.compute(count_tasks, "stage assignment"))
    counts = tuple(
        np.array([next(flat) for _ in s], dtype=np.int64).reshape(len(s), num_parts) for s in starts_per_type
    )
    layout = layout_ids(counts)
    number_tasks = [
        dask.delayed(resumable, pure=False)(
            staging,
            f"number/{ntype}/{b}",
            "",
            stage_new_nid_block,
            staging,
            ntype,
            start,
            min(start + block_rows, meta.num_nodes(ntype)),
            layout.block_bases[t][b],
            keep_sorted_ids,
            dask_key_name=(f"dglc-number-nodes-{staging.token}", t, b),
        )
        for t, ntype in enumerate(meta.node_types)
        for b, start in enumerate(starts_per_type[t])
    ]
    runner.compute(number_tasks, "number nodes")
    return layout, tuple(starts_per_type), counts


def staged_assignment(graph: ChunkedGraph, staging: Staging, block_rows: int) -> dict[str, da.Array]:
    """The assignment as :func:`stage_nodes` stored it: per node type a lazy int32 array
    read from the staging, in blocks of ``block_rows`` (what ``run --partitions-dir`` is
    written from, so the partitioner's result is computed and stored once)."""
    meta = graph.metadata
    out: dict[str, da.Array] = {}
    for ntype in meta.node_types:
        n = meta.num_nodes(ntype)
        chunks = tuple(min(block_rows, n - s) for s in range(0, n, block_rows)) or (0,)
        out[ntype] = da.map_blocks(
            read_part_block,
            staging=staging,
            ntype=ntype,
            chunks=(chunks,),
            dtype=np.int32,
            meta=np.empty(0, np.int32),
            name=f"dglc-staged-assignment-{staging.token}-{ntype}",
        )
    return out


def stage_edges_and_features(
    graph: ChunkedGraph,
    staging: Staging,
    node_layout: IdLayout,
    num_parts: int,
    runner: Runner,
    *,
    stamps: FileStamps,
    extra_node_data: ExtraNodeData,
    block_rows: int,
    save_orig_eids: bool,
    node_id_features: tuple[NodeIdFeature, ...] = (),
) -> tuple[list[npt.NDArray[np.int64]], tuple[StagedFeature, ...], tuple[StagedFeature, ...]]:
    """Stage every edge and feature read task and extra node-data block; return edge counts.

    Edge owners are staged only for the edge types that need them (see
    :func:`keeps_edge_owners`). The values of ``node_id_features`` are translated to
    per-type new IDs as they are staged (:mod:`.node_id_features`)."""
    meta = graph.metadata
    part_starts = node_layout.part_starts
    numbering = {
        t: NodeNumbering(t, meta.num_nodes(t), block_rows, node_layout.block_bases[i])
        for i, t in enumerate(meta.node_types)
    }
    translate: dict[str, NodeIds] = {
        f.key: (NodeIdValues.of(node_layout, f.ntype, meta.ntype_id(f.ntype)), numbering[f.ntype])
        for f in node_id_features
    }
    edge_tasks: dict[str, list[Any]] = {}
    for spec in meta.edge_types:
        edge_tasks[spec.name] = [
            dask.delayed(resumable, pure=False)(
                staging,
                f"edges/{spec.name}/{c}",
                stamps.of(group.paths),
                stage_edge_task,
                staging,
                spec.name,
                c,
                group,
                spec.src_type,
                spec.dst_type,
                {t: numbering[t] for t in (spec.src_type, spec.dst_type)},
                part_starts,
                keeps_edge_owners(meta, spec.name, save_orig_eids),
                dask_key_name=(f"dglc-stage-edges-{staging.token}", meta.etype_id(spec.name), c),
            )
            for c, group in enumerate(graph.edge_groups(spec.name))
        ]
    node_feat_tasks = _node_feature_tasks(graph, staging, num_parts, stamps, translate)
    extra_tasks = _extra_node_data_tasks(staging, extra_node_data, num_parts, block_rows)
    edge_feat_tasks = _edge_feature_tasks(graph, staging, num_parts, edge_tasks, stamps, translate)
    all_edge = [t for tasks in edge_tasks.values() for t in tasks]
    all_feat = [t for _, tasks in node_feat_tasks + extra_tasks + edge_feat_tasks for t in tasks]
    results = iter(runner.compute(all_edge + all_feat, "stage edges and features"))
    edge_counts = [
        np.array([next(results) for _ in edge_tasks[s.name]], dtype=np.int64).reshape(
            len(edge_tasks[s.name]), num_parts
        )
        for s in meta.edge_types
    ]
    node_feats = _staged_features(graph, "node", node_feat_tasks, results)
    extra = _staged_extra_data(graph, extra_node_data, extra_tasks, results)
    edge_feats = _staged_features(graph, "edge", edge_feat_tasks, results)
    return edge_counts, node_feats + extra, edge_feats


def _extra_node_data_tasks(staging: Staging, extra: ExtraNodeData, num_parts: int, block_rows: int) -> FeatureTasks:
    """Node data computed on the fly (e.g. trainer IDs), staged block by block like features."""
    out: FeatureTasks = []
    for ntype, arrays in extra.items():
        for name, arr in arrays.items():
            blocks = arr.rechunk({0: block_rows}).to_delayed().ravel()
            starts = np.concatenate([[0], np.cumsum(arr.rechunk({0: block_rows}).chunks[0])])
            out.append(
                (
                    (ntype, name),
                    [
                        dask.delayed(resumable, pure=False)(
                            staging,
                            f"node_data/{ntype}/{name}/{b}",
                            "",  # computed from the assignment
                            stage_node_data_block,
                            staging,
                            ntype,
                            name,
                            b,
                            int(starts[b]),
                            block,
                            num_parts,
                            dask_key_name=(f"dglc-stage-node-data-{staging.token}", ntype, name, b),
                        )
                        for b, block in enumerate(blocks)
                    ],
                )
            )
    return out


def _staged_extra_data(
    graph: ChunkedGraph, extra: ExtraNodeData, tasks: FeatureTasks, results: Any
) -> tuple[StagedFeature, ...]:
    staged = []
    for (ntype, name), feat_tasks in tasks:
        arr = extra[ntype][name]
        counts = tuple(tuple(int(x) for x in next(results)) for _ in feat_tasks)
        staged.append(
            StagedFeature(
                key=f"{ntype}/{name}",
                arrays=tuple(feature_array("node", ntype, name, k) for k in range(len(feat_tasks))),
                counts=counts,
                dtype=np.dtype(arr.dtype).str,
                row_shape=tuple(arr.shape[1:]),
                type_index=graph.metadata.ntype_id(ntype),
            )
        )
    return tuple(staged)


FeatureTasks = list[tuple[tuple[str, str], list[Any]]]


def _node_feature_tasks(
    graph: ChunkedGraph, staging: Staging, num_parts: int, stamps: FileStamps, translate: Mapping[str, NodeIds]
) -> FeatureTasks:
    out: FeatureTasks = []
    for ntype, feats in graph.metadata.node_data.items():
        for feat in feats:
            out.append(
                (
                    (ntype, feat),
                    [
                        dask.delayed(resumable, pure=False)(
                            staging,
                            f"node_feat/{ntype}/{feat}/{k}",
                            stamps.of(group.paths),
                            stage_node_feature_task,
                            staging,
                            ntype,
                            feat,
                            k,
                            group,
                            num_parts,
                            translate.get(f"{ntype}/{feat}"),
                            dask_key_name=(f"dglc-stage-node-features-{staging.token}", ntype, feat, k),
                        )
                        for k, group in enumerate(graph.feature_groups("node", ntype, feat))
                    ],
                )
            )
    return out


def _edge_feature_tasks(
    graph: ChunkedGraph,
    staging: Staging,
    num_parts: int,
    edge_tasks: Mapping[str, list[Any]],
    stamps: FileStamps,
    translate: Mapping[str, NodeIds],
) -> FeatureTasks:
    out: FeatureTasks = []
    for etype, feats in graph.metadata.edge_data.items():
        edge_groups = graph.edge_groups(etype)
        bounds = [g.start for g in edge_groups] + [edge_groups[-1].stop if edge_groups else 0]
        for feat in feats:
            tasks = []
            for k, group in enumerate(graph.feature_groups("edge", etype, feat)):
                # the owners come from the edge tasks over the same rows: their files count too
                edge_files = [p for g in edge_groups if g.start < group.stop and group.start < g.stop for p in g.paths]
                tasks.append(
                    dask.delayed(resumable, pure=False)(
                        staging,
                        f"edge_feat/{etype}/{feat}/{k}",
                        stamps.of([*group.paths, *edge_files]),
                        stage_edge_feature_task,
                        staging,
                        etype,
                        feat,
                        k,
                        group,
                        num_parts,
                        bounds,
                        translate.get(f"{etype}/{feat}"),
                        *edge_tasks[etype],
                        dask_key_name=(f"dglc-stage-edge-features-{staging.token}", etype, feat, k),
                    )
                )
            out.append(((etype, feat), tasks))
    return out


def _staged_features(graph: ChunkedGraph, kind: str, tasks: FeatureTasks, results: Any) -> tuple[StagedFeature, ...]:
    meta = graph.metadata
    staged = []
    for (type_name, feat), feat_tasks in tasks:
        counts = tuple(tuple(int(x) for x in next(results)) for _ in feat_tasks)
        dtype, row_shape = graph.feature_info(kind, type_name, feat)  # type: ignore[arg-type]
        type_index = meta.ntype_id(type_name) if kind == "node" else meta.etype_id(type_name)
        staged.append(
            StagedFeature(
                key=f"{type_name}/{feat}",
                arrays=tuple(feature_array(kind, type_name, feat, k) for k in range(len(feat_tasks))),
                counts=counts,
                dtype=np.dtype(dtype).str,
                row_shape=tuple(row_shape),
                type_index=type_index,
            )
        )
    return tuple(staged)
