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

__all__ = ["dask_client"]

logger = logging.getLogger(__name__)


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
    with LocalCluster(**cluster_kwargs) as cluster, Client(cluster) as client:
        yield client
