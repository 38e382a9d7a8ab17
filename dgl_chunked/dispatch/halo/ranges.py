"""A partition's HALO set and local source IDs in memory bounded by a budget.

The HALO set is a :class:`~dgl_chunked.dispatch.halo.bitmap.HaloBitmap` over the
node-ID space (0.19 byte per ID). When that fits the writer's budget
(:func:`build_halo` returns a :class:`MemoryHalo`), one pass over the partition's
staged sources fills it and the writer relabels the sources segment by segment
as it streams them: HALO node ``v`` becomes ``n_inner + rank(v)``.

Beyond the budget (about 350M nodes per 64 MiB) the ID space is cut into ranges
whose bitmaps fit (:class:`RangedHalo`). For each range, one pass over the staged
sources fills the range's bitmap and a second rewrites the sources of that range
into local IDs. The HALO IDs (ascending, range after range) and the local sources
go to two files in a worker-local temporary directory, read back block by block by
the writer; they never leave the task. Memory: one range's bitmap plus one staged
segment, whatever the node count. Cost: two reads of the partition's staged
sources per range.

Both give the local IDs of the in-memory path: inner node ``v`` is ``v - lo`` and
the ``k``-th HALO node in ascending new-ID order is ``n_inner + k``, so the output
bytes do not depend on which path ran.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.halo.bitmap import HaloBitmap
from dgl_chunked.dispatch.plan import PartitionPlan

__all__ = [
    "HaloStreams",
    "MemoryHalo",
    "RangedHalo",
    "build_halo",
    "build_ranged_halo",
    "owned_halo_bitmap",
    "range_width",
]

READ_BLOCK = 1 << 20
INT64 = np.dtype(np.int64)


def range_width(budget_bytes: int) -> int:
    """Node IDs per range whose bitmap fits ``budget_bytes`` (a multiple of 64, at least 64)."""
    words = max(1, budget_bytes // (8 + 4))
    return 64 * words


def _local(src: npt.NDArray[np.int64], lo: int, hi: int, first_local: int, bitmap: HaloBitmap) -> npt.NDArray[np.int64]:
    """Local IDs of sources: inner ``v - lo``; the HALO ones of ``bitmap``'s range ``first_local + rank``."""
    out = src - lo
    halo = np.flatnonzero((src < lo) | (src >= hi))
    if halo.size:
        out[halo] = first_local + bitmap.rank(src[halo])
    return out


def owned_halo_bitmap(plan: PartitionPlan, part: int, lo: int, hi: int, start: int, stop: int) -> HaloBitmap:
    """The sources of ``part``'s owned edges in ``[start, stop)`` that are not inner (``[lo, hi)``), frozen."""
    bitmap = HaloBitmap(start, stop)
    for _, src in plan.edge_segments(part, "new_src"):
        # inner sources never reach the bitmap: its scattered read-modify-writes miss the
        # cache once the ID space outgrows it (20M sources into a 30M-node bitmap: 0.32 s
        # with the inner half, 0.26 s without; 0.23 s into a 1M-node one either way)
        bitmap.add(src[(src < lo) | (src >= hi)])
    bitmap.freeze()
    return bitmap


@dataclass
class MemoryHalo:
    """The HALO set of a partition as one bitmap over the whole node-ID space."""

    plan: PartitionPlan
    part: int
    lo: int
    hi: int
    bitmap: HaloBitmap

    @property
    def num_halo(self) -> int:
        return self.bitmap.count

    def halo_blocks(self) -> Iterator[npt.NDArray[np.int64]]:
        """The HALO node IDs, ascending, in blocks."""
        yield from self.bitmap.ids()

    def local_src_blocks(self) -> Iterator[npt.NDArray[np.int64]]:
        """Local IDs of the owned edges' sources, in edge order, segment by segment."""
        n_inner = self.hi - self.lo
        for _, src in self.plan.edge_segments(self.part, "new_src"):
            yield _local(src, self.lo, self.hi, n_inner, self.bitmap)

    def remove(self) -> None:
        """Nothing to clean up: it lives in memory."""


