"""ID arithmetic against a brute-force numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.dispatch.ids import layout_ids, new_ids_block, owner_of, type_of


def _oracle(parts_per_type: list[np.ndarray], num_parts: int) -> list[np.ndarray]:
    """New IDs by sorting every node on (partition, type, type_nid)."""
    keys = []
    for t, parts in enumerate(parts_per_type):
        for i, p in enumerate(parts):
            keys.append((int(p), t, i))
    order = sorted(keys)
    new = [np.empty(len(parts), np.int64) for parts in parts_per_type]
    for new_id, (_, t, i) in enumerate(order):
        new[t][i] = new_id
    return new


def _split(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    points = sorted({0, n, *[c % (n + 1) for c in cuts]})
    return list(zip(points[:-1], points[1:], strict=True))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    num_parts=st.integers(1, 5),
    cuts=st.lists(st.integers(0, 100), max_size=5),
    seed=st.integers(0, 2**16),
)
def test_new_ids_match_global_sort_for_any_blocking(sizes, num_parts, cuts, seed):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, num_parts, n).astype(np.int32) for n in sizes]
    blocks = [_split(n, cuts) for n in sizes]
    counts = [
        np.array([np.bincount(p[a:b], minlength=num_parts) for a, b in bl], np.int64).reshape(len(bl), num_parts)
        for p, bl in zip(parts, blocks, strict=True)
    ]
    layout = layout_ids(counts)
    truth = _oracle(parts, num_parts)
    for t, (p, bl) in enumerate(zip(parts, blocks, strict=True)):
        got = np.concatenate(
            [new_ids_block(p[a:b], layout.block_bases[t][k]) for k, (a, b) in enumerate(bl)] or [np.zeros(0, np.int64)]
        )
        np.testing.assert_array_equal(got, truth[t])
        np.testing.assert_array_equal(owner_of(got, layout.part_starts), p)
        np.testing.assert_array_equal(type_of(got, layout), np.full(len(p), t))


def test_layout_ranges_abut_partition_major_type_major():
    counts = [np.array([[2, 0, 1]]), np.array([[0, 0, 0]]), np.array([[1, 3, 0], [1, 0, 0]])]
    layout = layout_ids(counts)
    assert layout.to_map(["a", "b", "c"]) == {
        "a": [[0, 2], [4, 4], [7, 8]],
        "b": [[2, 2], [4, 4], [8, 8]],
        "c": [[2, 4], [4, 7], [8, 8]],
    }
    np.testing.assert_array_equal(layout.part_starts, [0, 4, 7, 8])
    # empty partition-type blocks in the middle do not confuse the owner lookup
    np.testing.assert_array_equal(owner_of(np.arange(8), layout.part_starts), [0, 0, 0, 0, 1, 1, 1, 2])
    np.testing.assert_array_equal(type_of(np.arange(8), layout), [0, 0, 2, 2, 2, 2, 2, 0])


@pytest.mark.parametrize("num_parts", [1, 2, 5, 16, 17, 40])
def test_owner_of_skips_empty_partitions_for_few_and_many_partitions(num_parts):
    rng = np.random.default_rng(num_parts)
    sizes = rng.integers(0, 4, num_parts)  # zeros: empty partitions anywhere
    sizes[-1] += 1
    part_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ids = np.arange(int(part_starts[-1]))
    want = np.repeat(np.arange(num_parts), sizes)
    got = owner_of(ids, part_starts)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(owner_of(ids.astype(np.int32), part_starts), want)


@pytest.mark.parametrize("num_parts", [1, 2, 4, 5, 256, 257, 70_000])
def test_sort_by_owner_is_the_stable_sort_for_any_number_of_partitions(num_parts):
    from dgl_chunked.dispatch.ids import compact_owner_dtype, sort_by_owner

    owner = np.random.default_rng(num_parts).integers(0, num_parts, 5000).astype(np.int32)
    order, counts = sort_by_owner(owner, num_parts)
    np.testing.assert_array_equal(order, np.argsort(owner, kind="stable"))
    np.testing.assert_array_equal(counts, np.bincount(owner, minlength=num_parts))
    assert np.iinfo(compact_owner_dtype(num_parts)).max >= num_parts - 1
