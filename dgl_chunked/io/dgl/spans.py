"""Streaming array sources for the DGL writers.

Every value handed to ``write_tensor_dict`` / ``write_graph`` becomes a
:class:`Stream`: a validated total shape, the on-disk dtype and a callable that
yields C-contiguous little-endian spans along axis 0, each at most
:data:`SPAN_BYTES` (one row at least). Sources:

* :class:`ArraySpans`: the caller's own span generator, checked span by span;
* ``numpy.ndarray`` and ``np.memmap``: sliced; pages of a memmap slice are dropped
  from this process (``madvise(MADV_DONTNEED)``) once written, so the resident set
  stays at one span even for files larger than memory;
* anything else with ``shape``, ``dtype`` and slicing (``zarr.Array``,
  ``dask.array.Array``): read slice by slice, aligned to its axis-0 chunks.
"""

from __future__ import annotations

import mmap
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.formats.dgl_records import is_bfloat16, ndarray_header

__all__ = ["SPAN_BYTES", "ArraySpans", "Stream", "as_stream", "materialize", "write_ndarray"]

SPAN_BYTES = 64 * 2**20
"""Upper bound of one span copied from a memmap, zarr array or numpy array."""

_ALLOWED = "int8, int16, int32, int64, uint8, float16, float32, float64, bool (stored as uint8) or bfloat16"


class ArraySpans:
    """An array streamed in spans: known total shape and dtype, spans made lazily.

    Parameters
    ----------
    shape
        Total shape. Its first axis is the one the spans split.
    dtype
        dtype of every span (``bool`` is stored as uint8, as DGL does).
    spans
        Called once per write (a graph writer may call it more than once); returns an
        iterable of C-contiguous arrays whose concatenation along axis 0 has ``shape``.
        The writer checks every span and the total and raises
        :class:`~dgl_chunked.errors.DGLFormatError` on a mismatch.
    blocks
        Deprecated name of ``spans`` (a *block* is an ID range, ``docs/glossary.md``);
        passing it warns. Give exactly one of the two.
    """

    __slots__ = ("dtype", "shape", "spans")

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: npt.DTypeLike,
        spans: Callable[[], Iterable[npt.NDArray[Any]]] | None = None,
        *,
        blocks: Callable[[], Iterable[npt.NDArray[Any]]] | None = None,
    ) -> None:
        if blocks is not None:
            warnings.warn(
                "ArraySpans(blocks=...) is deprecated; pass spans=... (the span factory)",
                DeprecationWarning,
                stacklevel=2,
            )
            if spans is not None:
                raise TypeError("ArraySpans: give spans or its deprecated name blocks, not both")
            spans = blocks
        if spans is None:
            raise TypeError("ArraySpans: missing the span factory spans")
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.spans = spans

    @property
    def blocks(self) -> Callable[[], Iterable[npt.NDArray[Any]]]:
        """Deprecated name of :attr:`spans`."""
        warnings.warn("ArraySpans.blocks is deprecated; use ArraySpans.spans", DeprecationWarning, stacklevel=2)
        return self.spans

    def __repr__(self) -> str:
        return f"ArraySpans(shape={self.shape}, dtype={self.dtype})"


