"""lookup on partitions whose ``orig_*ids.dgl`` are in random order: the shuffle route, against numpy truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dgl_chunked.lookup import lookup_ids
from tests.remap.shuffled_parts import entries, orig_ids


def test_lookup_follows_the_files_and_each_partition_ascends(shuffled: Path, tmp_path: Path) -> None:
    orig = orig_ids(shuffled, "n", "paper")
    inverse = np.empty_like(orig)
    inverse[orig] = np.arange(orig.size)
    rng = np.random.default_rng(4)
    queries = rng.permutation(orig.size)[: orig.size // 2]
    sizes = [len(entries(f)["paper"]) for f in sorted(shuffled.glob("part*/orig_nids.dgl"))]
    ends = np.cumsum(sizes)
    frame = pd.DataFrame({"id": queries, "label": queries * 3, "vec": list(np.stack([queries, -queries], 1))})
    result = lookup_ids(
        shuffled, frame, tmp_path / "lk", type="paper", column="id", labels=["label", "vec"], by="id", block_rows=150
    )
    seen = []
    for p in range(len(sizes)):
        nids = np.load(tmp_path / f"lk/part{p}/paper.nids.npy")
        found = np.load(tmp_path / f"lk/part{p}/paper.orig_nids.npy")
        assert (np.diff(nids) > 0).all()
        np.testing.assert_array_equal(nids, inverse[found])
        np.testing.assert_array_equal(np.load(tmp_path / f"lk/part{p}/paper.label.npy"), found * 3)
        np.testing.assert_array_equal(np.load(tmp_path / f"lk/part{p}/paper.vec.npy"), np.stack([found, -found], 1))
        assert ((nids >= ends[p] - sizes[p]) & (nids < ends[p])).all()
        seen.append(found)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.sort(queries))
    assert sum(result.rows) == queries.size
