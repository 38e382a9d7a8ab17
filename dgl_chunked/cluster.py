"""Connect to a Dask cluster, or start a LocalCluster sized to this machine.

Only the CLI (and notebooks) create clusters; the library uses whatever
scheduler the caller set up.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dgl_chunked._dask import ClusterOptions, parse_cluster_options
from dgl_chunked.errors import OptionError, SchedulerError

__all__ = [
    "IN_PROCESS_BYTES",
    "SchedulerChoice",
    "START_METHOD_KEY",
    "THREADS_MAX_CORES",
    "TRIM_THRESHOLD_BYTES",
    "WORKER_ENVIRONMENT",
    "WORKER_PRELOAD",
    "ClusterOptions",
    "choose_scheduler",
    "dask_client",
    "parse_cluster_options",
    "start_forkserver",
    "worker_environment",
    "worker_start_method",
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


IN_PROCESS_BYTES = 4 << 30
"""Inputs up to this many bytes may run on local threads (:func:`choose_scheduler`).
``benchmarks/bench_local_threads.py`` found threads faster at every size measured on 2
cores, up to 10M nodes / 100M edges (2.1 GB); beyond it a cluster's memory limit per
worker, worker restarts and spilling were not measured, so larger inputs get processes."""

THREADS_MAX_CORES = 4
"""Machines with at most this many cores may run on local threads. Measured: on 2 cores
threads beat 2 processes (``bench_local_threads.py``; ``bench_cores.py`` 1M / 10M: 21.9 s
against 21.7 s for 2 processes and a quarter of the memory); on 16 cores one process
per core beat 16 threads 1.4x with a fifth of the memory (issue 37, 10M / 100M: 18.9 s
against 27.1 s), since the parsing, hashing and ``searchsorted`` of the tasks hold the GIL
for part of their time. Between 4 and 16 cores nothing was measured; processes are taken
from 5 cores on, where the GIL already serialises more than a fifth of the work."""

WORKER_MEMORY_BYTES = 1 << 30
"""Memory a worker process is given at least when :func:`choose_scheduler` sizes a
cluster: the peak per worker measured at 10M / 100M and at 30M / 300M is 0.25-0.46 GB
(``bench_pipeline.py``, issue 37), plus room for Dask's spilling thresholds."""


@dataclass(frozen=True)
class SchedulerChoice:
    """What a command runs on when no cluster flag is given (:func:`choose_scheduler`)."""

    processes: bool
    """True: a LocalCluster of ``workers`` processes x ``threads`` threads; False: local threads."""
    workers: int
    """Worker processes, or threads when ``processes`` is False."""
    reason: str
    threads: int = 1
    """Threads of each worker process (``--threads-per-worker``)."""

    def describe(self) -> str:
        """One line: what was chosen and why (``run``, ``dispatch`` and ``plan`` print it)."""
        threads = f"{self.threads} thread" + ("s" if self.threads > 1 else "")
        what = f"{self.workers} worker process(es) x {threads}" if self.processes else f"{self.workers} local threads"
        return f"{what} ({self.reason})"