@dataclass(frozen=True)
class Stream:
    """A validated source: total ``shape``, on-disk ``dtype`` and a span factory ``spans``."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    spans: Callable[[], Iterator[npt.NDArray[Any]]]


def disk_dtype(dtype: np.dtype[Any], where: str) -> np.dtype[Any]:
    """The dtype DGL stores for ``dtype``; raise for dtypes DGL+torch cannot load."""
    if dtype == np.bool_:
        return np.dtype("u1")
    if is_bfloat16(dtype):
        return dtype
    if dtype.kind == "u" and dtype.itemsize > 1:
        raise DGLFormatError(
            f"{where}: dtype {dtype} cannot be stored: DGL writes it, but torch 2.2 fails to load "
            f"unsigned integers wider than 8 bits (docs/spec/dgl-binary.md, 'NDArray record'). Cast it first, e.g. "
            f"arr.astype(np.int64); supported dtypes are {_ALLOWED}."
        )
    if (
        (dtype.kind == "i" and dtype.itemsize in (1, 2, 4, 8))
        or (dtype.kind == "f" and dtype.itemsize in (2, 4, 8))
        or dtype == np.uint8
    ):
        return dtype.newbyteorder("<")
    raise DGLFormatError(f"{where}: expected one of {_ALLOWED}; found dtype {dtype!r}. Cast the array first.")


def check_shape(shape: tuple[int, ...], where: str) -> None:
    """Reject 0-d arrays (DGL loads them as garbage: ``docs/spec/dgl-binary.md``, "NDArray record")."""
    if len(shape) == 0:
        raise DGLFormatError(
            f"{where}: expected an array with at least 1 dimension, found a 0-d scalar. DGL's "
            "load_tensors returns uninitialised memory for 0-d arrays "
            "(docs/spec/dgl-binary.md, 'NDArray record'); store it with "
            "shape (1,), e.g. np.reshape(value, (1,))."
        )


def as_stream(
    value: Any, where: str, *, ids: tuple[np.dtype[Any], int] | None = None, span_bytes: int | None = None
) -> Stream:
    """Validate ``value`` and wrap it as a :class:`Stream`.

    Parameters
    ----------
    value
        numpy array, ``np.memmap``, zarr/dask array, :class:`ArraySpans` or anything
        ``np.asarray`` accepts.
    where
        What the value is (file and key), for error messages.
    ids
        ``(idtype, bound)`` for node ids: any integer input dtype is accepted, every
        span is checked to lie in ``[0, bound)`` and cast to ``idtype``.
    span_bytes
        Upper bound of one span (at least one row is always read); default
        :data:`SPAN_BYTES`.
    """
    if not isinstance(value, ArraySpans) and not (
        hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "__getitem__")
    ):
        value = np.asarray(value)
    shape = tuple(int(s) for s in value.shape)
    check_shape(shape, where)
    if ids is None:
        convert = _Convert(disk_dtype(np.dtype(value.dtype), where), None, where)
    elif np.dtype(value.dtype).kind in "iu" and len(shape) == 1:
        convert = _Convert(ids[0], ids[1], where)
    else:
        raise DGLFormatError(
            f"{where}: expected a 1-D integer array of node ids, found dtype {value.dtype} with shape {shape}"
        )
    if isinstance(value, ArraySpans):
        return Stream(shape, convert.dtype, lambda: _checked_spans(value, convert))
    limit = SPAN_BYTES if span_bytes is None else span_bytes
    return Stream(shape, convert.dtype, lambda: _sliced_spans(value, shape, convert, limit))


@dataclass(frozen=True)
class _Convert:
    """Turn a source span into an on-disk span (cast, id range check, contiguity)."""

    dtype: np.dtype[Any]
    bound: int | None
    where: str

    def __call__(self, span: npt.NDArray[Any], index: int) -> npt.NDArray[Any]:
        if self.bound is not None and span.size and (span.min() < 0 or span.max() >= self.bound):
            raise DGLFormatError(
                f"{self.where}: node ids must lie in [0, {self.bound}) (num_nodes), found values in "
                f"[{span.min()}, {span.max()}] in span {index}; fix the ids or num_nodes."
            )
        if span.dtype != self.dtype and not is_bfloat16(span.dtype):
            span = span.astype(self.dtype)
        return np.ascontiguousarray(span)


def _checked_spans(source: ArraySpans, convert: _Convert) -> Iterator[npt.NDArray[Any]]:
    where, total = convert.where, 0
    for index, raw in enumerate(source.spans()):
        span = np.asarray(raw)
        if span.ndim != len(source.shape) or span.shape[1:] != source.shape[1:]:
            raise DGLFormatError(
                f"{where}: ArraySpans span {index} has shape {span.shape}, expected (n, "
                f"{', '.join(map(str, source.shape[1:]))}) to match the declared shape {source.shape}; "
                "fix the span generator or the declared shape."
            )
        if span.dtype != source.dtype:
            raise DGLFormatError(
                f"{where}: ArraySpans span {index} has dtype {span.dtype}, expected the declared "
                f"{source.dtype}; cast the spans or declare their dtype."
            )
        total += span.shape[0]
        if total > source.shape[0]:
            raise DGLFormatError(
                f"{where}: ArraySpans produced more than the declared {source.shape[0]} rows "
                f"(at least {total} after span {index}); fix the declared shape or the generator."
            )
        yield convert(span, index)
    if total != source.shape[0]:
        raise DGLFormatError(
            f"{where}: ArraySpans produced {total} rows in total, expected the declared "
            f"{source.shape[0]}; fix the declared shape or the generator."
        )


def _sliced_spans(value: Any, shape: tuple[int, ...], convert: _Convert, span_bytes: int) -> Iterator[npt.NDArray[Any]]:
    rows = shape[0]
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * max(convert.dtype.itemsize, value.dtype.itemsize)
    step = max(1, span_bytes // max(row_bytes, 1))
    chunks = getattr(value, "chunks", None)
    if isinstance(chunks, tuple) and chunks and isinstance(chunks[0], int) and 0 < chunks[0] <= step:
        step -= step % chunks[0]  # zarr: whole chunks per read
    for index, start in enumerate(range(0, rows, step)):
        part = value[start : start + step]
        yield convert(np.asarray(part), index)
        if isinstance(part, np.memmap):
            release_pages(part)
        del part


def release_pages(view: np.memmap[Any, Any]) -> None:
    """Drop the pages of a memmap view from this process's resident set.

    File-backed pages that a mapping has touched count in RSS until unmapped. For a
    read-only or shared mapping ``MADV_DONTNEED`` just unmaps them (the data stays in
    the file and page cache). Copy-on-write mappings (mode ``"c"``) are left alone:
    there it would discard the caller's changes. Best effort; failures are ignored.
    """
    if getattr(view, "mode", None) not in ("r", "r+", "w+") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    base: Any = view
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is None or view.nbytes == 0:
        return
    try:
        origin = np.frombuffer(base, dtype=np.uint8).ctypes.data
        byte_bounds = getattr(np.lib, "array_utils", np).byte_bounds
        low, high = byte_bounds(view)
        start = (low - origin) // mmap.PAGESIZE * mmap.PAGESIZE
        base.madvise(mmap.MADV_DONTNEED, start, high - origin - start)
    except (ValueError, OSError, TypeError, AttributeError, BufferError):
        return


def write_ndarray(f: IO[bytes], stream: Stream) -> int:
    """Write one NDArray record, streaming the payload; return the bytes written."""
    header = ndarray_header(stream.shape, stream.dtype)
    f.write(header)
    written = len(header)
    for span in stream.spans():
        raw = span.reshape(-1).view(np.uint8)
        f.write(raw.data)
        written += raw.nbytes
    return written


def materialize(stream: Stream) -> npt.NDArray[Any]:
    """Read a whole stream into one in-memory array (for CSR/CSC construction)."""
    out = np.empty(stream.shape, dtype=stream.dtype)
    pos = 0
    for span in stream.spans():
        out[pos : pos + span.shape[0]] = span
        pos += span.shape[0]
    return out
