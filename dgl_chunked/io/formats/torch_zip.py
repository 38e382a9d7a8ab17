"""torch's zip container (``torch.save``'s default format) without torch.

A ``torch.save`` file is a zip archive of *stored* (uncompressed) records, all under
one top directory ``<archive>/``: ``data.pkl`` (a protocol 2 pickle), ``byteorder``,
``data/<key>`` (one raw storage per key, in key string order), ``version`` and
``.data/serialization_id``. Every record's data starts at a multiple of 64 bytes:
the local header's extra field holds a ``"FB"`` field padded with ``Z``. Local
headers carry zero CRC and sizes with general-purpose flag bit 3, and a data
descriptor follows each non-empty record, so a record is streamed in one pass.
The archive always ends with a zip64 end-of-central-directory record and locator.
``docs/spec/graphbolt.md`` ("The container") has the byte layout and the torch versions checked.

:class:`TorchZipWriter` writes that layout span by span (memory: one span);
:class:`TorchZipReader` opens one strictly and raises
:class:`~dgl_chunked.errors.DGLFormatError` naming the file, record and offset.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import DGLFormatError

__all__ = ["ALIGN", "TorchZipReader", "TorchZipWriter", "ZipRecord", "archive_name"]

ALIGN = 64
"""Record data alignment torch uses (``kFieldAlignment``)."""
ZIP64_LIMIT = 0xFFFFFFFF
"""Sizes and offsets at or above this go to zip64 extra fields (tests lower it)."""
_MASK32 = 0xFFFFFFFF
"""What a 32-bit field holds when the value is in the zip64 extra field."""

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<IHHHHIIH")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR = struct.Struct("<IIQI")
_SIG_LOCAL, _SIG_CENTRAL, _SIG_DESC = 0x04034B50, 0x02014B50, 0x08074B50
_SIG_EOCD, _SIG_EOCD64, _SIG_LOCATOR = 0x06054B50, 0x06064B50, 0x07064B50
_FLAG_UTF8, _FLAG_DESCRIPTOR = 0x0800, 0x0008


@dataclass(frozen=True)
class ZipRecord:
    """One stored record: name, data offset in the file, size and CRC-32."""

    name: str
    offset: int
    size: int
    crc: int
    header_offset: int


class TorchZipWriter:
    """Write a torch zip archive record by record to a sequential binary file.

    Parameters
    ----------
    f
        Open binary file; only ``write`` is used (``O_DIRECT`` files and object
        stores work).
    archive
        Top directory of every record (torch uses the file name without suffix).
    """

    def __init__(self, f: IO[bytes] | Any, archive: str) -> None:
        self._f = f
        self._archive = archive
        self._pos = 0
        self._records: list[tuple[bytes, int, int, int, int]] = []  # name, crc, size, header offset, flags

    def _write(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        self._f.write(view)
        self._pos += view.nbytes

    def write_record(self, name: str, spans: Iterable[Any] | bytes, size: int) -> None:
        """Write record ``<archive>/<name>`` of exactly ``size`` bytes from ``spans``.

        ``spans`` is bytes or an iterable of buffers (numpy arrays are written raw);
        a total other than ``size`` raises :class:`DGLFormatError`.
        """
        full = f"{self._archive}/{name}".encode()
        header_offset = self._pos
        extra = _local_zip64(size, header_offset)
        flags = _FLAG_UTF8 | (_FLAG_DESCRIPTOR if size else 0)
        pad = (-(header_offset + _LOCAL.size + len(full) + len(extra) + 4)) % ALIGN
        extra += struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # "FB": torch's alignment field
        self._write(_LOCAL.pack(_SIG_LOCAL, 0, flags, 0, 0, 0, 0, 0, 0, len(full), len(extra)))
        self._write(full)
        self._write(extra)
        crc, written = 0, 0
        for span in [spans] if isinstance(spans, bytes | bytearray) else spans:
            raw: Any = np.ascontiguousarray(span).reshape(-1).view(np.uint8) if isinstance(span, np.ndarray) else span
            view = memoryview(raw).cast("B")
            crc = zlib.crc32(view, crc)
            written += view.nbytes
            if written > size:
                raise DGLFormatError(f"{full.decode()}: more than the declared {size} bytes were produced")
            self._write(view)
        if written != size:
            raise DGLFormatError(f"{full.decode()}: {written} bytes were produced, expected {size}")
        if size:
            if size >= ZIP64_LIMIT:
                self._write(struct.pack("<IIQQ", _SIG_DESC, crc, size, size))
            else:
                self._write(struct.pack("<IIII", _SIG_DESC, crc, size, size))
        self._records.append((full, crc, size, header_offset, flags))

    def close(self, seed: bytes = b"") -> None:
        """Write ``version``, ``.data/serialization_id`` and the central directory.

        The serialization id is 40 decimal digits derived from ``seed`` and the record
        CRCs, so equal content gives an equal file (torch draws it at random).
        """
        self.write_record("version", b"3\n", 2)
        digest = hashlib.sha256(seed + b"".join(struct.pack("<I", r[1]) for r in self._records)).digest()
        ident = str(int.from_bytes(digest[:17], "little")).zfill(40)[-40:].encode()
        self.write_record(".data/serialization_id", ident, 40)
        start = self._pos
        for full, crc, size, offset, flags in self._records:
            big = [v for v in (size, size) if v >= ZIP64_LIMIT] + ([offset] if offset >= ZIP64_LIMIT else [])
            extra = struct.pack("<HH", 1, 8 * len(big)) + struct.pack(f"<{len(big)}Q", *big) if big else b""
            small_size = _MASK32 if size >= ZIP64_LIMIT else size
            small_offset = _MASK32 if offset >= ZIP64_LIMIT else offset
            self._write(
                _CENTRAL.pack(
                    _SIG_CENTRAL,
                    0,
                    0,
                    flags,
                    0,
                    0,
                    0,
                    crc,
                    small_size,
                    small_size,
                    len(full),
                    len(extra),
                    0,
                    0,
                    0,
                    0,
                    small_offset,
                )  # fmt: skip
            )
            self._write(full)
            self._write(extra)
        end = self._pos
        n = len(self._records)
        self._write(_EOCD64.pack(_SIG_EOCD64, 44, 0x031E, 0x2D, 0, 0, n, n, end - start, start))
        self._write(_LOCATOR.pack(_SIG_LOCATOR, 0, end, 1))
        self._write(_EOCD.pack(_SIG_EOCD, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), _small(end - start), _small(start), 0))


def _small(value: int) -> int:
    return _MASK32 if value >= ZIP64_LIMIT else value


def _local_zip64(size: int, offset: int) -> bytes:
    """The zip64 extra field miniz puts in a local header of a large record or offset."""
    values = ([size, size] if size >= ZIP64_LIMIT else []) + ([offset] if offset >= ZIP64_LIMIT else [])
    if not values:
        return b""
    return struct.pack(f"<HH{len(values)}Q", 1, 8 * len(values), *values)


class TorchZipReader:
    """Strict reader of a torch zip archive.

    Parameters
    ----------
    f
        Seekable binary file.
    size
        File size in bytes.
    where
        The file's name, for error messages.
    """

    def __init__(self, f: IO[bytes] | Any, size: int, where: str) -> None:
        self._f = f
        self.size = size
        self.where = where
        self.records = self._central_directory()
        tops = {name.split("/", 1)[0] for name in self.records}
        if len(tops) != 1 or any("/" not in name for name in self.records):
            raise DGLFormatError(
                f"{where}: not a torch.save archive: records must share one top directory, found {sorted(tops)}"
            )
        self.archive = tops.pop()

    def _fail(self, what: str, offset: int | None = None) -> DGLFormatError:
        at = f" at byte {offset}" if offset is not None else ""
        return DGLFormatError(f"{self.where}{at}: {what}; the file is truncated or not a torch.save zip archive.")

    def _read_at(self, offset: int, n: int) -> bytes:
        if offset < 0 or offset + n > self.size:
            raise self._fail(f"needs bytes {offset}..{offset + n} past the end of the {self.size}-byte file", offset)
        self._f.seek(offset)
        data = self._f.read(n)
        if len(data) != n:
            raise self._fail("short read", offset)
        return bytes(data)

    def _central_directory(self) -> dict[str, ZipRecord]:
        tail_len = min(self.size, _EOCD.size + 0xFFFF)
        tail = self._read_at(self.size - tail_len, tail_len)
        at = tail.rfind(struct.pack("<I", _SIG_EOCD))
        if at < 0 or at + _EOCD.size > len(tail):
            raise self._fail("no zip end-of-central-directory record")
        eocd_pos = self.size - tail_len + at
        _, _, _, _, count, cd_size, cd_start, _ = _EOCD.unpack_from(tail, at)
        if eocd_pos >= _LOCATOR.size:  # torch always writes the zip64 record; others when needed
            loc = self._read_at(eocd_pos - _LOCATOR.size, _LOCATOR.size) if eocd_pos >= _LOCATOR.size else b""
            if loc[:4] == struct.pack("<I", _SIG_LOCATOR):
                rec = _EOCD64.unpack(self._read_at(_LOCATOR.unpack(loc)[2], _EOCD64.size))
                if rec[0] != _SIG_EOCD64:
                    raise self._fail("bad zip64 end-of-central-directory record", _LOCATOR.unpack(loc)[2])
                count, cd_size, cd_start = rec[7], rec[8], rec[9]
        raw = self._read_at(cd_start, cd_size)
        records: dict[str, ZipRecord] = {}
        pos = 0
        for _ in range(count):
            if pos + _CENTRAL.size > len(raw):
                raise self._fail("central directory shorter than its entry count", cd_start + pos)
            fields = _CENTRAL.unpack_from(raw, pos)
            if fields[0] != _SIG_CENTRAL:
                raise self._fail("bad central directory entry signature", cd_start + pos)
            method, crc, csize, usize = fields[4], fields[7], fields[8], fields[9]
            nlen, elen, clen, offset = fields[10], fields[11], fields[12], fields[16]
            name = raw[pos + _CENTRAL.size : pos + _CENTRAL.size + nlen].decode("utf-8", "replace")
            extra = raw[pos + _CENTRAL.size + nlen : pos + _CENTRAL.size + nlen + elen]
            usize, csize, offset = _apply_zip64(extra, usize, csize, offset)
            if method != 0 or csize != usize:
                raise self._fail(f"record {name!r} is compressed (method {method}); torch stores records raw")
            records[name] = ZipRecord(name, self._data_offset(name, offset), usize, crc, offset)
            if records[name].offset + usize > self.size:
                raise self._fail(f"record {name!r} ({usize} bytes) runs past the end of the file", offset)
            pos += _CENTRAL.size + nlen + elen + clen
        return records

    def _data_offset(self, name: str, header_offset: int) -> int:
        head = self._read_at(header_offset, _LOCAL.size)
        fields = _LOCAL.unpack(head)
        if fields[0] != _SIG_LOCAL:
            raise self._fail(f"bad local header signature for record {name!r}", header_offset)
        nlen, elen = fields[9], fields[10]
        if self._read_at(header_offset + _LOCAL.size, nlen).decode("utf-8", "replace") != name:
            raise self._fail(f"local header name differs from the central directory for {name!r}", header_offset)
        return int(header_offset + _LOCAL.size + nlen + elen)

    def record(self, name: str) -> ZipRecord:
        """The record ``<archive>/<name>``; :class:`DGLFormatError` if absent."""
        full = f"{self.archive}/{name}"
        if full not in self.records:
            raise DGLFormatError(f"{self.where}: record {full!r} is missing; the archive is incomplete or not torch's")
        return self.records[full]

    def read(self, name: str, *, check_crc: bool = True) -> bytes:
        """The bytes of record ``name`` (CRC-checked)."""
        rec = self.record(name)
        data = self._read_at(rec.offset, rec.size)
        if check_crc and zlib.crc32(data) != rec.crc:
            raise self._fail(f"CRC mismatch in record {rec.name!r} (corrupt data)", rec.offset)
        return data

    def array(self, name: str, dtype: np.dtype[Any], count: int) -> npt.NDArray[Any]:
        """Record ``name`` as ``count`` little-endian items of ``dtype``; sizes must agree."""
        rec = self.record(name)
        if rec.size < count * dtype.itemsize:
            raise self._fail(
                f"record {rec.name!r} holds {rec.size} bytes, fewer than {count} x {dtype.itemsize} the pickle needs",
                rec.offset,
            )
        out = np.empty(count, dtype=dtype.newbyteorder("<"))
        raw = memoryview(out.view(np.uint8))  # type: ignore[arg-type]
        self._f.seek(rec.offset)
        got = self._f.readinto(raw) if hasattr(self._f, "readinto") else None
        if got is None:  # a file object without readinto
            raw[:] = self._read_at(rec.offset, out.nbytes)
        elif got != out.nbytes:
            raise self._fail(f"short read in record {rec.name!r}", rec.offset)
        crc = zlib.crc32(raw)
        if rec.size > out.nbytes:  # trailing bytes of the storage beyond the tensor
            crc = zlib.crc32(self._read_at(rec.offset + out.nbytes, rec.size - out.nbytes), crc)
        if crc != rec.crc:
            raise self._fail(f"CRC mismatch in record {rec.name!r} (corrupt data)", rec.offset)
        return out.astype(dtype, copy=False)


def _apply_zip64(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        if tag == 1:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
            if usize == _MASK32 and values:
                usize = values.pop(0)
            if csize == _MASK32 and values:
                csize = values.pop(0)
            if offset == _MASK32 and values:
                offset = values.pop(0)
        pos += 4 + length
    return usize, csize, offset


def archive_name(path: str) -> str:
    """The top directory torch uses for ``path``: its file name without the suffix."""
    return os.path.splitext(os.path.basename(path.rstrip("/")))[0] or "archive"
