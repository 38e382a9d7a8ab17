"""lp's task graphs: results, dependencies, and what Dask's tokenizing of them costs."""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
from dask.base import tokenize

from dgl_chunked.partition.lp.taskgraph import Ref, TaskGraph


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
