"""A partition's HALO set and local source IDs in bounded memory, range by range.

When the dense HALO tables of the whole node-ID space (5 bytes per ID) exceed the
writer's budget, the ID space is cut into ranges of ``budget // 5`` IDs. For each
range, one pass over the partition's staged sources flags the HALO nodes of the
range (a bool per ID), a cumulative sum turns the flags into ranks (an int32 per
ID), and a second pass rewrites the sources of that range into local IDs. The
HALO IDs (ascending, range after range) and the local sources go to two files in a
worker-local temporary directory, read back block by block by the writer; they
never leave the task. Memory: the range tables plus one staged segment, whatever
the node count. Cost: two reads of the partition's staged sources per range.

The local IDs are those of the in-memory path: inner node ``v`` is ``v - lo`` and
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

from dgl_chunked.dispatch.plan import PartitionPlan

__all__ = ["RangedHalo", "build_ranged_halo", "DENSE_BYTES_PER_ID"]

DENSE_BYTES_PER_ID = 5
"""Dense HALO tables: a flag and an int32 rank per node ID of a range."""
READ_BLOCK = 1 << 20
INT64 = np.dtype(np.int64)


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


def _read_blocks(path: str, count: int) -> Iterator[npt.NDArray[np.int64]]:
    with open(path, "rb") as f:
        for lo in range(0, count, READ_BLOCK):
            n = min(READ_BLOCK, count - lo)
            yield np.frombuffer(f.read(n * INT64.itemsize), dtype=np.int64, count=n)


def _flag_range(plan: PartitionPlan, part: int, r0: int, r1: int, lo: int, hi: int) -> npt.NDArray[np.bool_]:
    """Flags of the range's IDs that are sources of this partition's edges and not inner."""
    marks = np.zeros(r1 - r0, dtype=bool)
    for _, src in plan.edge_segments(part, "new_src"):
        marks[src[(src >= r0) & (src < r1)] - r0] = True
    inner_lo, inner_hi = max(lo, r0), min(hi, r1)
    if inner_hi > inner_lo:
        marks[inner_lo - r0 : inner_hi - r0] = False
    return marks


def build_ranged_halo(plan: PartitionPlan, part: int, lo: int, hi: int, budget_bytes: int) -> RangedHalo:
    """Write partition ``part``'s HALO IDs and local sources to a temporary directory.

    Parameters
    ----------
    plan, part
        The partition writer's plan and partition.
    lo, hi
        The partition's inner new-ID range.
    budget_bytes
        Memory for the range tables: ranges hold ``budget_bytes // 5`` IDs.
    """
    total = int(plan.node_layout.part_starts[-1])
    span = max(1, budget_bytes // DENSE_BYTES_PER_ID)
    n_inner = hi - lo
    num_sources = int(plan.edge_layout.sizes()[part].sum())
    out = RangedHalo(tempfile.mkdtemp(prefix=f"dglc-halo-{part}-"), 0, num_sources)
    try:
        with open(out.local_src_path, "wb") as f:
            f.truncate(num_sources * INT64.itemsize)
        with open(out.halo_path, "wb") as halo_file, open(out.local_src_path, "r+b") as src_file:
            for r0 in range(0, total, span):
                r1 = min(r0 + span, total)
                marks = _flag_range(plan, part, r0, r1, lo, hi)
                halo_file.write((np.flatnonzero(marks) + r0).astype(np.int64).tobytes())
                rank = np.cumsum(marks, dtype=np.int32)
                del marks
                rank -= 1
                _rewrite_range(plan, part, src_file.fileno(), rank, r0, r1, lo, hi, n_inner + out.num_halo)
                out.num_halo += int(rank[-1]) + 1 if rank.size else 0
    except BaseException:
        out.remove()
        raise
    return out


def _rewrite_range(
    plan: PartitionPlan,
    part: int,
    fd: int,
    rank: npt.NDArray[np.int32],
    r0: int,
    r1: int,
    lo: int,
    hi: int,
    first_local: int,
) -> None:
    """Store the local IDs of the sources in ``[r0, r1)``, segment by segment (read, patch, write)."""
    pos = 0
    for _, src in plan.edge_segments(part, "new_src"):
        hit = np.flatnonzero((src >= r0) & (src < r1))
        if hit.size:
            size = src.shape[0] * INT64.itemsize
            local = np.frombuffer(bytearray(os.pread(fd, size, pos * INT64.itemsize)), dtype=np.int64)
            v = src[hit].astype(np.int64, copy=False)
            inner = (v >= lo) & (v < hi)
            local[hit] = np.where(inner, v - lo, first_local + rank[v - r0])
            os.pwrite(fd, local.tobytes(), pos * INT64.itemsize)
        pos += src.shape[0]
