"""Directories dgl_chunked owns: create and mark them, empty or remove only what is ours.

The rules (the marker itself is :mod:`dgl_chunked.storage.marker`):

- :func:`create_owned_dir` creates a directory that does not exist (or is empty)
  and marks it; a non-empty directory without the marker, or with the marker of
  another kind, is refused with :class:`ForeignDataError` naming an entry.
- :func:`remove_owned` and :func:`clear_owned` delete only marked directories
  and, given the names the tool writes there (``expected``), refuse before
  deleting anything when another entry is found. A bucket itself is never removed.
- :func:`prepare_owned_output` creates an output or, with ``overwrite``, empties
  our earlier output of the same kind: the one output-directory helper of every
  command (``chunk``, ``synth``, ``convert-graphbolt``, ``remap``, ``lookup``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Iterable

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import OutputExistsError
from dgl_chunked.storage import fs
from dgl_chunked.storage.marker import MARKER_NAME, ForeignDataError, new_marker, read_marker, write_marker

__all__ = [
    "clear_owned",
    "create_owned_dir",
    "foreign_entries",
    "prepare_owned_output",
    "remove_owned",
    "require_owned",
    "make_scratch_dir",
]


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
    write_marker(path, new_marker(kind, run_id, released=True), storage_options)
    return path


def make_scratch_dir(parent: str, kind: str, token: str, *, storage_options: StorageOptions = None) -> str:
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
    path: str,
    kind: str,
    *,
    overwrite: bool,
    expected: Iterable[str],
    storage_options: StorageOptions = None,
    manifest: str | None = None,
) -> str:
    """Create or reuse the marked output ``path``; with ``overwrite``, empty our earlier output.

    ``--overwrite`` means "replace my earlier output", never "empty this directory":
    only a marked directory of the same ``kind`` is emptied, and only when every
    entry matches ``expected`` (checked before anything is removed).

    With ``manifest`` (the file a command writes last, e.g. ``remap.json``), only an
    output holding it is finished and needs ``overwrite``; an interrupted one (ours,
    without it) is emptied and redone.

    Raises
    ------
    OutputExistsError
        ``path`` holds our earlier output and ``overwrite`` is False.
    ForeignDataError
        ``path`` holds data dgl_chunked did not write (see :func:`create_owned_dir`,
        :func:`clear_owned`).
    """
    path = create_owned_dir(path, kind, storage_options=storage_options)
    if manifest is not None:
        if fs.exists(fs.join(path, manifest), storage_options) and not overwrite:
            raise OutputExistsError(
                f"{path}: holds an earlier {kind} output ({manifest}); pass --overwrite (overwrite=True in Python) "
                "to replace it, or choose another directory"
            )
        clear_owned(path, expected=expected, storage_options=storage_options)
        return path
    names = _contents(path, storage_options)
    if names and not overwrite:
        raise OutputExistsError(
            f"{path}: expected a new or empty output directory, found an earlier {kind} output "
            f"({names[0]!r}, ...); pass overwrite=True (--overwrite) or choose another directory"
        )
    if names:
        clear_owned(path, expected=expected, storage_options=storage_options)
    return path
