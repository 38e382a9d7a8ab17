"""File access shared by the chunk-file readers: size, a readable source, parent folders.

A *source* is what pyarrow and numpy read best: a local path (so they can memory-map
it) or, for a URL, an open fsspec file. Every reader opens chunk files through
:func:`source`, so a missing file or a directory gives the same
:class:`~dgl_chunked.errors.ChunkReadError` whatever the format, and reads inside
:func:`read_errors`, so a damaged file or a failed remote read does too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import ChunkReadError, DglChunkedError, one_line
from dgl_chunked.storage import fs

__all__ = ["binary", "file_size", "file_sizes", "local_path", "makedirs_for", "read_errors", "source"]


def local_path(path: str, storage_options: StorageOptions) -> str | None:
    """The local file system path of ``path``, or None for a remote URL."""
    if not fs.is_url(path):  # the common case, without fsspec's URL parsing (per file read)
        return os.path.abspath(path)
    filesystem, inner = fs.filesystem(path, storage_options)
    return inner if isinstance(filesystem, LocalFileSystem) else None


def file_size(path: str, storage_options: StorageOptions = None) -> int:
    """Size of a chunk file in bytes; :class:`ChunkReadError` if it does not exist."""
    filesystem, inner = fs.filesystem(path, storage_options)
    try:
        return int(filesystem.size(inner))
    except FileNotFoundError as err:
        raise ChunkReadError(
            f"chunk file {path!r} does not exist; fix the path in metadata.json or restore the file"
        ) from err


def file_sizes(paths: list[str], storage_options: StorageOptions = None) -> list[int]:
    """Sizes of many files, 0 for one that is missing (its reader says so): a stat per
    local file, one listing per folder of URLs (Spark writes hundreds of files into one)."""
    out: dict[str, int] = {}
    remote: dict[str, list[str]] = {}
    for path in paths:
        if fs.is_url(path):
            remote.setdefault(fs.parent(path), []).append(path)
        else:
            try:
                out[path] = os.stat(path).st_size
            except OSError:
                out[path] = 0
    for folder, members in remote.items():
        filesystem, inner = fs.filesystem(folder, storage_options)
        try:
            listing = {str(e["name"]).rstrip("/"): int(e.get("size") or 0) for e in filesystem.ls(inner, detail=True)}
        except OSError:
            listing = {}
        for path in members:
            out[path] = listing.get(fs.filesystem(path, storage_options)[1].rstrip("/"), 0)
    return [out[p] for p in paths]


@contextmanager
def source(path: str, storage_options: StorageOptions, *, block_size: int | None = None) -> Iterator[str | IO[bytes]]:
    """Yield a local path (so pyarrow and numpy can mmap) or an open fsspec file.

    ``block_size`` bounds a remote file's read-ahead: ``fs.HEADER_BLOCK`` where only a
    header or footer is read (see :func:`dgl_chunked.storage.fs.open_file`).

    Raises
    ------
    ChunkReadError
        The file does not exist, or the path is not a regular file.
    """
    local = local_path(path, storage_options)
    if local is not None:
        if not os.path.isfile(local):
            file_size(path, storage_options)  # raises ChunkReadError for a missing file
            raise ChunkReadError(f"chunk path {path!r} is not a regular file; point to a file")
        yield local
        return
    file_size(path, storage_options)
    with fs.open_file(path, "rb", storage_options, block_size=block_size) as f:
        yield f


@contextmanager
def binary(src: str | IO[bytes]) -> Iterator[IO[bytes]]:
    """A binary file object for a :func:`source` (opened when it is a local path)."""
    if isinstance(src, str):
        with open(src, "rb") as f:
            yield f
    else:
        yield src


def makedirs_for(path: str, storage_options: StorageOptions) -> None:
    """Create the folder that will hold ``path`` (no-op on object stores' flat keys)."""
    filesystem, inner = fs.filesystem(path, storage_options)
    parent = inner.rsplit("/", 1)[0] if "/" in inner else ""
    if parent:
        filesystem.makedirs(parent, exist_ok=True)


@contextmanager
def read_errors(path: str, what: str = "chunk file") -> Iterator[None]:
    """Within the block, an error of the file's reader (an ``OSError``, ``EOFError`` or
    Arrow error that is not already a :class:`~dgl_chunked.errors.DglChunkedError`)
    becomes a :class:`ChunkReadError` naming ``path``: a damaged file, or an fsspec read
    that failed, gives one line instead of a traceback naming no file."""
    try:
        yield
    except DglChunkedError:
        raise
    except (OSError, EOFError, pa.ArrowException) as err:
        raise ChunkReadError(
            f"{what} {path!r} could not be read ({one_line(err)}); the file is damaged or "
            "unreachable: replace it and run the command again"
        ) from err
