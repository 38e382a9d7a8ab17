"""Where each tensor of a stored tensor file lies, and row ranges read from there.

A DGL tensor dict (``orig_nids.dgl``, ``node_feat.dgl``) or a ``torch.save`` file of
plain tensors stores every tensor as one C-ordered run of little-endian bytes.
:func:`index_tensor_dict` reads a DGL tensor dict's headers only (no payload) and
returns a :class:`TensorPayload` per name; :func:`read_payload_rows` then reads rows
``[lo, hi)`` of one payload with one seek, whatever the file's size, so a task
holds only the rows it asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.graph_read import read_tensor_file
from dgl_chunked.io.dgl.records import Cursor
from dgl_chunked.storage import fs
from dgl_chunked.storage.npy import read_exact

__all__ = ["TensorPayload", "index_tensor_dict", "read_payload_rows"]


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


class _IndexCursor(Cursor):
    """A tensor-dict reader that records where each payload is instead of reading it."""

    def payload(self, dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> Any:
        start = self.pos
        self.skip(nbytes, "data")
        return TensorPayload(start, np.dtype(dtype).newbyteorder("<"), tuple(int(s) for s in shape))


def index_tensor_dict(path: PathLike, *, storage_options: StorageOptions = None) -> dict[str, TensorPayload]:
    """Name -> :class:`TensorPayload` of every tensor in a DGL tensor-dict file, from its headers.

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
