"""The entries of an assignment directory, and the small helpers that read them.

The directory tree, and who writes which entry, is drawn in the package
docstring (:mod:`dgl_chunked.io.assignment`); the formats: ``docs/spec/assignment.md``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import AssignmentError
from dgl_chunked.storage import fs as _fs

if TYPE_CHECKING:
    import zarr

__all__ = [
    "ASSIGNMENT_KIND",
    "DEFAULT_CHUNK_ROWS",
    "META_NAME",
    "SIDECAR_NAME",
    "ZARR_NAME",
    "file_stamp",
    "is_directory",
    "load_json",
    "zarr_group",
]

META_NAME = "partition_meta.json"
SIDECAR_NAME = "dglc_partition.json"
ZARR_NAME = "dglc_parts.zarr"
ASSIGNMENT_KIND = "assignment"
"""The kind in an assignment directory's ownership marker (:mod:`dgl_chunked.storage.owned`)."""
DEFAULT_CHUNK_ROWS = 1 << 20
"""Rows per block when a reader is given no chunks; the writer's block size for numpy input."""


def is_directory(path: str, storage_options: StorageOptions) -> bool:
    """True when ``path`` exists but is a directory (a file was expected)."""
    fs, inner = _fs.filesystem(path, storage_options)
    return bool(fs.isdir(inner))


def load_json(path: str, storage_options: StorageOptions, what: str) -> Any:
    """The parsed JSON of file ``path``, which should hold ``what`` (for messages).

    Raises
    ------
    AssignmentError
        No such file, a directory, or invalid JSON (with the line); the message
        names ``path`` and says how to fix it.
    """
    if not _fs.exists(path, storage_options):
        raise AssignmentError(
            f"{path}: expected {what}, found no such file; write it (dgl-chunked partition) "
            f"or point to a complete assignment directory"
        )
    if is_directory(path, storage_options):
        raise AssignmentError(f"{path}: expected {what} in a file, found a directory; replace it with the file")
    with _fs.open_file(path, "rb", storage_options) as f:
        raw = f.read()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        line = getattr(err, "lineno", 1)
        raise AssignmentError(
            f"{path}: line {line}: expected valid JSON ({what}), found {err}; fix or regenerate the file"
        ) from err


def file_stamp(path: str, storage_options: StorageOptions) -> tuple[int, str]:
    """``(size, mtime)`` of file ``path``: what the sidecar records to tell an edited file apart."""
    fs, inner = _fs.filesystem(path, storage_options)
    info = fs.info(inner)
    mtime = info.get("mtime", info.get("LastModified", info.get("created")))
    return int(info.get("size") or 0), str(mtime)


def zarr_group(path: str, mode: str, storage_options: StorageOptions) -> zarr.Group:
    """Open the Zarr group at ``path`` (local path or fsspec URL) in ``mode``."""
    import zarr

    if _fs.is_url(path) and not path.startswith("file://"):
        return zarr.open_group(path, mode=mode, storage_options=storage_options)  # type: ignore[arg-type]
    fs, inner = _fs.filesystem(path, storage_options)
    return zarr.open_group(inner, mode=mode)  # type: ignore[arg-type]
