"""The multilevel ``lp`` scratch: coarse levels' entries are stored in the narrowest
integer type that holds them, column by column per destination block, read back as
int32 or int64, and the assignment is the one the wide (int64) files give."""

from __future__ import annotations

import dataclasses
import posixpath
import re
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, register_method
from dgl_chunked.partition.lp import coarsen_tasks as ml_tasks
from dgl_chunked.partition.lp import entry_kernels as EK
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import store as S
from dgl_chunked.storage.arrays import ArrayFile, read_array
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

pytest.importorskip("pymetis")

MASKS = ["train_mask", "val_mask", "test_mask"]
# small blocks and a tiny in-memory budget: several blocks and coarsening levels
COARSE = LPConfig(block_rows=2048, coarse_nodes=200, coarse_entries=1 << 30, purify_rounds=2)


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([0, 255], "u1"),
        ([0, 256], "u2"),
        ([3, 65_535], "u2"),
        ([0, 65_536], "u4"),
        ([1, 2**32 - 1], "u4"),
        ([0, 2**32], "i8"),
        ([-1, 127], "i1"),
        ([-129, 5], "i2"),
        ([-1, 2**31 - 1], "i4"),
        ([-1, 2**31], "i8"),
    ],
)
def test_narrow_dtype_is_the_narrowest_that_holds_every_value(values: list[int], dtype: str) -> None:
    assert EK.narrow_dtype(min(values), max(values)) == np.dtype(dtype)


def test_entry_file_pieces_hold_each_block_column_by_column(tmp_path: Path) -> None:
    """Entries of a writer go to the pieces of their blocks (``u`` made block-local, in
    their order), each piece its ``u``, then ``v``, then ``w``, in the narrowest type of
    the file's values; a ``u`` outside every block is dropped."""
    url = ml_tasks.ScratchFile((tmp_path / "e.bin").as_posix(), None)
    offsets = np.array([0, 10, 20, 30])
    u = np.array([15, 3, 12, 29, 0, 30, -1])
    v = np.array([70_000, 3, 9, 0, 65_536, 1, 1])
    w = np.array([1, 1, 400, 2, 3, 1, 1])
    ml_tasks.save_entries(url, u, v, w, offsets)
    with ArrayFile(url.url) as f:
        assert f.header.dtype == np.dtype("u4")  # 70_000 needs 32 bits, nothing needs 64
        assert f.header.bounds.tolist() == [0, 6, 12, 15]  # 3 values per entry
    for t, cols in enumerate(([1, 4], [0, 2], [3])):
        got = read_array(url.url, piece=t)
        assert got.dtype == np.dtype("u4")
        want = np.stack([u[cols] - offsets[t], v[cols], w[cols]])
        np.testing.assert_array_equal(got.reshape(3, len(cols)), want)


def test_read_entries_widens_every_writer_to_int32_or_int64(tmp_path: Path) -> None:
    """Writers of one level pick their own types (here uint8, uint16, uint32); a block's
    entries come back in writer order, as int32 when the level's IDs and the weights'
    sum fit it, else int64 (block 1's weights sum to 2**31)."""
    root = S.ScratchRoot(tmp_path.as_posix())
    # three blocks: three writers, each with entries for blocks 0 and 1 and none for block 2
    level = ml_tasks.Level(index=1, offsets=(0, 4, 8, 12), lp_root=root, ml=posixpath.join(root.path, "ml"))
    level.create()
    rows = [
        np.array([[0, 7], [1, 6], [2, 1]], np.int64),  # uint8
        np.array([[1, 6], [7, 5], [300, 2**31 - 2]], np.int64),  # uint16, then uint32 (a heavy entry)
        np.array([[2, 4], [2, 4], [1, 1]], np.int64),  # uint8
    ]
    for s, r in enumerate(rows):
        ml_tasks.save_entries(level.url(f"e-{s}"), r[0], r[1], r[2], np.asarray(level.offsets))
    for b in (0, 1):
        u, v, w = ml_tasks.read_entries(level, b)
        assert u.dtype == v.dtype == w.dtype == np.dtype(np.int32 if b == 0 else np.int64)
        want = np.concatenate([r[:, [b]] for r in rows], axis=1)
        want[0] -= level.offsets[b]
        np.testing.assert_array_equal(np.vstack([u, v, w]), want)
    assert ml_tasks.read_entries(level, 2)[0].dtype == np.dtype(np.int32)  # no entries: the IDs' type
    wide = dataclasses.replace(level, offsets=(0, 4, 8, 2**31))  # IDs from 2**31: int64
    assert all(x.dtype == np.dtype(np.int64) for x in ml_tasks.read_entries(wide, 0))


