"""The multilevel ``lp`` scratch: coarse levels' entries are stored in the narrowest
integer type that holds them, read back as int64, and the assignment is the one the
wide (int64) files give."""

from __future__ import annotations

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
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import store as S
from dgl_chunked.storage.arrays import ArrayFile
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
        ([], "u1"),
    ],
)
def test_narrow_dtype_is_the_narrowest_that_holds_every_value(values: list[int], dtype: str) -> None:
    assert ml_tasks.narrow_dtype(np.array(values, np.int64)) == np.dtype(dtype)


def test_narrow_split_round_trips_every_piece(tmp_path: Path) -> None:
    url = ml_tasks.ScratchFile((tmp_path / "e.bin").as_posix(), None)
    rows = np.array([[5, 0, 7, 1, 2], [70_000, 3, 9, 0, 65_536], [1, 1, 400, 2, 3]], np.int64)
    ml_tasks.save_split(url, rows, np.array([1, 0, 1, 2, 0]), 3, narrow=True)
    with ArrayFile(url.url) as f:
        assert f.header.dtype == np.dtype("u4")  # 70_000 needs 32 bits, nothing needs 64
    for t, cols in enumerate(([1, 4], [0, 2], [3])):
        got = ml_tasks.load_piece(url, t)
        assert got.dtype == np.dtype("u4")
        np.testing.assert_array_equal(got, rows[:, cols])


def test_read_entries_widens_every_writer_to_int32_or_int64(tmp_path: Path) -> None:
    """Writers of one level pick their own types (here uint8, uint16, int64); a block's
    entries come back in writer order, as int32 when every value and the weights' sum fit
    it, else int64 (block 0 has an ID over 2**32)."""
    root = S.ScratchRoot(tmp_path.as_posix())
    # three blocks: three writers, each with entries for blocks 0 and 1 and none for block 2
    level = ml_tasks.Level(index=1, offsets=(0, 4, 8, 12), lp_root=root, ml=posixpath.join(root.path, "ml"))
    level.create()
    rows = [
        np.array([[0, 3], [1, 6], [2, 1]], np.int64),  # uint8
        np.array([[1, 2], [7, 5], [300, 4]], np.int64),  # uint16
        np.array([[2, 0], [2**33, 4], [1, 1]], np.int64),  # int64 (an ID over 2**32)
    ]
    for s, r in enumerate(rows):
        ml_tasks.save_split(level.url(f"e-{s}"), r, np.array([0, 1]), 3, narrow=True)
    for b in (0, 1):
        u, v, w = ml_tasks.read_entries(level, b)
        assert u.dtype == v.dtype == w.dtype == np.dtype(np.int64 if b == 0 else np.int32)
        want = np.concatenate([r[:, [b]] for r in rows], axis=1)
        np.testing.assert_array_equal(np.vstack([u, v, w]), want)
    assert ml_tasks.read_entries(level, 2)[0].dtype == np.dtype(np.int32)  # no entries: the IDs' type


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

    monkeypatch.setattr(ml_tasks, "write_array", spy)
    narrow = _lp(graph)
    levels = {int(p.split("/")[-2]) for p, _, _ in written}
    assert len(levels) >= 2, levels  # several coarse levels really written
    for path, dtype, top in written:
        assert dtype.itemsize <= 4 and dtype.kind == "u", (path, dtype)
        assert dtype == ml_tasks.narrow_dtype(np.array([0, top])), (path, dtype, top)
    assert any(dtype.itemsize < 4 for _, dtype, _ in written)  # small coarse levels: uint16 or less

    written.clear()
    monkeypatch.setattr(ml_tasks, "narrow_dtype", lambda values: np.dtype(np.int64))
    wide = _lp(graph)
    assert written and all(dtype == np.dtype(np.int64) for _, dtype, _ in written)
    np.testing.assert_array_equal(narrow, wide)
    assert narrow.min() >= 0 and narrow.max() == 3
