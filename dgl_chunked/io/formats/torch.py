"""``torch.save`` files of plain tensors (format ``torch``, ``.pt`` and ``.pth``), without
torch: indexed from their pickle and zip directory and read by row ranges (``remap``'s
results), or read whole.

Trainers save results with ``torch.save(tensor, f)`` or ``torch.save({"ids": ids,
"pred": pred}, f)``. Such a file is a :mod:`~dgl_chunked.io.formats.torch_zip`
archive whose ``data.pkl`` names only ``torch._utils._rebuild_tensor_v2`` (and
``_rebuild_parameter``), the typed storages and ``collections.OrderedDict``;
:func:`~dgl_chunked.io.formats.torch_pickle.load_restricted` resolves exactly those
(nothing from the file runs) and this module returns where each tensor's bytes are:

- :func:`index_torch_file`: name -> :class:`~.tensor_rows.TensorPayload` (a bare
  tensor is named ``""``; dicts, lists and tuples are flattened to ``"key"``, ``"0"``,
  ``"outer/inner"``), from the pickle and the zip directory only. Rows are then read
  with :func:`~.tensor_rows.read_payload_rows`;
- :func:`read_torch_file`: every tensor as numpy, CRC-checked (small files).

A tensor must be contiguous (a view is saved with its whole storage; save
``t.contiguous()`` or ``t.clone()``) and of a dtype numpy holds (not bfloat16).
Such files are written by ``dgl_chunked.io.graphbolt.torch_tensors.write_torch_tensors``,
which streams ``ArraySpans``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.formats.registry import register_format
from dgl_chunked.io.formats.tensor_rows import TensorFileFormat, TensorPayload
from dgl_chunked.io.formats.torch_pickle import TensorRef, load_restricted
from dgl_chunked.io.formats.torch_zip import TorchZipReader
from dgl_chunked.storage import fs

__all__ = ["TorchFormat", "index_torch_file", "read_torch_file"]


@register_format
class TorchFormat(TensorFileFormat):
    """``torch.save`` files of tensors, or of dicts, lists and tuples of them: ``remap``'s results."""

    name = "torch"
    title = "torch"
    extensions = (".pt", ".pth")

    def index_tensors(self, path: str, storage_options: StorageOptions) -> dict[str, TensorPayload]:
        return index_torch_file(path, storage_options=storage_options)


def _flatten(obj: Any, prefix: str, out: dict[str, TensorRef]) -> None:
    if isinstance(obj, TensorRef):
        out[prefix] = obj
        return
    if isinstance(obj, Mapping):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in obj.items()]
    elif isinstance(obj, list | tuple):
        items = [(str(i), v) for i, v in enumerate(obj)]
    else:
        raise DGLFormatError(f"holds a {type(obj).__name__} at {prefix or 'the top'!r}, not a tensor")
    for key, value in items:
        _flatten(value, f"{prefix}/{key}" if prefix else key, out)


def _payload(zr: TorchZipReader, name: str, ref: TensorRef) -> TensorPayload:
    where = f"{zr.where}: tensor {name!r}" if name else f"{zr.where}: the tensor"
    shape = tuple(int(s) for s in ref.shape)
    expected = [int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))]
    if any(s != e for s, e, n in zip(ref.stride, expected, shape, strict=True) if n > 1):
        raise DGLFormatError(f"{where} is not contiguous (stride {ref.stride}); save t.contiguous() instead")
    numel = int(np.prod(shape, dtype=np.int64))
    if ref.offset < 0 or ref.offset + numel > ref.storage_numel:
        raise DGLFormatError(f"{where} runs past its storage ({ref.storage_numel} elements)")
    rec = zr.record(f"data/{ref.key}")
    if rec.size < ref.storage_numel * ref.dtype.itemsize:
        raise DGLFormatError(f"{where}: storage record holds {rec.size} bytes, fewer than the pickle says")
    return TensorPayload(rec.offset + ref.offset * ref.dtype.itemsize, ref.dtype.newbyteorder("<"), shape)


def _open(path: str, storage_options: StorageOptions) -> tuple[TorchZipReader, dict[str, TensorRef], Any]:
    filesystem, inner = fs.filesystem(path, storage_options)
    f = filesystem.open(inner, "rb")
    try:
        zr = TorchZipReader(f, int(f.seek(0, os.SEEK_END)), path)
        obj = load_restricted(zr.read("data.pkl"), tensors_only=True)
        refs: dict[str, TensorRef] = {}
        _flatten(obj, "", refs)
    except DGLFormatError as err:
        f.close()
        text = str(err)
        raise DGLFormatError(text if text.startswith(path) else f"{path}: {text}") from None
    except BaseException:
        f.close()
        raise
    return zr, refs, f


def index_torch_file(path: PathLike, *, storage_options: StorageOptions = None) -> dict[str, TensorPayload]:
    """Name -> :class:`TensorPayload` of every tensor a ``torch.save`` file holds.

    Reads the zip directory and ``data.pkl`` only. A bare tensor is named ``""``;
    containers are flattened (``{"a": {"b": t}}`` -> ``"a/b"``, ``[t, u]`` -> ``"0"``, ``"1"``).

    Raises
    ------
    DGLFormatError
        Not a torch zip archive, a pickle naming anything but tensors and containers,
        a non-contiguous or non-CPU tensor; the message names the file.
    """
    where = os.fspath(path)
    zr, refs, f = _open(where, storage_options)
    try:
        return {name: _payload(zr, name, ref) for name, ref in refs.items()}
    finally:
        f.close()


def read_torch_file(path: PathLike, *, storage_options: StorageOptions = None) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of a ``torch.save`` file as numpy (names as :func:`index_torch_file`), CRC-checked."""
    where = os.fspath(path)
    zr, refs, f = _open(where, storage_options)
    try:
        out = {}
        for name, ref in refs.items():
            payload = _payload(zr, name, ref)
            record = zr.read(f"data/{ref.key}")  # whole storage: its CRC is checked
            start = ref.offset * ref.dtype.itemsize
            flat = np.frombuffer(record, dtype=payload.dtype, count=int(np.prod(payload.shape)), offset=start)
            out[name] = flat.reshape(payload.shape).astype(payload.dtype.newbyteorder("="))
        return out
    finally:
        f.close()
