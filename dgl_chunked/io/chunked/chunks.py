"""The kernels the lazy views' tasks run: read a :class:`~.groups.ChunkGroup` of files.

A task reads one group of consecutive chunk files (:mod:`.groups`; one file when it
reaches the task size alone). The kernels (pure numpy/pandas, no Dask) read the
group's files in order into one array, check each against the metadata and raise
:class:`~dgl_chunked.errors.ChunkMismatchError` (or ``ChunkReadError`` for a damaged
file) naming the file and row. :mod:`.graph` wires them into Dask collections.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.formats import iter_edge_chunk, read_edge_chunk, read_feature_chunk
from dgl_chunked.io.chunked.groups import ChunkGroup, ChunkRef, chunk_refs

if TYPE_CHECKING:  # pandas (0.1 s to import) only where the DataFrame views are used
    import pandas as pd

__all__ = [
    "ChunkGroup",
    "ChunkRef",
    "chunk_refs",
    "edge_id_problems",
    "empty_edges",
    "group_id_problems",
    "iter_edge_slices",
    "read_checked_edges",
    "read_edge_file",
    "read_edge_group",
    "read_edges_partition",
    "read_feature_file",
    "read_feature_group",
]


# --- kernels (pure numpy/pandas; run inside tasks) ------------------------------


def edge_id_problems(src: IdArray, dst: IdArray, *, num_src: int, num_dst: int, path: str) -> list[str]:
    """Messages for negative or out-of-range node IDs, naming the first bad row."""
    out = []
    for name, ids, bound in (("src", src, num_src), ("dst", dst, num_dst)):
        for label, bad in (
            ("negative", ids < 0),
            (f"out of range [0, {bound})", ids >= bound),
        ):
            count = int(np.count_nonzero(bad))
            if count:
                row = int(np.argmax(bad))
                out.append(
                    f"edge file {path!r}: row {row + 1}: {name} ID {int(ids[row])} is {label} "
                    f"({count} such rows); node IDs are per-type and must be in [0, {bound})"
                )
    return out


def read_edge_file(ref: ChunkRef) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` of one edge file, checked against its row count in the metadata."""
    src, dst = read_edge_chunk(
        ref.path,
        fmt=ref.fmt,
        options=ref.options,
        storage_options=ref.storage_options,
        allow_empty=ref.rows == 0,
    )
    if len(src) != ref.rows:
        raise ChunkMismatchError(
            f"edge file {ref.path!r}: expected {ref.rows} rows (from the metadata file), found "
            f"{len(src)}; fix num_edges_per_chunk or the entry's row_counts, or the file"
        )
    return src, dst


def read_edge_group(group: ChunkGroup) -> tuple[IdArray, IdArray]:
    """``(src, dst)`` int64 of every file of ``group``, in order (one array each).

    Raises
    ------
    ChunkMismatchError
        A file's row count differs from the metadata (or its contents are invalid).
    ChunkReadError
        A file is missing or damaged.
    """
    if len(group.refs) == 1:
        return read_edge_file(group.refs[0])
    src, dst = np.empty(group.rows, np.int64), np.empty(group.rows, np.int64)
    for ref in group.refs:
        lo, hi = ref.start - group.start, ref.stop - group.start
        src[lo:hi], dst[lo:hi] = read_edge_file(ref)
    return src, dst


def iter_edge_slices(group: ChunkGroup, rows: int, *, num_src: int, num_dst: int) -> Iterator[tuple[IdArray, IdArray]]:
    """``(src, dst)`` int64 of every file of ``group`` in order, in consecutive slices of
    ``rows`` edges (the last one shorter): the slices of :func:`read_edge_group`'s
    arrays, holding one slice and one decoded piece of a file at a time
    (:func:`~dgl_chunked.io.chunked.formats.iter_edge_chunk`), not the group.

    Each file's row count and node IDs are checked as its pieces come; a bad file is
    then read whole for the error, which names it and its first bad row as
    :func:`read_edge_file` and :func:`group_id_problems` do. Slices before it may
    have been yielded already.

    Raises
    ------
    ChunkMismatchError
        A file's row count differs from the metadata, or a node ID is out of range.
    ChunkReadError
        A file is missing or damaged.
    """
    pieces = (piece for ref in group.refs for piece in _checked_pieces(ref, rows, num_src=num_src, num_dst=num_dst))
    yield from _slices(pieces, rows)


