"""glibc's mmap threshold in the worker processes while the ``lp`` method runs.

Dask's workers, and those this package starts, get ``MALLOC_TRIM_THRESHOLD_`` in their
environment, which fixes glibc's mmap threshold at 128 KiB (``mallopt(3)``): every
array of 128 KiB or more is mapped when allocated and unmapped when freed, so its pages
fault in again at their first touch. ``lp``'s tasks allocate tens of arrays of 1-30 MB
each (a block's entries, their sorted pairs, cluster tables), so on worker processes
they fault far more than on local threads, where glibc raises the threshold up to
32 MiB as arrays are freed. Measured (issue #38, ``bench_lp.py``'s planted 1M nodes /
10M edges, 8 parts, 2-core VM, ``perf stat -a``, 2026-11-27): ``dgl-chunked partition
--method lp`` on 2 local threads 0.74M page faults; with ``--workers 2``, 6.5M and
59.0 s; with the workers' mmap and trim thresholds at 32 and 64 MiB, 0.78M and 51.6 s,
the same assignment. The kept pages cost memory: ``bench_lp.py`` on the same graph
(2 workers, one run each, load 2.0-2.4, times within about 4 s run to run) took 57.8 s
and peaked at 685/720 MB per worker without, 43.8 s and 876/1008 MB at 32/64 MiB,
43.0 s and 849/1058 MB at 32/32 MiB, 45.5 s and 789/851 MB at 16/16 MiB: the
thresholds are 16 MiB, within issue #38's 1 GB per worker.

Dispatch keeps the 128 KiB: with 32 MiB its workers' peak RSS on ``bench_pipeline.py``
1x went from 232/235 to 329/361 MB (2.40 -> 2.02 s). So the driver raises the threshold
on every worker for its run and puts the value it found back at the end
(:func:`on_the_workers`). A worker whose threshold glibc still adjusts itself (none of
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_``,
``MALLOC_MMAP_MAX_`` in its environment), local threads and any process that is not
glibc's are left alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

from dgl_chunked._dask import on_worker

logger = logging.getLogger("dgl_chunked.partition.lp")

__all__ = [
    "LP_MMAP_THRESHOLD",
    "TRIM_GROWN_BY",
    "give_back_free_heap",
    "large_arrays_on_heap",
    "on_the_workers",
    "set_mmap_threshold",
    "trim_after_task",
]

LP_MMAP_THRESHOLD = 16 << 20
"""The mmap and trim thresholds during ``lp`` (local threads get up to 32 MiB and 64 MiB
from glibc: more memory per worker for little more speed, see above)."""

TRIM_GROWN_BY = 64 << 20
"""A worker's task hands its heaps' free pages back when the worker's anonymous resident
memory grew by more than this since the last time (:func:`trim_after_task`)."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_GLIBC_DEFAULT = 128 << 10  # both thresholds' defaults
_FIXING = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


@functools.cache
def _libc() -> Any:
    """glibc (``mallopt``, ``malloc_trim``), or None (another C library, or none found)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc


_HOLDERS = [0]  # lp runs in this process that raised the threshold and have not put it back
_HOLDERS_LOCK = threading.Lock()
_TRIMMED_AT = [0]  # this process's anonymous resident bytes after its last trim (trim_after_task)
_current = [_GLIBC_DEFAULT]  # the mmap threshold last set here


def set_mmap_threshold(nbytes: int | None) -> int | None:
    """In this process, set glibc's mmap threshold and its trim threshold to ``nbytes``
    (arrays below it come from the heap, and up to that much freed top-of-heap is kept
    for the next ones), when glibc's adjustment is off (one of its fixing variables is
    in the environment); None puts back the values the environment gave and hands the
    kept pages back, once every run that raised it has called it (two ``lp`` jobs on one
    cluster: the first to end does not lower it under the other). Returns the mmap
    threshold in force after the call, or None when it is not this module's to set."""
    libc = _libc()
    if libc is None or not any(v in os.environ for v in _FIXING):
        return None
    with _HOLDERS_LOCK:
        _HOLDERS[0] = _HOLDERS[0] + 1 if nbytes is not None else max(0, _HOLDERS[0] - 1)
        if nbytes is None and _HOLDERS[0]:
            return _current[0]
        if nbytes is None:
            mmap = int(os.environ.get("MALLOC_MMAP_THRESHOLD_", _GLIBC_DEFAULT))
            trim = int(os.environ.get("MALLOC_TRIM_THRESHOLD_", _GLIBC_DEFAULT))
        else:
            mmap, trim = nbytes, nbytes
        if libc.mallopt(_M_MMAP_THRESHOLD, mmap) != 1 or libc.mallopt(_M_TRIM_THRESHOLD, trim) != 1:
            return None
        if nbytes is None:
            libc.malloc_trim(0)
            _TRIMMED_AT[0] = 0  # the next run's first task trims and sets its own base
        _current[0] = mmap
        return mmap


