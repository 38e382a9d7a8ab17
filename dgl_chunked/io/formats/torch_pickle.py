"""The protocol 2 pickle ``torch.save`` writes for a GraphBolt graph, both ways.

:class:`PickleEmitter` writes the opcodes Python's pickler emits for torch's objects
(memo numbering included), so our ``data.pkl`` equals torch's byte for byte.
:func:`load_restricted` reads one with an unpickler that resolves only the handful
of globals such a file names (no code from the file ever runs) and returns plain
Python objects with :class:`TensorRef` placeholders for tensors.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgl_chunked.errors import DGLFormatError

__all__ = ["GraphStub", "PickleEmitter", "STORAGE_TYPES", "ScriptObjectStub", "TensorRef", "load_restricted"]

STORAGE_TYPES: dict[np.dtype[Any], str] = {
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.bool_): "BoolStorage",
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float64): "DoubleStorage",
}
_DTYPE_OF: dict[str, np.dtype[Any]] = {name: dtype for dtype, name in STORAGE_TYPES.items()}


class PickleEmitter:
    """Write pickle opcodes with Python's memo rules (``BINPUT`` after every memoized object)."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.out.write(b"\x80\x02")
        self._memo: dict[Any, int] = {}
        self._next = 0

    def _put(self, key: Any = None) -> None:
        idx = self._next
        self._next += 1
        if key is not None:
            self._memo[key] = idx
        self.out.write(b"q" + bytes([idx]) if idx < 256 else b"r" + struct.pack("<I", idx))

    def _get(self, key: Any) -> bool:
        if key not in self._memo:
            return False
        idx = self._memo[key]
        self.out.write(b"h" + bytes([idx]) if idx < 256 else b"j" + struct.pack("<I", idx))
        return True

    def raw(self, opcodes: bytes) -> None:
        self.out.write(opcodes)

    def global_(self, module: str, name: str) -> None:
        """``GLOBAL`` once, then ``BINGET`` of its memo slot."""
        if not self._get(("global", module, name)):
            self.out.write(b"c" + f"{module}\n{name}\n".encode())
            self._put(("global", module, name))

    def string(self, text: str, *, shared: bool = False) -> None:
        """``BINUNICODE``; ``shared`` strings (one Python object in torch) are memo hits later."""
        if shared and self._get(("str", text)):
            return
        data = text.encode("utf-8")
        self.out.write(b"X" + struct.pack("<I", len(data)) + data)
        self._put(("str", text) if shared else None)

    def int_(self, value: int) -> None:
        if 0 <= value < 256:
            self.out.write(b"K" + bytes([value]))
        elif 0 <= value < 65536:
            self.out.write(b"M" + struct.pack("<H", value))
        elif -(2**31) <= value < 2**31:
            self.out.write(b"J" + struct.pack("<i", value))
        else:
            data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            self.out.write(b"\x8a" + bytes([len(data)]) + data)

    def small_tuple(self, values: tuple[int, ...]) -> None:
        """A tuple of ints: ``EMPTY_TUPLE`` or ``TUPLE1..3`` (memoized) or ``MARK .. TUPLE``."""
        if not values:
            self.out.write(b")")
            return
        if len(values) > 3:
            self.out.write(b"(")
        for v in values:
            self.int_(v)
        self.out.write({1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(values), b"t"))
        self._put()

    def tensor(self, key: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
        """A contiguous CPU tensor over storage ``key``, as ``torch._utils._rebuild_tensor_v2``."""
        numel = int(np.prod(shape, dtype=np.int64))
        stride = tuple(int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape)))
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out.write(b"((")
        self.string("storage", shared=True)
        self.global_("torch", STORAGE_TYPES[np.dtype(dtype)])
        self.string(key)
        self.string("cpu", shared=True)
        self.int_(numel)
        self.out.write(b"t")
        self._put()
        self.out.write(b"Q")
        self.int_(0)
        self.small_tuple(shape)
        self.small_tuple(stride)
        self.out.write(b"\x89")
        self.global_("collections", "OrderedDict")
        self.out.write(b")R")
        self._put()
        self.out.write(b"t")
        self._put()
        self.out.write(b"R")
        self._put()

    def empty_dict(self) -> None:
        self.out.write(b"}")
        self._put()

    def getvalue(self) -> bytes:
        return self.out.getvalue()


