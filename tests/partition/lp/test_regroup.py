"""Coarse levels in fewer blocks (:mod:`.regroup`): which blocks merge, a merged block
reads exactly the entries and node weights of the blocks it joins, and a whole lp run
with merged levels gives one assignment on the synchronous scheduler and on a cluster."""

from __future__ import annotations

import collections
import dataclasses
import itertools
from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import LPMethod, assign_partitions, register_method
from dgl_chunked.partition.lp import clustering
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import multilevel as ML
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.partition.lp.regroup import block_groups, merged_level
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

BLOCK_ROWS = 512


@pytest.mark.parametrize(
    ("entries", "nodes", "max_entries", "max_nodes", "want"),
    [
        ([5, 5, 5, 5], [1, 1, 1, 1], 100, 100, (0, 1, 2, 3, 4)),  # at most MIN_BLOCKS: kept
        ([1] * 8, [1] * 8, 100, 100, (0, 2, 4, 6, 8)),  # a quarter of the level each
        ([10, 1, 1, 1, 1, 10, 1, 1], [1] * 8, 100, 100, (0, 1, 5, 6, 8)),  # limit 26 // 4 = 6
        ([1] * 8, [1] * 8, 1, 100, tuple(range(9))),  # the largest level-0 block holds one
        ([1] * 8, [3, 3, 3, 3, 3, 3, 3, 3], 100, 3, tuple(range(9))),  # nodes hold them apart
        ([0] * 6, [1] * 6, 100, 100, tuple(range(7))),  # no entries: kept
        ([50, 0, 0, 0, 0, 0], [1] * 6, 100, 100, (0, 1, 6)),  # a block above the limit alone
    ],
)
def test_block_groups(
    entries: list[int], nodes: list[int], max_entries: int, max_nodes: int, want: tuple[int, ...]
) -> None:
    assert block_groups(entries, nodes, max_entries=max_entries, max_nodes=max_nodes) == want


@pytest.mark.parametrize("seed", range(20))
def test_block_groups_keep_min_blocks_and_limits(seed: int) -> None:
    """Random levels: runs cover every block in order, a run of two or more blocks stays
    within both limits, and at least MIN_BLOCKS are left when no block is above them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    entries = rng.integers(0, 1000, n).tolist()
    nodes = rng.integers(1, 50, n).tolist()
    max_entries, max_nodes = int(rng.integers(1, 5000)), int(rng.integers(1, 400))
    groups = block_groups(entries, nodes, max_entries=max_entries, max_nodes=max_nodes)
    assert groups[0] == 0 and groups[-1] == n and all(a < b for a, b in itertools.pairwise(groups))
    limit = min(max_entries, max(1, sum(entries) // 4))
    if max(entries) <= limit and max(nodes) <= max_nodes:
        assert len(groups) - 1 >= 4
    for a, b in itertools.pairwise(groups):
        if b - a > 1:
            assert sum(entries[a:b]) <= limit and sum(nodes[a:b]) <= max_nodes


def _edges() -> tuple[np.ndarray, np.ndarray]:
    """6,000 nodes in 12 planted groups."""
    return planted_partition_edges(6000, 60_000, 12, skewed=True, p_in=0.9, seed=5)


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    """The planted graph of :func:`_edges`: 12 node blocks of 512 rows."""
    src, dst = _edges()
    truth = GraphTruth(
        graph_name="g", num_nodes={"_N": 6000}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={}
    )
    root = tmp_path_factory.mktemp("regroup")
    write_graph_from_truth(root / "g", truth, edge_chunks=3, feature_chunks=1)
    return open_chunked_graph(root / "g" / "metadata.json")


def _global_entries(level: C.Level, b: int) -> list[tuple[int, int, int]]:
    """Block ``b``'s entries, ``u`` global, sorted (a cluster pair may come from several writers)."""
    u, v, w = C.read_entries(level, b)
    return sorted(zip((u + level.offsets[b]).tolist(), v.tolist(), w.tolist(), strict=True))


