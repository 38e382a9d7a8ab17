"""The ownership marker ``.dglc-owned.json``: its model, and reading and writing it
(``docs/spec/staging.md``, "Ownership marker .dglc-owned.json").

Every directory dgl_chunked writes into carries this small JSON file::

    {"tool": "dgl_chunked", "kind": "dispatch", "run_id": "5f0c...", "version": "0.1.0",
     "host": "node17", "pid": 4242, "created": 1764000000.0, "started": 1764000300.0,
     "heartbeat": 1764000330.0, "released": false}

:mod:`dgl_chunked.storage.owned` builds the ownership rules on it and
:mod:`dgl_chunked.storage.lease` the lease (``released``, ``heartbeat``).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.storage import fs

__all__ = ["MARKER_NAME", "TOOL", "ForeignDataError", "Marker", "new_marker", "read_marker", "write_marker"]

MARKER_NAME = ".dglc-owned.json"
TOOL = "dgl_chunked"


class ForeignDataError(DglChunkedError, FileExistsError):
    """A path holds data dgl_chunked did not write; nothing there is touched."""


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
        """``host <name>, pid <pid>, started <UTC time>``: who holds the directory, for messages."""
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


def write_marker(path: str, marker: Marker, storage_options: StorageOptions) -> None:
    """Write ``marker`` as ``path/.dglc-owned.json`` (temporary name, then rename)."""
    data = json.dumps(asdict(marker), indent=1, sort_keys=True).encode()
    fs.atomic_write_bytes(_marker_path(path), data, storage_options)


def new_marker(kind: str, run_id: str | None, *, released: bool, created: float | None = None) -> Marker:
    """A marker for this process, started and heartbeating now (``run_id`` default: a new random one)."""
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
