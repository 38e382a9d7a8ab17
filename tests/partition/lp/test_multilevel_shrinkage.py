"""How fast the multilevel ``lp`` coarsening shrinks a graph (issue #38): the clustering
rounds per level, the cluster acceptance in passes, and the per-level log line."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, register_method
from dgl_chunked.partition.lp import coarsen_kernels as MK
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

pytest.importorskip("pymetis")

# several blocks, a tiny in-memory budget: the coarsening runs many levels on a small graph
# (the caps grow after a level shrinking under 5%, no stall budget: the rules before h-38m)
BASE = LPConfig(
    block_rows=2048,
    coarse_nodes=50,
    coarse_entries=1 << 30,
    purify_rounds=0,
    extra_cluster_weights=(),
    min_shrink=0.05,
    stall_nodes=0,
)
# the faster-shrinking coarsening of issue #38 (options; the defaults keep the old rules)
NEW = replace(BASE, cluster_rounds=4, cluster_min_share=0.5, min_shrink=0.3, fit_passes=8)
OLD = BASE
LEVEL = re.compile(r"lp: level (\d+): (\d+) nodes, (\d+) entries, (\d+) rounds, (\d+) moved, [\d.]+ s")


def test_accept_in_passes_lets_lighter_proposals_past_a_heavy_one() -> None:
    c = np.array([0, 0, 0, 0, 1])
    conn = np.array([9, 8, 7, 6, 1])  # acceptance order: the rows in turn
    node_weight = np.array([[6], [3], [2], [4], [1]])
    rank = np.arange(5, dtype=np.uint64)
    caps = np.array([10])
    one = MK.accept_joins(c, conn, rank, node_weight, np.array([[5], [5], [5], [5], [0]]), caps)
    np.testing.assert_array_equal(one, [False, False, False, False, True])  # 5 + 6 > 10 turns all away
    weights = np.array([[5], [0]])
    got = MK.accept_in_passes(c, conn, rank, node_weight, weights, caps, passes=1)
    np.testing.assert_array_equal(got, one)
    np.testing.assert_array_equal(weights, [[5], [1]])
    weights = np.array([[5], [0]])
    got = MK.accept_in_passes(c, conn, rank, node_weight, weights, caps, passes=8)
    # pass 1: cluster 1 takes its join, cluster 0 none; the 6 never fits alone: dropped;
    # pass 2: 3 (8), 2 (10), then 4 overflows; it no longer fits alone: done
    np.testing.assert_array_equal(got, [False, True, True, False, True])
    np.testing.assert_array_equal(weights, [[10], [1]])


def test_fit_passes_validated() -> None:
    with pytest.raises(AssignmentError, match="fit_passes"):
        LPConfig(fit_passes=0)


def _levels(tmp_path: Path, config: LPConfig, caplog: pytest.LogCaptureFixture) -> list[tuple[int, ...]]:
    """The per-level lines of one lp run on a planted graph of 8000 nodes (skewed groups)."""
    n = 8000
    src, dst = planted_partition_edges(n, 60_000, 16, skewed=True, p_in=0.9, seed=0)
    truth = GraphTruth(
        graph_name="planted", num_nodes={"_N": n}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={}
    )
    write_graph_from_truth(tmp_path, truth, edge_chunks=3, feature_chunks=2)
    graph = open_chunked_graph(tmp_path / "metadata.json")
    register_method("lp", LPMethod(config), overwrite=True)
    lp_module._RESULTS.clear()
    try:
        with caplog.at_level(logging.INFO, logger="dgl_chunked.partition.lp"), dask.config.set(scheduler="synchronous"):
            parts = assign_partitions(graph, 4, method="lp")
            dask.compute(*parts.values())
    finally:
        register_method("lp", LPMethod(), overwrite=True)
    return [tuple(int(x) for x in m.groups()) for m in LEVEL.finditer(caplog.text)]


def test_levels_shrink_at_least_2x_in_nodes_on_a_planted_graph(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue #38 options halve the nodes at least on the first two levels; the
    defaults (two rounds, the best cluster only, one acceptance pass) shrink less and
    need more levels to reach the same budget."""
    new = _levels(tmp_path / "new", NEW, caplog)
    caplog.clear()
    old = _levels(tmp_path / "old", OLD, caplog)
    assert [lv[0] for lv in new] == list(range(1, len(new) + 1)), new
    assert all(lv[3] == NEW.cluster_rounds for lv in new), new  # rounds per level
    assert all(lv[3] == 2 for lv in old), old
    assert new[0][1] <= 8000 // 2 and new[1][1] <= new[0][1] // 2, new
    assert new[0][1] < old[0][1] and len(new) < len(old), (new, old)
    assert new[-1][1] <= NEW.coarse_nodes < new[-2][1], new


