"""Connect to a Dask cluster, or start a LocalCluster sized to this machine.

Only the CLI (and notebooks) create clusters; the library uses whatever
scheduler the caller set up.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dgl_chunked._dask import ClusterOptions, parse_cluster_options
from dgl_chunked.errors import SchedulerError

__all__ = [
    "TRIM_THRESHOLD_BYTES",
    "WORKER_ENVIRONMENT",
    "ClusterOptions",
    "dask_client",
    "parse_cluster_options",
    "worker_environment",
]

logger = logging.getLogger(__name__)

TRIM_THRESHOLD_BYTES = 1 << 20
"""glibc's ``MALLOC_TRIM_THRESHOLD_`` in the workers this package starts (Dask's default: 64 KiB)."""

WORKER_ENVIRONMENT: dict[str, str] = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD_BYTES),
}
"""Environment of the worker processes of the clusters this package starts.

``ARROW_DEFAULT_MEMORY_POOL=system``: Arrow's default allocator (mimalloc) keeps the
pages of freed buffers, and the file reads of every CSV edge chunk go through it, so
a worker's resident size grew with the chunks' byte size (longer node IDs at larger
scales). With the C allocator peak RSS per worker on ``benchmarks/bench_pipeline.py``
went from 280 to 237 MB at 1x and 317 to 253 MB at 30x, and both runs were faster.

``MALLOC_TRIM_THRESHOLD_=1048576``: Dask's 64 KiB makes glibc hand back the top of the
heap whenever 64 KiB of it are free, which is after every slice of the node-ID
lookups (:data:`~dgl_chunked.dispatch.ids.HEAP_SLICE`, 64 KiB temporaries): each
slice faulted its pages in again, 78k page faults and 0.14 s per 5M lookups against
300 and 0.06 s with 1 MiB. Arrays of 128 KiB and more are still mapped and unmapped
one by one (the threshold fixes glibc's mmap threshold there), so a worker keeps at
most 1 MiB of freed heap: ``bench_pipeline.py`` 30x 62.2 -> 57.8 s, peak RSS per
worker unchanged (249 MB).

A variable already set in the environment wins, unless it is Dask's own default left
there by an earlier cluster (see :func:`worker_environment`).
"""


@contextmanager
def worker_environment() -> Iterator[None]:
    """Within the block, process-based local clusters start workers with
    :data:`WORKER_ENVIRONMENT` (through ``distributed.nanny.pre-spawn-environ``, since
    glibc and pyarrow read these variables once, when the process starts).

    A variable set in the environment wins (Dask's rule), unless it holds Dask's own
    pre-spawn value: a nanny copies those into its parent's environment before it spawns
    a worker, so any earlier process-based cluster of this process (a notebook's
    ``LocalCluster()``, a test's) leaves ``MALLOC_TRIM_THRESHOLD_=65536`` behind. Such a
    value is replaced, as the next nanny would replace it.

    For workers started elsewhere (``dask worker``, a cluster manager), set the same
    variables in their environment.
    """
    import dask

    dasks_own = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    for name, value in WORKER_ENVIRONMENT.items():
        if name in dasks_own and os.environ.get(name) == str(dasks_own[name]):
            os.environ[name] = value
    settings = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRONMENT.items()}
    with dask.config.set(settings):
        yield


@contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: int | None = None,
    processes: bool = True,
    local_directory: str | None = None,
    cluster: ClusterOptions | None = None,
) -> Iterator[Any]:
    """Yield a ``distributed.Client``: to ``scheduler`` if given, else to a new LocalCluster.

    Parameters
    ----------
    scheduler
        Address of an existing scheduler (``tcp://host:8786``) or a scheduler file path.
    workers, threads_per_worker, memory_limit, processes, local_directory
        LocalCluster settings; ``workers`` defaults to the number of CPUs.
        ``memory_limit`` is bytes per worker; Dask spills to ``local_directory``.
    cluster
        ``scheduler``, ``workers``, ``threads_per_worker`` and ``memory_limit`` as one
        :class:`ClusterOptions` (those keywords then keep their defaults).
    """
    from distributed import Client, LocalCluster

    if cluster is not None:
        scheduler, workers = cluster.scheduler, cluster.workers
        threads_per_worker, memory_limit = cluster.threads_per_worker, cluster.memory_limit

    if scheduler:
        kwargs = {"scheduler_file": scheduler} if os.path.isfile(scheduler) else {"address": scheduler}
        try:
            connected = Client(**kwargs)
        except (OSError, ValueError) as err:  # refused, timed out, unreachable or not an address
            raise SchedulerError(
                f"scheduler {scheduler!r}: could not connect ({err}); start the scheduler or fix --scheduler"
            ) from err
        with connected as client:
            logger.info("connected to %s; dashboard: %s", scheduler, client.dashboard_link)
            _warn_about_allocators(client)
            yield client
        return
    n = workers or os.cpu_count() or 1
    cluster_kwargs: dict[str, Any] = {
        "n_workers": n,
        "threads_per_worker": threads_per_worker,
        "processes": processes,
        "dashboard_address": ":0",
    }
    if memory_limit:
        cluster_kwargs["memory_limit"] = memory_limit
    if local_directory:
        cluster_kwargs["local_directory"] = local_directory
    with worker_environment(), LocalCluster(**cluster_kwargs) as cluster, Client(cluster) as client:
        _warn_about_allocators(client)
        yield client


def _allocators() -> tuple[str, str]:
    """This process's Arrow memory pool and ``MALLOC_TRIM_THRESHOLD_`` ("" when unset)."""
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name), os.environ.get("MALLOC_TRIM_THRESHOLD_", "")


def _warn_about_allocators(client: Any) -> None:
    """Warn when workers run Arrow's caching allocator or trim the heap at a threshold
    below :data:`TRIM_THRESHOLD_BYTES` (see :data:`WORKER_ENVIRONMENT`)."""
    try:
        seen = set(client.run(_allocators).values())
    except Exception:  # noqa: BLE001 - a diagnosis only: never fail a run over it
        return
    pools = {pool for pool, _ in seen} - {"system"}
    if pools:
        logger.warning(
            "workers use Arrow's %s allocator, which keeps freed memory: peak RSS per worker is higher "
            "than planned; start them with ARROW_DEFAULT_MEMORY_POOL=system",
            "/".join(sorted(pools)),
        )
    low = sorted({trim for _, trim in seen if trim.isdigit() and int(trim) < TRIM_THRESHOLD_BYTES})
    if low:
        logger.warning(
            "workers trim the heap at MALLOC_TRIM_THRESHOLD_=%s: node-ID lookups fault their memory in "
            "again slice after slice (up to 2x slower); start them with MALLOC_TRIM_THRESHOLD_=%d",
            "/".join(low),
            TRIM_THRESHOLD_BYTES,
        )