@dataclass
class RangedHalo:
    """The files a ranged build wrote: HALO IDs and local sources, int64 each."""

    workdir: str
    num_halo: int
    num_sources: int

    @property
    def halo_path(self) -> str:
        return os.path.join(self.workdir, "halo.i8")

    @property
    def local_src_path(self) -> str:
        return os.path.join(self.workdir, "local_src.i8")

    def halo_blocks(self) -> Iterator[npt.NDArray[np.int64]]:
        """The HALO node IDs, ascending, in blocks."""
        yield from _read_blocks(self.halo_path, self.num_halo)

    def local_src_blocks(self) -> Iterator[npt.NDArray[np.int64]]:
        """Local IDs of the owned edges' sources, in edge order, in blocks."""
        yield from _read_blocks(self.local_src_path, self.num_sources)

    def remove(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


HaloStreams = MemoryHalo | RangedHalo
"""What a partition writer reads its HALO nodes and local sources from."""


def _read_blocks(path: str, count: int) -> Iterator[npt.NDArray[np.int64]]:
    with open(path, "rb") as f:
        for lo in range(0, count, READ_BLOCK):
            n = min(READ_BLOCK, count - lo)
            yield np.frombuffer(f.read(n * INT64.itemsize), dtype=np.int64, count=n)


def build_halo(plan: PartitionPlan, part: int, lo: int, hi: int, budget_bytes: int) -> HaloStreams:
    """Partition ``part``'s HALO set: in memory when its bitmap fits ``budget_bytes``, else by ranges.

    Parameters
    ----------
    plan, part
        The partition writer's plan and partition.
    lo, hi
        The partition's inner new-ID range.
    budget_bytes
        Memory for the HALO bitmap.
    """
    total = int(plan.node_layout.part_starts[-1])
    if HaloBitmap.nbytes(total) <= budget_bytes:
        return MemoryHalo(plan, part, lo, hi, owned_halo_bitmap(plan, part, lo, hi, 0, total))
    return build_ranged_halo(plan, part, lo, hi, budget_bytes)


def build_ranged_halo(plan: PartitionPlan, part: int, lo: int, hi: int, budget_bytes: int) -> RangedHalo:
    """Write partition ``part``'s HALO IDs and local sources to a temporary directory, range by range."""
    total = int(plan.node_layout.part_starts[-1])
    width = range_width(budget_bytes)
    num_sources = int(plan.edge_layout.sizes()[part].sum())
    out = RangedHalo(tempfile.mkdtemp(prefix=f"dglc-halo-{part}-"), 0, num_sources)
    try:
        with open(out.local_src_path, "wb") as f:
            f.truncate(num_sources * INT64.itemsize)
        with open(out.halo_path, "wb") as halo_file, open(out.local_src_path, "r+b") as src_file:
            for r0 in range(0, total, width):
                bitmap = owned_halo_bitmap(plan, part, lo, hi, r0, min(r0 + width, total))
                for ids in bitmap.ids():
                    halo_file.write(ids.tobytes())
                _rewrite_range(plan, part, src_file.fileno(), bitmap, lo, hi, (hi - lo) + out.num_halo)
                out.num_halo += bitmap.count
    except BaseException:
        out.remove()
        raise
    return out


def _rewrite_range(
    plan: PartitionPlan, part: int, fd: int, bitmap: HaloBitmap, lo: int, hi: int, first_local: int
) -> None:
    """Store the local IDs of the sources in ``bitmap``'s range, segment by segment (read, patch, write)."""
    pos = 0
    for _, src in plan.edge_segments(part, "new_src"):
        hit = np.flatnonzero((src >= bitmap.start) & (src < bitmap.stop))
        if hit.size:
            size = src.shape[0] * INT64.itemsize
            local = np.frombuffer(bytearray(os.pread(fd, size, pos * INT64.itemsize)), dtype=np.int64)
            local[hit] = _local(src[hit], lo, hi, first_local, bitmap)
            os.pwrite(fd, local.tobytes(), pos * INT64.itemsize)
        pos += src.shape[0]
