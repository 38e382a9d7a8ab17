"""Dask plumbing shared by every command: per-run task keys and the scheduler in use.

Many jobs may share one Dask scheduler (a cluster serving a team). The scheduler
identifies a task by its key only, so two jobs that name different work alike get
each other's results. Every hand-named key in dgl_chunked therefore carries
:func:`run_token`: a token of what the task computes from (inputs and options)
plus a fresh ID of the run, as Dask collections carry a token of their inputs.

Which scheduler runs a computation follows Dask's own order
(:func:`dask.base.get_scheduler`): an explicit ``client`` argument, then
``dask.config`` ``"scheduler"``, then the default ``distributed`` client.
:func:`current_client` returns the ``distributed.Client`` that order picks, or None
for the local schedulers.
"""

from __future__ import annotations

import os
import sys
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from dgl_chunked._typing import Bytes, parse_memory_limit

__all__ = ["ClusterOptions", "current_client", "on_worker", "parse_cluster_options", "run_token"]


def run_token(*inputs: Any) -> str:
    """A key fragment unique to this run: ``<token of inputs>-<random run ID>``.

    Parameters
    ----------
    inputs
        What the run's tasks depend on (paths, options, fingerprints); tokenized
        with :func:`dask.base.tokenize`, so the key also says what it computes.

    Examples
    --------
    >>> a, b = run_token("in/", 3), run_token("in/", 3)
    >>> a.split("-")[0] == b.split("-")[0], a == b
    (True, False)
    """
    from dask.base import tokenize

    return f"{tokenize(*inputs)[:16]}-{uuid.uuid4().hex[:16]}"


def current_client(client: Any = None) -> Any:
    """The ``distributed.Client`` that computations go to, or None (local scheduler).

    ``client`` wins when given (a :class:`concurrent.futures.Future` of one is waited
    for: the CLI starts its cluster in a thread while the input is inspected);
    otherwise Dask's order decides, so ``dask.config.set(scheduler="threads")`` inside a
    ``Client`` context runs locally, exactly as ``dask.compute`` would.
    """
    if isinstance(client, Future):
        return client.result()
    if client is not None:
        return client
    from dask.base import get_scheduler

    owner = getattr(get_scheduler(), "__self__", None)
    return owner if type(owner).__name__ == "Client" and hasattr(owner, "gather") else None


def on_worker() -> bool:
    """True inside a task on a ``distributed`` worker (then ``worker_client`` works).

    Never imports ``distributed`` (0.3 s): a process that has not imported it runs no
    worker.
    """
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


@dataclass(frozen=True, kw_only=True)
class ClusterOptions:
    """Where a computation runs: an existing scheduler, or a LocalCluster of this size.

    One object for the CLI (which builds it from ``--scheduler``, ``--workers``,
    ``--threads-per-worker`` and ``--memory-limit``: :func:`parse_cluster_options`),
    :func:`dask_client` and the forecast
    (:func:`~dgl_chunked.dispatch.forecast.forecast_run`).

    Attributes
    ----------
    scheduler
        Address of an existing scheduler (``tcp://host:8786``) or a scheduler file path.
    workers
        LocalCluster worker processes (None: one per CPU).
    threads_per_worker
        Threads of each worker.
    memory_limit
        Bytes per worker (None: Dask's default); Dask spills beyond it.
    """

    scheduler: str | None = None
    workers: int | None = None
    threads_per_worker: int = 1
    memory_limit: Bytes | None = None

    @property
    def asked(self) -> bool:
        """A cluster was asked for (else the CLI may run small inputs on local threads)."""
        return bool(self.scheduler or self.workers or self.memory_limit)

    @property
    def threads(self) -> int:
        """Worker threads of the LocalCluster (the forecast's parallelism)."""
        return (self.workers or os.cpu_count() or 1) * self.threads_per_worker


def parse_cluster_options(
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: str | int | None = None,
) -> ClusterOptions:
    """:class:`ClusterOptions` from flag values: the memory limit (``"4GiB"``, or bytes)
    parsed here, once (``"auto"``: Dask's default)."""
    return ClusterOptions(
        scheduler=scheduler or None,
        workers=workers,
        threads_per_worker=threads_per_worker,
        memory_limit=parse_memory_limit(memory_limit),
    )