@dataclass(frozen=True)
class TensorRef:
    """A tensor in the pickle: storage record key, dtype, element offset, shape, stride."""

    key: str
    dtype: np.dtype[Any]
    storage_numel: int
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


class GraphStub:
    """Stands in for ``dgl.graphbolt...FusedCSCSamplingGraph`` while unpickling."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


class ScriptObjectStub:
    """Stands in for ``torch.ScriptObject``: keeps the ``(state, class name)`` pair."""

    def __setstate__(self, state: Any) -> None:
        self.state = state


@dataclass(frozen=True)
class _StorageType:
    dtype: np.dtype[Any]


def _rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, *_: Any) -> TensorRef:
    if not isinstance(storage, tuple) or len(storage) != 3:
        raise DGLFormatError(f"tensor storage is {storage!r}, not a persistent storage reference")
    if not isinstance(size, tuple) or not isinstance(stride, tuple) or not isinstance(offset, int):
        raise DGLFormatError(f"tensor shape {size!r} / stride {stride!r} / offset {offset!r} are malformed")
    return TensorRef(storage[0], storage[1], storage[2], offset, size, stride)


def _rebuild_parameter(data: Any, *_: Any) -> Any:
    return data


_TENSOR_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("collections", "OrderedDict"): collections.OrderedDict,
    **{("torch", name): _StorageType(dtype) for name, dtype in _DTYPE_OF.items()},
}
_GRAPH_GLOBALS: dict[tuple[str, str], Any] = {
    ("dgl.graphbolt.impl.fused_csc_sampling_graph", "FusedCSCSamplingGraph"): GraphStub,
    ("torch", "ScriptObject"): ScriptObjectStub,
    **_TENSOR_GLOBALS,
}
_PLAIN_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,  # an nn.Parameter: its tensor
    **_TENSOR_GLOBALS,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, *, tensors_only: bool) -> None:
        super().__init__(file)
        self._globals = _PLAIN_GLOBALS if tensors_only else _GRAPH_GLOBALS
        self._holds = (
            "not a file of plain tensors; save a tensor, or a dict or list of tensors "
            "(torch.save({'ids': ids, 'pred': pred}, f))"
            if tensors_only
            else "which a GraphBolt graph file never holds"
        )

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._globals[(module, name)]
        except KeyError:
            raise DGLFormatError(f"the pickle names {module}.{name}, {self._holds}") from None

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise DGLFormatError(f"unexpected persistent id {pid!r} (torch writes ('storage', type, key, 'cpu', n))")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType) or not isinstance(key, str) or not isinstance(numel, int):
            raise DGLFormatError(f"malformed storage reference {pid!r}")
        if location != "cpu":
            raise DGLFormatError(f"storage {key!r} is on {location!r}; only CPU tensors are supported")
        return (key, stype.dtype, numel)


def load_restricted(data: bytes, *, tensors_only: bool = False) -> Any:
    """Unpickle ``data`` resolving only torch/GraphBolt names to local stubs.

    ``tensors_only`` admits tensors (and ``nn.Parameter``), dicts and lists only: a
    ``torch.save`` file of plain tensors.
    """
    try:
        return _Unpickler(io.BytesIO(data), tensors_only=tensors_only).load()
    except DGLFormatError:
        raise
    except Exception as err:  # any opcode-level corruption: truncated, bad memo, wrong types
        raise DGLFormatError(f"data.pkl is not a valid pickle: {type(err).__name__}: {err}") from None