def _checked_pieces(ref: ChunkRef, rows: int, *, num_src: int, num_dst: int) -> Iterator[tuple[IdArray, IdArray]]:
    """One file's edges in pieces of at most ``rows``, each checked (see :func:`iter_edge_slices`)."""
    seen = 0
    pieces = iter_edge_chunk(
        ref.path,
        fmt=ref.fmt,
        options=ref.options,
        rows=rows,
        storage_options=ref.storage_options,
        allow_empty=ref.rows == 0,
    )
    for src, dst in pieces:
        seen += len(src)
        if seen > ref.rows or not _ids_in_range(src, dst, num_src=num_src, num_dst=num_dst):
            _raise_file_problems(ref, num_src=num_src, num_dst=num_dst)
        yield src, dst
    if seen != ref.rows:
        _raise_file_problems(ref, num_src=num_src, num_dst=num_dst)


def _raise_file_problems(ref: ChunkRef, *, num_src: int, num_dst: int) -> NoReturn:
    """Raise the error of a file found bad piece by piece, from the whole file: the
    message (its row count, or every bad column with its first row and count) is the
    one a whole read gives."""
    src, dst = read_edge_file(ref)  # raises on a wrong row count
    problems = edge_id_problems(src, dst, num_src=num_src, num_dst=num_dst, path=ref.path)
    raise ChunkMismatchError(
        "; ".join(problems) or f"edge file {ref.path!r} changed while it was read; run the command again"
    )


def _slices(pieces: Iterator[tuple[IdArray, IdArray]], rows: int) -> Iterator[tuple[IdArray, IdArray]]:
    """``pieces`` of edges regrouped into consecutive slices of ``rows`` (the last shorter);
    a piece that is a whole slice is passed on without a copy."""
    src_parts: list[IdArray] = []
    dst_parts: list[IdArray] = []
    pending = 0
    for src, dst in pieces:
        lo = 0
        while lo < len(src):
            take = min(rows - pending, len(src) - lo)
            src_parts.append(src[lo : lo + take])
            dst_parts.append(dst[lo : lo + take])
            pending, lo = pending + take, lo + take
            if pending == rows:
                yield _joined(src_parts), _joined(dst_parts)
                src_parts, dst_parts, pending = [], [], 0
    if pending:
        yield _joined(src_parts), _joined(dst_parts)


def _joined(parts: list[IdArray]) -> IdArray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def read_checked_edges(group: ChunkGroup, *, num_src: int, num_dst: int) -> tuple[IdArray, IdArray]:
    """Read one group of edge files as int64 ``src``, ``dst`` arrays (no DataFrame, no
    index: for tasks that only count), checked as :func:`read_edges_partition` checks them.

    Raises
    ------
    ChunkMismatchError
        Row count differs from the metadata, or a node ID is out of range.
    """
    src, dst = read_edge_group(group)
    problems = group_id_problems(group, src, dst, num_src=num_src, num_dst=num_dst)
    if problems:
        raise ChunkMismatchError("; ".join(problems))
    return src, dst


def read_edges_partition(group: ChunkGroup, *, num_src: int, num_dst: int) -> pd.DataFrame:
    """Read one group of edge files as a DataFrame (``src``, ``dst``; index ``type_eid``).

    Raises
    ------
    ChunkMismatchError
        Row count differs from the metadata, or a node ID is out of range.
    """
    import pandas as pd

    src, dst = read_checked_edges(group, num_src=num_src, num_dst=num_dst)
    index = pd.Index(np.arange(group.start, group.stop, dtype=np.int64), name="type_eid")
    return pd.DataFrame({"src": src, "dst": dst}, index=index)


def _ids_in_range(src: IdArray, dst: IdArray, *, num_src: int, num_dst: int) -> bool:
    """Whether every ID is in range: four reductions, no temporary arrays."""
    return src.size == 0 or bool(min(src.min(), dst.min()) >= 0 and src.max() < num_src and dst.max() < num_dst)


