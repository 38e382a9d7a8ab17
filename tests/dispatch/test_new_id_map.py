"""The compact new-ID map gives the IDs numbering gave, from the owners alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.dispatch.ids import new_ids_block
from dgl_chunked.dispatch.new_id_map import build_map, map_bytes


def _numbered(owner, block_rows, num_parts, first):
    """Bases laid out partition by partition (as layout_ids does) and the numbering's new IDs."""
    blocks = [owner[lo : lo + block_rows] for lo in range(0, owner.shape[0], block_rows)]
    counts = np.array([np.bincount(b, minlength=num_parts) for b in blocks], dtype=np.int64).reshape(-1, num_parts)
    bases = np.zeros_like(counts)
    cur = first
    for p in range(num_parts):
        for b in range(len(blocks)):
            bases[b, p] = cur
            cur += counts[b, p]
    new = [new_ids_block(blk, bases[b]) for b, blk in enumerate(blocks)]
    return blocks, bases, np.concatenate([np.zeros(0, np.int64), *new])


@settings(max_examples=60, deadline=None)
@given(
    num_nodes=st.integers(0, 2000),
    block_rows=st.sampled_from([1, 7, 63, 64, 65, 128, 300, 4096]),
    num_parts=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_map_gives_the_numbering_ids(num_nodes, block_rows, num_parts, seed):
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, num_parts, num_nodes)
    blocks, bases, expected = _numbered(owner, block_rows, num_parts, int(rng.integers(0, 10**6)))
    new_map = build_map(num_nodes, block_rows, bases, blocks)
    ids = rng.integers(0, num_nodes, 3000) if num_nodes else np.zeros(0, np.int64)
    got = new_map.lookup(ids, np.int64)
    np.testing.assert_array_equal(got, expected[ids])
    assert new_map.nbytes <= map_bytes(num_nodes, block_rows, num_parts) + bases.nbytes


@pytest.mark.parametrize("num_parts,most", [(2, 0.26), (8, 0.88), (16, 1.51)])
def test_map_is_a_fraction_of_the_int32_id_array(num_parts, most):
    assert map_bytes(1 << 22, 1 << 21, num_parts) <= most * (1 << 22)


def test_map_lookup_returns_the_dtype_asked(tmp_path):
    owner = np.array([1, 0, 1, 1, 0])
    blocks, bases, expected = _numbered(owner, 2, 2, 10)
    got = build_map(5, 2, bases, blocks).lookup(np.array([4, 0, 2]), np.int32)
    assert got.dtype == np.int32 and got.tolist() == expected[[4, 0, 2]].tolist()


def test_map_built_and_read_slice_by_slice(monkeypatch):
    """Blocks longer than a slice: the per-word counts carry over from slice to slice."""
    from dgl_chunked.dispatch import ids as ids_module
    from dgl_chunked.dispatch import new_id_map

    monkeypatch.setattr(new_id_map, "HEAP_SLICE", 128)  # building
    monkeypatch.setattr(ids_module, "HEAP_SLICE", 128)  # looking up (ids.in_slices)
    rng = np.random.default_rng(5)
    owner = rng.integers(0, 5, 3000)
    blocks, bases, expected = _numbered(owner, 1000, 5, 7)
    ids = rng.integers(0, 3000, 4000)
    np.testing.assert_array_equal(build_map(3000, 1000, bases, blocks).lookup(ids), expected[ids])
