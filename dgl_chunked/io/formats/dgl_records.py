"""Byte-level fields and records of DGL's binary files (``docs/spec/dgl-binary.md``: "Encoding",
"NDArray record" and the records of "Graph file").

Two halves:

* **Encoding** helpers that return the ``bytes`` of small fixed records (integers,
  dmlc strings, the 40+8*ndim byte NDArray header). Payloads are streamed by the
  callers, never built here.
* :class:`Cursor`, a bounds-checked reader over a seekable binary file. Every read
  checks the remaining file size *before* allocating, and every failure is a
  :class:`~dgl_chunked.errors.DGLFormatError` naming the file, the offset and the
  field. With ``annotate=True`` it also records ``(offset, size, field, value)``
  rows, the format of ``golden/serialization/annot_g_default.txt``.

Nothing here knows about tensor dicts or graphs; see :mod:`.dgl` (the tensor dict,
format ``dgl``) and ``dgl_chunked.io.dgl`` (graph files, DGL's writers).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import DGLFormatError

__all__ = [
    "BFLOAT16_RAW",
    "COO_MAGIC",
    "CSR_MAGIC",
    "GRAPH_FILE_MAGIC",
    "HETEROGRAPH_MAGIC",
    "IMMUTABLE_GRAPH_MAGIC",
    "NDARRAY_MAGIC",
    "TENSOR_FILE_MAGIC",
    "UNIT_GRAPH_MAGIC",
    "Cursor",
    "dgl_dtype_code",
    "ndarray_header",
    "pack_i64",
    "pack_string",
    "pack_u8",
    "pack_u64",
]

TENSOR_FILE_MAGIC = 0xDD5A9FBE3FA2443F
GRAPH_FILE_MAGIC = 0xDD2E4FF046B4A13F
NDARRAY_MAGIC = 0xDD5E40F096B4A13F
HETEROGRAPH_MAGIC = 0xDD589FBE35224ABF
IMMUTABLE_GRAPH_MAGIC = 0xDD3C5FFE20046ABF
CSR_MAGIC = 0xDD6CD31205DFF127
COO_MAGIC = 0xDD61FFD305DFF127
UNIT_GRAPH_MAGIC = 0xDD2E60F0F6B4A127

BFLOAT16_RAW = np.dtype(np.uint16, metadata={"dgl_dtype": "bfloat16"})
"""How a bfloat16 NDArray is returned: its raw 16-bit patterns as uint16, tagged in
``dtype.metadata``. ``arr.view(ml_dtypes.bfloat16)`` gives the values; writing such
an array back stores it as bfloat16 again."""

_CPU = 1
_MAX_NDIM = 32
_NDARRAY_MIN_BYTES = 40
_ANNOTATE_DATA_BYTES = 64

# (code, bits) -> little-endian numpy dtype: docs/spec/dgl-binary.md, "NDArray record".
_CODE_TO_DTYPE: dict[tuple[int, int], np.dtype[Any]] = {
    (0, 8): np.dtype("i1"),
    (0, 16): np.dtype("<i2"),
    (0, 32): np.dtype("<i4"),
    (0, 64): np.dtype("<i8"),
    (1, 8): np.dtype("u1"),
    (1, 16): np.dtype("<u2"),
    (1, 32): np.dtype("<u4"),
    (1, 64): np.dtype("<u8"),
    (2, 16): np.dtype("<f2"),
    (2, 32): np.dtype("<f4"),
    (2, 64): np.dtype("<f8"),
    (4, 16): BFLOAT16_RAW,
}

_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")


def pack_u64(value: int) -> bytes:
    """Little-endian u64."""
    return _U64.pack(value)


def pack_i64(value: int) -> bytes:
    """Little-endian i64."""
    return _I64.pack(value)


def pack_u8(value: int) -> bytes:
    """One byte."""
    return bytes((value,))


def pack_string(text: str) -> bytes:
    """A dmlc string: u64 byte length, then the UTF-8 bytes (``docs/spec/dgl-binary.md``, "Encoding")."""
    raw = text.encode("utf-8")
    return _U64.pack(len(raw)) + raw


def dgl_dtype_code(dtype: np.dtype[Any]) -> tuple[int, int]:
    """Return DGL's ``(code, bits)`` for an already validated numpy dtype."""
    if is_bfloat16(dtype):
        return (4, 16)
    kind = {"i": 0, "u": 1, "f": 2}[dtype.kind]
    return (kind, dtype.itemsize * 8)


def is_bfloat16(dtype: np.dtype[Any]) -> bool:
    """True for ``ml_dtypes.bfloat16`` and for :data:`BFLOAT16_RAW`."""
    meta: Mapping[str, Any] = dtype.metadata or {}
    return meta.get("dgl_dtype") == "bfloat16" or (dtype.name == "bfloat16" and dtype.itemsize == 2)


