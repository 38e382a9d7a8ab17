"""``torch.save`` files of plain tensors written without torch: :func:`write_torch_tensors`.

Writes a ``{name: tensor}`` dict that ``torch.load`` reads, each tensor streamed from
numpy arrays or :class:`~dgl_chunked.io.dgl.ArraySpans` (``lookup``'s ``.pt``
outputs). Such files are read by the ``torch`` format,
:mod:`dgl_chunked.io.formats.torch` (index, row ranges, whole), and built with its
container and pickle (:mod:`~dgl_chunked.io.formats.torch_zip`,
:mod:`~dgl_chunked.io.formats.torch_pickle`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.spans import Stream, as_stream
from dgl_chunked.io.formats.torch_pickle import STORAGE_TYPES, PickleEmitter
from dgl_chunked.io.formats.torch_zip import TorchZipWriter, archive_name
from dgl_chunked.storage.output_file import open_output

__all__ = ["write_torch_tensors"]


def _little_endian(s: Stream) -> Iterator[npt.NDArray[Any]]:
    for span in s.spans():
        yield span.astype(span.dtype.newbyteorder("<"), copy=False)


def write_torch_tensors(
    path: PathLike,
    tensors: Mapping[str, Any],
    *,
    storage_options: StorageOptions = None,
    archive: str | None = None,
) -> None:
    """Write ``{name: tensor}`` as ``torch.save`` would (``torch.load`` returns a dict of tensors).

    Every value is a numpy array, memmap or :class:`~dgl_chunked.io.dgl.ArraySpans`,
    streamed span by span (memory: one span). ``archive`` is the zip's top
    directory (default: the file name without suffix; pass the final name's when
    writing under a temporary name). The file is removed again if anything fails.

    Raises
    ------
    DGLFormatError
        A dtype torch storages do not hold here (bfloat16, unsigned beyond uint8).
    """
    where = os.fspath(path)
    streams: list[tuple[str, Stream]] = []
    pk = PickleEmitter()
    pk.empty_dict()
    pk.raw(b"(" if len(tensors) > 1 else b"")
    for name, value in tensors.items():
        s = as_stream(value, f"{where}: {name}")
        if np.dtype(value.dtype) == np.bool_:
            s = Stream(s.shape, np.dtype(np.bool_), s.spans)
        if s.dtype not in STORAGE_TYPES:
            raise DGLFormatError(f"{where}: {name} has dtype {s.dtype}, which torch storages do not hold here")
        pk.string(name)
        pk.tensor(str(len(streams)), s.dtype, s.shape)
        streams.append((str(len(streams)), s))
    pk.raw(b"u" if len(tensors) > 1 else (b"s" if tensors else b""))
    pk.raw(b".")
    pickle_bytes = pk.getvalue()
    with open_output(where, storage_options) as f:
        zw = TorchZipWriter(f, archive or archive_name(where))
        zw.write_record("data.pkl", pickle_bytes, len(pickle_bytes))
        zw.write_record("byteorder", b"little", 6)
        for key, s in sorted(streams):
            zw.write_record(f"data/{key}", _little_endian(s), int(np.prod(s.shape, dtype=np.int64)) * s.dtype.itemsize)
        zw.close(seed=pickle_bytes)
