"""Leases on owned directories: one live dgl_chunked run per directory.

The ownership marker (:mod:`dgl_chunked.storage.marker`) doubles as a lease
(:func:`acquire_lease`): ``released`` false plus a ``heartbeat`` younger than
:data:`LEASE_STALE_SECONDS` means another run is working there
(:class:`LeaseHeldError` names its host, pid and start time). A client-side thread
refreshes the heartbeat every :data:`HEARTBEAT_SECONDS`. A lease whose holder is
gone (heartbeat older than the stale time, or a dead pid on this host) is taken over.

Race window: object stores have no portable create-if-absent, so taking a lease
is write-then-read-back: the marker is written with our ``run_id``, and read again
after :data:`SETTLE_SECONDS`; whoever wrote last holds it and the other refuses.
Two runs both get through only if the second one's read-then-write of the marker
takes longer than the settle time, i.e. two starts within milliseconds of each
other on a store slower than the settle time. The heartbeat thread also re-reads
the marker and flags a lost lease (:meth:`Lease.check`), which callers check before
publishing results.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import replace
from types import TracebackType

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.storage import fs
from dgl_chunked.storage.marker import Marker, new_marker, read_marker, write_marker
from dgl_chunked.storage.owned_dirs import create_owned_dir

__all__ = ["HEARTBEAT_SECONDS", "LEASE_STALE_SECONDS", "SETTLE_SECONDS", "Lease", "LeaseHeldError", "acquire_lease"]

logger = logging.getLogger(__name__)

LEASE_STALE_SECONDS = float(os.environ.get("DGLC_LEASE_STALE_SECONDS", "120"))
"""A lease without a heartbeat for this long is taken over (env ``DGLC_LEASE_STALE_SECONDS``)."""
HEARTBEAT_SECONDS = LEASE_STALE_SECONDS / 4
SETTLE_SECONDS = {"local": 0.05, "remote": 1.0}
"""Pause between writing the lease and reading it back (see the race window above)."""


class LeaseHeldError(DglChunkedError, RuntimeError):
    """Another live dgl_chunked run works in this directory."""


class Lease:
    """A held lease on a marked directory; a context manager that releases it on exit.

    A daemon thread rewrites the marker's ``heartbeat`` every ``heartbeat_every``
    seconds; if it finds another run's ID there, :attr:`lost` becomes True and
    :meth:`check` raises.
    """

    def __init__(self, path: str, marker: Marker, *, storage_options: StorageOptions, heartbeat_every: float) -> None:
        self.path = path
        self.marker = marker
        self.storage_options = storage_options
        self.lost: Marker | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(heartbeat_every,), name=f"dglc-lease-{marker.run_id[:8]}", daemon=True
        )
        self._thread.start()

    @property
    def run_id(self) -> str:
        return self.marker.run_id

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                current = read_marker(self.path, storage_options=self.storage_options)
                if current is None or current.run_id != self.run_id:
                    self.lost = current or self.marker
                    logger.error("lost the lease on %s to %s", self.path, self.lost.holder())
                    return
                self.marker = replace(self.marker, heartbeat=time.time())
                write_marker(self.path, self.marker, self.storage_options)
            except Exception as err:  # a missed heartbeat is not fatal; the next one may work
                logger.warning("heartbeat on %s failed: %s", self.path, err)

    def check(self) -> None:
        """Raise :class:`LeaseHeldError` when another run took this lease over."""
        if self.lost is not None:
            raise LeaseHeldError(
                f"{self.path}: another dgl_chunked run ({self.lost.holder()}) took over this "
                "directory while we worked (our heartbeat was late); stop one of the runs and rerun"
            )

    def release(self) -> None:
        """Stop the heartbeat and mark the directory free (when it is still ours)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        try:
            current = read_marker(self.path, storage_options=self.storage_options)
            if current is not None and current.run_id == self.run_id:
                write_marker(self.path, replace(current, released=True, heartbeat=time.time()), self.storage_options)
        except (OSError, DglChunkedError) as err:
            logger.warning("could not release the lease on %s: %s", self.path, err)

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def acquire_lease(
    path: str,
    kind: str,
    *,
    storage_options: StorageOptions = None,
    run_id: str | None = None,
    stale_after: float | None = None,
    heartbeat_every: float | None = None,
) -> Lease:
    """Create or reuse the marked directory ``path`` and take its lease.

    Parameters
    ----------
    path
        The directory (see :func:`create_owned_dir` for what is accepted).
    kind
        The kind of directory (``"dispatch"``, ``"chunk"``, ...).
    run_id
        This run's ID (default: a new random one).
    stale_after
        Seconds without heartbeat after which another holder's lease is taken
        over (default :data:`LEASE_STALE_SECONDS`).
    heartbeat_every
        Seconds between heartbeats (default :data:`HEARTBEAT_SECONDS`).

    Returns
    -------
    Lease
        Use it as a context manager (``with acquire_lease(out, "dispatch"):``).

    Raises
    ------
    LeaseHeldError
        Another run holds a live lease; the message names its host, pid and start time.
    ForeignDataError
        As :func:`create_owned_dir`.
    """
    path = os.fspath(path)
    stale = LEASE_STALE_SECONDS if stale_after is None else stale_after
    create_owned_dir(path, kind, storage_options=storage_options)
    current = read_marker(path, storage_options=storage_options)
    ours = new_marker(kind, run_id, released=False, created=current.created if current else None)
    if current is not None and current.run_id != ours.run_id and current.is_live(stale):
        raise _held(path, current, stale)
    if current is not None and not current.released:
        logger.warning("taking over the stale lease on %s (%s)", path, current.holder())
    write_marker(path, ours, storage_options)
    time.sleep(SETTLE_SECONDS["remote" if fs.is_url(path) and not path.startswith("file://") else "local"])
    after = read_marker(path, storage_options=storage_options)
    if after is None or after.run_id != ours.run_id:
        raise _held(path, after or ours, stale)
    every = HEARTBEAT_SECONDS if heartbeat_every is None else heartbeat_every
    return Lease(path, ours, storage_options=storage_options, heartbeat_every=every)


def _held(path: str, holder: Marker, stale: float) -> LeaseHeldError:
    age = max(0.0, time.time() - holder.heartbeat)
    return LeaseHeldError(
        f"{path}: another dgl_chunked run is working here ({holder.holder()}, last heartbeat "
        f"{age:.0f} s ago); wait for it or stop it (a lease without heartbeat for {stale:.0f} s "
        "is taken over), or choose another directory"
    )
