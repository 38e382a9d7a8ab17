"""Runs a command's steps: one compute per step, on a given client or the current scheduler.

A step is one Dask computation of a command: its tasks, computed together and
timed, their results returned in task order (``dispatch``, ``remap`` and ``lookup``
run through it). Each command names itself: the runner logs under the command's
logger (``dgl_chunked.<command>`` unless given one) as ``<command> step: <name> (<n>
tasks)``, so a line says which command's step it was.

A failed step, and any computation run through :func:`compute_settled`, returns its
error only when none of its tasks still runs on a worker: callers remove their scratch
right after, and must not race a task still writing into it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import dask

from dgl_chunked._dask import current_client

__all__ = ["SETTLE_SECONDS", "StepRunner", "compute_settled", "settle", "settling"]

logger = logging.getLogger(__name__)


SETTLE_SECONDS = 60.0
"""How long a failed step waits for its tasks still running on workers."""


def _executing(dask_worker: Any) -> list[str]:
    """On a worker: the keys of the tasks it is running now (a cancelled task runs on until it returns)."""
    running = {"executing", "long-running"}
    return [
        str(key)
        for key, ts in dask_worker.state.tasks.items()
        if ts.state in running or (ts.state == "cancelled" and ts.previous in running)
    ]


def _graph_keys(dask_scheduler: Any, keys: list[Any]) -> list[str]:
    """On the scheduler: ``keys`` and every task they depend on, transitively."""
    seen: set[Any] = set()
    stack = [dask_scheduler.tasks[k] for k in keys if k in dask_scheduler.tasks]
    while stack:
        ts = stack.pop()
        if ts.key not in seen:
            seen.add(ts.key)
            stack.extend(ts.dependencies)
    return [str(k) for k in seen]


def settle(client: Any, futures: Sequence[Any], timeout: float = SETTLE_SECONDS, also: Sequence[Any] = ()) -> None:
    """After a task of a step failed: cancel the others and wait (up to ``timeout``) until no worker
    still runs one, so that the caller's cleanup of its staging does not race their writes.

    The tasks waited for are the futures', the tasks they depend on (asked of the scheduler
    before the cancel forgets them) and ``also``'s keys."""
    keys = {str(f.key) for f in futures} | {str(k) for k in also}
    deadline = time.monotonic() + timeout
    try:  # a scheduler that runs no function of ours (distributed.scheduler.pickle off) still cancels
        keys.update(client.run_on_scheduler(_graph_keys, keys=[f.key for f in futures]))
    except Exception:  # noqa: BLE001 - then only the futures' and ``also``'s keys are waited for
        logger.debug("could not ask the scheduler for the failed step's tasks", exc_info=True)
    try:
        client.cancel(list(futures))
        while time.monotonic() < deadline:
            running = client.run(_executing, on_error="return")
            if not any(isinstance(v, list) and keys.intersection(v) for v in running.values()):
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - best effort: the step's own error is what the caller reports
        logger.debug("could not wait for the failed step's running tasks", exc_info=True)


@contextmanager
def settling(client: Any, futures: Sequence[Any], also: Sequence[Any] = ()) -> Iterator[None]:
    """Whatever the block raises leaves after :func:`settle` of ``futures`` (gather them in it)."""
    try:
        yield
    except BaseException:
        settle(client, futures, also=also)
        raise


def compute_settled(*args: Any, client: Any = None) -> tuple[Any, ...]:
    """``dask.compute(*args)`` that returns or raises only when none of its tasks still runs.

    On a ``distributed`` client (``client``, else the current one) a failed task's error
    otherwise arrives while the computation's other tasks still run, and a caller that then
    removes its scratch races their writes (it may report the race, not the error, and the
    writes may outlive the removal). Here the other tasks are cancelled and the running
    ones waited for (:func:`settle`). The local schedulers are left to Dask: the CLI's
    threads drain their pool before an error leaves
    (:func:`dgl_chunked.cli.context.settled_threaded_get`).
    """
    client = current_client(client)
    if client is None:
        return dask.compute(*args)  # type: ignore[no-any-return]
    futures = client.compute(list(args))
    with settling(client, futures):
        return tuple(client.gather(futures))


