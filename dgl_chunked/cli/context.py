"""What a command runs in: its Dask client (created only here) and its scratch folder."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from dask.base import tokenize

from dgl_chunked.cluster import dask_client
from dgl_chunked.storage.fs import is_url, join
from dgl_chunked.storage.owned import check_no_overlap, remove_owned, scratch_dir

__all__ = ["command_client", "optional_client", "owned_scratch"]


def _honour_log_level() -> int:
    """Set the ``distributed`` loggers to the ``--log-level`` (its import sets them to INFO)."""
    import distributed  # noqa: F401  (imported here: ``dgl-chunked --help`` does not need it)

    level = logging.getLogger().level
    logging.getLogger("distributed").setLevel(level)
    return level


def optional_client(
    scheduler: str | None, workers: int | None, *, memory_limit: str | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A Dask client when ``--scheduler`` or ``--workers`` is given; else the default
    scheduler (local threads), as a no-op context."""
    if not scheduler and not workers:
        return contextlib.nullcontext()
    _honour_log_level()
    return dask_client(scheduler, workers=workers, memory_limit=memory_limit)


def _quiet_task_errors() -> None:
    """On a worker of the CLI's own LocalCluster: do not log failed tasks (their
    exception reaches the client, which reports it once)."""
    logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def command_client(kw: dict[str, Any]) -> Iterator[Any]:
    """The client of a command with :func:`~dgl_chunked.cli.options.cluster_options`: to
    ``--scheduler``, else a new LocalCluster sized by ``--workers``/``--threads-per-worker``/
    ``--memory-limit`` whose workers stay quiet about failed tasks below ``--log-level INFO``."""
    level = _honour_log_level()
    with dask_client(
        kw["scheduler"],
        workers=kw["workers"],
        threads_per_worker=kw["threads_per_worker"],
        memory_limit=kw["memory_limit"],
    ) as client:
        if not kw["scheduler"] and level >= logging.WARNING:  # our workers share our stderr
            client.run(_quiet_task_errors)
        yield client


@contextlib.contextmanager
def owned_scratch(
    parent: str,
    kind: str,
    storage_options: dict[str, Any] | None,
    *,
    outputs: dict[str, str],
    inputs: dict[str, str],
) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """A marked scratch folder ``parent/dglc-<kind>-<token>``, removed afterwards; yields
    ``(path, fsspec options for it)``. ``outputs`` (the scratch parent among them) are
    checked against ``inputs`` first, so a refused command creates nothing."""
    token = tokenize(parent, kind)[:16]
    where = join(parent, f"dglc-{kind}-{token}")  # what is written; ``parent`` is only created if missing
    check_no_overlap({**outputs, "scratch directory": where}, inputs, storage_options=storage_options)
    so = storage_options if is_url(parent) else None
    path = scratch_dir(parent, kind, token, storage_options=so)
    try:
        yield path, so
    finally:
        remove_owned(path, storage_options=so)
