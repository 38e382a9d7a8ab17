"""The forecast of dispatch's write step: the files of every partition, the pieces each is
written in on the forecast's cluster, and the step's tasks and time.

The run decides the pieces once, on the client, from the cluster's threads
(:mod:`~dgl_chunked.dispatch.write_pieces`): every file one task, and a file split into
several only where the cluster has more threads than the step has files
(:mod:`~dgl_chunked.dispatch.graph_split`, :mod:`~dgl_chunked.dispatch.feature_split`).
The forecast asks the same rules (:func:`~dgl_chunked.dispatch.write_pieces.file_pieces`,
:func:`~dgl_chunked.dispatch.graph_split.graph_splittable`,
:func:`~dgl_chunked.dispatch.feature_split.features_splittable`) of the file sizes of a
balanced assignment, so its tasks are those a run on ``threads`` threads submits where the
partitions are about equal (a random assignment's are).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgl_chunked.dispatch.feature_split import features_splittable, most_feature_pieces, split_feature_tasks
from dgl_chunked.dispatch.forecast.calibration import Calibration
from dgl_chunked.dispatch.graph_split import (
    HALO_TASKS,
    graph_splittable,
    most_graph_pieces,
    split_graph_tasks,
)
from dgl_chunked.dispatch.options import DispatchOptions
from dgl_chunked.dispatch.write_pieces import file_kinds, file_pieces

__all__ = ["PartSizes", "WriteFile", "WritePlan", "plan_writes"]


@dataclass(frozen=True)
class PartSizes:
    """One partition under a balanced assignment: what its files hold."""

    nodes: int
    edges: int
    halo: int
    node_feat_bytes: int
    """Payload of ``node_feat.dgl`` (computed node data such as ``trainer_id`` included)."""
    edge_feat_bytes: int


@dataclass(frozen=True)
class WriteFile:
    """One kind of file of every partition, as the forecast plans it."""

    kind: str
    """``graph``, ``node_feat``, ``edge_feat``, ``orig_nids`` or ``orig_eids`` (``partition_files``)."""
    pieces: tuple[int, ...]
    """Pieces of this file in each partition (1: one task writes it)."""
    tasks: int
    """Tasks of this file over every partition."""


@dataclass(frozen=True)
class WritePlan:
    """The write step's files and their tasks, and the work of each task (seconds on one thread)."""

    files: tuple[WriteFile, ...]
    threads: int
    work: tuple[float, ...]
    """Seconds of every task of the step."""
    chain: float
    """Seconds of the longest chain of dependent tasks (a split graph file: HALO, skeleton, range)."""

    @property
    def tasks(self) -> int:
        """Tasks of the step (what the run's ``step_tasks['write partitions']`` counts)."""
        return sum(f.tasks for f in self.files)

    def describe(self) -> str:
        """One line: the files, how many tasks write them, and the thread count that decided it."""
        parts = len(self.files[0].pieces) if self.files else 0
        names = {"graph": "graph.dgl"} | {k: f"{k}.dgl" for k in ("node_feat", "edge_feat", "orig_nids", "orig_eids")}
        each = []
        for f in self.files:
            split = sorted({p for p in f.pieces if p > 1})
            how = "1 per file"
            if split:
                ranges = "row ranges" if f.kind == "graph" else "pieces"
                how = f"{sum(p > 1 for p in f.pieces)} file(s) in {'/'.join(map(str, split))} {ranges}"
            each.append(f"{names.get(f.kind, f.kind)}: {f.tasks} ({how})")
        return (
            f"write partitions: {self.tasks} tasks for {parts} x {len(self.files)} files on {self.threads} "
            f"thread(s): " + ", ".join(each)
        )


def plan_writes(
    sizes: PartSizes,
    num_parts: int,
    id_space: int,
    feature_dtypes: dict[str, list[np.dtype[Any]]],
    opts: DispatchOptions,
    out_dir: str,
    threads: int,
    cal: Calibration,
) -> WritePlan:
    """The write step on ``threads`` threads: every file's pieces, as the run decides them.

    Parameters
    ----------
    sizes
        One partition's sizes (a balanced assignment: every partition the same).
    num_parts
        Partitions.
    id_space
        Node IDs of the whole graph (the HALO bitmap's size decides whether a graph file splits).
    feature_dtypes
        ``node_feat`` / ``edge_feat``: the dtype of every feature the file holds.
    opts
        The run's dispatch options.
    out_dir
        The output directory (a URL's files are never split).
    threads
        The cluster's worker threads (processes x threads, over every host).
    cal
        The cost model.

    Returns
    -------
    WritePlan
    """
    kinds = file_kinds(opts.save_orig_nids, opts.save_orig_eids)
    splittable = graph_splittable(
        tuple(f for f in ("coo", "csr", "csc") if f in opts.graph_formats),
        graphbolt=opts.graphbolt is not None,
        keep_halo_edges=opts.keep_halo_edges or opts.halo_hops > 1,
        out_dir=out_dir,
        id_space=id_space,
        halo_table_bytes=opts.halo_budget(),
    )
    payload = {"node_feat": sizes.node_feat_bytes, "edge_feat": sizes.edge_feat_bytes}
    per_file: list[tuple[int, int]] = []  # (bytes, most pieces), in the run's order: partition by partition
    for _ in range(num_parts):
        for kind in kinds:
            if kind == "graph":
                size = 29 * sizes.edges + 13 * sizes.nodes  # graph_split.graph_bytes
                per_file.append((size, most_graph_pieces(sizes.edges, splittable)))
            elif kind in payload:
                most = most_feature_pieces(payload[kind], features_splittable(feature_dtypes.get(kind, []), out_dir))
                per_file.append((payload[kind], most))
            else:
                per_file.append((0, 1))
    pieces = file_pieces(per_file, threads)
    files = []
    for i, kind in enumerate(kinds):
        mine = tuple(pieces[p * len(kinds) + i] for p in range(num_parts))
        count = split_graph_tasks if kind == "graph" else split_feature_tasks
        files.append(WriteFile(kind, mine, sum(count(n) for n in mine)))
    work, chain = _work(files, sizes, id_space, cal)
    return WritePlan(tuple(files), threads, tuple(work), chain)


def _work(files: Sequence[WriteFile], sizes: PartSizes, id_space: int, cal: Calibration) -> tuple[list[float], float]:
    """Seconds of every task of the step, and of its longest chain of dependent tasks."""
    local = sizes.nodes + sizes.halo
    whole = {
        "graph": sizes.edges * cal.write_s_per_edge + local * cal.write_s_per_node,
        "node_feat": sizes.node_feat_bytes * cal.write_s_per_byte,
        "edge_feat": sizes.edge_feat_bytes * cal.write_s_per_byte,
    }
    work: list[float] = []
    chain = 0.0
    for f in files:
        for n in f.pieces:
            if n == 1:
                work.append(whole.get(f.kind, 0.0))
            elif f.kind == "graph":  # HALO tasks, the skeleton, the ranges, the rename
                halo = [sizes.edges / min(HALO_TASKS, n) * cal.split_halo_s_per_edge] * min(HALO_TASKS, n)
                skeleton = id_space * cal.split_skeleton_s_per_id + local * cal.write_s_per_node
                ranges = [sizes.edges / n * cal.split_rows_s_per_edge] * n
                work += [*halo, skeleton, *ranges, 0.0]
                chain = max(chain, halo[0] + skeleton + ranges[0])
            else:  # the skeleton, the pieces, the rename
                work += [0.0, *[whole[f.kind] / n] * n, 0.0]
    return work, chain
