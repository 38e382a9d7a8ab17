"""Tensors stored as one C-ordered run of little-endian bytes, read by row ranges: the
shared part of the tensor-file formats (:mod:`.torch`, :mod:`.dgl`).

A DGL tensor dict (``orig_nids.dgl``, ``node_feat.dgl``) or a ``torch.save`` file of
plain tensors stores every tensor as one run of bytes. A format's index (its headers,
or its pickle and zip directory, only) gives a :class:`TensorPayload` per name;
:func:`read_payload_rows` then reads rows ``[lo, hi)`` of one payload with one seek,
whatever the file's size, so a task holds only the rows it asked for.
:class:`TensorFileFormat` is the ``results`` role of such a format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, DGLFormatError
from dgl_chunked.io.formats.registry import FileFormat
from dgl_chunked.io.formats.rows import RowFile, pick_entry
from dgl_chunked.storage import fs
from dgl_chunked.storage.npy import read_exact

__all__ = ["TensorFileFormat", "TensorPayload", "read_payload_rows"]


@dataclass(frozen=True)
class TensorPayload:
    """One stored tensor: the file offset of its first byte, dtype and shape (C order, little-endian)."""

    offset: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]

    @property
    def rows(self) -> int:
        """Length of the first axis (1 for a 0-d tensor)."""
        return int(self.shape[0]) if self.shape else 1

    @property
    def row_shape(self) -> tuple[int, ...]:
        return tuple(self.shape[1:])

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize


def read_payload_rows(
    path: PathLike, payload: TensorPayload, lo: int, hi: int, *, storage_options: StorageOptions = None
) -> npt.NDArray[Any]:
    """Rows ``[lo, hi)`` of ``payload`` in the file ``path``, read with one seek.

    Raises
    ------
    DGLFormatError
        The range is outside the tensor, or the file ends early.
    """
    where = os.fspath(path)
    if not 0 <= lo <= hi <= payload.rows:
        raise DGLFormatError(f"{where}: rows [{lo}, {hi}) are outside the tensor's {payload.rows} rows")
    out = np.empty((hi - lo, *payload.row_shape), dtype=payload.dtype)
    if out.size:
        with fs.open_file(where, "rb", storage_options) as f:
            f.seek(payload.offset + lo * payload.row_bytes)
            try:
                read_exact(f, out)
            except OSError as err:
                raise DGLFormatError(f"{where}: {err}; the file is truncated") from None
    return out.astype(out.dtype.newbyteorder("="), copy=False)


class TensorFileFormat(FileFormat):
    """A file of named tensors (``results`` role): entries are found by :meth:`index_tensors`
    and their rows read by offset (:func:`read_payload_rows`)."""

    roles = frozenset({"results"})
    kind = "array"

    def index_tensors(self, path: str, storage_options: StorageOptions) -> dict[str, TensorPayload]:
        """Name -> :class:`TensorPayload` of every tensor of the file, from its headers only."""
        raise self._unsupported("index tensors")

    def open_result(self, path: str, key: str | None, storage_options: StorageOptions) -> RowFile:
        index = self.index_tensors(path, storage_options)
        name = pick_entry(list(index), key, path)
        payload = index[name]
        if not payload.shape:
            raise ChunkMismatchError(f"{path}: {name!r} is a 0-d tensor; expected one row per ID")
        return RowFile(
            path,
            self.name,
            name or None,
            payload.rows,
            payload.dtype,
            payload.row_shape,
            reader=self,
            payload=payload,
            storage_options=storage_options,
        )

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        return read_payload_rows(file.path, file.payload, lo, hi, storage_options=file.storage_options)
