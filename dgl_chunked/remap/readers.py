"""Row ranges of one result file, out of core: the registry's result formats, ``.pt`` and ``.dgl``.

:func:`open_row_file` inspects a file from its header, footer, zip directory or
Zarr metadata only and returns a small picklable :class:`RowFile` (rows, dtype,
row shape, where the data is); :meth:`RowFile.read` then reads rows ``[lo, hi)``.
``.npy``, Parquet, ORC and Zarr files are read by their format modules
(:mod:`dgl_chunked.io.formats`, role ``results``); torch (``.pt``) and DGL
(``.dgl``) tensor dicts by :mod:`dgl_chunked.io.graphbolt.torch_tensors` and
:mod:`dgl_chunked.io.dgl.tensor_index`, with one seek. Errors name the file.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any

import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.dgl.tensor_index import index_tensor_dict, read_payload_rows
from dgl_chunked.io.formats import format_of_path, formats_with, get_format
from dgl_chunked.io.formats.rows import RowFile, pick_entry
from dgl_chunked.io.graphbolt.torch_tensors import index_torch_file
from dgl_chunked.remap.model import RemapError

__all__ = ["TensorRows", "file_format", "open_row_file"]

_TENSOR_EXTENSIONS = {".pt": "torch", ".pth": "torch", ".dgl": "dgl"}


def _extensions() -> list[str]:
    registered = [ext for name in formats_with("results") for ext in get_format(name).extensions]
    return sorted([*registered, *_TENSOR_EXTENSIONS])


def file_format(path: str) -> str:
    """The result format of ``path`` from its extension: a registered one, ``torch`` or ``dgl``."""
    ext = posixpath.splitext(path.rstrip("/"))[1].lower()
    fmt = format_of_path(path, "results") or _TENSOR_EXTENSIONS.get(ext)
    if fmt is None:
        raise RemapError(
            f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; expected one of {_extensions()}"
        )
    return fmt


class TensorRows:
    """Reads the rows of a ``.pt`` or ``.dgl`` entry (its payload's offset, one seek)."""

    def read_result_rows(self, file: RowFile, lo: int, hi: int) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)`` of ``file``."""
        return read_payload_rows(file.path, file.payload, lo, hi, storage_options=file.storage_options)


def _tensor_file(path: str, fmt: str, key: str | None, so: StorageOptions) -> RowFile:
    index = (
        index_torch_file(path, storage_options=so) if fmt == "torch" else index_tensor_dict(path, storage_options=so)
    )
    name = pick_entry(list(index), key, path)
    payload = index[name]
    if not payload.shape:
        raise RemapError(f"{path}: {name!r} is a 0-d tensor; expected one row per ID")
    return RowFile(
        path,
        fmt,
        name or None,
        payload.rows,
        payload.dtype,
        payload.row_shape,
        reader=TensorRows(),
        payload=payload,
        storage_options=so,
    )


def open_row_file(path: str, key: str | None = None, *, storage_options: StorageOptions = None) -> RowFile:
    """Inspect one result file (header only) and return how to read its rows.

    Raises
    ------
    RemapError
        Unknown extension, a missing file, an entry that is not there or several to
        choose from, a column of text; the message names the file.
    """
    path = os.fspath(path)
    fmt = file_format(path)
    try:
        if fmt in _TENSOR_EXTENSIONS.values():
            return _tensor_file(path, fmt, key, storage_options)
        return get_format(fmt).open_result(path, key, storage_options)
    except FileNotFoundError:
        raise RemapError(f"{path}: does not exist") from None
    except RemapError:
        raise
    except (DglChunkedError, OSError, ValueError) as err:
        text = str(err)
        raise RemapError(text if path in text else f"{path}: {text}") from None
