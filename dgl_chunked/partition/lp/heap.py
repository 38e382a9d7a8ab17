"""glibc's mmap threshold in the worker processes while the ``lp`` method runs.

Dask's workers, and those this package starts, get ``MALLOC_TRIM_THRESHOLD_`` in their
environment, which fixes glibc's mmap threshold at 128 KiB (``mallopt(3)``): every
array of 128 KiB or more is mapped when allocated and unmapped when freed, so its pages
fault in again at their first touch. ``lp``'s tasks allocate tens of arrays of 1-30 MB
each (a block's entries, their sorted pairs, cluster tables), so on worker processes
they fault far more than on local threads, where glibc raises the threshold up to
32 MiB as arrays are freed. Measured (issue #38, ``bench_lp.py``'s planted 1M nodes /
10M edges, 8 parts, 2-core VM, ``perf stat -a``, 2026-11-27): ``dgl-chunked partition
--method lp`` on 2 local threads 0.66M page faults; with ``--workers 2``, 6.6M and
57.6 s; with the workers' threshold at 32 MiB, 1.27M and 50.0 s, the same assignment.

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
import os
from collections.abc import Iterator
from typing import Any

from dgl_chunked._dask import on_worker

__all__ = ["LP_MMAP_THRESHOLD", "large_arrays_on_heap", "on_the_workers", "set_mmap_threshold"]

LP_MMAP_THRESHOLD = 32 << 20
"""The threshold during ``lp``: glibc's largest dynamic one (``DEFAULT_MMAP_THRESHOLD_MAX``
on 64-bit), as local threads get it."""

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


def set_mmap_threshold(nbytes: int | None) -> int | None:
    """In this process, set glibc's mmap threshold to ``nbytes`` and its trim threshold
    to twice that (glibc's own rule when it raises the threshold: freed top-of-heap
    pages are kept for the next arrays), when glibc's adjustment is off (one of its
    fixing variables is in the environment); None puts back the values the environment
    gave and hands the kept pages back. Returns the mmap threshold now, or None when
    nothing was changed."""
    libc = _libc()
    if libc is None or not any(v in os.environ for v in _FIXING):
        return None
    if nbytes is None:
        mmap = int(os.environ.get("MALLOC_MMAP_THRESHOLD_", _GLIBC_DEFAULT))
        trim = int(os.environ.get("MALLOC_TRIM_THRESHOLD_", _GLIBC_DEFAULT))
    else:
        mmap, trim = nbytes, 2 * nbytes
    if libc.mallopt(_M_MMAP_THRESHOLD, mmap) != 1 or libc.mallopt(_M_TRIM_THRESHOLD, trim) != 1:
        return None
    if nbytes is None:
        libc.malloc_trim(0)
    return mmap


@contextlib.contextmanager
def large_arrays_on_heap(client: Any | None) -> Iterator[None]:
    """Within the block, :data:`LP_MMAP_THRESHOLD` on every worker of ``client`` (a
    ``distributed`` client; None: local threads, nothing to do)."""
    if client is None:
        yield
        return
    client.run(set_mmap_threshold, LP_MMAP_THRESHOLD)
    try:
        yield
    finally:
        client.run(set_mmap_threshold, None)


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
