"""Plain task graphs for the ``lp`` driver's computations.

Each round is a small graph (tens of tasks) computed from inside the driver task. Built
from ``dask.delayed`` calls it cost tens of milliseconds per round, as every call
merges the graphs of its ``Delayed`` arguments; a dict of legacy tuple tasks costs
nothing. The tasks read and write scratch files, so every key is fresh (no caching
between rounds, no tokenizing of arguments).

Dask's distributed client does tokenize every graph it is given (``Client.get`` names
the computation by a token of the whole graph, distributed 2026.8), which walked every
task's level, plan and arrays field by field: 62 ms per computation at 39 node blocks,
most of the driver's time between rounds (issue #38). So a task's arguments travel in
one :class:`_Packed` object whose token is the task's key (unique already); only the
keys it depends on stay in the task, where Dask finds them.

A layer of tasks that runs after every task of the layer before (``after``: each
clustering round's acceptance after all proposals, ...) is ``n * m`` dependencies: at
39 blocks, 1,521 per layer, which the scheduler walks when it takes the graph and as
each task ends (issue #38: 8 layers of 39 empty tasks on 2 workers started 154 ms after
they were sent and took 0.9 s; with one barrier task per layer, 25 ms and 0.45 s; the
seconds in which no lp task ran at 10M nodes went from 24.9 to 18.0). A barrier alone
makes the scheduler send the whole next layer to the one worker holding the barrier's
result, so the tasks behind a barrier are marked as reading their input from storage
(Dask's *data producer* tasks, which the distributed scheduler queues and hands to
whichever worker is free), as they do: a layer's tasks exchange their data through
scratch files, the results they wait for are counts.
Where this Dask cannot mark them, the long after-lists stay as they were.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from dgl_chunked._dask import current_client, on_worker
from dgl_chunked.compute import settling
from dgl_chunked.partition.lp import heap

__all__ = ["Ref", "TaskGraph"]

logger = logging.getLogger("dgl_chunked.partition.lp")

_BARRIER_FROM = 8  # an after-list this long goes through a barrier task (n + m dependencies, not n * m)


@functools.cache
def _marks_producers() -> bool:
    """Whether Dask's task spec can mark a task as a data producer and the distributed
    scheduler reads the mark (in ``SchedulerState.is_rootish``): checked here, as the
    mark is not public API."""
    try:
        from dask._task_spec import Task
        from distributed.scheduler import SchedulerState
    except ImportError:  # pragma: no cover - dask[distributed] is a dependency
        return False
    return (
        "_data_producer" in inspect.signature(Task.__init__).parameters
        and "data_producer" in SchedulerState.is_rootish.__code__.co_names
    )


def _barrier_task(_done: list[Any]) -> None:
    """Nothing: the task that a layer runs after (its dependencies are the layer before)."""


@dataclass(frozen=True)
class Ref:
    """An argument standing for the result of the task ``key``."""

    key: Any


class _Packed:
    """A task's function and arguments, tokenized by the task's key; :class:`Ref`
    arguments stand for the results :func:`_call` gets in its ``results``, in order."""

    __slots__ = ("args", "func", "key", "kwargs")

    def __init__(self, key: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.key, self.func, self.args, self.kwargs = key, func, args, kwargs

    def __dask_tokenize__(self) -> str:
        return self.key

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Packed, (self.key, self.func, self.args, self.kwargs))


def _call(results: list[Any], _after: list[Any], packed: _Packed) -> Any:
    given = iter(results)  # the positional Refs' results, then the keyword ones'
    args = [next(given) if isinstance(a, Ref) else a for a in packed.args]
    kwargs = {k: next(given) if isinstance(v, Ref) else v for k, v in packed.kwargs.items()}
    try:
        return packed.func(*args, **kwargs)
    finally:  # ended or failed, a task on a worker may leave its free heap resident
        heap.trim_after_task()


class TaskGraph:
    """A task graph built call by call, then computed on the current scheduler.

    Examples
    --------
    >>> g = TaskGraph()
    >>> a = g.add(sum, [1, 2])
    >>> g.compute([g.add(max, Ref(a), 1)])
    [3]
    """

    def __init__(self) -> None:
        self.dsk: dict[Hashable, Any] = {}
        self._prefix = uuid.uuid4().hex[:12]
        self._count = itertools.count()
        self._barriers: dict[tuple[Hashable, ...], str] = {}

    def add(self, func: Callable[..., Any], *args: Any, after: Sequence[Hashable] = (), **kwargs: Any) -> str:
        """Add the task ``func(*args, **kwargs)``, run once the ``after`` tasks are done;
        :class:`Ref` arguments (positional or keyword) are replaced by those tasks'
        results. Returns its key."""
        barrier = self._barrier(after) if len(after) >= _BARRIER_FROM and _marks_producers() else None
        key = self._key(func.__name__)  # after its barrier's: a layer's keys stay consecutive
        refs = [a.key for a in (*args, *kwargs.values()) if isinstance(a, Ref)]
        packed = _Packed(key, func, args, kwargs)
        if barrier is None:
            self.dsk[key] = (_call, refs, list(after), packed)
            return key
        from dask._task_spec import List, Task, TaskRef

        self.dsk[key] = Task(key, _call, List(*map(TaskRef, refs)), List(TaskRef(barrier)), packed, _data_producer=True)
        return key

    def _key(self, name: str) -> str:
        return f"dglc-lp-{name}-{self._prefix}-{next(self._count)}"

    def _barrier(self, after: Sequence[Hashable]) -> str:
        """The key of the barrier task after ``after`` (one per distinct after-list)."""
        group = tuple(after)
        if group not in self._barriers:
            self._barriers[group] = self._key("barrier")
            self.dsk[self._barriers[group]] = (_barrier_task, list(group))
        return self._barriers[group]

    def merge(self, graph: Any) -> None:
        """Add the tasks of a Dask collection's graph (e.g. an array's)."""
        self.dsk.update(dict(graph))

    def compute(self, keys: Sequence[Any]) -> list[Any]:
        """Results of ``keys``: through ``worker_client`` on a distributed worker (the
        calling task secedes, so it holds no worker thread), else on the current scheduler."""
        if not keys:
            return []
        logger.debug("lp: computation of %d tasks", len(self.dsk))
        if not on_worker():
            client = current_client()
            if client is not None:
                return self._gather(client, keys)
            import dask.threaded
            from dask.base import get_scheduler

            get = get_scheduler() or dask.threaded.get
            return list(get(self.dsk, list(keys)))
        from distributed import worker_client

        with worker_client() as client:
            return self._gather(client, keys)

    def _gather(self, client: Any, keys: Sequence[Any]) -> list[Any]:
        """Results of ``keys`` on ``client``; a failure leaves once no task of it runs (the
        caller then removes the scratch those tasks write into)."""
        futures = client.get(self.dsk, list(keys), sync=False)
        with settling(client, futures):
            return list(client.gather(futures))
