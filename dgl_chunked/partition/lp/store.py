"""The ``lp`` method's scratch store: where a run's files live and how tasks read them.

Scratch layout of one run (``ROOT`` is a fresh directory under ``LPConfig.scratch_dir``)::

    ROOT/result/<b>.bin              int32   block b's assignment (-1: not placed yet); kept
    ROOT/work/blocks/<b>-tier.bin    int8    degree tier: floor(log2 degree), -1 when isolated
    ROOT/work/blocks/<b>-stratum.bin int32   (node type, first true balance mask)
    ROOT/work/blocks/<b>-weight.bin  int64   owned edges (in-degree + self-loops); zeros
                                             unless balance_edges
    ROOT/work/blocks/<b>-order.bin   int32   local node IDs by falling degree tier
    ROOT/work/blocks/<b>-moves.bin   int64 [4, k]  the round's proposals: local ID,
                                             target, group key, weight
    ROOT/work/edges/<c>-su.bin       uint32  staged entries of staged file c (a slice of at
                                             most 2**21 edges of a read task), block-major:
                                             block-local u
    ROOT/work/edges/<c>-sv.bin       int32/64  ... and the neighbour's orig_nid
    ROOT/work/edges/<c>-loops.bin    int64   self-loop nodes of staged file c, sorted
                                             (the three deleted once every block has
                                             gathered its entries)
    ROOT/work/edges/<b>-u.bin        uint32  block b's staged entries by falling tier of u
    ROOT/work/edges/<b>-v.bin        int32/64  ... and the neighbour's orig_nid

Every file is an array file (:mod:`dgl_chunked.storage.arrays`): written once
through a temporary name, read back by row range with ``readinto``. Node arrays are
one file per node block, so every block task writes its own files (no races); a
rewrite goes to a temporary file renamed over the old one, so a reader never sees
half a file. Plain files, not Zarr: a round reads the whole assignment in
every worker, and Zarr's per-call overhead was most of a small round's cost.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.partition.lp import heap
from dgl_chunked.partition.lp.taskgraph import TaskGraph
from dgl_chunked.storage import fs
from dgl_chunked.storage.arrays import ArrayFile, read_array, write_array
from dgl_chunked.storage.marker import MARKER_NAME
from dgl_chunked.storage.owned import remove_owned, require_owned

__all__ = [
    "Segments",
    "ScratchRoot",
    "create_dirs",
    "edges_file",
    "kept_array",
    "pooled_bytes",
    "read_block",
    "read_result",
    "read_segments",
    "release_pools",
    "remove_files_task",
    "remove_staged",
    "remove_work",
    "save",
    "pooled_array",
    "write_block",
]

_POOLS: dict[int, dict[str, npt.NDArray[Any]]] = {}  # thread ID -> its pooled arrays (see pooled_array)
_KEPT: dict[int, tuple[Hashable, npt.NDArray[Any]]] = {}  # thread ID -> its kept array and key (see kept_array)
Segments = list[tuple[int, int, int]]  # (edge file, first entry, end entry)


@dataclass(frozen=True)
class ScratchRoot:
    """Where a run's scratch files live: a local directory (the fast path: plain
    ``open``, ``readinto``, memory maps, atomic renames) or an fsspec URL (``s3://``)
    that workers on other hosts can reach, with its storage options."""

    path: str
    storage_options: StorageOptions = None

    @property
    def local(self) -> bool:
        return not fs.is_url(self.path)

    def join(self, *parts: str) -> str:
        return os.path.join(self.path, *parts) if self.local else "/".join([self.path.rstrip("/"), *parts])

    def open(self, path: str, mode: str = "rb") -> Any:
        return open(path, mode) if self.local else fs.open_file(path, mode, self.storage_options)

    def makedirs(self, path: str) -> None:
        if self.local:
            os.makedirs(path, exist_ok=True)
        else:
            filesystem, inner = fs.filesystem(path, self.storage_options)
            filesystem.makedirs(inner, exist_ok=True)

    def exists(self) -> bool:
        return os.path.isdir(self.path) if self.local else fs.exists(self.path, self.storage_options)

    def remove(self, path: str) -> None:
        """Remove the file or directory tree ``path`` under this root (the run's own
        scratch, inside its marked work directory); nothing when it is not there."""
        if self.local:
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.exists(path):
                os.remove(path)
            return
        filesystem, inner = fs.filesystem(path, self.storage_options)
        if filesystem.exists(inner):
            filesystem.rm(inner, recursive=True)

    def load(self, path: str, lo: int = 0, hi: int | None = None) -> npt.NDArray[Any]:
        """Rows ``[lo, hi)`` (default: all) of the array file ``path``."""
        return read_array(path, lo, hi, storage_options=self.storage_options)


def create_dirs(root: ScratchRoot) -> None:
    """Create the scratch directories of a run."""
    for sub in (("result",), ("work", "edges"), ("work", "blocks")):
        root.makedirs(root.join(*sub))


def node_file(root: ScratchRoot, b: int, name: str) -> str:
    if name == "part":
        return root.join("result", f"{b}.bin")
    return root.join("work", "blocks", f"{b}-{name}.bin")


def edges_file(root: ScratchRoot, c: int, name: str) -> str:
    return root.join("work", "edges", f"{c}-{name}.bin")


def remove_staged(root: ScratchRoot, num_files: int) -> None:
    """Delete the staging tasks' files (``<c>-su``, ``-sv``, ``-loops`` of each staged file)."""
    for c in range(num_files):
        for name in ("su", "sv", "loops"):
            root.remove(edges_file(root, c, name))


def remove_files_task(root: ScratchRoot, paths: list[str]) -> None:
    """Delete the files ``paths`` under this run's root."""
    for path in paths:
        root.remove(path)


def remove_work(root: ScratchRoot, work: str, pieces: int) -> None:
    """Delete the run's work directory ``work`` (only with our marker, checked first).

    Locally its files go first, split in ``pieces`` tasks, then the rest, the marker last:
    at 10M nodes / 100M edges the driver alone took 2.3-2.6 s, while no task ran (issue
    #38); with the blocks' gathered entries deleted in tasks first (0.66 s of task time),
    2.1 s were still the driver's."""
    if not require_owned(work, verb="removed", storage_options=root.storage_options):
        return
    if root.local:
        files = sorted(os.path.join(d, f) for d, _, names in os.walk(work) for f in names if f != MARKER_NAME)
        tasks = TaskGraph()
        tasks.compute([tasks.add(remove_files_task, root, files[i::pieces]) for i in range(min(pieces, len(files)))])
    remove_owned(work, storage_options=root.storage_options)


def save(root: ScratchRoot, path: str, arr: npt.NDArray[Any]) -> None:
    """Write ``arr`` to ``path`` through a temporary file and an atomic rename (on an
    object store one PUT, which is atomic already)."""
    write_array(path, arr, storage_options=root.storage_options)


def read_block(root: ScratchRoot, b: int, name: str, *, pooled: bool = False) -> npt.NDArray[Any]:
    """Node array ``name`` of block ``b`` (a :func:`pooled_array` array with ``pooled``)."""
    if not pooled:
        return root.load(node_file(root, b, name))
    with ArrayFile(node_file(root, b, name), root.storage_options) as f:
        return f.read(out=pooled_array(f"block-{name}", f.header.rows, f.header.dtype))


def write_block(root: ScratchRoot, b: int, name: str, arr: npt.NDArray[Any]) -> None:
    """Replace node array ``name`` of block ``b``."""
    save(root, node_file(root, b, name), arr)


def read_result(root: ScratchRoot, lo: int, hi: int, block_rows: int) -> npt.NDArray[np.int32]:
    """Output chunk ``[lo, hi)`` of the homogeneous assignment."""
    if hi <= lo:
        return np.empty(0, np.int32)
    pieces = []
    for b in range(lo // block_rows, (hi - 1) // block_rows + 1):
        first = b * block_rows
        part = root.load(node_file(root, b, "part"), max(lo - first, 0), hi - first)
        pieces.append(np.asarray(part, np.int32))
    return np.concatenate(pieces)


def pooled_array(name: str, size: int, dtype: type[np.generic] | np.dtype[Any]) -> npt.NDArray[Any]:
    """A work array of this thread, kept for the next tasks (grown when too small).

    Fresh memory is costly: with Dask's ``MALLOC_TRIM_THRESHOLD_`` every large array
    is a new mapping whose pages fault on first touch, which cost about as much as the
    histogram's arithmetic. The big per-entry and per-node arrays of the histogram,
    restage and proposal tasks are therefore reused. Per worker thread they hold about
    17 bytes per entry of a histogram group (``group_entries``), 25 per entry of the
    largest block's staged entries, 4 per node of a block (the assignment read block
    by block above ``FULL_READ_BYTES``) and 24 per node of a block, until
    :func:`release_pools` (the driver calls it on every worker at the end). Callers
    must not let a pooled array outlive their task.
    """
    pool = _POOLS.setdefault(threading.get_ident(), {})
    buf = pool.get(name)
    if buf is None or buf.dtype != np.dtype(dtype) or buf.size < size:
        buf = pool[name] = np.empty(size + size // 4, dtype)  # headroom: sizes vary a little
    return buf[:size]


def kept_array(key: Hashable, build: Callable[[], npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """``build()``, or the array it returned for the same ``key`` in this thread's last
    call: one array per thread is kept (a new key replaces it), until
    :func:`release_pools`. For arrays that stay the same for a known time, such as the
    whole assignment during one round; callers must not change the array."""
    thread = threading.get_ident()
    kept = _KEPT.get(thread)
    if kept is not None and kept[0] == key:
        return kept[1]
    _KEPT.pop(thread, None)  # the old one is freed before the new one is built
    arr = build()
    _KEPT[thread] = (key, arr)
    return arr


def pooled_bytes() -> dict[int, int]:
    """Bytes of this process's pooled and kept arrays per thread ID (what
    :func:`release_pools` drops; ``benchmarks/bench_lp_memory.py --timeline``)."""
    held = {t: sum(a.nbytes for a in list(pool.values())) for t, pool in list(_POOLS.items())}
    for t, (_, arr) in list(_KEPT.items()):
        held[t] = held.get(t, 0) + arr.nbytes
    return held


def release_pools(*, trim: bool = False) -> None:
    """Drop this process's pooled and kept arrays (arrays still in use stay alive until
    released); with ``trim`` then hand its free heap back (:func:`.heap.give_back_free_heap`).

    ``lp`` trims at its end: the CLI then runs the quality report in the same process
    (as typed: local threads), which started from the 0.2-0.4 GB of free heap that the
    tasks left (1M nodes / 10M edges: 521 -> 343 MB resident after ``malloc_trim``)."""
    _POOLS.clear()
    _KEPT.clear()
    if trim:
        heap.give_back_free_heap()


def read_segments(root: ScratchRoot, segs: Segments, name: str, *, pooled: bool = False) -> npt.NDArray[Any]:
    """The staged entries ``[lo, hi)`` of every listed edge file, concatenated (into a
    :func:`pooled_array` array named ``name`` with ``pooled``, else a new one).

    Read with ``readinto`` into one array, not memory-mapped: mapped file pages fault
    one 4 KiB page at a time, which cost more than the copy.
    """
    out: npt.NDArray[Any] | None = None
    pos = 0
    for c, lo, hi in segs:
        with ArrayFile(edges_file(root, c, name), root.storage_options) as f:
            if out is None:
                size = sum(h - lo_ for _, lo_, h in segs)
                dtype = f.header.dtype
                out = pooled_array(name, size, dtype) if pooled else np.empty(size, dtype)
            f.read(lo, hi, out=out[pos : pos + hi - lo])
        pos += hi - lo
    return out if out is not None else np.empty(0, np.int64)
