"""fsspec helpers: every path in dgl_chunked is a local path or an fsspec URL.

Tasks carry path strings plus ``storage_options``, never open handles, so they
pickle onto any Dask worker.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import fsspec
from fsspec.core import url_to_fs

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import MissingPackageError

__all__ = [
    "MAX_PARTS",
    "MAX_PART_BYTES",
    "MIN_PART_BYTES",
    "atomic_write_bytes",
    "concat_files",
    "exists",
    "filesystem",
    "is_url",
    "join",
    "join_files",
    "joins_on_store",
    "list_files",
    "naming",
    "open_file",
    "parent",
    "server_side_joinable",
    "with_filename",
]


def is_url(path: PathLike) -> bool:
    """Return True when ``path`` carries a protocol (``s3://``, ``memory://``)."""
    return "://" in os.fspath(path)


def join(base: PathLike, rel: str) -> str:
    """Join ``rel`` to ``base`` unless ``rel`` is absolute or a URL."""
    rel = os.fspath(rel)
    if is_url(rel) or os.path.isabs(rel):
        return rel
    base = os.fspath(base)
    if is_url(base):
        return posixpath.join(base, rel)
    return os.path.join(base, rel)


def parent(path: PathLike) -> str:
    """The directory holding ``path``."""
    path = os.fspath(path)
    if is_url(path):
        return posixpath.dirname(path.rstrip("/"))
    return os.path.dirname(os.path.abspath(path))


_EXTRAS = {"s3": "s3", "s3a": "s3"}  # URL scheme -> the dgl_chunked extra installing its fsspec backend


def filesystem(path: PathLike, storage_options: StorageOptions = None) -> tuple[fsspec.AbstractFileSystem, str]:
    """Return ``(fs, path_inside_fs)`` for a path or URL.

    Raises
    ------
    MissingPackageError
        The URL's fsspec backend (``s3fs`` for ``s3://``) is not installed (one line
        saying what to install, instead of fsspec's ImportError).
    """
    try:
        fs, inner = url_to_fs(os.fspath(path), **(storage_options or {}))
    except ImportError as err:
        scheme = os.fspath(path).split("://", 1)[0]
        extra = _EXTRAS.get(scheme)
        fix = f"pip install dgl_chunked[{extra}]" if extra else "install the fsspec backend of this URL scheme"
        raise MissingPackageError(f"{os.fspath(path)}: {err}: {fix}") from err
    return fs, inner


HEADER_BLOCK = 1 << 12
"""Read-ahead of a remote file opened for its header or footer only (bytes).

fsspec's remote files read ahead a whole fsspec block (``block_size``) on the first read (s3fs: 50 MiB), so
reading a 128-byte ``.npy`` header fetched the whole feature file: 15 MB for the
client of a 200k-node graph before any task ran (``benchmarks/bench_network.py``)."""


def open_file(
    path: PathLike, mode: str = "rb", storage_options: StorageOptions = None, *, block_size: int | None = None
) -> IO[Any]:
    """Open a local file or URL with fsspec.

    ``block_size`` bounds a remote file's read-ahead (:data:`HEADER_BLOCK` for header
    reads); ``None`` keeps the filesystem's default, right for reading the whole file.
    """
    fs, inner = filesystem(path, storage_options)
    if block_size is None or "r" not in mode:
        return fs.open(inner, mode)  # type: ignore[no-any-return]
    return fs.open(inner, mode, block_size=block_size)  # type: ignore[no-any-return]


def exists(path: PathLike, storage_options: StorageOptions = None) -> bool:
    """True when the file or directory exists."""
    fs, inner = filesystem(path, storage_options)
    return bool(fs.exists(inner))


def atomic_write_bytes(path: PathLike, data: bytes, storage_options: StorageOptions = None) -> None:
    """Write ``data`` to a temporary sibling and rename it onto ``path``.

    On object stores, where a single PUT is already atomic, this is one write.
    """
    fs, inner = filesystem(path, storage_options)
    if is_url(path) and not os.fspath(path).startswith("file://"):
        try:
            with fs.open(inner, "wb") as f:
                f.write(data)
        except OSError as err:
            with_filename(err, os.fspath(path))
            raise
        return
    tmp = inner + ".tmp-dglc"
    try:
        with fs.open(tmp, "wb") as f:
            f.write(data)
        fs.mv(tmp, inner)
    except OSError as err:
        try:
            if fs.exists(tmp):
                fs.rm(tmp)
        except OSError:
            pass
        with_filename(err, os.fspath(path))
        raise


def with_filename(err: OSError, path: str) -> OSError:
    """Set ``err.filename`` to ``path`` unless it already names a file; return ``err``.

    The errno and type are kept, so callers re-raise it with a bare ``raise`` and
    the message (``[Errno 28] No space left on device: 'OUT/part0/graph.dgl'``)
    names the file that was being written.
    """
    if err.filename is None and err.errno is not None:
        err.filename = path
    return err


@contextmanager
def naming(path: PathLike) -> Iterator[None]:
    """Name ``path`` in an ``OSError`` raised inside the block (see :func:`with_filename`).

    For writes through libraries that do not say which file failed (zarr stores, a
    full disk reported at flush time)::

        with naming(fs.join(root, name)):
            zarr.create_array(store=store, name=name, ...)
    """
    try:
        yield
    except OSError as err:
        with_filename(err, os.fspath(path))
        raise


COPY_BYTES = 1 << 22
"""Bytes read and written at a time by :func:`concat_files` (4 MiB)."""


def concat_files(pieces: Sequence[PathLike], target: PathLike, storage_options: StorageOptions = None) -> None:
    """Stream ``pieces`` one after the other into ``target`` (temporary name, then rename).

    Memory is one buffer (:data:`COPY_BYTES`) whatever the sizes; no pieces give an
    empty file. Until the rename, ``target`` does not exist (or keeps its old
    content), so a failed run never leaves a complete-looking file, and the
    temporary file is removed. An ``OSError`` while writing names ``target``; a
    missing piece raises ``FileNotFoundError``. The pieces are left in place.

    Examples
    --------
    >>> import fsspec
    >>> mem = fsspec.filesystem("memory")
    >>> mem.pipe({"/cat/a": b"1 2\\n", "/cat/b": b"3 4\\n"})
    >>> concat_files(["memory://cat/a", "memory://cat/b"], "memory://cat/ab")
    >>> mem.cat("/cat/ab")
    b'1 2\\n3 4\\n'
    """
    fs, inner = filesystem(target, storage_options)
    tmp = inner + ".tmp-dglc"
    try:
        with naming(target), fs.open(tmp, "wb") as dst:
            for piece in pieces:
                with open_file(piece, "rb", storage_options) as src:
                    while data := src.read(COPY_BYTES):
                        dst.write(data)
        fs.mv(tmp, inner)
    except BaseException:
        with contextlib.suppress(OSError):
            if fs.exists(tmp):
                fs.rm(tmp)
        raise


MIN_PART_BYTES = 5 << 20
"""S3's smallest part of a multipart upload, the last part excepted (5 MiB): the
smallest piece :func:`join_files` can join on the store's side."""

MAX_PART_BYTES = 5 << 30
"""S3's largest part (5 GiB), copied or uploaded."""

MAX_PARTS = 10_000
"""S3's most parts in one multipart upload."""


def server_side_joinable(fs: Any, sizes: Sequence[int]) -> bool:
    """Whether pieces of ``sizes`` bytes can be joined on the store (S3's
    ``UploadPartCopy``): ``fs`` is s3fs, there are 1 to :data:`MAX_PARTS` pieces,
    each at most :data:`MAX_PART_BYTES` and each but the last at least :data:`MIN_PART_BYTES`."""
    if not joins_on_store(fs) or not 0 < len(sizes) <= MAX_PARTS:
        return False
    return all(s <= MAX_PART_BYTES for s in sizes) and all(s >= MIN_PART_BYTES for s in sizes[:-1])


def joins_on_store(fs: Any) -> bool:
    """Whether ``fs`` (an fsspec filesystem) is S3's, whose ``merge`` joins files on the store."""
    protocol = getattr(fs, "protocol", ())
    return "s3" in ((protocol,) if isinstance(protocol, str) else tuple(protocol))


def join_files(
    pieces: Sequence[PathLike], sizes: Sequence[int], target: PathLike, storage_options: StorageOptions = None
) -> bool:
    """Join ``pieces`` (of ``sizes`` bytes) into ``target``; True when the store joined them.

    On S3 (:func:`server_side_joinable`) s3fs's ``merge`` copies the pieces as the
    parts of a multipart upload into ``target`` itself (no byte crosses the link; the
    object appears whole, and only, when the upload completes, so no temporary name is
    needed; a failed join aborts its upload); otherwise :func:`concat_files` streams
    them through this process. The pieces are left in place.
    """
    fs, inner = filesystem(target, storage_options)
    if not server_side_joinable(fs, sizes):
        concat_files(pieces, target, storage_options)
        return False
    try:
        with naming(target):
            fs.merge(inner, [filesystem(p, storage_options)[1] for p in pieces])
    except BaseException:
        _abort_uploads(fs, inner)
        raise
    return True


def _abort_uploads(fs: Any, inner: str) -> None:
    """Abort the unfinished multipart uploads to ``inner`` (s3fs's ``merge`` leaves its
    own behind when a copy fails: S3 would keep, and bill, its parts)."""
    bucket, key, _ = fs.split_path(inner)
    with contextlib.suppress(Exception):
        listing = fs.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=key)
        for upload in listing.get("Uploads", []):
            if upload["Key"] == key:
                fs.call_s3("abort_multipart_upload", Bucket=bucket, Key=key, UploadId=upload["UploadId"])


