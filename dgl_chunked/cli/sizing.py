"""What a command runs on when no cluster flag decides it: the input's size, measured
locally and cheaply, handed to :func:`~dgl_chunked.cluster.choose_scheduler`.

Each command measures what its tasks read: ``run``/``dispatch`` the graph's edge and
feature files, ``partition`` the edge files (its report reads every edge), ``remap``
the result files, ``lookup`` the query files, ``chunk`` the raw inputs its spec names.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dgl_chunked.cluster import ClusterOptions, SchedulerChoice, choose_scheduler
from dgl_chunked.storage.fs import is_url

__all__ = ["InputSize", "Resolved", "input_bytes", "resolve_scheduler"]

logger = logging.getLogger(__name__)

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class InputSize:
    """A command's input size: bytes (None: remote or unmeasured) and what they are."""

    bytes: int | None
    what: str = "input"


@dataclass(frozen=True)
class Resolved:
    """The scheduler a command runs on."""

    cluster: ClusterOptions | None
    """The LocalCluster or ``--scheduler`` to connect to; None: local threads."""
    choice: SchedulerChoice | None
    """What :func:`~dgl_chunked.cluster.choose_scheduler` chose; None when the flags decided."""


def _bytes_of(path: str) -> int:
    """Bytes of a file, of every file under a directory (Zarr, Parquet datasets), or of a glob's files."""
    if any(c in _GLOB_CHARS for c in path):
        matched = glob.glob(path)
        return sum(_bytes_of(p) for p in matched) if matched else os.stat(path).st_size
    if os.path.isdir(path):
        return sum(os.stat(os.path.join(d, f)).st_size for d, _, files in os.walk(path) for f in files)
    return os.stat(path).st_size


def input_bytes(paths: Iterable[str]) -> int | None:
    """Bytes of the input files (globs and directories summed), or None when any is a URL or
    cannot be read: then the command gets a cluster (or fails on its own with its ``error:`` line)."""
    paths = [os.fspath(p) for p in paths]
    if any(is_url(p) for p in paths):
        return None
    try:
        return sum(_bytes_of(p) for p in paths)
    except OSError:
        return None


def resolve_scheduler(cluster: ClusterOptions, command: str, measure: Callable[[], InputSize]) -> Resolved:
    """The scheduler of ``command``: the cluster flags when given, else the default chosen from
    the machine and ``measure()`` (logged at INFO with its reason).

    ``--scheduler``, ``--workers`` or ``--memory-limit`` decide alone. ``--threads-per-worker T``
    alone (T > 1) asks for worker processes of T threads: as many as the chosen count of
    workers divided by T (at least one).
    """
    if cluster.asked:
        return Resolved(cluster, None)
    size = measure()
    choice = choose_scheduler(size.bytes, what=size.what)
    if cluster.threads_per_worker > 1:
        processes = max(1, choice.workers // cluster.threads_per_worker)
        reason = f"--threads-per-worker {cluster.threads_per_worker} of {choice.workers} cores chosen ({choice.reason})"
        choice = SchedulerChoice(True, processes, reason, threads=cluster.threads_per_worker)
    logger.info("%s: scheduler: %s", command, choice.describe())
    if not choice.processes:
        return Resolved(None, choice)
    return Resolved(dataclasses.replace(cluster, workers=choice.workers), choice)
