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

from dgl_chunked.errors import SchedulerError

__all__ = ["WORKER_ENVIRONMENT", "dask_client", "worker_environment"]

logger = logging.getLogger(__name__)

WORKER_ENVIRONMENT: dict[str, str] = {"ARROW_DEFAULT_MEMORY_POOL": "system"}
"""Environment of the worker processes of the clusters this package starts.

Arrow's default allocator (mimalloc) keeps the pages of freed buffers, and the file
reads of every CSV edge chunk go through it, so a worker's resident size grew with the
chunks' byte size (longer node IDs at larger scales). With the C allocator, which
hands pages back (Dask sets ``MALLOC_TRIM_THRESHOLD_``), peak RSS per worker on
``benchmarks/bench_pipeline.py`` went from 280 to 237 MB at 1x and 317 to 253 MB at
30x, and both runs were faster. A variable already set in the environment wins.
"""


@contextmanager
def worker_environment() -> Iterator[None]:
    """Within the block, process-based local clusters start workers with
    :data:`WORKER_ENVIRONMENT` (through ``distributed.nanny.pre-spawn-environ``, since
    pyarrow reads it once, when it loads).

    For workers started elsewhere (``dask worker``, a cluster manager), set the same
    variables in their environment.
    """
    import dask

    settings = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRONMENT.items()}
    with dask.config.set(settings):
        yield


@contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: str | None = None,
    processes: bool = True,
    local_directory: str | None = None,
) -> Iterator[Any]:
    """Yield a ``distributed.Client``: to ``scheduler`` if given, else to a new LocalCluster.

    Parameters
    ----------
    scheduler
        Address of an existing scheduler (``tcp://host:8786``) or a scheduler file path.
    workers, threads_per_worker, memory_limit, processes, local_directory
        LocalCluster settings; ``workers`` defaults to the number of CPUs.
        ``memory_limit`` is per worker (``"4GiB"``); Dask spills to ``local_directory``.
    """
    from distributed import Client, LocalCluster

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
            _warn_about_arrow_pool(client)
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
        _warn_about_arrow_pool(client)
        yield client


def _arrow_pool() -> str:
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name)


def _warn_about_arrow_pool(client: Any) -> None:
    """Warn when workers run Arrow's caching allocator (see :data:`WORKER_ENVIRONMENT`)."""
    try:
        pools = set(client.run(_arrow_pool).values())
    except Exception:  # noqa: BLE001 - a diagnosis only: never fail a run over it
        return
    if pools - {"system"}:
        logger.warning(
            "workers use Arrow's %s allocator, which keeps freed memory: peak RSS per worker is higher "
            "than planned; start them with ARROW_DEFAULT_MEMORY_POOL=system",
            "/".join(sorted(pools - {"system"})),
        )
