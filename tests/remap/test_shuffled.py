"""``orig_*ids.dgl`` in any order (DGL's pipeline numbers a type's items in no known order): numpy truth.

The partitions of the ``hetero`` fixture are rewritten with each partition's
``orig_nids.dgl`` / ``orig_eids.dgl`` entries permuted at random; remap and lookup only
read the partition config and those files, so the permuted files define the mapping,
and the truth is plain numpy: result row ``i`` (new ID ``i``) belongs to original ID
``orig[i]``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.io.dgl import write_tensor_dict
from dgl_chunked.lookup import lookup_ids
from dgl_chunked.remap import RemapError, ResultSource, remap_results
from dgl_chunked.remap.shuffled import slabs
from dgl_chunked.remap.spaces import TypeSpace

from .conftest import Parts
from .shuffled_parts import entries, orig_ids


def test_slabs_tile_each_partition() -> None:
    grid = slabs(TypeSpace("node", "t", (5, 0, 3)), 2)
    assert grid.bounds == (0, 2, 4, 5, 7, 8)
    np.testing.assert_array_equal(grid.counts, [[2, 0, 0], [2, 0, 0], [1, 0, 0], [0, 0, 2], [0, 0, 1]])


@pytest.mark.parametrize("block_bytes", [64 << 20, 4000])
def test_dense_results_follow_the_files(hetero: Parts, shuffled: Path, tmp_path: Path, block_bytes: int) -> None:
    rng = np.random.default_rng(1)
    orig = orig_ids(shuffled, "n", "paper")
    truth = rng.normal(size=(orig.size, 3)).astype(np.float32)  # row of original ID j
    np.save(tmp_path / "new.npy", truth[orig])  # what a trainer writes: row i = new ID i
    eorig = orig_ids(shuffled, "e", "author:writes:paper")
    etruth = rng.integers(0, 1 << 40, eorig.size)
    np.save(tmp_path / "enew.npy", etruth[eorig])
    result = remap_results(
        shuffled,
        {"paper": str(tmp_path / "new.npy"), "writes": str(tmp_path / "enew.npy")},
        tmp_path / "out",
        block_bytes=block_bytes,
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out/nodes/paper.npy"), truth)
    np.testing.assert_array_equal(np.load(tmp_path / "out/edges/author:writes:paper.npy"), etruth)
    assert result.types["node/paper"].mapping == "the partitions' orig_nids.dgl files"
    # the same rows from the unshuffled partitions, written in their own new-ID order, give the same output
    ours = orig_ids(hetero.out, "n", "paper")
    np.save(tmp_path / "ours.npy", truth[ours])
    remap_results(hetero.out, {"paper": str(tmp_path / "ours.npy")}, tmp_path / "ours", block_bytes=block_bytes)
    assert (tmp_path / "ours/nodes/paper.npy").read_bytes() == (tmp_path / "out/nodes/paper.npy").read_bytes()


def test_pairs_subset_and_repeats(shuffled: Path, tmp_path: Path) -> None:
    orig = orig_ids(shuffled, "n", "paper")
    rng = np.random.default_rng(3)
    ids = rng.permutation(orig.size)[: orig.size // 3]
    rows = (ids * 10).astype(np.int64)
    half = ids.size // 2
    for i, sl in enumerate((slice(0, half), slice(half, None))):
        np.save(tmp_path / f"ids-{i}.npy", ids[sl])
        np.save(tmp_path / f"rows-{i}.npy", rows[sl])
    source = ResultSource.pairs(str(tmp_path / "rows-*.npy"), str(tmp_path / "ids-*.npy"))
    result = remap_results(shuffled, {"paper": source}, tmp_path / "out", block_bytes=3000)
    present = np.load(tmp_path / "out/nodes/paper.present.npy")
    got = np.load(tmp_path / "out/nodes/paper.npy")
    want_present = np.zeros(orig.size, bool)
    want_present[orig[ids]] = True
    np.testing.assert_array_equal(present, want_present)
    np.testing.assert_array_equal(got[orig[ids]], rows)
    assert result.types["node/paper"].present == ids.size
    np.save(tmp_path / "ids-1.npy", np.concatenate([ids[half:], ids[:1]]))
    np.save(tmp_path / "rows-1.npy", np.concatenate([rows[half:], rows[:1]]))
    with pytest.raises(
        RemapError, match=rf"ids-1.npy row {ids.size - half}: repeats new ID {ids[0]} .*ids-0.npy row 0"
    ):
        remap_results(shuffled, {"paper": source}, tmp_path / "again", block_bytes=3000)


def test_pairs_by_original_id_need_no_order(shuffled: Path, tmp_path: Path) -> None:
    """Pairs naming original IDs (GraphStorm's predict_nids, ``original=True``) place without the mapping."""
    orig = orig_ids(shuffled, "n", "paper")
    rng = np.random.default_rng(5)
    ids = rng.permutation(orig.size)[: orig.size // 2]  # original IDs, in no order
    rows = (ids * 7 + 1).astype(np.int64)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "rows.npy", rows)
    source = ResultSource.pairs(str(tmp_path / "rows.npy"), str(tmp_path / "ids.npy"), original=True)
    result = remap_results(shuffled, {"paper": source}, tmp_path / "out", block_bytes=3000)
    want_present = np.zeros(orig.size, bool)
    want_present[ids] = True
    np.testing.assert_array_equal(np.load(tmp_path / "out/nodes/paper.present.npy"), want_present)
    np.testing.assert_array_equal(np.load(tmp_path / "out/nodes/paper.npy")[ids], rows)
    assert result.types["node/paper"].present == ids.size


def test_an_original_id_named_twice_names_both_places(shuffled: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(shuffled, broken)
    f0, f1 = broken / "part0/orig_nids.dgl", broken / "part1/orig_nids.dgl"
    e0, e1 = entries(f0), entries(f1)
    # swap one ID for one of the same block elsewhere: counts per block stay right, one ID twice, one missing
    e1["paper"] = e1["paper"].copy()
    e1["paper"][2] = e0["paper"][5]
    write_tensor_dict(f1, e1)
    np.save(
        tmp_path / "r.npy", np.zeros(sum(len(entries(f)["paper"]) for f in (f0, f1, broken / "part2/orig_nids.dgl")))
    )
    with pytest.raises(RemapError) as err:
        remap_results(broken, {"paper": str(tmp_path / "r.npy")}, tmp_path / "o", block_bytes=1 << 30)
    text = str(err.value)
    assert f"original ID {int(e0['paper'][5])}" in text and "part0/orig_nids.dgl position 5" in text
    assert "part1/orig_nids.dgl position 2" in text and "TensorPayload" not in text
    with pytest.raises(RemapError, match="position 5"):
        lookup_ids(broken, np.array([0]), tmp_path / "lk", type="paper", by="id", block_rows=1 << 30)