def test_merged_blocks_read_the_entries_and_weights_of_their_pieces(
    graph: ChunkedGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coarsening step with a merging limit gives the level of the step without one
    (the same files), in fewer blocks: each merged block's entries (global IDs) and node
    weights are those of the blocks it joins, in ID order, read with one open of each
    writer's file for its pieces."""
    config = LPConfig(block_rows=BLOCK_ROWS)
    plan = LPPlan(num_parts=4, seed=7, balance_edges=False, config=config, block_rows=BLOCK_ROWS, masks=())
    root = S.ScratchRoot(str(tmp_path))
    with dask.config.set(scheduler="synchronous"):
        state = D.prepare(graph, plan, root)  # type: ignore[arg-type]
        level = ML._level0(state, root)
        level.create()
        assert level.num_blocks == 12
        step = clustering.coarsen_step(level, plan, 0.05, max_entries=10**9)
    merged = step.coarse
    assert 4 <= merged.num_blocks < 12 and merged.writers == 12 and len(merged.groups) == merged.num_blocks + 1
    alone = dataclasses.replace(merged, offsets=merged.pieces, writers=0, pieces=(), groups=())
    assert merged_level(alone, merged.groups) == merged
    assert merged_level(alone, tuple(range(13))) is alone
    total = 0
    for k in range(merged.num_blocks):
        joined = merged.piece_range(k)
        want = sorted(e for j in joined for e in _global_entries(alone, j))
        got = _global_entries(merged, k)
        assert got == want
        total += len(got)
        want_w = np.concatenate([C.node_weights(alone, j)[0] for j in joined])
        np.testing.assert_array_equal(C.node_weights(merged, k)[0], want_w)
        assert C.node_weights(merged, k)[0].shape[0] == merged.rows(k)
    assert total == step.entries > 0
    _assert_one_open_per_writer(merged, monkeypatch)


def _assert_one_open_per_writer(level: C.Level, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a merged block opens each writer's file for its header, then once more
    when it has entries there (all its pieces), not once per piece; some writer has
    entries in two or more pieces of a block."""
    bounds = []
    for s in range(level.num_writers):
        with C.ArrayFile(level.url(f"e-{s}").url) as f:
            bounds.append(f.header.bounds)
    opened: list[str] = []

    class Counted(C.ArrayFile):
        def __init__(self, path: str, storage_options: object = None) -> None:
            opened.append(path)
            super().__init__(path, storage_options)  # type: ignore[arg-type]

    monkeypatch.setattr(C, "ArrayFile", Counted)
    most = 0
    for k in range(level.num_blocks):
        opened.clear()
        C.read_entries(level, k)
        filled = [sum(int(b[j + 1] > b[j]) for j in level.piece_range(k)) for b in bounds]
        assert collections.Counter(opened) == {level.url(f"e-{s}").url: 1 + int(n > 0) for s, n in enumerate(filled)}
        most = max(most, *filled)
    assert most >= 2


WHOLE = LPConfig(block_rows=600, coarse_nodes=500, coarse_entries=1 << 30, purify_rounds=2)
"""10 blocks of the 6,000-node graph, coarsened to 500 nodes."""


def _lp(graph: ChunkedGraph, scheduler: object = None) -> np.ndarray:
    """lp's 4-part assignment of ``graph`` under :data:`WHOLE`, on ``scheduler`` (None:
    the current one)."""
    lp_module._RESULTS.clear()
    register_method("lp", LPMethod(WHOLE), overwrite=True)
    try:
        parts = assign_partitions(graph, 4, method="lp")
        return np.asarray(parts["_N"].compute(scheduler=scheduler))
    finally:
        register_method("lp", LPMethod(), overwrite=True)


@pytest.fixture(scope="module")
def merged_run(graph: ChunkedGraph) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The whole run's assignment (synchronous scheduler) and, per coarsening step, the
    blocks contracted and those left after merging."""
    pytest.importorskip("pymetis")
    merged: list[tuple[int, int]] = []
    real = clustering.merged_level

    def spy(level: C.Level, groups: tuple[int, ...]) -> C.Level:
        out = real(level, groups)
        merged.append((level.num_blocks, out.num_blocks))
        return out

    with pytest.MonkeyPatch.context() as patch, dask.config.set(scheduler="synchronous"):
        patch.setattr(clustering, "merged_level", spy)
        return _lp(graph), merged


def test_lp_with_merged_levels(
    graph: ChunkedGraph, merged_run: tuple[np.ndarray, list[tuple[int, int]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole lp run of 10 blocks merges its coarse levels (never below 4 blocks); its
    cut is within 2% of the unmerged levels' (the coarse levels are the same weighted
    graphs, but the coarse refinement shares its quotas among fewer blocks, so some
    nodes may land elsewhere)."""
    got, merged = merged_run
    assert merged[0][0] == 10 and any(k < b for b, k in merged), merged  # (blocks contracted, after merging)
    assert all(k >= 4 for _, k in merged)
    assert got.shape == (6000,) and set(np.unique(got).tolist()) == {0, 1, 2, 3}
    monkeypatch.setattr(clustering, "block_groups", lambda entries, *a, **k: tuple(range(len(entries) + 1)))
    unmerged = _lp(graph)
    src, dst = _edges()
    cut, cut_unmerged = (float(np.mean(p[src] != p[dst])) for p in (got, unmerged))
    assert 0 < cut <= 1.02 * cut_unmerged, (cut, cut_unmerged)


def test_lp_with_merged_levels_on_a_cluster(
    graph: ChunkedGraph, merged_run: tuple[np.ndarray, list[tuple[int, int]]], client: object
) -> None:
    """The merged levels' tasks on a distributed cluster give the synchronous run's assignment."""
    np.testing.assert_array_equal(_lp(graph, client), merged_run[0])
