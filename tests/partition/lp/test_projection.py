"""lp's projection module: the deletion of a level's files inside a computation."""

from __future__ import annotations

import os
from pathlib import Path

import dask
import numpy as np

from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import projection as P
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.taskgraph import TaskGraph


def _level(tmp_path: Path) -> C.Level:
    root = S.ScratchRoot(tmp_path.as_posix())
    level = C.Level(index=1, offsets=(0, 4, 8, 10), lp_root=root, ml=root.join("ml"))
    level.create()
    for b in range(level.num_blocks):
        for name in ("label", "cw", "cid"):
            C.save(level.url(f"{name}-{b}"), np.arange(level.rows(b), dtype=np.int64))
    return level


def _files(level: C.Level) -> list[str]:
    return sorted(os.listdir(os.path.join(level.ml, "1")))


def test_removed_after_deletes_every_blocks_files_once_the_tasks_before_ran(tmp_path: Path) -> None:
    """The clustering files go in the contraction's computation, one task per block,
    after the tasks reading them; the cluster maps stay."""
    level = _level(tmp_path)
    tasks = TaskGraph()
    seen: list[list[str]] = []
    reads = [tasks.add(lambda b: seen.append(_files(level)), b) for b in range(level.num_blocks)]
    with dask.config.set(scheduler="threads"):
        tasks.compute(reads + P.removed_after(tasks, level, ("label", "cw"), reads))
    assert len(seen) == 3 and all(len(files) == 9 for files in seen)  # every reader saw every file
    assert _files(level) == ["cid-0.bin", "cid-1.bin", "cid-2.bin"]
