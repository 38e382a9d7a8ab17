"""Sequential writes of large local files that bypass the page cache (``O_DIRECT``).

The DGL files of a partition are written once, front to back, and are gigabytes
for large graphs. Through the page cache such writes run at the kernel's dirty-page
writeback rate; on the machine this project is benchmarked on that is 0.54 GB/s,
against 2.5 GB/s with ``O_DIRECT`` (``benchmarks/bench_write_memmap.py``). The
writer here copies everything into page-aligned buffers and writes whole aligned
buffers directly; the unaligned tail goes through the page cache.

A direct write returns when the device has the data, so a single buffer would leave
the caller idle for every one of them. There are two: a background thread writes a
full buffer while the caller fills the other.

Filesystems that refuse ``O_DIRECT`` (tmpfs on older kernels, many FUSE mounts)
and platforms without it get an ordinary buffered file, as does everyone with
``DGLC_DIRECT_IO=0`` in the environment.
"""

from __future__ import annotations

import errno
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

__all__ = ["open_for_writing", "DirectFile", "direct_io_enabled"]

ALIGN = 4096
"""Offsets and lengths of direct writes are multiples of this (covers 512 B and 4 KiB devices)."""

BUFFER_BYTES = 8 << 20


def direct_io_enabled() -> bool:
    """True unless the platform lacks ``O_DIRECT`` or ``DGLC_DIRECT_IO=0`` is set."""
    return hasattr(os, "O_DIRECT") and os.environ.get("DGLC_DIRECT_IO", "1") != "0"


def open_for_writing(path: str) -> IO[bytes] | DirectFile:
    """A write-only file at local ``path`` (truncated): direct when possible, else buffered."""
    if direct_io_enabled():
        try:
            return DirectFile(path)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
    return open(path, "wb")  # noqa: SIM115 - the caller closes it


class DirectFile:
    """A write-only, sequential local file written with ``O_DIRECT``.

    Supports ``write`` and ``close`` (what the DGL writers use). If the filesystem
    rejects a direct write after all, the file falls back to buffered writes. An
    error of a background write is raised by the next ``write`` that needs its
    buffer, or by ``close``; after it nothing more is written.

    Parameters
    ----------
    path
        Local file; created or truncated.
    buffer_bytes
        Size of each of the two aligned buffers (a multiple of :data:`ALIGN`).
    """

    def __init__(self, path: str, buffer_bytes: int = BUFFER_BYTES) -> None:
        self.name = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
        self._buffers = [mmap.mmap(-1, buffer_bytes) for _ in range(2)]  # anonymous maps are page aligned
        self._views = [memoryview(buffer) for buffer in self._buffers]
        self._view = self._views[0]
        self._fill = 0
        self._direct = True
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dglc-direct-write")
        self._pending: Future[None] | None = None
        self._error: BaseException | None = None  # a failed background write: nothing more is written
        self.closed = False

    def write(self, data: Any) -> int:
        """Append ``data`` (any buffer); return its length in bytes."""
        if self._error is not None:
            raise self._error
        source = memoryview(data).cast("B")
        size, pos = source.nbytes, 0
        while pos < size:
            take = min(size - pos, len(self._view) - self._fill)
            self._view[self._fill : self._fill + take] = source[pos : pos + take]
            self._fill += take
            pos += take
            if self._fill == len(self._view):
                self._hand_over()
        return size

    def close(self) -> None:
        """Write what is buffered (the unaligned tail through the page cache) and close."""
        if self.closed:
            return
        try:
            self._wait()
            if self._error is not None:  # raised already; appending after the gap would corrupt the file
                return
            aligned = self._fill - self._fill % ALIGN
            self._write_out(self._view, 0, aligned)
            if self._fill > aligned:
                self._buffered()
                self._write_out(self._view, aligned, self._fill)
        finally:
            self.closed = True
            self._writer.shutdown(wait=True)  # after a failure a write may still be under way
            os.close(self._fd)
            for view in self._views:
                view.release()
            for buffer in self._buffers:
                buffer.close()

    def __enter__(self) -> DirectFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _hand_over(self) -> None:
        """Give the full buffer to the writer thread; go on in the other one."""
        self._wait()
        self._pending = self._writer.submit(self._write_out, self._view, 0, self._fill)
        self._view = self._views[1] if self._view is self._views[0] else self._views[0]
        self._fill = 0

    def _wait(self) -> None:
        """Wait for the write under way, if any (raising its error)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        try:
            pending.result()
        except BaseException as err:
            self._error = err
            raise

    def _write_out(self, view: memoryview, start: int, stop: int) -> None:
        """Write bytes ``[start, stop)`` of ``view``."""
        done = start
        while done < stop:
            try:
                with view[done:stop] as part:  # released even when the write fails: close() unmaps
                    done += os.write(self._fd, part)
            except OSError as err:
                if err.errno != errno.EINVAL or not self._direct:
                    raise
                self._buffered()  # the filesystem took the flag but not the write

    def _buffered(self) -> None:
        import fcntl  # POSIX only, like O_DIRECT itself

        flags = fcntl.fcntl(self._fd, fcntl.F_GETFL)
        fcntl.fcntl(self._fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)
        self._direct = False
