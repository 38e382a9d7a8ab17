"""The tasks of dispatch's write step: one per file of a partition, and several for a
graph file that :mod:`~dgl_chunked.dispatch.graph_split` cuts into row ranges and for a
feature file that :mod:`~dgl_chunked.dispatch.feature_split` cuts by feature and row range,
where the cluster has threads the one-task writers leave idle
(:mod:`~dgl_chunked.dispatch.write_pieces`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import dask

from dgl_chunked.dispatch.feature_split import (
    feature_bytes,
    feature_pieces,
    feature_ranges,
    finish_features,
    write_feature_rows,
    write_feature_skeleton,
)
from dgl_chunked.dispatch.graph_split import (
    edge_ranges,
    finish_graph,
    graph_bytes,
    graph_pieces,
    halo_ranges,
    range_halo,
    write_edge_rows,
    write_skeleton,
)
from dgl_chunked.dispatch.plan import PartitionPlan, PartitionSummary
from dgl_chunked.dispatch.write_pieces import file_pieces

__all__ = ["largest_first", "write_step_tasks"]


def _task(func: Callable[..., Any], plan: PartitionPlan) -> Any:
    """``func`` with the plan bound, as a delayed function of the remaining arguments.

    Dask looks into every argument of a delayed call for Dask collections, dataclass
    fields included: the plan (feature counts per read task and partition, layouts) took
    0.5-1.5 s of the client's time between the steps for the 256 write tasks of 8
    partitions at 10M / 100M. Bound into the function it is not traversed; the graph
    still pickles it once (one object, referenced by every task).
    """
    return dask.delayed(partial(func, plan), pure=False, traverse=False)


def _split_graph(plan: PartitionPlan, part: int, stamp: str, token: str, pieces: int) -> list[Any]:
    """The tasks of one graph file split into ``pieces`` row ranges; the last one returns the partition's summary."""
    ranges = edge_ranges(plan, part, pieces)
    halos = [
        _task(range_halo, plan)(part, e0, e1, dask_key_name=(f"dglc-write-halo-{token}", part, k))
        for k, (e0, e1) in enumerate(halo_ranges(ranges))
    ]
    skeleton = _task(write_skeleton, plan)(part, stamp, *halos, dask_key_name=(f"dglc-write-skeleton-{token}", part))
    rows = [
        _task(write_edge_rows, plan)(part, skeleton, e0, e1, dask_key_name=(f"dglc-write-edges-{token}", part, k))
        for k, (e0, e1) in enumerate(ranges)
    ]
    finish = _task(finish_graph, plan)(
        part, stamp, skeleton, *rows, dask_key_name=(f"dglc-write-partition-{token}", part, 0)
    )
    return [*halos, skeleton, *rows, finish]


def _split_features(plan: PartitionPlan, kind: str, part: int, stamp: str, token: str, pieces: int) -> list[Any]:
    """The tasks of one feature file split into ``pieces``."""
    skeleton = _task(write_feature_skeleton, plan)(
        kind, part, stamp, dask_key_name=(f"dglc-write-{kind}-skeleton-{token}", part)
    )
    rows = [
        _task(write_feature_rows, plan)(
            kind, part, skeleton, piece, dask_key_name=(f"dglc-write-{kind}-rows-{token}", part, k)
        )
        for k, piece in enumerate(feature_ranges(plan, kind, part, pieces))
    ]
    finish = _task(finish_features, plan)(
        kind, part, stamp, skeleton, *rows, dask_key_name=(f"dglc-write-{kind}-{token}", part)
    )
    return [skeleton, *rows, finish]


def _pieces(
    plan: PartitionPlan, kinds: Sequence[str], threads: int, finished: Callable[[int, str], bool]
) -> tuple[dict[tuple[int, str], int], dict[tuple[int, str], int]]:
    """Tasks (pieces) per file still to write, from the cluster's ``threads`` (:func:`file_pieces`),
    and each file's scheduling priority (:func:`largest_first`)."""
    files: dict[tuple[int, str], tuple[int, int]] = {}
    for p in range(plan.node_layout.num_parts):
        for kind in kinds:
            if finished(p, kind):
                continue
            if kind == "graph":
                files[p, kind] = (graph_bytes(plan, p), graph_pieces(plan, p))
            else:
                files[p, kind] = (feature_bytes(plan, kind, p), feature_pieces(plan, kind, p))
    pieces = dict(zip(files, file_pieces(list(files.values()), threads), strict=True))
    return pieces, largest_first({name: size for name, (size, _) in files.items()})


def largest_first(sizes: dict[tuple[int, str], int]) -> dict[tuple[int, str], int]:
    """A Dask priority per file: the larger a file's bytes, the sooner its tasks start.

    The write step's tasks have no dependencies among files, and Dask gives a free worker
    the next of them in its own order, so two partitions' graph files could start on one
    worker while others took the small feature files: on 16 cores at 8 workers, 10M / 100M
    in 8 parts, the step took 5.11 s where its tasks, largest first, fit in 3.6 s (issue
    37; ``benchmarks/results/cores.json``, ``runs_device_16cores``). Starting the largest
    first (longest-processing-time-first scheduling) bounds the step by its longest file.
    Ties keep the partition order.
    """
    order = sorted(sizes, key=lambda name: -sizes[name])
    return {name: len(order) - rank for rank, name in enumerate(order)}


def write_step_tasks(
    plan: PartitionPlan,
    kinds: Sequence[str],
    stamp: str,
    token: str,
    write_once: Callable[[PartitionPlan, int, str, str], PartitionSummary | None],
    finished: Callable[[int, str], bool],
    threads: int,
) -> tuple[list[Any], list[int], list[int]]:
    """Every task of the write step, where among them each partition's summary is, and each file's last task.

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
    threads
        The cluster's worker threads (:func:`~dgl_chunked.dispatch.write_pieces.cluster_threads`):
        files are split only where they exceed the files to write.

    Returns
    -------
    tuple
        The tasks (a file split into as many pieces as
        :func:`~dgl_chunked.dispatch.write_pieces.file_pieces` gives it, its own tasks listed
        so the step's task count shows them), the index of each partition's graph summary,
        and the index of each file's last task (every other task is one of their
        dependencies: the step's results, :meth:`~dgl_chunked.compute.StepRunner.compute`'s
        ``keep``).
    """
    pieces, priority = _pieces(plan, kinds, threads, finished)
    tasks: list[Any] = []
    graph_at: list[int] = []
    ends: list[int] = []
    for p in range(plan.node_layout.num_parts):
        for i, kind in enumerate(kinds):
            n = pieces.get((p, kind), 1)
            with dask.annotate(priority=priority.get((p, kind), 0)):
                if kind == "graph" and n > 1:
                    tasks += _split_graph(plan, p, stamp, token, n)
                elif n > 1:
                    tasks += _split_features(plan, kind, p, stamp, token, n)
                else:
                    key = (f"dglc-write-partition-{token}", p, i)
                    tasks.append(_task(write_once, plan)(p, kind, stamp, dask_key_name=key))
            ends.append(len(tasks) - 1)
            if kind == "graph":
                graph_at.append(len(tasks) - 1)
    return tasks, graph_at, ends