def give_back_free_heap() -> bool:
    """Hand the free pages inside glibc's heaps (every thread's arena) back to the
    system (``malloc_trim(0)``); returns whether it could (glibc only).

    The trim threshold gives back only the top of a heap: the ``lp`` in-memory METIS
    runs (:func:`.coarsest.metis_task`; in the driver before session 21) grow its thread's heap by a few
    hundred MB, and what they free below the driver's live objects stayed resident for
    the rest of the run (issue #38: 310-380 MB of free heap in the driver's worker from
    the first METIS run on, at 10M nodes / 100M edges, most of that worker's peak
    above the other's). So it is called before each METIS run (the worker's tasks
    left free heap too, 268 MB at 10M, and METIS's own peak comes on top) and after."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def _anon_resident() -> int | None:
    """This process's resident bytes not backed by files (``/proc/self/statm``: resident
    minus shared pages, in one short read); None where there is no such file."""
    try:
        with open("/proc/self/statm") as statm:
            fields = statm.read().split()
    except OSError:
        return None
    return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")


def trim_after_task(grown_by: int = TRIM_GROWN_BY) -> bool:
    """After an ``lp`` task on a worker whose mmap threshold this module raised
    (:func:`set_mmap_threshold`): when the worker's anonymous resident memory has grown
    by more than ``grown_by`` since its last trim, hand its heaps' free pages back
    (:func:`give_back_free_heap`). Returns whether it did.

    Under the raised threshold the tasks' arrays up to 16 MiB come from the heap, and
    what they free below live objects stays resident: the next task reuses some of it,
    but a worker keeps the largest heap its tasks left, and the driver's own work (on
    the driver's worker) comes on top of it. Issue #38, ``bench_lp_memory.py`` on 2
    workers, 2026-11-29, two runs each: at 10M nodes / 100M edges the lower worker's
    peak went from 645-648 MB to 604-623 MB with this rule (194 trims in one run, 73 MB
    back each on average), the driver's from 712-799 to 691-751 (within its spread from
    run to run), the same assignment (312.8-325.4 s against 356.8-394.5 s: the VM's
    speed drifted, no speed is claimed); at 1M it trims 8 times and changes nothing
    measurable. A trim after every task did about as well at 10M (604-614 / 660-702
    MB) but made the next tasks fault their pages in again (1M: about 2 s of 31 s). The
    free bytes (``mallinfo2``) do not tell when to trim: trimmed pages still count as
    free, so a heap once fragmented would trim after every task. Local threads (the
    threshold not raised here) and other C libraries are left alone."""
    if not _HOLDERS[0]:
        return False
    anon = _anon_resident()
    if anon is None or anon <= _TRIMMED_AT[0] + grown_by:
        return False
    trimmed = give_back_free_heap()
    _TRIMMED_AT[0] = _anon_resident() or 0
    return trimmed


@contextlib.contextmanager
def large_arrays_on_heap(client: Any | None) -> Iterator[None]:
    """Within the block, :data:`LP_MMAP_THRESHOLD` on every worker of ``client`` (a
    ``distributed`` client; None: local threads, nothing to do)."""
    if client is None:
        yield
        return
    _run_everywhere(client, LP_MMAP_THRESHOLD)
    try:
        yield
    finally:
        _run_everywhere(client, None)


def _run_everywhere(client: Any, nbytes: int | None) -> None:
    """:func:`set_mmap_threshold` on every worker, best effort: a worker that cannot (it
    left, it answers late) keeps its threshold, and the partitioning goes on."""
    try:
        client.run(set_mmap_threshold, nbytes, on_error="return")
    except Exception as err:  # an allocator setting never fails the method
        logger.debug("lp: glibc's mmap threshold not set on the workers: %s", err)


@contextlib.contextmanager
def on_the_workers() -> Iterator[None]:
    """:func:`large_arrays_on_heap` on the workers of the cluster this task runs on
    (the ``lp`` driver's; nothing outside a ``distributed`` worker)."""
    if not on_worker():
        yield
        return
    from distributed import get_client

    with large_arrays_on_heap(get_client()):
        yield
