"""The multilevel ``lp`` tables looked up by global ID (labels, cluster weights, maps):
read whole in their in-memory size (4 bytes per ID or weight below 2**31), the weights
narrowed to int32 when they fit, and the same rows as the block-by-block lookup."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import tables


def _level(tmp_path: Path, offsets: tuple[int, ...], num_strata: int = 2) -> C.Level:
    level = C.Level(
        index=1,
        offsets=offsets,
        lp_root=S.ScratchRoot(tmp_path.as_posix()),
        ml=(tmp_path / "ml").as_posix(),
        num_strata=num_strata,
    )
    level.create()
    return level


def _write(level: C.Level, name: str, table: np.ndarray) -> None:
    for b in range(level.num_blocks):
        C.save(level.url(f"{name}-{b}"), table[level.offsets[b] : level.offsets[b + 1]])


def test_table_bytes_count_the_id_type_not_eight_bytes(tmp_path: Path) -> None:
    level = _level(tmp_path, (0, 4, 10))
    assert tables.table_bytes(level, "label") == 10 * 4
    assert tables.table_bytes(level, "cid") == 10 * 4
    assert tables.table_bytes(level, "cw") == 10 * 4 * 2
    wide = C.Level(index=1, offsets=(0, 1 << 31), lp_root=level.lp_root, ml=level.ml, num_strata=3)
    assert tables.table_bytes(wide, "label") == (1 << 31) * 8
    assert tables.table_bytes(wide, "cw") == (1 << 31) * 8 * 3


def test_whole_tables_within_the_budget_match_the_blockwise_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    level = _level(tmp_path, (0, 4, 10))
    rng = np.random.default_rng(0)
    label = rng.integers(-1, 10, 10).astype(np.int32)
    cw = rng.integers(0, 1000, (10, 2)).astype(np.int64)
    _write(level, "label", label)
    _write(level, "cw", cw)
    ids = np.array([9, 0, 4, 3, 3, 7])
    monkeypatch.setattr(tables, "WHOLE_TABLE_BYTES", 80)  # cw's 80 bytes as int32 fit, its 160 as int64 would not
    got = tables.whole_table(level, "cw")
    assert got is not None and got.dtype == np.int32
    np.testing.assert_array_equal(got, cw)
    np.testing.assert_array_equal(tables.whole_table(level, "label"), label)
    np.testing.assert_array_equal(tables.lookup(level, "cw", ids), cw[ids])
    monkeypatch.setattr(tables, "WHOLE_TABLE_BYTES", 79)  # cw block by block, narrowed as read; label whole
    assert tables.whole_table(level, "cw") is None
    blockwise = tables.lookup(level, "cw", ids)
    assert blockwise.dtype == np.int32
    np.testing.assert_array_equal(blockwise, cw[ids])
    ascending = np.array([0, 3, 3, 4, 9])  # one run per block
    np.testing.assert_array_equal(tables.lookup(level, "cw", ascending), cw[ascending])
    assert tables.whole_table(level, "label") is not None
    monkeypatch.setattr(tables, "WHOLE_TABLE_BYTES", 39)
    assert tables.whole_table(level, "label") is None
    np.testing.assert_array_equal(tables.lookup(level, "label", ids), label[ids])


def test_weights_beyond_int32_are_looked_up_block_by_block(tmp_path: Path) -> None:
    level = _level(tmp_path, (0, 2, 3))
    cw = np.array([[1, 2], [3, 1 << 31], [5, 6]], np.int64)  # a column of 2**31 owned edges
    _write(level, "cw", cw)
    assert tables.whole_table(level, "cw") is None
    for ids in ([1, 2, 0], [2, 0]):  # the large weight in the first block read, or none of it
        got = tables.lookup(level, "cw", np.array(ids))
        np.testing.assert_array_equal(got, cw[ids])
        assert got.dtype == (np.int64 if 1 in ids else np.int32)
    cw[1, 1], cw[2, 0] = 4, 1 << 32  # the large weight in the last block read: the int32 rows widened
    _write(level, "cw", cw)
    got = tables.lookup(level, "cw", np.array([2, 0, 1]))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, cw[[2, 0, 1]])


def test_joins_with_an_int32_weight_table_are_the_int64_ones() -> None:
    rng = np.random.default_rng(3)
    rows, clusters, m = 50, 80, 600
    u = np.sort(rng.integers(0, rows, m)).astype(np.int32)
    c = rng.integers(-1, clusters, m).astype(np.int32)
    w = rng.integers(1, 5, m).astype(np.int32)
    cw = rng.integers(0, 30, (clusters, 2)).astype(np.int64)
    kw = {
        "own": rng.integers(0, clusters, rows),
        "node_weight": rng.integers(0, 4, (rows, 2)),
        "caps": np.array([25, 28]),
        "seed": 1,
        "salt": 2,
        "min_share": 0.5,
    }
    wide = CK.joins_and_favourites(u, c, w, cluster_weight=cw, **kw)
    narrow = CK.joins_and_favourites(u, c, w, cluster_weight=cw.astype(np.int32), **kw)
    lookup = CK.joins_and_favourites(u, c, w, cluster_weight=lambda ids: cw[ids], **kw)
    assert wide[-1] > 0  # the caps turned some joins away
    assert wide[-1] == narrow[-1]
    for a, b, d in zip(wide[:-1], narrow[:-1], lookup[:-1], strict=True):  # the per-entry rows: the joins too
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, d)
