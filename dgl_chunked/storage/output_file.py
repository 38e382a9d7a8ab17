"""Writing one output file so that a failure leaves no partial file behind.

:func:`open_output` is how the binary writers (DGL tensor dicts and graph files,
GraphBolt ``fused_csc_sampling_graph.pt``) open their target: local files go
through :func:`~dgl_chunked.storage.direct_io.open_for_writing` (``O_DIRECT`` when
possible), URLs through fsspec. Any error while writing, including one raised by
the caller inside the ``with`` block, closes and removes the file, and an
``OSError`` names the file being written.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, cast

from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.storage.direct_io import DirectFile, open_for_writing
from dgl_chunked.storage.fs import filesystem, with_filename

__all__ = ["open_output"]

logger = logging.getLogger(__name__)


@contextmanager
def open_output(path: PathLike, storage_options: StorageOptions = None) -> Iterator[IO[bytes]]:
    """Open ``path`` for writing (truncated); on any error close it and remove the partial file.

    The file is written front to back: locally it may be a
    :class:`~dgl_chunked.storage.direct_io.DirectFile`, which supports ``write``
    only (no ``seek`` or ``tell``).

    An ``OSError`` from the filesystem (disk full, file-size limit, permissions)
    is re-raised with ``filename`` set to ``path`` (the errno is kept), so the
    message names the file being written.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> with open_output(path) as f:
    ...     _ = f.write(b"abc")
    >>> os.path.getsize(path)
    3
    """
    where = os.fspath(path)
    fs, inner = filesystem(path, storage_options)
    try:
        f = open_for_writing(inner) if isinstance(fs, LocalFileSystem) else fs.open(inner, "wb")
    except OSError as err:
        with_filename(err, where)
        raise
    try:
        yield cast(IO[bytes], f)  # a DirectFile offers write(): all sequential writers need
        f.close()  # flushes: a full disk may only show here
    except BaseException as exc:
        _discard(f, fs, inner)
        if isinstance(exc, OSError) and not isinstance(exc, DglChunkedError):
            with_filename(exc, where)
        raise


def _discard(f: IO[bytes] | DirectFile, fs: Any, inner: str) -> None:
    """Close ``f`` ignoring errors (its buffer cannot be flushed) and remove the file."""
    with contextlib.suppress(OSError):
        f.close()
    try:
        if fs.exists(inner):
            fs.rm(inner)
    except OSError:
        logger.warning("could not remove the partial file %s", inner)
