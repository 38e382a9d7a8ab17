"""The multilevel ``lp`` tables looked up by global ID: the labels, cluster weights,
cluster maps and partitions of a level, one array file per node block
(:mod:`.coarsen_tasks`), read whole when small enough, else one block at a time.

A table is read whole under :data:`WHOLE_TABLE_BYTES` of memory (:func:`table_bytes`:
4 bytes per ID or weight below 2**31 IDs, the weights narrowed to int32), so that a
task holds at most that much of it whatever the graph size; above, :func:`lookup`
reads one block's file at a time (in block order, a run per block for ascending IDs).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp.kernels import rows_by_block
from dgl_chunked.storage.arrays import read_array

__all__ = ["WEIGHT_TABLES", "WHOLE_TABLE_BYTES", "TableLevel", "lookup", "table_bytes", "whole_table"]


class TableLevel(Protocol):
    """What a lookup needs of a level (:class:`.coarsen_tasks.Level`)."""

    @property
    def offsets(self) -> tuple[int, ...]: ...

    @property
    def num_blocks(self) -> int: ...

    @property
    def width(self) -> int: ...

    def url(self, name: str, ext: str = "bin") -> Any: ...


def _load(f: Any) -> npt.NDArray[Any]:
    """The array file ``f`` (a :class:`.coarsen_tasks.ScratchFile`: its URL and fsspec options)."""
    return read_array(f.url, storage_options=f.storage_options)


WHOLE_TABLE_BYTES = 1 << 26
"""A lookup reads every block of a table at once below this size, else one at a time.

A lower limit does not flatten memory: at 10M nodes / 100M edges (2 workers, 8 parts,
issue #38, session 24) 16 MiB took 393.5 s and peaked at 680 / 771 MB per worker,
against 348.2 s and 612 / 732 MB at 64 MiB the same hour (the same assignment): the
lookups block by block hold per-entry arrays where a whole table is indexed in place."""

WEIGHT_TABLES = ("cw", "w")
"""The tables of ``[rows, C]`` weights (int64 files); the others hold one ID per node."""


def table_bytes(level: TableLevel, name: str) -> int:
    """Bytes of the whole table ``name`` in memory: the level's ID type
    (:func:`.coarsen_kernels.id_dtype`: 4 bytes per node below 2**31 IDs) for the label,
    map and partition tables, 4 per column per node for the weights (read narrowed to
    int32, :func:`whole_table`; 8 from 2**31 nodes on)."""
    per_id = np.dtype(CK.id_dtype(level.offsets[-1])).itemsize
    return level.offsets[-1] * per_id * (level.width if name in WEIGHT_TABLES else 1)


def _narrowed(level: TableLevel, name: str) -> bool:
    """Whether table ``name`` is held as int32 when its weights fit: a weight table of a
    level whose IDs are int32 (:func:`.coarsen_kernels.id_dtype`)."""
    return name in WEIGHT_TABLES and CK.id_dtype(level.offsets[-1]) is np.int32


def _beyond_int32(weights: npt.NDArray[Any]) -> bool:
    """Whether any of ``weights`` (>= 0) is too large for int32."""
    return bool(weights.size) and int(weights.max()) >= CK.ID_LIMIT


def lookup(level: TableLevel, name: str, ids: IdArray) -> npt.NDArray[Any]:
    """Rows ``ids`` (global, >= 0) of the per-block arrays ``name-<b>``: the whole table
    when under :data:`WHOLE_TABLE_BYTES` (:func:`table_bytes`), else one block in
    memory at a time. Weights come as int32 where :func:`whole_table` gives them so:
    the level's IDs are int32 and every weight looked up fits.

    Issue #38: on level 0 of the 10M-node graph the rows of a block's distinct clusters
    (about 2M x 4 columns) were the largest array of its largest task, 8 bytes a weight.
    """
    ids = np.asarray(ids, np.int64)
    width = level.width if name in WEIGHT_TABLES else 1
    if ids.size == 0:
        return np.empty((0, level.width) if width > 1 else 0, np.int64)
    table = whole_table(level, name)
    if table is not None:
        return table[ids]
    offsets = np.asarray(level.offsets, np.int64)
    runs: list[tuple[int, slice | IdArray]]
    if bool(np.all(ids[1:] >= ids[:-1])):  # sorted (distinct clusters): each block's rows are one run
        bounds = np.searchsorted(ids, offsets)
        runs = [(b, slice(bounds[b], bounds[b + 1])) for b in range(level.num_blocks) if bounds[b + 1] > bounds[b]]
    else:
        block = np.searchsorted(offsets, ids, side="right") - 1
        runs = list(rows_by_block(block, level.num_blocks))  # one sort, not a pass per block
    narrow = _narrowed(level, name)
    out: npt.NDArray[Any] | None = None
    for b, sel in runs:
        rows = _load(level.url(f"{name}-{b}"))[ids[sel] - offsets[b]]
        if narrow and _beyond_int32(rows):
            narrow, out = False, None if out is None else out.astype(np.int64)
        if out is None:
            out = np.empty((ids.size, *rows.shape[1:]), np.int32 if narrow else rows.dtype)
        out[sel] = rows
    assert out is not None
    return out


def whole_table(level: TableLevel, name: str) -> npt.NDArray[Any] | None:
    """Every block's ``name-<b>`` in one array, indexed by global ID, when under
    :data:`WHOLE_TABLE_BYTES` (:func:`table_bytes`); else None (:func:`lookup` then
    reads one block at a time). The weight tables (``cw``, ``w``; int64 files) come as
    int32 when the level's IDs are int32 and every weight fits (else None: a column of
    2**31 owned edges or more, or a coarse level of a graph of 2**31 nodes or more).

    Issue #38 (10M nodes / 100M edges, 8 parts, 39 blocks): with 8 bytes per ID and
    weight, the label and map tables of level 0 (10M nodes) and the cluster weights of
    level 1 (3.7M nodes, 4 columns) were read block by block and gathered per entry;
    making level 2 from level 1 took 90.8 s against 27.8 s for level 3 from level 2
    (1.4M nodes, whole tables), for as many entries (188M and 180M). Counted in their
    type, level 2 took 59.7 CPU seconds against 95.3 (2 threads, one after the other).
    """
    if table_bytes(level, name) > WHOLE_TABLE_BYTES:
        return None
    blocks = (_load(level.url(f"{name}-{b}")) for b in range(level.num_blocks))
    if not _narrowed(level, name):
        return np.concatenate(list(blocks))
    out = np.empty((level.offsets[-1], level.width), np.int32)  # filled block by block: no int64 copy
    for b, arr in enumerate(blocks):
        if _beyond_int32(arr):
            return None  # block by block
        out[level.offsets[b] : level.offsets[b + 1]] = arr
    return out