def test_a_stalled_level_within_the_stall_budget_goes_to_metis(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Coarsening stops at the first level that shrinks by less than ``stall_shrink`` and
    fits the stall budget, though above ``coarse_nodes``: that level is METIS's. Levels
    of the planted graph at BASE: 3557, 2112, 1576, 1384, 1314, 1296, 675, 510, ... 66
    nodes (16 levels: ``max_levels``, so the streaming placement alone). Within 1000
    nodes, level 7 shrinks 48% (1296 -> 675), level 8 24% (675 -> 510): under 30%."""
    stall = replace(BASE, stall_shrink=0.3, stall_nodes=1000)
    got = _levels(tmp_path / "stall", stall, caplog)
    assert [lv[:2] for lv in got] == [
        (1, 3557),
        (2, 2112),
        (3, 1576),
        (4, 1384),
        (5, 1314),
        (6, 1296),
        (7, 675),
        (8, 510),
    ], got
    assert "lp: level 8 shrank 675 -> 510 nodes: within the stall budget, to METIS" in caplog.text
    assert "multilevel [41158]: keeping the multilevel assignment" in caplog.text  # METIS's (best of 16), not streaming
    caplog.clear()
    # within 500 nodes level 8 does not fit: level 9 (510 -> 462, 9%) is METIS's
    smaller = _levels(tmp_path / "small", replace(stall, stall_nodes=500), caplog)
    assert [lv[:2] for lv in smaller] == [lv[:2] for lv in got] + [(9, 462)], smaller
    assert "lp: level 9 shrank 510 -> 462 nodes: within the stall budget, to METIS" in caplog.text
    caplog.clear()
    base = _levels(tmp_path / "base", BASE, caplog)
    assert [lv[:2] for lv in base[:8]] == [lv[:2] for lv in got] and len(base) == 16, base
    assert "multilevel [None]: keeping the streaming assignment" in caplog.text  # max_levels reached


@pytest.mark.parametrize("field", [{"stall_nodes": -1}, {"stall_entries": -1}, {"stall_shrink": 1.5}])
def test_stall_budget_validated(field: dict[str, float]) -> None:
    with pytest.raises(AssignmentError, match=next(iter(field))):
        LPConfig(**field)  # type: ignore[arg-type]


def test_a_coarsening_stalled_at_the_largest_clusters_hands_its_level_to_metis(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``min_shrink`` 0.3 the caps grow after level 4 (1576 -> 795 nodes: level 3,
    1576, shrank 25%), and level 10 (106 -> 79, 25%) stalls at the largest caps: within
    the stall budget it is METIS's; without one the streaming placement alone is used."""
    stall = replace(BASE, min_shrink=0.3, stall_nodes=1000)
    got = _levels(tmp_path / "stall", stall, caplog)
    want = [(1, 3557), (2, 2112), (3, 1576), (4, 795), (5, 567), (6, 272), (7, 191), (8, 120), (9, 106), (10, 79)]
    assert [lv[:2] for lv in got] == want, got
    assert "coarsening stopped by the largest clusters at level 10: within the stall budget, to METIS" in caplog.text
    assert "multilevel [None]" not in caplog.text
    caplog.clear()
    none = _levels(tmp_path / "none", replace(stall, stall_nodes=78), caplog)
    assert [lv[:2] for lv in none] == want, none
    assert "coarsening stopped by the largest clusters at 79 nodes (level 10); streaming placement only" in caplog.text
    assert "multilevel [None]: keeping the streaming assignment" in caplog.text
