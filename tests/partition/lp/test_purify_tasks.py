"""The ``lp`` purification's tasks: the coarsest level's node weights summed again
from every writer's pieces."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dgl_chunked.partition.lp import coarsen_tasks as ml_tasks
from dgl_chunked.partition.lp import purify_tasks
from dgl_chunked.partition.lp import store as S
from dgl_chunked.storage.arrays import read_array


def test_coarse_weights_sum_every_writers_piece(tmp_path: Path) -> None:
    """A coarse block's node weights are the sums over every writer's rows for it
    (several rows per node, from several writers, some writers sending none)."""
    root = S.ScratchRoot(tmp_path.as_posix())
    coarse = ml_tasks.Level(index=3, offsets=(0, 5, 9, 12), lp_root=root, ml=root.join("ml"), num_strata=2, owned=True)
    coarse.create()
    rng = np.random.default_rng(0)
    want = np.zeros((12, coarse.width), np.int64)
    for b in range(coarse.num_blocks):
        node = rng.integers(0, 12, 40) if b != 1 else np.empty(0, np.int64)  # writer 1 sends nothing
        weight = rng.integers(0, 2**40, (40 if b != 1 else 0, coarse.width))
        np.add.at(want, node, weight)
        block = np.searchsorted(np.asarray(coarse.offsets), node, side="right") - 1
        rows = np.vstack([node - np.asarray(coarse.offsets)[block], weight.T])
        ml_tasks.save_split(coarse.url(f"wp-{b}"), rows, block, coarse.num_blocks)
    for t in range(coarse.num_blocks):
        purify_tasks.coarse_weights_task(coarse, t)
        got = read_array(coarse.url(f"w-{t}").url)
        np.testing.assert_array_equal(got, want[coarse.offsets[t] : coarse.offsets[t + 1]])
