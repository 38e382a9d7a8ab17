"""DGL tensor dicts (format ``dgl``, ``.dgl``): read whole, or indexed from their headers
and read by row ranges (``remap``'s results, a partition's ``orig_nids.dgl``).

A tensor dict (``docs/spec/dgl-binary.md``, "Tensor dict") is a magic, a count and
that many (name, NDArray record) pairs, read with the bounds-checked
:class:`~dgl_chunked.io.formats.dgl_records.Cursor`. :func:`read_tensor_file` parses
one whole (``dgl_chunked.io.dgl`` builds its readers of DGL's files on it and on
:func:`named_tensors`); :func:`index_tensor_dict` reads the headers only and returns
a :class:`~.tensor_rows.TensorPayload` per name, whose rows
:func:`~.tensor_rows.read_payload_rows` reads with one seek. DGL's own files are
written by ``dgl_chunked.io.dgl`` (``write_tensor_dict``), which streams
``ArraySpans``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.io.formats.dgl_records import TENSOR_FILE_MAGIC, Cursor
from dgl_chunked.io.formats.registry import register_format
from dgl_chunked.io.formats.tensor_rows import TensorFileFormat, TensorPayload
from dgl_chunked.storage import fs

__all__ = ["DglFormat", "index_tensor_dict", "named_tensors", "read_tensor_file"]

_ENTRY_MIN = 48  # string length (8) + NDArray record (>= 40)


@register_format
class DglFormat(TensorFileFormat):
    """DGL tensor dicts (``dgl.data.utils.save_tensors``): ``remap``'s results."""

    name = "dgl"
    title = "DGL tensor dict"
    extensions = (".dgl",)

    def index_tensors(self, path: str, storage_options: StorageOptions) -> dict[str, TensorPayload]:
        return index_tensor_dict(path, storage_options=storage_options)


def named_tensors(cur: Cursor, prefix: str, count: int | None = None) -> dict[str, npt.NDArray[Any]]:
    """A dmlc vector of (string, NDArray) pairs; a repeated key keeps its last value (as DGL).

    ``count`` is the already read element count, else it is read here.
    """
    if count is None:
        count = cur.count(f"{prefix}.count", _ENTRY_MIN)
    out: dict[str, npt.NDArray[Any]] = {}
    for k in range(count):
        name = cur.string(f"{prefix}[{k}].name")
        out[name] = cur.ndarray(f"{prefix}[{k}].value")
    return out


def read_tensor_file(cur: Cursor) -> dict[str, npt.NDArray[Any]]:
    """Parse a whole tensor-dict file (``docs/spec/dgl-binary.md``, "Tensor dict")."""
    cur.magic("file.magic", TENSOR_FILE_MAGIC)
    size = cur.u64("file.dict_size")
    at = cur.pos
    count = cur.count("entries.count", _ENTRY_MIN)
    cur.expect(count, size, at, "entries.count (must equal file.dict_size)")
    tensors = named_tensors(cur, "entries", count)
    cur.end()
    return tensors


class _IndexCursor(Cursor):
    """A tensor-dict reader that records where each payload is instead of reading it."""

    def payload(self, dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> Any:
        start = self.pos
        self.skip(nbytes, "data")
        return TensorPayload(start, np.dtype(dtype).newbyteorder("<"), tuple(int(s) for s in shape))


def index_tensor_dict(path: PathLike, *, storage_options: StorageOptions = None) -> dict[str, TensorPayload]:
    """Name -> :class:`~.tensor_rows.TensorPayload` of every tensor in a DGL tensor-dict file, from its headers.

    Raises
    ------
    DGLFormatError
        Not a tensor-dict file, or truncated; the message names the file and field.
    """
    where = os.fspath(path)
    filesystem, inner = fs.filesystem(where, storage_options)
    with filesystem.open(inner, "rb") as f:
        found: dict[str, Any] = read_tensor_file(_IndexCursor(f, f.seek(0, os.SEEK_END), where=where))
    return found
