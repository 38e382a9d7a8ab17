"""Chunk references, and read tasks sized by bytes: consecutive files coalesced into groups.

A :class:`ChunkRef` names one chunk file and the per-type ID range its rows cover.

Spark (and GraphStorm's GSProcessing) writes one ``part-*.parquet`` per task,
hundreds per type; a Dask task per file then costs more in scheduling, completion
records and staged Zarr arrays than in reading. Every command therefore reads a
type's files in :class:`ChunkGroup`\\ s: consecutive files whose decoded rows add up
to about the *task size* (``task_bytes``; default :data:`DEFAULT_TASK_BYTES`,
``DGLC_TASK_SIZE`` in the environment, ``--task-size`` on the command line).

How the groups are chosen (:func:`group_chunks`): the type's decoded bytes (rows
times :data:`EDGE_ROW_BYTES` for edges, times the row's bytes plus
:data:`FEATURE_ROW_OVERHEAD` for a feature) are
divided into ``n = ceil(total / task_bytes)`` equal quotas, and a group closes at
the first file that reaches the end of its quota. Groups are consecutive, so a
group's rows are a contiguous ID range in file order; a file larger than the task
size is a group of its own (files are never split). The grouping depends only on
the row counts and the task size, never on the machine, so a rerun finds the same
tasks (dispatch records it in its fingerprint).

Output never depends on the grouping: every consumer stably groups a task's rows by
owner and reads tasks in order, which yields the same rows in the same order as one
task per file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgl_chunked._typing import StorageOptions, parse_size
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.model import ArraySource

__all__ = [
    "DEFAULT_TASK_BYTES",
    "EDGE_ROW_BYTES",
    "FEATURE_ROW_OVERHEAD",
    "TASK_SIZE_ENV",
    "ChunkGroup",
    "ChunkRef",
    "chunk_refs",
    "group_chunks",
    "group_ranges",
    "resolve_task_bytes",
]

DEFAULT_TASK_BYTES = 32 << 20
"""Decoded bytes a read task aims at: 2M edges (src and dst as int64), or 32 MiB of
feature rows. At or below the chunk size of DGL's reference graphs (2.5M edges per
file), so memory per worker stays where one such file put it, and large enough that
the per-task costs (scheduling, a completion record, a staged Zarr array per output)
are a few percent of the task's read and regroup time."""

EDGE_ROW_BYTES = 16
"""Decoded bytes per edge of a read edge chunk: ``src`` and ``dst`` as int64."""

FEATURE_ROW_OVERHEAD = 16
"""Bytes per feature row a task holds besides the row: its owner and its place in the
sort by owner. Without it a task of 1-byte mask rows held 32M rows and 16 times their
bytes in bookkeeping (10M/100M graph: 364 against 263 MB peak per worker)."""

TASK_SIZE_ENV = "DGLC_TASK_SIZE"
"""Environment variable holding the default task size (``"64MiB"``, ``"1000000"``)."""


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


class ChunkGroup:
    """Consecutive chunk files read by one task: rows ``[start, stop)`` of the type.

    ``refs`` holds at least one :class:`ChunkRef`; consecutive refs cover adjacent row
    ranges. Immutable and hashable. Not a dataclass on purpose: ``dask.delayed``
    walks a dataclass argument field by field looking for collections, which cost
    0.3 s for the 1,500 tasks of a graph with 256 files per type.
    """

    __slots__ = ("refs",)

    refs: tuple[ChunkRef, ...]

    def __init__(self, refs: Sequence[ChunkRef]) -> None:
        if not refs:
            raise ValueError("a ChunkGroup holds at least one file")
        object.__setattr__(self, "refs", tuple(refs))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ChunkGroup is immutable: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChunkGroup) and self.refs == other.refs

    def __hash__(self) -> int:
        return hash(tuple((r.path, r.start, r.stop) for r in self.refs))  # options are dicts

    def __repr__(self) -> str:
        return f"ChunkGroup({len(self.refs)} file(s), rows [{self.start}, {self.stop}) from {self.refs[0].path!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ChunkGroup, (self.refs,))

    def __dask_tokenize__(self) -> Any:
        from dask.base import normalize_token

        return ("ChunkGroup", normalize_token(self.refs))

    @property
    def start(self) -> int:
        """First per-type ID of the group."""
        return self.refs[0].start

    @property
    def stop(self) -> int:
        """One past the group's last per-type ID."""
        return self.refs[-1].stop

    @property
    def rows(self) -> int:
        """Rows of all files of the group."""
        return self.stop - self.start

    @property
    def paths(self) -> tuple[str, ...]:
        """The group's files, in order."""
        return tuple(r.path for r in self.refs)

    def locate(self, row: int) -> tuple[ChunkRef, int]:
        """The file holding the group's 0-based ``row`` and the row's 0-based index in it."""
        target = self.start + int(row)
        for ref in self.refs:  # only on the error path: a scan is fine
            if ref.start <= target < ref.stop:
                return ref, target - ref.start
        raise IndexError(f"row {row} is outside the group's {self.rows} rows")