def _total_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def choose_scheduler(
    input_bytes: int | None,
    *,
    cores: int | None = None,
    memory_bytes: int | None = None,
    what: str = "input",
) -> SchedulerChoice:
    """Processes or threads, and how many, from the machine and the input's size.

    Parameters
    ----------
    input_bytes
        Bytes of the input files; None when they are remote or could not be measured.
    cores, memory_bytes
        The machine (default: this one's CPUs and physical memory).
    what
        What ``input_bytes`` measures, as the reason names it (``"edge files"``,
        ``"results"``; default ``"input"``).

    Returns
    -------
    SchedulerChoice
        Local threads (one per core) when the machine has at most
        :data:`THREADS_MAX_CORES` cores and the input is local and at most
        :data:`IN_PROCESS_BYTES`; else one worker process per core, no more than the
        memory holds at :data:`WORKER_MEMORY_BYTES` each (at least one).
    """
    cores = cores or os.cpu_count() or 1
    memory = memory_bytes if memory_bytes is not None else _total_memory()
    size = f"remote or unmeasured {what}" if input_bytes is None else f"{what} of {input_bytes / 1e6:.0f} MB"
    if input_bytes is not None and input_bytes <= IN_PROCESS_BYTES and cores <= THREADS_MAX_CORES:
        return SchedulerChoice(
            False, cores, f"{size}, {cores} cores: threads measured faster up to {THREADS_MAX_CORES}"
        )
    fit = cores if memory is None else max(1, min(cores, memory // WORKER_MEMORY_BYTES))
    if input_bytes is None:
        why = f"{size}: a cluster"
    elif input_bytes > IN_PROCESS_BYTES:
        why = f"{size} > {IN_PROCESS_BYTES >> 30} GiB: a cluster's memory limit per worker"
    else:
        why = f"{size}, {cores} cores: processes measured 1.4x faster than threads on 16"
    if memory is not None and fit < cores:
        why += f"; {memory / 2**30:.0f} GiB of memory hold {fit} at {WORKER_MEMORY_BYTES >> 30} GiB each"
    return SchedulerChoice(True, fit, why)


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
    preload: tuple[str, ...] = (),
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
    preload
        Modules the workers of a new LocalCluster import besides :data:`WORKER_PRELOAD`
        (once, in the forkserver: :func:`start_forkserver`).
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
    with (
        worker_environment(),
        _start_method(processes, preload),
        LocalCluster(**cluster_kwargs) as cluster,
        Client(cluster) as client,
    ):
        _warn_about_allocators(client)
        _preimport(client)
        yield client


PREIMPORTED = (
    "dgl_chunked.pipeline",
    "dgl_chunked.dispatch.finalize",
    "dgl_chunked.dispatch.kernels",
    "dgl_chunked.io.chunked.chunks",
    "pyarrow.csv",
    "zarr",
)
"""Modules the tasks of ``run`` and ``dispatch`` need, imported in the workers of a new
LocalCluster as it starts (which the CLI overlaps with reading the input's metadata).
Otherwise the first task of a run imported them in every worker, while no task ran:
``benchmarks/bench_cores.py`` counted 1.5 s of the 1.7 s of the first dispatch step
(1M / 10M, 2 workers) as time in which no task runs."""


START_METHOD_KEY = "dgl_chunked.multiprocessing-method"
"""Dask config key: how the LocalClusters of :func:`dask_client` start their worker
processes, ``forkserver`` (the default where the platform has it) or ``spawn`` (Dask's
default; ``DASK_DGL_CHUNKED__MULTIPROCESSING_METHOD=spawn`` in the environment). A value
of Dask's own ``distributed.worker.multiprocessing-method`` other than its default
``spawn`` wins over this key (see :func:`worker_start_method`)."""


def worker_start_method() -> str:
    """How :func:`dask_client` starts the worker processes of a LocalCluster.

    ``forkserver``: every worker (and every worker a nanny restarts) is a fork of one
    server process that imported :data:`WORKER_PRELOAD` once (:func:`start_forkserver`).
    With ``spawn`` each worker is a fresh interpreter that imports them on its own, all
    workers at once: on 2 cores, 4-12 s from the client connecting to a first task done
    at 2-4 workers, against 0.1 s forked (docs/scaling.md).

    Returns
    -------
    str
        Dask's ``distributed.worker.multiprocessing-method`` when set to anything but
        its default ``spawn``; else :data:`START_METHOD_KEY` (default ``forkserver``);
        ``spawn`` where the platform has no ``forkserver`` (Windows).

    Raises
    ------
    OptionError
        :data:`START_METHOD_KEY` is neither ``forkserver``, ``spawn`` nor ``fork``.
    """
    import multiprocessing

    import dask

    dasks = str(dask.config.get("distributed.worker.multiprocessing-method", default="spawn"))
    if dasks != "spawn":
        return dasks
    method = str(dask.config.get(START_METHOD_KEY, default="forkserver"))
    if method not in ("forkserver", "spawn", "fork"):
        raise OptionError(
            f"Dask config {START_METHOD_KEY}: {method!r} is not forkserver, spawn or fork; set one of them"
        )
    return method if method in multiprocessing.get_all_start_methods() else "spawn"


_FORKSERVER_ENV: dict[str, str] | None = None  # the environment this process's forkserver started with


def _pre_spawn_env() -> dict[str, str]:
    """The variables a nanny sets in this process before it starts a worker: Dask's
    ``distributed.nanny.pre-spawn-environ`` (a value already in the environment wins)
    and ``PYTHONHASHSEED=6640`` where unset or 0 (``distributed/nanny.py`` 2026.8.0,
    ``Nanny.__init__``)."""
    import dask

    configured = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    env = {k: os.environ.get(k, str(v)) for k, v in configured.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"
    return env


def _distributed_defaults() -> None:
    """``distributed``'s config defaults (its pre-spawn environment) as ``distributed/config.py``
    2026.8.0 loads them, without importing ``distributed`` (0.3-0.7 s)."""
    import importlib.util

    import dask
    import yaml

    spec = importlib.util.find_spec("distributed")
    if "distributed" in sys.modules or spec is None or not spec.submodule_search_locations:
        return
    with open(os.path.join(list(spec.submodule_search_locations)[0], "distributed.yaml")) as f:
        dask.config.update_defaults(yaml.safe_load(f))


def start_forkserver(preload: tuple[str, ...] = ()) -> bool:
    """Start this process's forkserver for the workers of the LocalClusters to come, when
    :func:`worker_start_method` says ``forkserver``, with their pre-spawn environment
    (Dask's ``distributed.nanny.pre-spawn-environ`` with :data:`WORKER_ENVIRONMENT`) and
    :data:`WORKER_PRELOAD` and ``preload`` imported once in it.

    :func:`dask_client` calls it; the CLI earlier, so that the server imports while the
    command reads its input.

    Returns
    -------
    bool
        True when workers started now can be forks of the server: it runs, started here
        under the environment a nanny would set now. False for another start method, or
        a server started under other values (glibc and Arrow read them once, at its start).
    """
    global _FORKSERVER_ENV
    import multiprocessing
    import multiprocessing.forkserver

    if worker_start_method() != "forkserver":
        return False
    _distributed_defaults()
    with worker_environment():
        env = _pre_spawn_env()
    if _FORKSERVER_ENV is not None:
        return env == _FORKSERVER_ENV
    # a later first call of distributed's get_mp_context sets its own list: the server runs by then
    multiprocessing.get_context("forkserver").set_forkserver_preload(["distributed", *WORKER_PRELOAD, *preload])
    os.environ.update(env)  # what the nanny does before it starts a worker
    multiprocessing.forkserver.ensure_running()
    _FORKSERVER_ENV = env
    return True


@contextmanager
def _start_method(processes: bool, modules: tuple[str, ...]) -> Iterator[None]:
    """Within the block, worker processes start by :func:`worker_start_method` (forked:
    :func:`start_forkserver` with ``modules``)."""
    import dask

    method = worker_start_method() if processes else "spawn"
    if method == "forkserver" and not start_forkserver(modules):
        logger.debug("forkserver runs with another worker environment: spawning this cluster's workers")
        method = "spawn"
    with dask.config.set({"distributed.worker.multiprocessing-method": method}):
        yield


WORKER_PRELOAD = ("dgl_chunked.cluster", *PREIMPORTED)
"""What the forkserver of :func:`start_forkserver` imports: :data:`PREIMPORTED` and this
module (whose functions :func:`dask_client` runs on the workers)."""


def _import_modules() -> None:
    import importlib

    for name in PREIMPORTED:
        importlib.import_module(name)


def _preimport(client: Any) -> None:
    """Import :data:`PREIMPORTED` in every worker (best effort: a task imports what it lacks)."""
    try:
        client.run(_import_modules)
    except Exception:  # noqa: BLE001 - a head start only: never fail a run over it
        logger.debug("could not import the task modules in the workers ahead", exc_info=True)


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
