"""numba kernels compiled once per machine, not once per worker process.

The ``lp`` kernels are compiled with numba's on-disk cache (``cache=True``): the first
run after an install compiles them, later runs load them. On a Dask cluster every
worker process is a fresh interpreter, and numba does not coordinate processes: on
the 2-core machine, 2 workers with an empty cache each compiled the same kernels at
the same time, on the cores the run needed (1M nodes / 10M edges: 74.4 s against
38.7 s with the cache filled, issue #38). A :class:`HostKernel` takes a lock shared
by the processes of the machine (an ``fcntl`` record lock on one file of the temporary
directory, one byte per kernel) around the first call of each argument-type set in a
process: the first process compiles and writes the cache, the others wait and then
load it. Calls after that take no lock. Where ``fcntl`` or the lock file is not
available, the kernel compiles as before, unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

import numpy as np

__all__ = ["FALSE", "TRUE", "ZERO", "HostKernel", "compiled", "lock_path", "machine_lock"]

ZERO: Any = np.int64(0)
"""0 as numba types a variable (int64), for a compiled function to pass to another: a
literal ``0`` is typed ``Literal[int](0)``, and numba compiles the callee once for each
literal and once more for the variable's type (issue #38)."""

TRUE: Any = np.bool_(True)
"""``True`` as numba types a variable (``bool``), for the reason of :data:`ZERO`."""

FALSE: Any = np.bool_(False)
"""``False`` as numba types a variable (``bool``), for the reason of :data:`ZERO`."""

_THREAD_LOCK = threading.RLock()  # POSIX record locks belong to the process, not the thread
_LOCK_BYTES = 1 << 16
_HELD = (errno.EACCES, errno.EAGAIN)  # lockf's errors when another process holds the byte


def lock_path() -> str:
    """The file whose bytes lock the kernels' first compilation on this machine (one per
    user, in the temporary directory; the file itself is empty and left in place)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"dgl_chunked-numba-{uid}.lock")


@contextlib.contextmanager
def machine_lock(name: str, wait: float = 120.0) -> Iterator[None]:
    """Hold byte ``crc32(name)`` of :func:`lock_path` for the block: no lock where the
    file, ``fcntl`` or its locks are not available (a file system without them), or
    after ``wait`` seconds (a process that stopped while compiling costs the others
    that much at most, never a hang)."""
    try:
        import fcntl

        fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):
        yield
        return
    offset = zlib.crc32(name.encode()) % _LOCK_BYTES
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                break
            except OSError as error:
                if error.errno not in _HELD or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock


def _type_key(x: Any) -> Any:
    """What numba's type of argument ``x`` depends on, cheaply (an array's dtype, rank,
    layout and flags; a scalar's type)."""
    if isinstance(x, np.ndarray):
        return x.dtype, x.ndim, x.flags.c_contiguous, x.flags.writeable, x.flags.aligned
    return type(x)


class HostKernel:
    """A numba dispatcher whose first call with each set of argument types in a
    process compiles (or loads from numba's cache) under the machine's lock for this
    kernel, then runs outside it.

    Parameters
    ----------
    dispatcher
        The ``numba.njit(cache=True)`` function.
    """

    __slots__ = ("dispatcher", "name", "_seen")

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher = dispatcher
        func = dispatcher.py_func
        self.name = f"{func.__module__}.{func.__qualname__}"
        self._seen: set[tuple[Any, ...]] = set()

    def __call__(self, *args: Any) -> Any:
        key = tuple(map(_type_key, args))
        if key not in self._seen:
            self.ready(*args)
            self._seen.add(key)
        return self.dispatcher(*args)

    def ready(self, *args: Any) -> None:
        """Compile or load the kernel for the types of ``args`` (without running it):
        numba's own call compiles a version for exactly those types where it has none
        (numba 0.68 converts to a version it has only when it may not compile)."""
        signature = tuple(map(self.dispatcher.typeof_pyval, args))
        if signature in self.dispatcher.overloads:
            return
        with _THREAD_LOCK, machine_lock(self.name):
            self.dispatcher.compile(signature)


def compiled(namespace: MutableMapping[str, Any], helpers: Iterable[str], name: str) -> HostKernel:
    """The function ``namespace[name]`` compiled with numba (on-disk cache, no GIL) as a
    :class:`HostKernel`; first its ``helpers``, functions of ``namespace`` (the module's
    globals, where the compiled kernel looks them up), replaced there by their numba
    versions (``name`` may be one of them).

    """
    import numba

    jit = numba.njit(cache=True, nogil=True)
    with _THREAD_LOCK:
        for helper in helpers:
            if not isinstance(namespace[helper], numba.core.dispatcher.Dispatcher):
                namespace[helper] = jit(namespace[helper])
        func = namespace[name]
        return HostKernel(func if isinstance(func, numba.core.dispatcher.Dispatcher) else jit(func))
