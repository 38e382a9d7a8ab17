"""A marked directory removed off the caller's path: renamed to a trash name beside it, then
removed by a background thread.

Removing a 10M-node / 100M-edge staging (518 files, 1.6 GB) took 0.5-1.2 s of unlinking
after a run's last task (issue 37); renamed first, the directory is gone from its place
at once (a rename within its parent is atomic on a local file system) and the unlinking
runs while the caller goes on: a command line prints its summary and closes its
cluster meanwhile, then waits (:func:`wait_for_removals`; the thread is not a daemon,
so the process's end waits too).

The trash name is the directory's name, :data:`TRASH_MARK` and a random suffix. The
directory keeps its ownership marker (:mod:`~dgl_chunked.storage.owned`), so a process
killed before its thread finished leaves a trash directory that the next run finds
(:func:`leftover_trash`) and removes as the tool removes any directory it marked: only
when the marker is there and nothing but the tool's entries is inside.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
import uuid
from collections.abc import Callable

__all__ = ["TRASH_MARK", "leftover_trash", "move_to_trash", "remove_later", "wait_for_removals"]

TRASH_MARK = ".trash-dglc-"
"""Between a directory's name and the random suffix of its trash name."""

logger = logging.getLogger(__name__)

_pending: list[threading.Thread] = []
_lock = threading.Lock()


def move_to_trash(path: str) -> str:
    """Rename the local directory ``path`` to a new trash name beside it; return that name."""
    trash = f"{os.path.normpath(path)}{TRASH_MARK}{uuid.uuid4().hex[:12]}"
    os.rename(path, trash)
    return trash


def leftover_trash(path: str) -> list[str]:
    """The trash directories of ``path`` (a local path) that earlier runs left beside it."""
    pattern = glob.escape(os.path.normpath(path)) + glob.escape(TRASH_MARK) + "*"
    return sorted(p for p in glob.glob(pattern) if os.path.isdir(p) and not os.path.islink(p))


def _run(remove: Callable[[], None], what: str) -> None:
    try:
        remove()
    except Exception:  # a trash directory left behind is removed by the next run
        logger.warning("could not remove %s; the next run into this output removes it", what, exc_info=True)


def remove_later(remove: Callable[[], None], what: str) -> None:
    """Call ``remove()`` in a background thread (not a daemon); a failure is logged, not raised."""
    thread = threading.Thread(target=_run, args=(remove, what), name="dglc-trash", daemon=False)
    with _lock:
        _pending.append(thread)
    thread.start()


def wait_for_removals() -> None:
    """Wait until every removal this process started with :func:`remove_later` has ended."""
    with _lock:
        threads = list(_pending)
        _pending.clear()
    for thread in threads:
        thread.join()