def test_a_level_of_known_light_weight_sums_no_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A level whose entries' weight is known below 2**31 (``Level.weight``, from the
    contraction) reads int32 without summing a block's weights; one known at 2**31 or
    more, or not known, sums each int32 block's and widens the heavy one (block 1)."""
    root = S.ScratchRoot(tmp_path.as_posix())
    summed: list[int] = []
    real = ml_tasks._weight_sum_at_least
    monkeypatch.setattr(ml_tasks, "_weight_sum_at_least", lambda w, limit: summed.append(w.size) or real(w, limit))

    def level_of(index: int, heavy_weight: int) -> ml_tasks.Level:
        lv = ml_tasks.Level(index=index, offsets=(0, 4, 8), lp_root=root, ml=posixpath.join(root.path, "ml"))
        lv.create()
        rows = [np.array([[0, 5], [1, 6], [3, heavy_weight]]), np.array([[2, 6], [2, 1], [4, 1]])]
        for s, r in enumerate(rows):
            ml_tasks.save_entries(lv.url(f"e-{s}"), r[0], r[1], r[2], np.asarray(lv.offsets))
        return dataclasses.replace(lv, weight=8 + heavy_weight)

    light = level_of(1, 2)
    assert [ml_tasks.read_entries(light, b)[2].dtype for b in (0, 1)] == [np.dtype(np.int32)] * 2 and summed == []
    heavy = level_of(2, 2**31 - 1)
    for lv in (heavy, dataclasses.replace(heavy, weight=None)):
        summed.clear()
        assert [ml_tasks.read_entries(lv, b)[2].dtype for b in (0, 1)] == [np.dtype(np.int32), np.dtype(np.int64)]
        assert summed == [2, 2]
    np.testing.assert_array_equal(ml_tasks.read_entries(heavy, 1)[2], [2**31 - 1, 1])


def _graph(tmp: Path) -> ChunkedGraph:
    src, dst = planted_partition_edges(8000, 60_000, 16, skewed=False)
    r = np.random.default_rng(1).random(8000)
    masks = {"train_mask": r < 0.6, "val_mask": (r >= 0.6) & (r < 0.8), "test_mask": r >= 0.8}
    truth = GraphTruth(
        graph_name="planted",
        num_nodes={"_N": 8000},
        edges={"_N:_E:_N": (src, dst)},
        node_data={"_N": masks},
        edge_data={},
    )
    write_graph_from_truth(tmp, truth, edge_chunks=3, feature_chunks=2)
    return open_chunked_graph(tmp / "metadata.json")


def _lp(graph: ChunkedGraph) -> np.ndarray:
    lp_module._RESULTS.clear()
    register_method("lp", LPMethod(COARSE), overwrite=True)
    try:
        with dask.config.set(scheduler="synchronous"):
            return np.asarray(assign_partitions(graph, 4, method="lp", balance_ntypes=MASKS)["_N"].compute())
    finally:
        register_method("lp", LPMethod(), overwrite=True)


