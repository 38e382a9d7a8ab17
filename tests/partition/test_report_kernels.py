"""The partition report's pure kernels: counts, edge stats, HALO ranges, the narrowed copy."""

from __future__ import annotations

import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.partition import report_kernels as report_module
from dgl_chunked.partition.report_kernels import edge_stats_block, narrowed, part_counts_block, part_dtype


@pytest.mark.parametrize(("num_nodes", "num_parts"), [(0, 1), (5, 8), (10**6, 8), (10**9, 64), (3 * 10**9, 1)])
def test_halo_ranges_keep_the_flags_within_their_bytes(num_nodes: int, num_parts: int) -> None:
    width, num_ranges = report_module.halo_ranges(num_nodes, num_parts)
    assert width * num_parts <= max(report_module.HALO_FLAG_BYTES, num_parts)
    assert width * num_ranges >= num_nodes and width * (num_ranges - 1) < max(num_nodes, 1)


def test_kernels() -> None:
    np.testing.assert_array_equal(part_counts_block(np.array([0, 2, 2]), num_parts=3), [[1, 0, 2]])
    np.testing.assert_array_equal(
        part_counts_block(np.array([0, 2, 2]), np.array([True, False, True]), num_parts=3), [[1, 0, 1]]
    )
    owned, cut, pairs = edge_stats_block(
        np.array([0, 1, 1, 0], np.int32),
        np.array([1, 1, 0, 1], np.int32),
        np.array([5, 6, 6, 5]),
        num_parts=2,
    )
    assert owned.tolist() == [1, 3] and cut == 3
    assert list(zip(pairs["orig_nid"].tolist(), pairs["part_id"].tolist(), strict=True)) == [(5, 1), (6, 0)]
    _, _, shifted = edge_stats_block(  # int32 sources past 2**31 with their offset: no overflow
        np.array([0, 1, 1, 0], np.int32),
        np.array([1, 1, 0, 1], np.int32),
        np.array([5, 6, 6, 5], np.int32),
        num_parts=2,
        src_offset=1 << 31,
    )
    assert shifted["orig_nid"].tolist() == [(1 << 31) + 5, (1 << 31) + 6] and shifted["part_id"].tolist() == [1, 0]
    with pytest.raises(
        AssignmentError, match=r"expected partition IDs in \[0, 2\), found 2 \(edge row of a read task 1\)"
    ):
        edge_stats_block(np.array([0, 2], np.int32), np.array([1, 1], np.int32), np.array([5, 6]), num_parts=2)


def test_the_copy_is_narrowed_only_after_its_ids_are_checked() -> None:
    assert [part_dtype(p) for p in (1, 127, 128, 32767, 32768)] == [np.int8, np.int8, np.int16, np.int16, np.int32]
    got = narrowed(np.array([0, 7, 3], np.int64), num_parts=8, where="assignment of 'a'")
    assert got.dtype == np.int8 and got.tolist() == [0, 7, 3]
    for bad in (300, -1, (1 << 32) + 1):  # 300 and 2**32 + 1 would wrap into [0, 8) by a cast
        with pytest.raises(AssignmentError, match=rf"assignment of 'a': .* found {bad} \(block row 1\)"):
            narrowed(np.array([0, bad, 3], np.int64), num_parts=8, where="assignment of 'a'")