def ndarray_header(shape: tuple[int, ...], dtype: np.dtype[Any]) -> bytes:
    """The NDArray record up to and including ``nbytes`` (``docs/spec/dgl-binary.md``, "NDArray record");
    the payload follows."""
    code, bits = dgl_dtype_code(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * (bits // 8)
    head = struct.pack("<QQiiiBBH", NDARRAY_MAGIC, 0, _CPU, 0, len(shape), code, bits, 1)
    return head + struct.pack(f"<{len(shape)}q", *shape) + _I64.pack(nbytes)


class Cursor:
    """A strict, bounds-checked reader over a seekable binary file.

    Parameters
    ----------
    f
        Binary file object opened for reading, positioned anywhere.
    size
        Total file size in bytes.
    where
        File name used in error messages.
    annotate
        Record ``(offset, size, field, value)`` rows in :attr:`rows`.
    mmap_path
        Local path; when given, NDArray payloads are returned as read-only
        ``np.memmap`` views instead of being read into memory.
    """

    def __init__(
        self,
        f: IO[bytes],
        size: int,
        *,
        where: str,
        annotate: bool = False,
        mmap_path: str | None = None,
    ) -> None:
        self._f = f
        self.size = size
        self.where = where
        self.annotate = annotate
        self.rows: list[tuple[int, int, str, str]] = []
        self._mmap_path = mmap_path
        self._scope: list[str] = []
        self.pos = f.seek(0)

    # --- errors and bookkeeping ---------------------------------------------------

    def error(self, offset: int, field: str, problem: str) -> DGLFormatError:
        """Build the error for ``field`` at ``offset`` (the caller raises it)."""
        return DGLFormatError(
            f"{self.where}: corrupt or unsupported DGL file at byte offset {offset}, "
            f"field {self.name(field)!r}: {problem}. The file is truncated, damaged or was "
            "not written by DGL (or dgl_chunked); rewrite it."
        )

    def name(self, field: str) -> str:
        """``field`` qualified by the current scope."""
        return ".".join([*self._scope, field]) if field else ".".join(self._scope)

    @contextmanager
    def scope(self, prefix: str) -> Iterator[None]:
        """Prefix every field name read inside the ``with`` body with ``prefix.``."""
        self._scope.append(prefix)
        try:
            yield
        finally:
            self._scope.pop()

    @property
    def remaining(self) -> int:
        """Bytes left after the current position."""
        return self.size - self.pos

    def note(self, offset: int, size: int, field: str, value: str, *, qualify: bool = True) -> None:
        """Record an annotation row (no-op unless annotating)."""
        if self.annotate:
            self.rows.append((offset, size, self.name(field) if qualify else field, value))

    # --- primitive reads ------------------------------------------------------------

    def raw(self, n: int, field: str) -> bytes:
        """Read exactly ``n`` bytes."""
        if n < 0 or n > self.remaining:
            raise self.error(
                self.pos, field, f"needs {n} bytes but only {self.remaining} remain (file size {self.size})"
            )
        data = self._f.read(n)
        if len(data) != n:
            raise self.error(self.pos, field, f"short read: expected {n} bytes, got {len(data)}")
        self.pos += n
        return data

    def peek(self, n: int) -> bytes:
        """Up to ``n`` bytes at the current position, without consuming or noting them."""
        data = self._f.read(n)
        self._f.seek(self.pos)
        return data

    def skip(self, n: int, field: str) -> None:
        """Skip ``n`` bytes that must exist (for the unspecified rest of the header, ``HEADER_BLOCK``)."""
        if n > self.remaining:
            raise self.error(self.pos, field, f"needs {n} bytes but only {self.remaining} remain")
        self.pos = self._f.seek(self.pos + n)

    def _scalar(self, fmt: str, field: str, *, hexed: bool = False) -> int:
        start = self.pos
        width = struct.calcsize(fmt)
        (value,) = struct.unpack(fmt, self.raw(width, field))
        self.note(start, width, field, f"0x{value:016x}" if hexed else str(value))
        return int(value)

    def u64(self, field: str) -> int:
        """Read a little-endian u64."""
        return self._scalar("<Q", field)

    def i64(self, field: str) -> int:
        """Read a little-endian i64."""
        return self._scalar("<q", field)

    def i32(self, field: str) -> int:
        """Read a little-endian i32."""
        return self._scalar("<i", field)

    def u8(self, field: str) -> int:
        """Read one unsigned byte."""
        return self._scalar("<B", field)

    def flag(self, field: str) -> bool:
        """Read a C++ ``bool`` byte; only 0 and 1 are valid."""
        start = self.pos
        value = self.u8(field)
        if value not in (0, 1):
            raise self.error(start, field, f"expected a bool byte 0 or 1, found {value}")
        return bool(value)

    def magic(self, field: str, expected: int) -> None:
        """Read a u64 magic number and require ``expected``."""
        start = self.pos
        value = self._scalar("<Q", field, hexed=True)
        if value != expected:
            raise self.error(start, field, f"expected magic 0x{expected:016x}, found 0x{value:016x}")

    def count(self, field: str, min_item_bytes: int) -> int:
        """Read a u64 element count and check it against the bytes left."""
        start = self.pos
        value = self.u64(field)
        if value * min_item_bytes > self.remaining:
            raise self.error(
                start,
                field,
                f"count {value} needs at least {value * min_item_bytes} more bytes but only {self.remaining} remain",
            )
        return value

    def expect(self, value: int, expected: int, offset: int, field: str) -> None:
        """Raise unless an already read ``value`` equals ``expected``."""
        if value != expected:
            raise self.error(offset, field, f"expected {expected}, found {value}")

    def string(self, field: str) -> str:
        """Read a dmlc string (u64 length + bytes) as UTF-8."""
        start = self.pos
        length = self.count(f"{field}.len", 1)
        data_start = self.pos
        data = self.raw(length, field)
        self.note(data_start, length, field, repr(data))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.error(start, field, f"string is not valid UTF-8 ({err})") from err

    # --- NDArray records --------------------------------------------------------------

    def ndarray(self, field: str) -> npt.NDArray[Any]:
        """Read one NDArray record (``docs/spec/dgl-binary.md``, "NDArray record") as numpy."""
        with self.scope(field):
            start = self.pos
            if self.remaining < _NDARRAY_MIN_BYTES:
                raise self.error(start, "", f"NDArray record needs at least 40 bytes, {self.remaining} remain")
            self.magic("magic", NDARRAY_MAGIC)
            self.u64("reserved")
            at = self.pos
            self.expect(self.i32("device_type"), _CPU, at, "device_type (1 = CPU)")
            self.i32("device_id")
            dtype, shape, nbytes_at, nbytes = self._ndarray_meta()
            if int(np.prod([max(d, 1) for d in shape], dtype=object)) * dtype.itemsize >= 2**63:
                raise self.error(self.pos, "shape", f"shape {shape} is too large for any array")
            expected = int(np.prod(shape, dtype=object)) * dtype.itemsize if shape else dtype.itemsize
            if nbytes != expected:
                raise self.error(
                    nbytes_at,
                    "nbytes",
                    f"expected {expected} (= prod(shape {shape}) * {dtype.itemsize}), found {nbytes}",
                )
            if nbytes > self.remaining:
                raise self.error(self.pos, "data", f"payload of {nbytes} bytes but only {self.remaining} remain")
            return self.payload(dtype, shape, nbytes)

    def _ndarray_meta(self) -> tuple[np.dtype[Any], tuple[int, ...], int, int]:
        at = self.pos
        ndim = self.i32("ndim")
        if not 0 <= ndim <= _MAX_NDIM:
            raise self.error(at, "ndim", f"expected 0..{_MAX_NDIM}, found {ndim}")
        at = self.pos
        code, bits = self.u8("dtype.code"), self.u8("dtype.bits")
        lanes_at = self.pos
        lanes = self._scalar("<H", "dtype.lanes")
        dtype = _CODE_TO_DTYPE.get((code, bits))
        if dtype is None:
            raise self.error(at, "dtype", f"unknown DGL dtype (code {code}, bits {bits})")
        self.expect(lanes, 1, lanes_at, "dtype.lanes")
        if 8 * (ndim + 1) > self.remaining:
            raise self.error(self.pos, "shape", f"{ndim} dims need {8 * ndim + 8} bytes, {self.remaining} remain")
        shape = []
        for axis in range(ndim):
            at = self.pos
            dim = self.i64(f"shape[{axis}]")
            if dim < 0:
                raise self.error(at, f"shape[{axis}]", f"expected a size >= 0, found {dim}")
            shape.append(dim)
        nbytes_at = self.pos
        return dtype, tuple(shape), nbytes_at, self.i64("nbytes")

    def payload(self, dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> npt.NDArray[Any]:
        """Read the ``nbytes`` payload at the current position as an array of ``shape``.

        The hook :meth:`ndarray` calls once the header is checked (``nbytes`` fits the
        file). A subclass may override it to locate the payload instead of reading it
        (``start = self.pos; self.skip(nbytes, "data")``), as ``dgl_chunked.verify`` does.
        """
        start = self.pos
        if self.annotate:
            head = self._f.read(min(nbytes, _ANNOTATE_DATA_BYTES))
            self._f.seek(start)
            suffix = f"... ({nbytes} bytes)" if nbytes > _ANNOTATE_DATA_BYTES else ""
            self.note(start, nbytes, "data", head.hex() + suffix)
        if self._mmap_path is not None and nbytes > 0 and shape:
            arr: npt.NDArray[Any] = np.memmap(self._mmap_path, dtype=dtype, mode="r", offset=start, shape=shape)
            self.pos = self._f.seek(start + nbytes)
            return arr
        arr = np.empty(shape, dtype=dtype)
        if nbytes:
            view = arr.reshape(-1).view(np.uint8).data
            got = 0
            while got < nbytes:
                n = self._f.readinto(view[got:])  # type: ignore[attr-defined]
                if not n:
                    raise self.error(start + got, "data", f"short read: {nbytes - got} payload bytes missing")
                got += n
        self.pos = start + nbytes
        return arr

    def end(self) -> None:
        """Require that the whole file has been consumed."""
        if self.remaining:
            raise self.error(self.pos, "end of file", f"{self.remaining} unexpected trailing bytes")
