"""A coarsening that stops above the stall budget's entries, its nodes within it: METIS
gets the level's heaviest entries (as many as ``stall_entries``) instead of the
streaming placement alone, when no earlier cluster weight gave a multilevel
assignment (issue #38, h-10m)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, compute_partition_report, register_method
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import coarsest as coarsest_module
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.coarsest import gather_task, metis_task, weight_counts_task, weight_floor
from dgl_chunked.partition.lp.config import LPPlan
from dgl_chunked.partition.lp.taskgraph import TaskGraph
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

pytest.importorskip("pymetis")

MASKS = ["train_mask", "val_mask", "test_mask"]
# two coarse levels at most: level 2 (about 1k nodes, 50k entries) is above 5000 entries
STOPPED = LPConfig(block_rows=1024, coarse_nodes=10, coarse_entries=1000, max_levels=2, stall_entries=5000)


def test_weight_floor_keeps_the_heaviest_entries_within_the_budget() -> None:
    counts = [(np.array([1, 2, 5]), np.array([10, 4, 2])), (np.array([2, 3]), np.array([2, 4]))]
    # weights 5: 2 entries, 3: 4, 2: 6, 1: 10 -> 2, 6, 12, 22 entries of that weight or more
    assert weight_floor(counts, 12) == 2
    assert weight_floor(counts, 11) == 3
    assert weight_floor(counts, 6) == 3
    assert weight_floor(counts, 22) == 1
    assert weight_floor(counts, 1) == 6  # none fits: no entry
    assert weight_floor([(np.empty(0, np.int64), np.empty(0, np.int64))], 5) == 0  # no entries


def test_gathered_entries_above_the_floor_are_whole_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    level = C.Level(
        index=1, offsets=(0, 2, 4), lp_root=S.ScratchRoot(tmp_path.as_posix()), ml=(tmp_path / "ml").as_posix()
    )
    level.create()
    # block entries (local u, v, w) as read from the writers' pieces: the pair (1, 2)
    # weighs 3 + 1 = 4 in pieces from two writers, kept whole by a floor of 4 though each
    # piece alone weighs less; (0, 3) weighs 2: dropped
    entries = {
        0: ([1, 0, 1], [2, 3, 2], [3, 2, 1]),
        1: ([0, 1, 0], [1, 0, 1], [3, 2, 1]),
    }
    monkeypatch.setattr(C, "read_entries", lambda lv, b: tuple(np.asarray(x, np.int32) for x in entries[b]))
    for b in (0, 1):
        C.save(level.url(f"w-{b}"), np.ones((2, 1), np.int64))
    counts = [weight_counts_task(level, b) for b in (0, 1)]
    assert [c[0].tolist() for c in counts] == [[2, 4], [2, 4]]
    assert [c[1].tolist() for c in counts] == [[1, 1], [1, 1]]
    got = [gather_task(level, b, min_weight=4) for b in (0, 1)]
    pairs = sorted((int(a), int(b), int(c)) for g in got for a, b, c in zip(g[0], g[1], g[2], strict=True))
    assert pairs == [(1, 2, 4), (2, 1, 4)]
    whole = sorted((int(a), int(b), int(c)) for a, b, c in zip(*gather_task(level, 0)[:3], strict=True))
    assert whole == [(0, 3, 2), (1, 2, 1), (1, 2, 3)]  # without a floor: the pieces as read


def test_metis_gets_the_coarsest_level_in_the_blocks_int32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gathered int32 blocks reach METIS as int32 (no int64 copy of the level, its peak
    at 10M nodes), with the same CSR as int64 blocks of the same values."""
    level = C.Level(index=1, offsets=(0, 3, 6), lp_root=S.ScratchRoot(tmp_path.as_posix()), ml="unused")
    plan = LPPlan(num_parts=2, seed=0, balance_edges=False, config=LPConfig(), block_rows=3, masks=())
    # node 1 is not in the graph: the others are renumbered 0, 1, 2, 3, 4; the pair
    # (2, 5) comes in two pieces (weights 2 and 3), a self-loop (0, 0) is dropped
    blocks = [
        ([0, 0, 2, 2, 0], [2, 0, 5, 5, 3], [4, 9, 2, 3, 1]),
        ([3, 5, 5, 4], [0, 2, 4, 5], [1, 5, 6, 6]),
    ]
    active = [np.array([True, False, True]), np.ones(3, bool)]
    seen: list[tuple[np.ndarray, ...]] = []

    def fake_metis(xadj: np.ndarray, adjncy: np.ndarray, num_parts: int, **kw: np.ndarray) -> np.ndarray:
        seen.append((xadj, adjncy, kw["eweights"]))
        return np.arange(xadj.size - 1, dtype=np.int32) % num_parts

    monkeypatch.setattr(coarsest_module, "metis_parts", fake_metis)
    for dtype in (np.int32, np.int64):
        gathered = [
            (*(np.asarray(x, dtype) for x in e), np.ones((3, 1), np.int64), a)
            for e, a in zip(blocks, active, strict=True)
        ]
        part = metis_task(level, plan, *gathered)
        assert part.tolist() == [0, -1, 1, 0, 1, 0]
    (x32, a32, w32), (x64, a64, w64) = seen
    assert a32.dtype == w32.dtype == np.int32 and a64.dtype == w64.dtype == np.int64
    # new IDs 0: node 0, 1: node 2, 2: node 3, 3: node 4, 4: node 5
    assert x32.tolist() == x64.tolist() == [0, 2, 3, 4, 5, 7]
    assert a32.tolist() == a64.tolist() == [1, 2, 4, 0, 4, 1, 3]
    assert w32.tolist() == w64.tolist() == [4, 1, 5, 1, 6, 5, 6]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    n = 4000
    src, dst = planted_partition_edges(n, 40_000, 8, skewed=True, p_in=0.9, seed=6)
    r = np.random.default_rng(7).random(n)
    truth = GraphTruth(
        graph_name="g",
        num_nodes={"_N": n},
        edges={"_N:_E:_N": (src, dst)},
        node_data={"_N": {"train_mask": r < 0.6, "val_mask": (r >= 0.6) & (r < 0.8), "test_mask": r >= 0.8}},
        edge_data={},
    )
    path = write_graph_from_truth(tmp_path_factory.mktemp("g") / "g", truth, edge_chunks=2).base_dir
    return open_chunked_graph(path)


