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
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from dgl_chunked._dask import current_client, on_worker
from dgl_chunked.compute import settling

__all__ = ["Ref", "TaskGraph"]

logger = logging.getLogger("dgl_chunked.partition.lp")


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
    given = iter(results)
    args = [next(given) if isinstance(a, Ref) else a for a in packed.args]
    return packed.func(*args, **packed.kwargs)


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

    def add(self, func: Callable[..., Any], *args: Any, after: Sequence[Hashable] = (), **kwargs: Any) -> str:
        """Add the task ``func(*args, **kwargs)``, run once the ``after`` tasks are done;
        :class:`Ref` arguments (positional only) are replaced by those tasks' results.
        Returns its key."""
        key = f"dglc-lp-{func.__name__}-{self._prefix}-{next(self._count)}"
        refs = [a.key for a in args if isinstance(a, Ref)]
        self.dsk[key] = (_call, refs, list(after), _Packed(key, func, args, kwargs))
        return key

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
