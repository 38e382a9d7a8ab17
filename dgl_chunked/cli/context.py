"""What a command runs in: its Dask scheduler (clients are created only here).

Without ``--scheduler``, ``--workers`` or ``--memory-limit``, ``run``, ``dispatch``,
``partition``, ``remap``, ``lookup`` and ``chunk`` run on local threads only where
:func:`~dgl_chunked.cluster.choose_scheduler` says so for their input's size
(:mod:`~dgl_chunked.cli.sizing`; a machine of a few cores, a local input of at most
:data:`IN_PROCESS_BYTES`): a LocalCluster's worker processes take CPU to start and
import, and a round trip per task. Otherwise they get a LocalCluster of the worker
processes it chose; ``dispatch`` and ``run`` start it in a thread while they inspect
their input (metadata, footers, file stamps), so the two overlap. The forkserver its
workers are forked from (:func:`~dgl_chunked.cluster.start_forkserver`) starts before
that thread imports ``distributed``, and imports the task modules meanwhile. The other
commands run on local threads unless given a cluster flag.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import click
import dask
import dask.threaded

from dgl_chunked.cli.sizing import InputSize, input_bytes, resolve_scheduler
from dgl_chunked.cluster import IN_PROCESS_BYTES, ClusterOptions, dask_client, start_forkserver

__all__ = [
    "IN_PROCESS_BYTES",
    "chosen_client",
    "cli_client",
    "command_client",
    "local_threads",
    "optional_client",
    "settled_threaded_get",
]

CLI_PRELOAD = ("dgl_chunked.cli.quiet",)
"""What the workers of the CLI's own LocalClusters import besides
:data:`~dgl_chunked.cluster.WORKER_PRELOAD` (the plugin :func:`cli_client` registers)."""


def settled_threaded_get(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    """Dask's threaded scheduler, on a pool of its own that is drained before an error leaves.

    ``dask.threaded.get`` raises a task's error as soon as it arrives, while the pool's
    other tasks still run (and write); a command's cleanup of its staging or output
    would then race them and report the race instead of the error. Here queued tasks
    are cancelled and running ones finish first.
    """
    pool = ThreadPoolExecutor(kwargs.pop("num_workers", None) or os.cpu_count() or 1, thread_name_prefix="dglc-task")
    try:
        return dask.threaded.get(dsk, keys, pool=pool, **kwargs)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def local_threads() -> Iterator[None]:
    """Dask's threaded scheduler with a thread per CPU (:func:`settled_threaded_get`), named by
    function: a scheduler named by string makes Dask import ``distributed`` (0.3 s) to look for a client."""
    with dask.config.set(scheduler=settled_threaded_get, num_workers=os.cpu_count() or 1):
        yield


def _honour_log_level() -> int:
    """Set the ``distributed`` loggers to the ``--log-level`` (its import sets them to INFO)."""
    import distributed  # noqa: F401  (imported here: ``dgl-chunked --help`` does not need it)

    level = logging.getLogger().level
    logging.getLogger("distributed").setLevel(level)
    return level


def optional_client(cluster: ClusterOptions) -> contextlib.AbstractContextManager[Any]:
    """A Dask client when ``--scheduler`` or ``--workers`` is given (see :func:`cli_client`); else local threads."""
    if not cluster.scheduler and not cluster.workers:
        return local_threads()
    return cli_client(cluster)


@contextlib.contextmanager
def cli_client(cluster: ClusterOptions) -> Iterator[Any]:
    """The client of every command's ``--scheduler`` / ``--workers``: the one place that keeps a task's
    error to the command's one ``error:`` line.

    The ``distributed`` loggers follow ``--log-level``; below ``INFO`` the workers of the
    command's own LocalCluster (which share its stderr) do not log failed tasks with
    their tracebacks, now or when a nanny restarts one (a worker plugin), and the nanny
    does not warn when it kills a worker still inside a task as the cluster closes after
    an error. The task's exception reaches the client and :func:`~dgl_chunked.cli.errors.user_errors`
    prints it. Workers of a ``--scheduler`` log on their own machines.
    """
    level = _honour_log_level()
    quiet = not cluster.scheduler and level >= logging.WARNING  # our workers share our stderr
    with dask_client(cluster=cluster, preload=CLI_PRELOAD) as client:
        if quiet:
            from dgl_chunked.cli.quiet import QuietTaskErrors, quiet_shutdown_kills  # imports distributed

            client.register_plugin(QuietTaskErrors(), name="dglc-quiet-task-errors")
            quiet_shutdown_kills()
        yield client


@contextlib.contextmanager
def chosen_client(cluster: ClusterOptions, command: str, measure: Callable[[], InputSize]) -> Iterator[None]:
    """The scheduler of ``partition``, ``remap``, ``lookup`` and ``chunk``: the cluster flags when
    given, else what :func:`~dgl_chunked.cli.sizing.resolve_scheduler` chooses for ``measure()``
    (logged at INFO: ``<command>: scheduler: ...``), local threads or a LocalCluster, current
    for the block."""
    resolved = resolve_scheduler(cluster, command, measure)
    if resolved.cluster is None:
        with local_threads():
            yield
        return
    with cli_client(resolved.cluster):
        yield


@contextlib.contextmanager
def command_client(cluster: ClusterOptions, input_paths: Callable[[], list[str]]) -> Iterator[Any]:
    """The scheduler of a command with :func:`~dgl_chunked.cli.options.cluster_options`.

    Yields what to pass as ``client=``: a client of ``--scheduler``, or a
    :class:`~concurrent.futures.Future` of a new LocalCluster's client (sized by
    ``--workers``/``--threads-per-worker``/``--memory-limit``; its workers stay quiet about
    failed tasks below ``--log-level INFO``) started in a thread meanwhile; or None, with
    local threads current, when no cluster flag is given and
    :func:`~dgl_chunked.cluster.choose_scheduler` picks threads for ``input_paths()``.
    """
    ctx = click.get_current_context(silent=True)
    command = ctx.info_name if ctx is not None and ctx.info_name else "dispatch"
    resolved = resolve_scheduler(cluster, command, lambda: InputSize(input_bytes(input_paths())))
    if resolved.choice is not None:
        click.echo(f"scheduler: {resolved.choice.describe()}")
    if resolved.cluster is None:
        with local_threads():
            yield None
        return
    cluster = resolved.cluster
    if not cluster.scheduler:
        # before the cluster thread imports distributed: the forkserver's imports overlap it
        start_forkserver(CLI_PRELOAD)
    stack = contextlib.ExitStack()

    def start() -> Any:
        client = stack.enter_context(cli_client(cluster))
        click.echo(f"dashboard: {client.dashboard_link}")
        return client

    with ThreadPoolExecutor(1, thread_name_prefix="dglc-cluster") as pool:
        pending: Future[Any] = pool.submit(start)
        try:
            yield pending
        finally:
            # a start that failed while the command failed too leaves the command's error
            with contextlib.suppress(Exception):
                pending.result()
            pool.submit(stack.close).result()  # in the thread that entered it (Dask's context variables)
