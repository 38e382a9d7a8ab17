"""``torch.save`` files of plain tensors, without torch: index, read and write.

Trainers save results with ``torch.save(tensor, f)`` or ``torch.save({"ids": ids,
"pred": pred}, f)``. Such a file is a :mod:`~dgl_chunked.io.graphbolt.torch_zip`
archive whose ``data.pkl`` names only ``torch._utils._rebuild_tensor_v2`` (and
``_rebuild_parameter``), the typed storages and ``collections.OrderedDict``; this
module's unpickler resolves exactly those (nothing from the file runs) and returns
where each tensor's bytes are:

- :func:`index_torch_file`: name -> :class:`~dgl_chunked.io.dgl.tensor_index.TensorPayload`
  (a bare tensor is named ``""``; dicts, lists and tuples are flattened to
  ``"key"``, ``"0"``, ``"outer/inner"``), from the pickle and the zip directory only.
  Rows are then read with :func:`~dgl_chunked.io.dgl.tensor_index.read_payload_rows`;
- :func:`read_torch_file`: every tensor as numpy, CRC-checked (small files);
- :func:`write_torch_tensors`: a ``{name: tensor}`` dict that ``torch.load`` reads,
  each tensor streamed from numpy arrays or :class:`~dgl_chunked.io.dgl.ArraySpans`.

A tensor must be contiguous (a view is saved with its whole storage; save
``t.contiguous()`` or ``t.clone()``) and of a dtype numpy holds (not bfloat16).
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
from dgl_chunked.io.dgl.tensor_index import TensorPayload
from dgl_chunked.io.graphbolt.torch_pickle import STORAGE_TYPES, PickleEmitter, TensorRef, load_restricted
from dgl_chunked.io.graphbolt.torch_zip import TorchZipReader, TorchZipWriter, archive_name
from dgl_chunked.storage import fs
from dgl_chunked.storage.output_file import open_output

__all__ = ["index_torch_file", "read_torch_file", "write_torch_tensors"]


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


def _little_endian(s: Stream) -> Iterator[npt.NDArray[Any]]:
    for block in s.blocks():
        yield block.astype(block.dtype.newbyteorder("<"), copy=False)


def write_torch_tensors(
    path: PathLike,
    tensors: Mapping[str, Any],
    *,
    storage_options: StorageOptions = None,
    archive: str | None = None,
) -> None:
    """Write ``{name: tensor}`` as ``torch.save`` would (``torch.load`` returns a dict of tensors).

    Every value is a numpy array, memmap or :class:`~dgl_chunked.io.dgl.ArraySpans`,
    streamed block by block (memory: one block). ``archive`` is the zip's top
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
            s = Stream(s.shape, np.dtype(np.bool_), s.blocks)
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