def test_coarse_entries_are_written_narrow_and_partition_as_wide_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every coarse level's entry file (``ML/<L>/e-<s>.bin``) is written in the narrowest
    type of its values (here at most uint32: 8000 nodes), never int64; with the files
    forced wide (int64, as before) the assignment is the same array."""
    graph = _graph(tmp_path / "g")
    written: list[tuple[str, np.dtype[Any], int]] = []
    original = ml_tasks.write_array

    def spy(path: str, arr: np.ndarray, **kw: Any) -> None:
        if re.search(r"/ml/\d+/e-\d+\.bin$", path):
            written.append((path, arr.dtype, int(arr.max()) if arr.size else 0))
        original(path, arr, **kw)

    def spy_parts(path: str, parts: Any, *, dtype: np.dtype[Any], **kw: Any) -> None:
        tops: list[int] = []

        def seen() -> Any:
            for part in parts:
                assert part.dtype == dtype
                tops.append(int(part.max()) if part.size else 0)
                yield part

        original_parts(path, seen(), dtype=dtype, **kw)
        if re.search(r"/ml/\d+/e-\d+\.bin$", path):
            written.append((path, np.dtype(dtype), max(tops, default=0)))

    original_parts = ml_tasks.write_array_parts
    monkeypatch.setattr(ml_tasks, "write_array", spy)
    monkeypatch.setattr(ml_tasks, "write_array_parts", spy_parts)
    narrow = _lp(graph)
    levels = {int(p.split("/")[-2]) for p, _, _ in written}
    assert len(levels) >= 2, levels  # several coarse levels really written
    for path, dtype, top in written:
        assert dtype.itemsize <= 4 and dtype.kind == "u", (path, dtype)
        assert dtype == EK.narrow_dtype(0, top), (path, dtype, top)
    assert any(dtype.itemsize < 4 for _, dtype, _ in written)  # small coarse levels: uint16 or less

    written.clear()
    monkeypatch.setattr(EK, "narrow_dtype", lambda lo, hi: np.dtype(np.int64))
    wide = _lp(graph)
    assert written and all(dtype == np.dtype(np.int64) for _, dtype, _ in written)
    np.testing.assert_array_equal(narrow, wide)
    assert narrow.min() >= 0 and narrow.max() == 3


def test_release_takes_every_writers_leavers_off(tmp_path: Path) -> None:
    """The release takes the weight of every node that left a block's clusters off
    them, whichever block's writer sent it (several leavers per cluster, one writer
    sending none), and counts the clusters still holding a node."""
    root = S.ScratchRoot(tmp_path.as_posix())
    level = ml_tasks.Level(index=1, offsets=(0, 6, 10, 13), lp_root=root, ml=root.join("ml"), num_strata=2, owned=True)
    level.create()
    rng = np.random.default_rng(1)
    want = rng.integers(0, 2**40, (13, level.width))
    want[[0, 2, 7, 11]] = 0  # 0 and 7 lose their last nodes; 2 and 11 held none
    start = want.copy()
    for b in range(level.num_blocks):
        old = rng.choice([0, 1, 3, 6, 7, 12], 30) if b != 2 else np.empty(0, np.int64)  # writer 2 sends nothing
        weight = rng.integers(0, 2**28, (old.size, level.width))
        np.add.at(start, old, weight)
        block = np.searchsorted(np.asarray(level.offsets), old, side="right") - 1
        ml_tasks.save_split(level.url(f"left-{b}"), np.vstack([old, weight.T]), block, level.num_blocks)
    for t in range(level.num_blocks):
        ml_tasks.save(level.url(f"cw-{t}"), start[level.offsets[t] : level.offsets[t + 1]])
    named = [ml_tasks.release_task(level, t) for t in range(level.num_blocks)]
    assert named == [4, 3, 2]  # clusters 1, 3, 4, 5 | 6, 8, 9 | 10, 12
    for t in range(level.num_blocks):
        np.testing.assert_array_equal(
            read_array(level.url(f"cw-{t}").url), want[level.offsets[t] : level.offsets[t + 1]]
        )