def group_ranges(weights: Sequence[int], task_bytes: int) -> list[tuple[int, int]]:
    """Consecutive index ranges ``[lo, hi)`` of ``weights`` (bytes per item) of about
    ``task_bytes`` each; see the module docstring. Every item is in exactly one range.

    >>> group_ranges([80] * 5, 160)
    [(0, 2), (2, 4), (4, 5)]
    >>> group_ranges([0, 500, 0, 10, 10, 0], 100)
    [(0, 2), (2, 6)]
    """
    if not weights:
        return []
    ends = np.cumsum(np.asarray(weights, dtype=np.int64)).tolist()
    total = int(ends[-1])
    if total == 0:
        return [(0, len(weights))]
    n = -(-total // max(int(task_bytes), 1))
    out: list[tuple[int, int]] = []
    lo, first = 0, 0  # first: quotas completed before the current range starts
    for i, end in enumerate(ends):
        if end * n >= total * (first + 1):  # the current range reached the end of its quota
            out.append((lo, i + 1))
            lo, first = i + 1, end * n // total
    if lo < len(weights):  # empty items after the last full quota join the last range
        out[-1] = (out[-1][0], len(weights))
    return out


def group_chunks(refs: Sequence[ChunkRef], row_bytes: int, task_bytes: int) -> list[ChunkGroup]:
    """Consecutive groups of ``refs`` of about ``task_bytes`` decoded bytes each.

    See the module docstring. ``row_bytes`` is the decoded size of one row; every
    ref belongs to exactly one group, in order; an empty ``refs`` gives no group.

    >>> refs = [ChunkRef(path=f"f{i}", fmt="numpy", options={}, start=10 * i, stop=10 * i + 10) for i in range(5)]
    >>> [g.paths for g in group_chunks(refs, row_bytes=8, task_bytes=160)]
    [('f0', 'f1'), ('f2', 'f3'), ('f4',)]
    >>> [len(g.refs) for g in group_chunks(refs, row_bytes=8, task_bytes=1)]
    [1, 1, 1, 1, 1]
    """
    weights = [r.rows * max(int(row_bytes), 1) for r in refs]
    return [ChunkGroup(refs[lo:hi]) for lo, hi in group_ranges(weights, task_bytes)]


def resolve_task_bytes(task_bytes: int | str | None) -> int:
    """The task size in bytes: ``task_bytes`` (an int, or a size such as ``"64MiB"``),
    else ``$DGLC_TASK_SIZE``, else :data:`DEFAULT_TASK_BYTES`.

    Raises
    ------
    OptionError
        Not a size, or below 1 byte.
    """
    value: int | str = task_bytes if task_bytes is not None else os.environ.get(TASK_SIZE_ENV, DEFAULT_TASK_BYTES)
    where = "task size" if task_bytes is not None else f"${TASK_SIZE_ENV}"
    out = parse_size(value, where)
    if out < 1:
        raise OptionError(f"{where}: expected at least 1 byte, found {value!r}")
    return out
