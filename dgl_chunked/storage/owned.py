"""Directories dgl_chunked owns: a marker file, removal only of marked paths, overlap checks, leases.

Every directory the package writes into (an output, a staging area, a scratch
directory) is created by it and carries a small JSON marker, ``.dglc-owned.json``::

    {"tool": "dgl_chunked", "kind": "dispatch", "run_id": "5f0c...", "version": "0.1.0",
     "host": "node17", "pid": 4242, "created": 1764000000.0, "started": 1764000300.0,
     "heartbeat": 1764000330.0, "released": false}

Rules built on it:

- :func:`create_owned_dir` creates a directory that does not exist (or is empty)
  and marks it; a non-empty directory without the marker, or with the marker of
  another kind, is refused with :class:`ForeignDataError` naming an entry.
- :func:`remove_owned` and :func:`clear_owned` delete only marked directories
  and, given the names the tool writes there (``expected``), refuse before
  deleting anything when another entry is found. A bucket itself is never removed.
- :func:`check_no_overlap` refuses an output, staging or scratch location that is
  equal to, inside, or contains an input (:class:`OverlapError` names both).
- The marker doubles as a lease (:func:`acquire_lease`): ``released`` false plus
  a ``heartbeat`` younger than :data:`LEASE_STALE_SECONDS` means another run is
  working there (:class:`LeaseHeldError` names its host, pid and start time). A
  client-side thread refreshes the heartbeat every :data:`HEARTBEAT_SECONDS`. A
  lease whose holder is gone (heartbeat older than the stale time, or a dead pid
  on this host) is taken over.

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

import contextlib
import fnmatch
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from types import TracebackType

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.storage import fs

__all__ = [
    "MARKER_NAME",
    "LEASE_STALE_SECONDS",
    "HEARTBEAT_SECONDS",
    "SETTLE_SECONDS",
    "ForeignDataError",
    "OverlapError",
    "LeaseHeldError",
    "Lease",
    "Marker",
    "acquire_lease",
    "check_no_overlap",
    "clear_owned",
    "create_owned_dir",
    "foreign_entries",
    "location_token",
    "prepare_owned_output",
    "read_marker",
    "remove_owned",
    "require_owned",
    "scratch_dir",
]

logger = logging.getLogger(__name__)

MARKER_NAME = ".dglc-owned.json"
TOOL = "dgl_chunked"
LEASE_STALE_SECONDS = float(os.environ.get("DGLC_LEASE_STALE_SECONDS", "120"))
"""A lease without a heartbeat for this long is taken over (env ``DGLC_LEASE_STALE_SECONDS``)."""
HEARTBEAT_SECONDS = LEASE_STALE_SECONDS / 4
SETTLE_SECONDS = {"local": 0.05, "remote": 1.0}
"""Pause between writing the lease and reading it back (see the race window above)."""


class ForeignDataError(DglChunkedError, FileExistsError):
    """A path holds data dgl_chunked did not write; nothing there is touched."""


class OverlapError(DglChunkedError, ValueError):
    """An output, staging or scratch location overlaps an input."""


class LeaseHeldError(DglChunkedError, RuntimeError):
    """Another live dgl_chunked run works in this directory."""


@dataclass(frozen=True, kw_only=True)
class Marker:
    """The content of ``.dglc-owned.json``."""

    kind: str
    run_id: str
    version: str
    host: str
    pid: int
    created: float
    started: float
    heartbeat: float
    released: bool
    tool: str = TOOL

    def holder(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        return f"host {self.host}, pid {self.pid}, started {started}"

    def is_live(self, stale_after: float) -> bool:
        """Held by a run that is (probably) still working."""
        if self.released or time.time() - self.heartbeat > stale_after:
            return False
        return not (self.host == socket.gethostname() and not _pid_alive(self.pid))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dgl_chunked")
    except PackageNotFoundError:
        return "unknown"


def _marker_path(path: str) -> str:
    return fs.join(path, MARKER_NAME)


def read_marker(path: PathLike, *, storage_options: StorageOptions = None) -> Marker | None:
    """The marker of directory ``path``, or None when it has none.

    Raises
    ------
    ForeignDataError
        A file of that name exists but is not a dgl_chunked marker.
    """
    where = _marker_path(os.fspath(path))
    try:
        with fs.open_file(where, "rb", storage_options) as f:
            data = json.load(f)
        if data.get("tool") != TOOL:
            raise ValueError("not written by dgl_chunked")
        fields = {k: data[k] for k in Marker.__dataclass_fields__ if k in data}
        return Marker(**fields)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (ValueError, TypeError, AttributeError) as err:
        raise ForeignDataError(
            f"{where}: expected a dgl_chunked marker, found unreadable content ({err}); "
            "this directory was not written by dgl_chunked: choose another one"
        ) from err


def _write_marker(path: str, marker: Marker, storage_options: StorageOptions) -> None:
    data = json.dumps(asdict(marker), indent=1, sort_keys=True).encode()
    fs.atomic_write_bytes(_marker_path(path), data, storage_options)


def _new_marker(kind: str, run_id: str | None, *, released: bool, created: float | None = None) -> Marker:
    now = time.time()
    return Marker(
        kind=kind,
        run_id=run_id or uuid.uuid4().hex,
        version=_version(),
        host=socket.gethostname(),
        pid=os.getpid(),
        created=created if created is not None else now,
        started=now,
        heartbeat=now,
        released=released,
    )


def _entries(path: str, storage_options: StorageOptions) -> list[str] | None:
    """Names directly inside ``path`` (None when it does not exist)."""
    filesystem, inner = fs.filesystem(path, storage_options)
    filesystem.invalidate_cache(inner)  # workers may have written there: no stale listing
    try:
        if not filesystem.exists(inner):
            return None
        if not filesystem.isdir(inner):
            raise ForeignDataError(f"{path}: expected a directory, found a file; choose another location")
        listing = filesystem.ls(inner, detail=False)
    except FileNotFoundError:
        return None
    base = inner.rstrip("/")
    names = [str(p).rstrip("/").rsplit("/", 1)[-1] for p in listing if str(p).rstrip("/") != base]
    return sorted(names)


def _is_scratch(path: str, name: str, storage_options: StorageOptions) -> bool:
    """True for a ``dglc-<kind>-<token>`` scratch directory of ours inside ``path``."""
    return name.startswith("dglc-") and read_marker(fs.join(path, name), storage_options=storage_options) is not None


def _contents(path: str, storage_options: StorageOptions) -> list[str]:
    """Entries of ``path`` beside our marker and our scratch directories.

    A command may keep its scratch under its output (``run``: ``OUT/dglc-run-<token>``)
    while the output is being prepared: such a marked child is ours, belongs to the
    run that made it (which removes it), and is neither foreign nor earlier output.
    """
    names = [n for n in _entries(path, storage_options) or [] if n != MARKER_NAME]
    return [n for n in names if not _is_scratch(path, n, storage_options)]


def _foreign_message(path: str, names: list[str], what: str) -> str:
    more = f" (and {len(names) - 1} more)" if len(names) > 1 else ""
    return f"{path}: {what}; found {fs.join(path, names[0])!r}{more}, which dgl_chunked did not write"


def create_owned_dir(path: str, kind: str, *, storage_options: StorageOptions = None, run_id: str | None = None) -> str:
    """Create ``path`` and mark it as a dgl_chunked directory of ``kind``; return ``path``.

    ``path`` must not exist, be empty, or already carry our marker of the same
    ``kind`` (then it is reused as is: a rerun or a resume).

    Raises
    ------
    ForeignDataError
        ``path`` is a file, holds entries without our marker, or is marked as
        another kind of output.
    """
    path = os.fspath(path)
    names = _entries(path, storage_options)
    marker = read_marker(path, storage_options=storage_options) if names else None
    names = _contents(path, storage_options) if names else names
    if marker is not None:
        if marker.kind != kind:
            raise ForeignDataError(
                f"{path}: holds a dgl_chunked {marker.kind!r} directory, not a {kind!r} one; choose another directory"
            )
        return path
    if names:
        raise ForeignDataError(
            _foreign_message(path, names, "expected a new or empty directory, or one dgl_chunked created")
            + "; choose another directory or move those files away"
        )
    filesystem, inner = fs.filesystem(path, storage_options)
    filesystem.makedirs(inner, exist_ok=True)
    _write_marker(path, _new_marker(kind, run_id, released=True), storage_options)
    return path


def scratch_dir(parent: str, kind: str, token: str, *, storage_options: StorageOptions = None) -> str:
    """Create or reuse ``parent/dglc-<kind>-<token>`` marked as ours; return its path or URL.

    ``parent`` itself is only created when missing, never marked nor removed.
    """
    if not token or "/" in token:
        raise ValueError(f"token: expected a non-empty name without '/', found {token!r}")
    return create_owned_dir(fs.join(os.fspath(parent), f"dglc-{kind}-{token}"), kind, storage_options=storage_options)


def foreign_entries(path: str, expected: Iterable[str], *, storage_options: StorageOptions = None) -> list[str]:
    """Names directly inside ``path`` that match none of the ``expected`` glob patterns."""
    names = _contents(os.fspath(path), storage_options)
    return [n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in expected)]


def require_owned(
    path: str, *, expected: Iterable[str] | None = None, verb: str = "changed", storage_options: StorageOptions = None
) -> bool:
    """Check before removing anything in ``path``: False when it does not exist.

    Raises
    ------
    ForeignDataError
        ``path`` has no marker, or (with ``expected`` glob patterns) holds an entry
        matching none of them; the message names it and says ``not <verb>``.
    """
    path = os.fspath(path)
    names = _entries(path, storage_options)
    if names is None:
        return False
    if read_marker(path, storage_options=storage_options) is None:
        raise ForeignDataError(
            f"{path}: not {verb}: it lacks the marker {MARKER_NAME} that dgl_chunked puts in the "
            "directories it creates; remove it yourself if it is no longer needed"
        )
    if expected is not None:
        foreign = foreign_entries(path, expected, storage_options=storage_options)
        if foreign:
            raise ForeignDataError(_foreign_message(path, foreign, f"not {verb}") + "; move it away and rerun")
    return True


def _rm_entries(path: str, names: Iterable[str], storage_options: StorageOptions) -> None:
    filesystem, inner = fs.filesystem(path, storage_options)
    filesystem.invalidate_cache(inner)
    for name in names:
        target = f"{inner.rstrip('/')}/{name}"
        with contextlib.suppress(FileNotFoundError):
            filesystem.rm(target, recursive=True)


def clear_owned(path: str, *, expected: Iterable[str], storage_options: StorageOptions = None) -> None:
    """Empty the marked directory ``path`` (its marker and our scratch dirs stay), checking every entry first.

    Raises
    ------
    ForeignDataError
        ``path`` has no marker, or holds an entry matching none of ``expected``;
        nothing is removed then.
    """
    path = os.fspath(path)
    if require_owned(path, expected=expected, verb="cleared", storage_options=storage_options):
        _rm_entries(path, _contents(path, storage_options), storage_options)


def remove_owned(
    path: str,
    *,
    storage_options: StorageOptions = None,
    expected: Iterable[str] | None = None,
    keep_dir: bool = False,
) -> None:
    """Remove ``path`` recursively, only when it carries our marker (a missing path is fine).

    The marker goes last, so an interrupted removal can be retried. A bucket
    (``s3://bucket``) is emptied but never deleted; with ``keep_dir`` the (then
    empty) directory itself stays.

    Raises
    ------
    ForeignDataError
        No marker, or (with ``expected`` glob patterns) an entry the tool does not
        write; nothing is removed then.
    """
    path = os.fspath(path)
    if not require_owned(path, expected=expected, verb="removed", storage_options=storage_options):
        return
    names = [n for n in _entries(path, storage_options) or [] if n != MARKER_NAME]
    _rm_entries(path, names, storage_options)
    _rm_entries(path, [MARKER_NAME], storage_options)
    if keep_dir:  # e.g. an empty directory the user made before the run
        return
    filesystem, inner = fs.filesystem(path, storage_options)
    if fs.is_url(path) and "/" not in inner.strip("/"):
        return  # a bucket (or a store's root) is never removed
    with contextlib.suppress(OSError):  # rmdir: only when nothing appeared meanwhile
        filesystem.rmdir(inner)


def prepare_owned_output(
    path: str, kind: str, *, overwrite: bool, expected: Iterable[str], storage_options: StorageOptions = None
) -> str:
    """Create or reuse the marked output ``path``; with ``overwrite``, empty our earlier output.

    ``--overwrite`` means "replace my earlier output", never "empty this directory":
    only a marked directory of the same ``kind`` is emptied, and only when every
    entry matches ``expected`` (checked before anything is removed).

    Raises
    ------
    OutputExistsError
        ``path`` holds our earlier output and ``overwrite`` is False.
    ForeignDataError
        ``path`` holds data dgl_chunked did not write (see :func:`create_owned_dir`,
        :func:`clear_owned`).
    """
    from dgl_chunked.errors import OutputExistsError

    path = create_owned_dir(path, kind, storage_options=storage_options)
    names = _contents(path, storage_options)
    if names and not overwrite:
        raise OutputExistsError(
            f"{path}: expected a new or empty output directory, found an earlier {kind} output "
            f"({names[0]!r}, ...); pass overwrite=True (--overwrite) or choose another directory"
        )
    if names:
        clear_owned(path, expected=expected, storage_options=storage_options)
    return path


# --- overlap --------------------------------------------------------------------------


def _location(path: str, storage_options: StorageOptions) -> tuple[str, str]:
    """``(protocol, normalised path)``: symlinks resolved for local paths."""
    path = os.fspath(path)
    if not fs.is_url(path) or path.startswith("file://"):
        local = path[len("file://") :] if path.startswith("file://") else path
        return "file", os.path.realpath(os.path.abspath(local))
    filesystem, inner = fs.filesystem(path, storage_options)
    protocol = filesystem.protocol if isinstance(filesystem.protocol, str) else filesystem.protocol[0]
    return protocol, "/" + inner.strip("/")


def location_token(path: str, *, storage_options: StorageOptions = None) -> str:
    """A short stable name for the location ``path`` (symlinks and trailing slashes ignored).

    Used to name a scratch directory after the output it serves, so a rerun finds it.
    """
    import hashlib

    protocol, where = _location(path, storage_options)
    return hashlib.sha256(f"{protocol}://{where}".encode()).hexdigest()[:16]


def _inside(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def check_no_overlap(
    outputs: Mapping[str, str], inputs: Mapping[str, str], *, storage_options: StorageOptions = None
) -> None:
    """Refuse an output equal to, inside, or containing an input.

    Parameters
    ----------
    outputs, inputs
        ``label -> path`` (labels name the flag or role, e.g. ``"--out-dir"``,
        ``"chunked input"``). Paths on different file systems never overlap.

    Raises
    ------
    OverlapError
        Naming both labels and paths.
    """
    ins = [(label, p, _location(p, storage_options)) for label, p in inputs.items() if p]
    for out_label, out_path in outputs.items():
        if not out_path:
            continue
        out_proto, out_loc = _location(out_path, storage_options)
        for in_label, in_path, (in_proto, in_loc) in ins:
            if in_proto != out_proto:
                continue
            if out_loc == in_loc:
                relation = "is the same location as"
            elif _inside(out_loc, in_loc):
                relation = "is inside"
            elif _inside(in_loc, out_loc):
                relation = "contains"
            else:
                continue
            raise OverlapError(
                f"{out_label} {out_path!r} {relation} the {in_label} {in_path!r}: dgl_chunked never "
                f"writes where its input lives; choose a {out_label} outside the input"
            )


# --- leases ----------------------------------------------------------------------------


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
                _write_marker(self.path, self.marker, self.storage_options)
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
                _write_marker(self.path, replace(current, released=True, heartbeat=time.time()), self.storage_options)
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
    ours = _new_marker(kind, run_id, released=False, created=current.created if current else None)
    if current is not None and current.run_id != ours.run_id and current.is_live(stale):
        raise _held(path, current, stale)
    if current is not None and not current.released:
        logger.warning("taking over the stale lease on %s (%s)", path, current.holder())
    _write_marker(path, ours, storage_options)
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
