"""One coarsening step (:func:`.clustering.coarsen_step`): the clustering rounds in one
computation give the step and the files that one computation per layer gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition.lp import clustering, salts
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import multilevel as ML
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.partition.lp.taskgraph import TaskGraph
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

BLOCK_ROWS = 2048
FRACTION = 0.05


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    """6,000 nodes in 12 planted groups: three node blocks."""
    n = 6000
    src, dst = planted_partition_edges(n, 60_000, 12, skewed=True, p_in=0.9, seed=3)
    truth = GraphTruth(graph_name="g", num_nodes={"_N": n}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={})
    root = tmp_path_factory.mktemp("clustering")
    write_graph_from_truth(root / "g", truth, edge_chunks=3, feature_chunks=1)
    return open_chunked_graph(root / "g" / "metadata.json")


def _level0(graph: ChunkedGraph, plan: LPPlan, where: Path) -> C.Level:
    root = S.ScratchRoot(str(where))
    state = D.prepare(graph, plan, root)  # type: ignore[arg-type]
    level = ML._level0(state, root)
    level.create()
    return level


def _one_by_one(tasks: list[tuple[Any, ...]]) -> list[Any]:
    """Each task of a layer in its own computation, in block order."""
    out = []
    for func, *args in tasks:
        graph = TaskGraph()
        kw = args.pop() if args and isinstance(args[-1], dict) else {}
        out.append(graph.compute([graph.add(func, *args, **kw)])[0])
    return out


def _step_layer_by_layer(level: C.Level, plan: LPPlan, fraction: float) -> dict[str, Any]:
    """The coarsening step as the driver ran it before issue #38's fused rounds: every
    layer of every round on its own, the caps computed here."""
    cfg, blocks = plan.config, range(level.num_blocks)
    init = _one_by_one([(C.init_task, level, b) for b in blocks])
    totals = np.sum([r[1] for r in init], axis=0)
    caps = CK.cluster_caps(totals, plan.num_parts, fraction)
    moved, capped, rounds = 0, False, cfg.cluster_rounds
    two_hop_rounds = [(r, False) for r in range(cfg.cluster_rounds)]
    leaders: list[int] = []
    while two_hop_rounds:
        r, two_hop = two_hop_rounds.pop(0)
        kw = {"seed": plan.seed, "salt": salts.coarsen(level.index, r), "caps": caps}
        propose = _one_by_one(
            [(C.propose_task, level, b, {"min_share": cfg.cluster_min_share, "two_hop": two_hop, **kw}) for b in blocks]
        )
        hops = (
            _one_by_one([(C.two_hop_task, level, t, {"seed": plan.seed, "salt": kw["salt"] + 3}) for t in blocks])
            if two_hop
            else []
        )
        accept = _one_by_one(
            [(C.accept_task, level, t, {"two_hop": two_hop, "fit_passes": cfg.fit_passes, **kw}) for t in blocks]
        )
        _one_by_one([(C.apply_task, level, b) for b in blocks])
        _one_by_one([(C.release_task, level, t) for t in blocks])
        joins = sum(a[0] for a in accept)
        moved += joins
        capped = capped or joins < sum(p[0] for p in propose) + sum(hops) or any(p[1] for p in propose)
        leaders = _one_by_one([(C.leaders_task, level, b) for b in blocks])
        if not two_hop and r == cfg.cluster_rounds - 1 and sum(leaders) > cfg.two_hop_above * sum(i[0] for i in init):
            two_hop_rounds.append((cfg.cluster_rounds, True))
            rounds += 1
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(leaders)]))
    coarse = C.Level(
        index=1, offsets=offsets, lp_root=level.lp_root, ml=level.ml, num_strata=level.num_strata, owned=level.owned
    )
    coarse.create()
    _one_by_one([(C.number_task, level, b, coarse) for b in blocks])
    _one_by_one([(C.map_task, level, b) for b in blocks])
    out = _one_by_one([(C.contract_task, level, b, coarse) for b in blocks])
    return {
        "offsets": offsets,
        "entries": sum(o[0] for o in out),
        "between": sum(o[1] for o in out),
        "rounds": rounds,
        "moved": moved,
        "capped": capped,
        "totals": totals.tolist(),
        "caps": caps.tolist(),
    }


def _files(level: C.Level) -> dict[str, bytes]:
    """The bytes of every file of the multilevel scratch that ``level`` is in."""
    ml = Path(level.ml)
    return {p.relative_to(ml).as_posix(): p.read_bytes() for p in sorted(ml.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("two_hop_above", [1.0, 0.0])
def test_rounds_in_one_computation_give_the_layer_by_layer_step(
    graph: ChunkedGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_hop_above: float
) -> None:
    """The step, the coarse level's files and the fine level's cluster map are those of
    every layer computed on its own; it takes two computations (three with the two-hop
    round, which ``two_hop_above=0`` forces), where the layer-by-layer driver took one
    per round and three more."""
    config = LPConfig(block_rows=BLOCK_ROWS, cluster_rounds=3, two_hop_above=two_hop_above)
    plan = LPPlan(num_parts=4, seed=7, balance_edges=False, config=config, block_rows=BLOCK_ROWS, masks=())
    with dask.config.set(scheduler="synchronous"):
        want_level = _level0(graph, plan, tmp_path / "want")
        want = _step_layer_by_layer(want_level, plan, FRACTION)
    computations: list[int] = []
    real = TaskGraph.compute

    def counted(self: TaskGraph, keys: Any) -> list[Any]:
        computations.append(len(self.dsk))
        return real(self, keys)

    monkeypatch.setattr(TaskGraph, "compute", counted)
    with dask.config.set(scheduler="threads", num_workers=3):
        got_level = _level0(graph, plan, tmp_path / "got")
        computations.clear()
        step = clustering.coarsen_step(got_level, plan, FRACTION)
    assert len(computations) == (2 if two_hop_above else 3)
    assert want["rounds"] == (3 if two_hop_above else 4)
    got = {
        "offsets": step.coarse.offsets,
        "entries": step.entries,
        "between": step.between,
        "rounds": step.rounds,
        "moved": step.moved,
        "capped": step.capped,
        "totals": step.totals.tolist(),
        "caps": step.caps.tolist(),
    }
    assert got == want and want["moved"] > 0
    assert step.coarse.offsets[-1] < 6000
    # the coarse level knows its entries' weight: what its blocks hold
    weights = [int(C.read_entries(step.coarse, b)[2].sum()) for b in range(step.coarse.num_blocks)]
    assert step.coarse.weight == step.between == sum(weights) > 0
    want_files = _files(want_level)
    got_files = _files(got_level)
    assert any(name.startswith("1/e-") for name in got_files)  # the coarse level's entries
    for b in range(want_level.num_blocks):  # the step deletes them after the contraction
        for path in want_level.block_files(b, C.CLUSTERING_FILES):
            want_files.pop(Path(path).relative_to(Path(want_level.ml)).as_posix(), None)
    assert sorted(got_files) == sorted(want_files)
    assert [n for n in got_files if got_files[n] != want_files[n]] == []
