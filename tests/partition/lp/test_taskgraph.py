"""lp's task graphs: results, dependencies, barriers, and what Dask's tokenizing of them costs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
from dask.base import tokenize
from dask.core import get_dependencies

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import LPConfig, assign_partitions
from dgl_chunked.partition.lp import taskgraph as TG
from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth


class _Counted:
    """An argument that counts how often Dask tokenizes it."""

    calls = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __dask_tokenize__(self) -> str:
        _Counted.calls += 1
        return str(self.value)


def _combine(a: int, counted: _Counted, b: int, *, scale: int) -> int:
    return (a + counted.value + b) * scale


def test_a_tasks_arguments_are_not_tokenized_with_its_graph() -> None:
    """Dask's distributed client tokenizes every graph it computes (the computation's
    name); lp's tasks carry levels, plans and arrays, which that walked field by field
    for every task of every round (62 ms per computation at 39 node blocks)."""
    _Counted.calls = 0
    graph = TaskGraph()
    first = graph.add(_combine, 1, _Counted(2), 3, scale=1)
    graph.add(_combine, Ref(first), _Counted(10), Ref(first), scale=np.int64(2), after=[first])
    token = tokenize(graph.dsk)
    assert _Counted.calls == 0
    assert tokenize(graph.dsk) == token  # deterministic: the tasks' keys stand for them


def test_references_are_replaced_by_results_in_order(client: Any) -> None:
    """Positional :class:`Ref` arguments, mixed with plain ones, get their tasks' results
    (on a distributed client, where the graph is tokenized and sent)."""
    graph = TaskGraph()
    six = graph.add(_combine, 1, _Counted(2), 3, scale=1)
    seven = graph.add(sum, [3, 4])
    last = graph.add(_combine, Ref(six), _Counted(100), Ref(seven), scale=2, after=[six, seven])
    assert graph.compute([last, six, seven]) == [(6 + 100 + 7) * 2, 6, 7]


def test_synchronous_scheduler_runs_the_packed_tasks() -> None:
    graph = TaskGraph()
    a = graph.add(max, 3, 9)
    b = graph.add(min, Ref(a), 5)
    with dask.config.set(scheduler="synchronous"):
        assert graph.compute([b, a]) == [5, 9]


def test_keyword_references_get_results_after_the_positional_ones(client: Any) -> None:
    """A :class:`Ref` given by keyword (the clustering rounds' caps, computed in the same
    graph) gets its task's result, beside positional ones."""
    graph = TaskGraph()
    six = graph.add(_combine, 1, _Counted(2), 3, scale=1)
    two = graph.add(max, 1, 2)
    last = graph.add(_combine, Ref(six), _Counted(100), 7, scale=Ref(two))
    assert graph.compute([last]) == [(6 + 100 + 7) * 2]


def _layers(width: int) -> tuple[TaskGraph, list[str], list[str]]:
    """Two layers of ``width`` tasks, the second after every task of the first."""
    graph = TaskGraph()
    first = [graph.add(_combine, i, _Counted(0), 0, scale=1) for i in range(width)]
    second = [graph.add(_combine, Ref(first[i]), _Counted(i), 1, scale=10, after=first) for i in range(width)]
    return graph, first, second


def test_a_layer_after_a_long_layer_waits_on_one_barrier() -> None:
    """At 8 tasks or more in ``after``, the tasks wait on one barrier task (which waits on
    them all), shared by the tasks of the same after-list, and are marked as reading
    their input from storage, so the distributed scheduler hands them to any free
    worker; a short after-list stays as it is."""
    graph, first, second = _layers(8)
    barriers = {k for k in graph.dsk if "-barrier-" in str(k)}
    assert len(barriers) == 1
    (barrier,) = barriers
    assert get_dependencies(graph.dsk, barrier) == set(first)
    for i, key in enumerate(second):
        assert get_dependencies(graph.dsk, key) == {barrier, first[i]}
        assert graph.dsk[key].data_producer
    short, first, second = _layers(7)
    assert not any("-barrier-" in str(k) for k in short.dsk)
    assert get_dependencies(short.dsk, second[0]) == set(first)


def test_barrier_layers_compute_the_same_results(client: Any) -> None:
    """On a distributed client (the barrier tasks and the marked tasks sent and run)
    and on the synchronous scheduler; the graph is tokenized without its arguments."""
    graph, first, second = _layers(9)
    want = [(i + 0 + i + 1) * 10 for i in range(9)]
    _Counted.calls = 0
    tokenize(graph.dsk)
    assert _Counted.calls == 0
    assert graph.compute(second) == want
    graph, first, second = _layers(9)
    with dask.config.set(scheduler="synchronous"):
        assert graph.compute([*second, first[3]]) == [*want, 3]


def test_lp_assigns_the_same_behind_barriers(client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lp at 12 node blocks on a distributed client (coarsened to 200 nodes: every phase),
    its long layers behind barriers with their tasks queued, gives the assignment it
    gives with every after-list kept whole."""
    src, dst = planted_partition_edges(6000, 40_000, 8, skewed=True, seed=4)
    truth = GraphTruth(
        graph_name="g", num_nodes={"_N": 6000}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={}
    )
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=3, feature_chunks=1)
    graph = open_chunked_graph(tmp_path / "g" / "metadata.json")
    barriers: list[int] = []
    real = TaskGraph._barrier

    def counted(self: TaskGraph, after: Any) -> str:
        barriers.append(len(after))
        return real(self, after)

    monkeypatch.setattr(TaskGraph, "_barrier", counted)

    def assignment() -> np.ndarray:
        parts = assign_partitions(
            graph,
            4,
            method="lp",
            seed=0,
            method_config=LPConfig(block_rows=512, coarse_nodes=200, coarse_entries=1 << 30),
        )
        return np.asarray(dask.compute(*parts.values())[0])

    behind_barriers = assignment()
    assert barriers and min(barriers) >= 8
    monkeypatch.setattr(TG, "_BARRIER_FROM", 1 << 30)
    barriers.clear()
    whole = assignment()
    assert not barriers
    np.testing.assert_array_equal(behind_barriers, whole)
    assert np.bincount(whole, minlength=4).min() > 0


def _fails(_x: int) -> int:
    raise ValueError("a task's own error")


def test_every_task_offers_its_free_heap_back_even_one_that_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """After each task, ended or failed, the worker may trim its heap
    (:func:`.heap.trim_after_task`); the task's error still reaches the caller."""
    calls: list[int] = []
    monkeypatch.setattr(TG.heap, "trim_after_task", lambda: calls.append(1) or False)
    g = TaskGraph()
    a = g.add(sum, [1, 2])
    assert g.compute([g.add(max, Ref(a), 1)]) == [3]
    assert len(calls) == 2
    g = TaskGraph()
    with pytest.raises(ValueError, match="a task's own error"), dask.config.set(scheduler="sync"):
        g.compute([g.add(_fails, 1)])
    assert len(calls) == 3