def group_id_problems(group: ChunkGroup, src: IdArray, dst: IdArray, *, num_src: int, num_dst: int) -> list[str]:
    """:func:`edge_id_problems` of a group's edges, naming the file and its row."""
    if _ids_in_range(src, dst, num_src=num_src, num_dst=num_dst):
        return []  # no temporaries when all is well
    out = []
    for ref in group.refs:
        lo, hi = ref.start - group.start, ref.stop - group.start
        out += edge_id_problems(src[lo:hi], dst[lo:hi], num_src=num_src, num_dst=num_dst, path=ref.path)
    return out


def read_feature_file(
    ref: ChunkRef, row_shape: tuple[int, ...] | None = None, dtype: np.dtype[Any] | None = None
) -> npt.NDArray[Any]:
    """One feature file (memory-mapped when local), as stored or, given ``row_shape`` and
    ``dtype``, as ``(rows, *row_shape)`` of ``dtype``."""
    array = read_feature_chunk(ref.path, fmt=ref.fmt, options=ref.options, storage_options=ref.storage_options)
    rows = array.shape[0] if array.ndim else 1
    if rows != ref.rows:
        raise ChunkMismatchError(
            f"feature file {ref.path!r}: expected {ref.rows} rows (the entry's row_counts in the metadata "
            f"file, else the file's header), found shape {array.shape}; fix row_counts, or the file was "
            "rewritten while the graph was open"
        )
    if row_shape is None or dtype is None:
        return array
    if ref.rows == 0:
        return np.empty((0, *row_shape), dtype)
    if array.shape[1:] != row_shape or not np.can_cast(array.dtype, dtype, "safe"):
        raise ChunkMismatchError(
            f"feature file {ref.path!r}: expected {dtype} rows of shape {row_shape} as in the feature's "
            f"other files, found {array.dtype} rows of shape {array.shape[1:]}; all files of a feature "
            "must share one dtype and row shape"
        )
    return np.asarray(array).astype(dtype, copy=False)


def read_feature_group(
    group: ChunkGroup, row_shape: tuple[int, ...] | None = None, dtype: np.dtype[Any] | None = None
) -> npt.NDArray[Any]:
    """The rows of every feature file of ``group``, in order, as one array (a single local
    ``.npy`` file stays memory-mapped).

    Given ``row_shape`` and ``dtype`` (checked across the files by
    :meth:`~dgl_chunked.io.chunked.graph.ChunkedGraph.feature_info`), every file is
    converted to them; without, the first non-empty file's are the group's and every
    other file must have them (:class:`ChunkMismatchError` names the file that differs).
    """
    if len(group.refs) == 1:
        return read_feature_file(group.refs[0], row_shape, dtype)
    out: npt.NDArray[Any] | None = None
    first = ""
    for ref in group.refs:
        rows = read_feature_file(ref, row_shape, dtype)
        if not rows.shape[0] and (row_shape is None or dtype is None):
            continue  # an empty file says nothing about the row shape
        if out is None:
            out, first = np.empty((group.rows, *rows.shape[1:]), rows.dtype), ref.path
        elif rows.dtype != out.dtype or rows.shape[1:] != out.shape[1:]:
            raise ChunkMismatchError(
                f"feature file {ref.path!r}: expected {out.dtype} rows of shape {out.shape[1:]} as in "
                f"{first!r}, found {rows.dtype} rows of shape {rows.shape[1:]}; all files of a feature "
                "must share one dtype and row shape"
            )
        out[ref.start - group.start : ref.stop - group.start] = rows
    if out is None:  # every file empty
        return read_feature_file(group.refs[0], row_shape, dtype)
    return out


def empty_edges(_: int) -> pd.DataFrame:
    """The partition of an edge type without edges (``_`` is the ``from_map`` item)."""
    import pandas as pd

    empty = np.empty(0, np.int64)
    return pd.DataFrame({"src": empty, "dst": empty}, index=pd.Index(empty, name="type_eid"))