def _side_file(name: str) -> bool:
    """A file Spark or Hadoop writes beside the data (a marker, a commit record, a checksum)."""
    return name.startswith(("_", ".")) or name.endswith(".crc")


def list_files(path: PathLike, storage_options: StorageOptions = None, *, glob: bool = False) -> list[str]:
    """The files a glob (``glob=True``) or a directory names, sorted; ``[]`` when none.

    ``path`` is a glob (``edges/part-*.parquet``) or a directory (with or without a
    trailing ``/``). Only files count, and Spark's side files are skipped: names
    starting with ``_`` or ``.`` (``_SUCCESS``, ``_committed_*``, ``_started_*``,
    ``.part-*.crc``) and names ending in ``.crc``. One listing call (``detail=True``
    avoids a stat per file on object stores); URLs stay URLs.
    """
    path = os.fspath(path)
    fs, inner = filesystem(path, storage_options)
    try:
        infos = list(fs.glob(inner, detail=True).values()) if glob else fs.ls(inner.rstrip("/"), detail=True)
    except (FileNotFoundError, NotADirectoryError):
        infos = []
    names = [i["name"] for i in infos if i.get("type") == "file"]
    found = sorted(p for p in names if not _side_file(posixpath.basename(p)))
    return [fs.unstrip_protocol(p) for p in found] if is_url(path) else found
