"""Overlap checks: dgl_chunked never writes where its input lives.

:func:`check_no_overlap` refuses an output, staging or scratch location that is
equal to, inside, or contains an input (:class:`OverlapError` names both);
:func:`location_token` names a location stably (symlinks and trailing slashes
ignored), e.g. for a scratch directory that a rerun must find again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.storage import fs

__all__ = ["OverlapError", "check_no_overlap", "location_token"]


class OverlapError(DglChunkedError, ValueError):
    """An output, staging or scratch location overlaps an input."""


def _location(path: str, storage_options: StorageOptions, folders: dict[str, str] | None = None) -> tuple[str, str]:
    """``(protocol, normalised path)``: symlinks resolved for local paths. ``folders``
    caches resolved parent folders: a graph of thousands of files in a few folders costs
    one ``lstat`` per file instead of a ``realpath`` (40 us) each."""
    path = os.fspath(path)
    if not fs.is_url(path) or path.startswith("file://"):
        local = os.path.abspath(path[len("file://") :] if path.startswith("file://") else path)
        if folders is None or os.path.islink(local):
            return "file", os.path.realpath(local)
        parent, name = os.path.split(local)
        if parent not in folders:
            folders[parent] = os.path.realpath(parent)
        return "file", os.path.join(folders[parent], name)
    filesystem, inner = fs.filesystem(path, storage_options)
    protocol = filesystem.protocol if isinstance(filesystem.protocol, str) else filesystem.protocol[0]
    return protocol, "/" + inner.strip("/")


def location_token(path: str, *, storage_options: StorageOptions = None) -> str:
    """A short stable name for the location ``path`` (symlinks and trailing slashes ignored).

    Used to name a scratch directory after the output it serves, so a rerun finds it.
    """
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
    folders: dict[str, str] = {}
    ins = [(label, p, _location(p, storage_options, folders)) for label, p in inputs.items() if p]
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
