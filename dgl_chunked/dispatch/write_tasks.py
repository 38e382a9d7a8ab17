"""The tasks of dispatch's write step: one per file of a partition, and several for a
graph file that :mod:`~dgl_chunked.dispatch.graph_split` cuts into row ranges and for a
feature file that :mod:`~dgl_chunked.dispatch.feature_split` cuts by feature and row range."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask

from dgl_chunked.dispatch.feature_split import (
    feature_ranges,
    feature_splits,
    finish_features,
    write_feature_rows,
    write_feature_skeleton,
)
from dgl_chunked.dispatch.graph_split import (
    edge_ranges,
    finish_graph,
    halo_ranges,
    range_halo,
    splits,
    write_edge_rows,
    write_skeleton,
)
from dgl_chunked.dispatch.plan import PartitionPlan, PartitionSummary

__all__ = ["write_step_tasks"]


def _split_graph(plan: PartitionPlan, part: int, stamp: str, token: str) -> list[Any]:
    """The tasks of one split graph file; the last one returns the partition's summary."""
    ranges = edge_ranges(plan, part)
    halos = [
        dask.delayed(range_halo, pure=False)(plan, part, e0, e1, dask_key_name=(f"dglc-write-halo-{token}", part, k))
        for k, (e0, e1) in enumerate(halo_ranges(ranges))
    ]
    skeleton = dask.delayed(write_skeleton, pure=False)(
        plan, part, stamp, *halos, dask_key_name=(f"dglc-write-skeleton-{token}", part)
    )
    rows = [
        dask.delayed(write_edge_rows, pure=False)(
            plan, part, skeleton, e0, e1, dask_key_name=(f"dglc-write-edges-{token}", part, k)
        )
        for k, (e0, e1) in enumerate(ranges)
    ]
    finish = dask.delayed(finish_graph, pure=False)(
        plan, part, stamp, skeleton, *rows, dask_key_name=(f"dglc-write-partition-{token}", part, 0)
    )
    return [*halos, skeleton, *rows, finish]


def _split_features(plan: PartitionPlan, kind: str, part: int, stamp: str, token: str) -> list[Any]:
    """The tasks of one split feature file."""
    skeleton = dask.delayed(write_feature_skeleton, pure=False)(
        plan, kind, part, stamp, dask_key_name=(f"dglc-write-{kind}-skeleton-{token}", part)
    )
    rows = [
        dask.delayed(write_feature_rows, pure=False)(
            plan, kind, part, skeleton, i, a, b, dask_key_name=(f"dglc-write-{kind}-rows-{token}", part, k)
        )
        for k, (i, a, b) in enumerate(feature_ranges(plan, kind, part))
    ]
    finish = dask.delayed(finish_features, pure=False)(
        plan, kind, part, stamp, skeleton, *rows, dask_key_name=(f"dglc-write-{kind}-{token}", part)
    )
    return [skeleton, *rows, finish]


def write_step_tasks(
    plan: PartitionPlan,
    kinds: Sequence[str],
    stamp: str,
    token: str,
    write_once: Callable[[PartitionPlan, int, str, str], PartitionSummary | None],
    finished: Callable[[int, str], bool],
) -> tuple[list[Any], list[int]]:
    """Every task of the write step, and where among them each partition's summary is.

    Parameters
    ----------
    plan, kinds
        The partition writers' plan and the files of a partition (the graph first).
    stamp, token
        The input files' stamp (resume records) and the run's task-key token.
    write_once
        Writes one whole file unless a resumed run finished it: ``(plan, part, kind, stamp)``.
    finished
        Whether a resumed run already finished file ``kind`` of partition ``part``.

    Returns
    -------
    tuple
        The tasks (each graph file split into row ranges where
        :func:`~dgl_chunked.dispatch.graph_split.splits` says so, its own tasks listed so the
        step's task count shows them), and the index of each partition's graph summary.
    """
    tasks: list[Any] = []
    graph_at: list[int] = []
    for p in range(plan.node_layout.num_parts):
        for i, kind in enumerate(kinds):
            if kind == "graph" and splits(plan, p) and not finished(p, kind):
                tasks += _split_graph(plan, p, stamp, token)
                graph_at.append(len(tasks) - 1)
                continue
            if feature_splits(plan, kind, p) and not finished(p, kind):
                tasks += _split_features(plan, kind, p, stamp, token)
                continue
            if kind == "graph":
                graph_at.append(len(tasks))
            key = (f"dglc-write-partition-{token}", p, i)
            tasks.append(dask.delayed(write_once, pure=False)(plan, p, kind, stamp, dask_key_name=key))
    return tasks, graph_at
