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

import sys
import uuid
from concurrent.futures import Future
from typing import Any

__all__ = ["current_client", "on_worker", "run_token"]


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
