"""Coarse levels shared between the ``lp`` method's cluster weights (:mod:`.shared_levels`):
a later cluster weight takes the first one's levels that no cap shaped, and the
assignment is the one it gets by coarsening every level again."""

from __future__ import annotations

import logging
from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, register_method
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import shared_levels as SL
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

pytest.importorskip("pymetis")

TAKEN = "no cap turned a join away"
SAME = "took every level of the first one"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    n = 8000
    src, dst = planted_partition_edges(n, 60_000, 16, skewed=True, p_in=0.9, seed=0)
    truth = GraphTruth(
        graph_name="planted",
        num_nodes={"_N": n},
        edges={"_N:_E:_N": (src, dst)},
        node_data={"_N": {"train_mask": np.random.default_rng(1).random(n) < 0.6}},
        edge_data={},
    )
    tmp: Path = tmp_path_factory.mktemp("planted")
    write_graph_from_truth(tmp, truth, edge_chunks=3, feature_chunks=2)
    return open_chunked_graph(tmp / "metadata.json")


def _run(
    graph: ChunkedGraph, config: LPConfig, caplog: pytest.LogCaptureFixture, balance_edges: bool = False
) -> tuple[np.ndarray, list[str]]:
    """The ``lp`` assignment of ``graph`` at 4 parts under ``config``, and the driver's
    per-level log lines."""
    register_method("lp", LPMethod(config), overwrite=True)
    lp_module._RESULTS.clear()
    caplog.clear()
    try:
        with caplog.at_level(logging.INFO, logger="dgl_chunked.partition.lp"):
            parts = assign_partitions(graph, 4, method="lp", balance_ntypes=["train_mask"], balance_edges=balance_edges)
            (part,) = dask.compute(parts["_N"])
    finally:
        register_method("lp", LPMethod(), overwrite=True)
    return np.asarray(part), [r.getMessage() for r in caplog.records if r.getMessage().startswith("lp: ")]


def _coarsened_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cluster weight coarsens every level itself (no step is ever taken)."""
    monkeypatch.setattr(SL.Step, "fits", lambda self, fraction, num_parts: False)


@pytest.mark.parametrize("extra", [(0.15,), (0.01, 0.2)])
def test_a_later_cluster_weight_takes_the_uncapped_levels_and_assigns_the_same(
    planted: ChunkedGraph, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, extra: tuple[float, ...]
) -> None:
    """0.15 (larger caps than the first weight's 0.05) takes its first level; 0.01
    (smaller caps) takes none, and its coarsening of level 0 rewrites level 0's cluster
    maps, so 0.2 after it takes none either; with every level coarsened again, the same
    assignment."""
    config = LPConfig(
        block_rows=2048, coarse_nodes=200, coarse_entries=1 << 30, cluster_weight=0.05, extra_cluster_weights=extra
    )
    shared, lines = _run(planted, config, caplog)
    firsts = [line for line in lines if line.startswith("lp: level 1:")]
    assert len(firsts) == 1 + len(extra), lines  # one level 1 per cluster weight
    taken = [line for line in lines if TAKEN in line]
    if extra[0] > 0.05:
        assert taken and taken[0] == firsts[1], lines
        assert firsts[1].split(",")[:4] == firsts[0].split(",")[:4]  # its nodes, entries, rounds, joins
    else:
        assert not taken, lines
    _coarsened_again(monkeypatch)
    alone, lines_alone = _run(planted, config, caplog)
    assert not [line for line in lines_alone if TAKEN in line]
    np.testing.assert_array_equal(shared, alone)


def test_a_cluster_weight_taking_every_level_takes_the_assignments_too(
    planted: ChunkedGraph, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caps no cluster reaches (most of a part's share; two levels to 1264 nodes): every
    level of the second cluster weight is the first one's, so are its assignments; the
    same as coarsening and partitioning it again."""
    config = LPConfig(
        block_rows=2048, coarse_nodes=2000, coarse_entries=1 << 30, cluster_weight=0.9, extra_cluster_weights=(1.0,)
    )
    shared, lines = _run(planted, config, caplog)
    assert any(SAME in line for line in lines), lines
    levels = [line for line in lines if line.startswith("lp: level ") and "rounds" in line]
    assert len(levels) % 2 == 0 and all(TAKEN in line for line in levels[len(levels) // 2 :])
    _coarsened_again(monkeypatch)
    alone, lines_alone = _run(planted, config, caplog)
    assert not any(SAME in line for line in lines_alone)
    np.testing.assert_array_equal(shared, alone)


def test_two_hop_rounds_owned_edges_and_fit_passes_share_levels_too(
    planted: ChunkedGraph, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The options that add joins or columns (two-hop rounds, the owned-edges column of
    ``balance_edges``, acceptance in passes, joins below the best connection): level 1
    is still taken, and the assignment is the one coarsened again."""
    config = LPConfig(
        block_rows=2048,
        coarse_nodes=200,
        coarse_entries=1 << 30,
        cluster_weight=0.05,
        extra_cluster_weights=(0.15,),
        two_hop_above=0.5,
        fit_passes=4,
        cluster_min_share=0.5,
    )
    shared, lines = _run(planted, config, caplog, balance_edges=True)
    assert any(line.startswith("lp: level 1:") and TAKEN in line for line in lines), lines
    _coarsened_again(monkeypatch)
    alone, _ = _run(planted, config, caplog, balance_edges=True)
    np.testing.assert_array_equal(shared, alone)