def _run(graph: ChunkedGraph, config: LPConfig) -> float:
    lp_module._RESULTS.clear()
    register_method("lp", LPMethod(config), overwrite=True)
    try:
        with dask.config.set(scheduler="threads", num_workers=2):
            parts = assign_partitions(graph, 4, method="lp", balance_ntypes=MASKS)
            return compute_partition_report(graph, parts, 4).edge_cut_fraction
    finally:
        register_method("lp", LPMethod(), overwrite=True)


def test_a_level_above_the_stall_entries_goes_to_metis_with_its_heaviest_entries(
    graph: ChunkedGraph, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="dgl_chunked.partition.lp"):
        cut = _run(graph, STOPPED)
    text = caplog.text
    # the first cluster weight's level goes to METIS; the second keeps the fallback (the
    # first gave a multilevel assignment)
    first = re.findall(r"stopped by max_levels \(2\) at level 2: (\d+) entries, above the stall budget's 5000", text)
    assert len(first) == 1 and int(first[0]) > 5000, text
    second = r"stopped by max_levels \(2\) at \d+ nodes \(level 2\); no multilevel assignment of this cluster weight"
    assert len(re.findall(second, text)) == 1 and "streaming placement only" not in text, text
    kept = [int(k) for k in re.findall(r"METIS gets the (\d+) entries of weight \d+ or more of \d+", text)]
    assert len(kept) == 2 and all(0 < k <= 5000 for k in kept), text  # level by level and purified
    assert re.search(r"multilevel \[\d+, None\]", text), text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dgl_chunked.partition.lp"):
        streaming = _run(graph, LPConfig(**{**STOPPED.__dict__, "stall_nodes": 0}))  # before: no METIS
    assert "multilevel [None, None]: keeping the streaming assignment" in caplog.text
    assert cut < 0.8 * streaming, (cut, streaming)


def test_the_coarsest_levels_metis_runs_in_one_computation_with_the_purification(
    graph: ChunkedGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """METIS on the coarsest level is a task computed with the purified level's rebuild
    (which does not wait for it), so that rebuild runs beside it (issue #38)."""
    computed: list[set[str]] = []
    compute = TaskGraph.compute

    def recorded(self: TaskGraph, keys: Any) -> list[Any]:
        computed.append({m.group(1) for k in self.dsk if (m := re.match(r"dglc-lp-(\w+?)-[0-9a-f]{12}-\d+$", str(k)))})
        return compute(self, keys)

    monkeypatch.setattr(TaskGraph, "compute", recorded)
    _run(graph, LPConfig(block_rows=1024, coarse_nodes=200, coarse_entries=4000))
    with_metis = [names for names in computed if "metis_task" in names]
    assert len(with_metis) == 4, computed  # the level-by-level and the purified one, per cluster weight
    with_rebuild = [names for names in with_metis if {"purify_task", "contract_task", "project_task"} <= names]
    assert len(with_rebuild) == 2, with_metis  # the level-by-level one's, per cluster weight
