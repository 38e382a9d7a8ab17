"""Per-file pieces of the lazy views: chunk references and the kernels their tasks run.

A :class:`ChunkRef` names one chunk file and the per-type ID range its rows cover;
the kernels read one file each (pure numpy/pandas, no Dask), check it against the
metadata and raise :class:`~dgl_chunked.errors.ChunkMismatchError` naming the file
and row. :mod:`.graph` wires them into Dask collections.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.formats import read_edge_chunk, read_feature_chunk
from dgl_chunked.io.chunked.model import ArraySource

__all__ = [
    "ChunkRef",
    "chunk_refs",
    "edge_id_problems",
    "empty_edges",
    "read_edges_partition",
    "read_feature_block",
]


@dataclass(frozen=True, kw_only=True)
class ChunkRef:
    """One chunk file and the per-type ID range ``[start, stop)`` its rows cover."""

    path: str
    fmt: str
    options: Mapping[str, Any]
    start: int
    stop: int
    storage_options: dict[str, Any] | None = None

    @property
    def rows(self) -> int:
        """Number of rows in the file."""
        return self.stop - self.start


def chunk_refs(source: ArraySource, rows: Sequence[int], storage_options: StorageOptions) -> list[ChunkRef]:
    """One :class:`ChunkRef` per file of ``source``, holding ``rows[i]`` rows each, in order."""
    bounds = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])
    return [
        ChunkRef(
            path=path,
            fmt=source.format,
            options=dict(source.options),
            start=int(bounds[i]),
            stop=int(bounds[i + 1]),
            storage_options=storage_options,
        )
        for i, path in enumerate(source.paths)
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


def read_edges_partition(ref: ChunkRef, *, num_src: int, num_dst: int) -> pd.DataFrame:
    """Read one edge file as a DataFrame (``src``, ``dst``; index ``type_eid``).

    Raises
    ------
    ChunkMismatchError
        Row count differs from the metadata, or a node ID is out of range.
    """
    src, dst = read_edge_chunk(
        ref.path,
        fmt=ref.fmt,
        options=ref.options,
        storage_options=ref.storage_options,
        allow_empty=ref.rows == 0,
    )
    if len(src) != ref.rows:
        raise ChunkMismatchError(
            f"edge file {ref.path!r}: expected {ref.rows} rows (from metadata.json), found "
            f"{len(src)}; fix num_edges_per_chunk or the file"
        )
    problems = edge_id_problems(src, dst, num_src=num_src, num_dst=num_dst, path=ref.path)
    if problems:
        raise ChunkMismatchError("; ".join(problems))
    index = pd.Index(np.arange(ref.start, ref.stop, dtype=np.int64), name="type_eid")
    return pd.DataFrame({"src": src, "dst": dst}, index=index)


def read_feature_block(ref: ChunkRef, row_shape: tuple[int, ...], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Read one feature file (memory-mapped when local) and check its shape."""
    array = read_feature_chunk(ref.path, fmt=ref.fmt, options=ref.options, storage_options=ref.storage_options)
    rows = array.shape[0] if array.ndim else 1
    if rows != ref.rows:
        raise ChunkMismatchError(
            f"feature file {ref.path!r}: expected {ref.rows} rows (from its header), found "
            f"shape {array.shape}; was the file rewritten while the graph was open?"
        )
    if ref.rows == 0:
        return np.empty((0, *row_shape), dtype)
    return np.asarray(array).reshape((ref.rows, *row_shape)).astype(dtype, copy=False)


def empty_edges(_: int) -> pd.DataFrame:
    """The partition of an edge type without edges (``_`` is the ``from_map`` item)."""
    empty = np.empty(0, np.int64)
    return pd.DataFrame({"src": empty, "dst": empty}, index=pd.Index(empty, name="type_eid"))