class StepRunner:
    """Runs one step's tasks of ``command`` on the given client or the current scheduler.

    Parameters
    ----------
    client
        A ``distributed.Client`` (or a future of one), or None for Dask's current scheduler.
    progress
        Show a progress bar per step.
    command
        The command whose steps these are (``"dispatch"``, ``"remap"``, ...): named in
        every log line and error of the runner.
    log
        The logger of the step lines; default ``dgl_chunked.<command>``.
    """

    def __init__(self, *, client: Any, progress: bool, command: str, log: logging.Logger | None = None) -> None:
        self.client = client
        self.progress = progress
        self.command = command
        self.log = log if log is not None else logging.getLogger(f"dgl_chunked.{command}")
        self.seconds: dict[str, float] = {}
        self.tasks: dict[str, int] = {}

    def compute(self, tasks: Sequence[Any], step: str, *, keep: Sequence[int] | None = None) -> tuple[Any, ...]:
        """Compute the step's tasks; their results in task order.

        With ``keep`` (indexes into ``tasks``), only those tasks are computed as the step's
        results, and only their values come back to this process (the others' are None);
        every other task must be one they depend on, which runs as their dependency. A step
        whose inner tasks return large intermediate values (the HALO bitmaps that a graph
        file's later tasks consume) then neither moves them to the client nor keeps them in
        the workers' memory after their consumers ran. Any task's error is raised.
        """
        self.log.info("%s step: %s (%d tasks)", self.command, step, len(tasks))
        self.tasks[step] = len(tasks)
        start = time.perf_counter()
        try:
            return self._compute(tasks, step, keep)
        finally:
            self.seconds[step] = time.perf_counter() - start

    def run_everywhere(self, func: Callable[[], Any]) -> None:
        """Call ``func()`` in every worker process (and here, for in-process schedulers).

        A worker the scheduler cannot reach (killed or lost meanwhile: an ``OSError``
        such as Dask's ``CommClosedError``) is skipped, since its process and whatever
        ``func`` would have changed there are gone; any other error is raised.
        """
        func()
        client = current_client(self.client)
        if client is None:
            return
        for worker, result in client.run(func, on_error="return").items():
            if isinstance(result, OSError):
                self.log.info("%s not run on %s, which left: %s", getattr(func, "__name__", func), worker, result)
            elif isinstance(result, BaseException):
                raise result

    def _compute(self, tasks: Sequence[Any], step: str, keep: Sequence[int] | None) -> tuple[Any, ...]:
        """Results in the order of ``tasks``, matched to them by task key (None where not kept)."""
        if not tasks:
            return ()
        by_key = {task.key: task for task in tasks}
        if len(by_key) != len(tasks):  # a key named twice would silently share one result
            raise RuntimeError(f"{self.command} step {step!r}: {len(tasks) - len(by_key)} task key(s) repeat")
        client = current_client(self.client)
        if client is not None:
            chosen = list(by_key.values()) if keep is None else [tasks[i] for i in sorted(set(keep))]
            futures = client.compute(chosen)  # a future's key is its task's
            with settling(client, futures, also=list(by_key)):
                if self.progress:
                    from distributed import progress

                    print(f"[dgl-chunked] {step}")
                    progress(futures)
                    print()
                results = {f.key: value for f, value in zip(futures, client.gather(futures), strict=True)}
        else:
            from dask.diagnostics import ProgressBar

            chosen_keys = by_key if keep is None else {tasks[i].key: tasks[i] for i in set(keep)}
            with ProgressBar() if self.progress else nullcontext():
                (results,) = dask.compute(chosen_keys)
        kept = range(len(tasks)) if keep is None else set(keep)
        return tuple(results.get(task.key) if i in kept else None for i, task in enumerate(tasks))
