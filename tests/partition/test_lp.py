"""The ``lp`` method: quality against random and METIS, hard balance, determinism,
chunk invariance, the distributed scheduler, heterogeneous graphs, and its kernels."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.chunked import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import (
    LPConfig,
    LPMethod,
    PartitionReport,
    assign_partitions,
    available_methods,
    compute_partition_report,
    register_method,
)
from dgl_chunked.partition import _lp_kernels as K
from dgl_chunked.partition import _lp_plan as plan_
from dgl_chunked.partition import lp as lp_module
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import load_truth, raise_if_dask_computes, write_graph_from_truth

MASKS = ["train_mask", "val_mask", "test_mask"]
SMALL_BLOCKS = LPConfig(block_rows=2048, group_entries=30_000)  # several blocks and histogram tasks


@pytest.fixture(scope="module")
def rmat(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    """R-MAT power-law graph, 20k nodes / 200k edges, train/val/test masks (60/20/20)."""
    spec = SynthSpec.homogeneous(20_000, 200_000, distribution="powerlaw", feat_dim=None, num_chunks=4, seed=1)
    return open_chunked_graph(write_synthetic_graph(tmp_path_factory.mktemp("rmat") / "g", spec).base_dir)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    """R-MAT graph, 5k nodes / 40k edges, with masks, 3 edge files."""
    spec = SynthSpec.homogeneous(5_000, 40_000, distribution="powerlaw", feat_dim=None, num_chunks=3, seed=2)
    return open_chunked_graph(write_synthetic_graph(tmp_path_factory.mktemp("small") / "g", spec).base_dir)


@pytest.fixture
def small_blocks() -> object:
    """Run ``lp`` with small blocks and histogram groups (multi-block code paths)."""
    register_method("lp", LPMethod(SMALL_BLOCKS), overwrite=True)
    yield
    register_method("lp", LPMethod(), overwrite=True)


def _compute(parts: dict[str, object]) -> dict[str, np.ndarray]:
    lp_module._RESULTS.clear()  # a fresh run, not this process's cached result
    return dict(zip(parts, dask.compute(*parts.values()), strict=True))  # type: ignore[arg-type]


def _cap(n: int, num_parts: int, eps: float = 0.05) -> int:
    return max(-(-n // num_parts), int(np.floor((1 + eps) * n / num_parts)))


@pytest.fixture(scope="module")
def reports(rmat: ChunkedGraph) -> dict[tuple[str, int], PartitionReport]:
    out = {}
    for parts in (4, 8):
        out["random", parts] = compute_partition_report(rmat, assign_partitions(rmat, parts), parts)
        out["lp", parts] = compute_partition_report(
            rmat, assign_partitions(rmat, parts, method="lp", balance_ntypes=MASKS), parts)
    return out


@pytest.mark.parametrize("parts", [4, 8])
def test_cuts_far_fewer_edges_than_random(reports: dict[tuple[str, int], PartitionReport], parts: int) -> None:
    lp_cut, random_cut = reports["lp", parts].edge_cut_fraction, reports["random", parts].edge_cut_fraction
    # measured (seed 0): 4 parts: lp 0.140, random 0.748; 8 parts: lp 0.311, random 0.873
    assert lp_cut < 0.45 * random_cut


@pytest.mark.parametrize("parts", [4, 8])
def test_within_target_of_metis(rmat: ChunkedGraph, reports: dict[tuple[str, int], PartitionReport],
                                parts: int) -> None:
    pytest.importorskip("pymetis")
    metis_cut = compute_partition_report(rmat, assign_partitions(rmat, parts, method="metis"), parts).edge_cut_fraction
    # measured: 4 parts: lp 0.140 vs metis 0.275 (0.51x); 8 parts: 0.311 vs 0.445 (0.70x); target 1.3x
    assert reports["lp", parts].edge_cut_fraction <= 0.9 * metis_cut


@pytest.mark.parametrize("parts", [4, 8])
def test_every_partition_within_the_balance_limit(reports: dict[tuple[str, int], PartitionReport],
                                                  parts: int) -> None:
    report = reports["lp", parts]
    nodes = report.nodes["_N"]
    assert max(nodes) <= _cap(sum(nodes), parts) and min(nodes) > 0
    for mask in MASKS:
        counts = report.masks["_N"][mask]
        assert max(counts) <= _cap(sum(counts), parts), (mask, counts)


def test_lazy_deterministic_and_seeded(small: ChunkedGraph) -> None:
    with raise_if_dask_computes():
        parts = assign_partitions(small, 4, method="lp", seed=3)
    arr = parts["_N"]
    assert arr.dtype == np.int32 and arr.chunks == (small.node_chunks("_N"),) and arr.name.startswith("dglc-assign-lp")
    first = _compute(parts)["_N"]
    again = _compute(assign_partitions(small, 4, method="lp", seed=3))["_N"]
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first)) == {0, 1, 2, 3}
    other = _compute(assign_partitions(small, 4, method="lp", seed=4))["_N"]
    assert not np.array_equal(first, other)
    assert "lp" in available_methods()


def test_independent_of_file_chunking(small: ChunkedGraph, tmp_path: Path, small_blocks: object) -> None:
    truth = load_truth(small.metadata.base_dir)
    other = open_chunked_graph(write_graph_from_truth(tmp_path / "rechunked", truth,
                                                      edge_chunks={"_N:_E:_N": [1000, 25_000, 0, 14_000]},
                                                      edge_format="parquet").base_dir)
    first = _compute(assign_partitions(small, 3, method="lp", balance_ntypes=MASKS))
    second = _compute(assign_partitions(other, 3, method="lp", balance_ntypes=MASKS))
    np.testing.assert_array_equal(first["_N"], second["_N"])


def test_distributed_matches_synchronous(small: ChunkedGraph, client: object, small_blocks: object) -> None:
    parts = assign_partitions(small, 4, method="lp", balance_ntypes=MASKS)
    lp_module._RESULTS.clear()
    on_cluster = parts["_N"].compute(scheduler=client)
    with dask.config.set(scheduler="synchronous"):
        on_sync = _compute(parts)["_N"]
    np.testing.assert_array_equal(on_cluster, on_sync)


def test_heterogeneous_graph(tmp_path: Path) -> None:
    spec = SynthSpec.heterogeneous(scale=2, num_node_chunks=3, num_edge_chunks=2, seed=5)
    graph = open_chunked_graph(write_synthetic_graph(tmp_path / "g", spec).base_dir)
    parts = assign_partitions(graph, 3, method="lp", balance_ntypes=["train_mask"])
    got = _compute(parts)
    assert {t: a.size for t, a in got.items()} == {t: graph.num_nodes(t) for t in graph.node_types}
    report = compute_partition_report(graph, parts, 3)
    for ntype, counts in report.nodes.items():
        assert max(counts) <= _cap(sum(counts), 3), (ntype, counts)
    for ntype in ("paper", "author"):
        counts = report.masks[ntype]["train_mask"]
        assert max(counts) <= _cap(sum(counts), 3), (ntype, counts)
    random_cut = compute_partition_report(graph, assign_partitions(graph, 3), 3).edge_cut_fraction
    assert report.edge_cut_fraction < 0.8 * random_cut  # measured: 0.47 vs 0.67


def test_balance_edges_tightens_owned_edges(small: ChunkedGraph) -> None:
    plain = compute_partition_report(small, assign_partitions(small, 4, method="lp"), 4)
    edges = compute_partition_report(small, assign_partitions(small, 4, method="lp", balance_edges=True), 4)
    assert edges.balance()["owned_edges/total"] < 0.6 * plain.balance()["owned_edges/total"]
    assert max(edges.nodes["_N"]) <= _cap(5000, 4)


def test_config_validation() -> None:
    with pytest.raises(AssignmentError, match="eps"):
        LPConfig(eps=1.5)
    with pytest.raises(AssignmentError, match="block_rows"):
        LPConfig(block_rows=0)
    assert LPConfig().rows_per_block(8) == 1 << 19 and LPConfig(block_rows=10).rows_per_block(8) == 10


# --- kernels -------------------------------------------------------------------------


def test_orient_edges_drops_self_loops_and_orders_by_block() -> None:
    src, dst = np.array([0, 5, 3, 3]), np.array([5, 1, 3, 4])
    u, v, counts, loops = K.orient_edges(src, dst, block_rows=3, num_blocks=2)
    assert loops.tolist() == [3] and counts.tolist() == [2, 4]
    nodes = (u & K.LOCAL_MASK).astype(np.int64) + np.repeat([0, 3], counts)
    assert sorted(zip(nodes.tolist(), v.tolist())) == sorted([(0, 5), (5, 0), (5, 1), (1, 5), (3, 4), (4, 3)])
    is_dst = (u & K.DST_FLAG) != 0
    assert sorted(nodes[is_dst].tolist()) == [1, 4, 5]


def test_plan_moves_respects_caps_and_swaps() -> None:
    # stratum 0, 2 parts both full (cap 10): 4 nodes want 0 -> 1, 3 want 1 -> 0: 3 swaps
    keys = K.group_key(np.array([0, 0]), np.array([0, 1]), np.array([1, 0]), np.array([20, 10]), num_parts=2)
    acc_n, _ = plan_.plan_moves(keys, np.array([4, 3]), np.zeros(2, np.int64), sizes=np.array([[10, 10]]),
                            caps=np.array([10]), wsizes=np.zeros(2, np.int64), wcap=None, num_parts=2)
    assert acc_n.tolist() == [3, 3]
    # placement of 7 unplaced nodes into part 0 with room 5
    keys = K.group_key(np.array([0]), np.array([2]), np.array([0]), np.array([5]), num_parts=2)
    acc_n, _ = plan_.plan_moves(keys, np.array([7]), np.zeros(1, np.int64), sizes=np.array([[5, 0]]),
                            caps=np.array([10]), wsizes=np.zeros(2, np.int64), wcap=None, num_parts=2)
    assert acc_n.tolist() == [5]


def test_split_quotas_never_exceed_the_group() -> None:
    blocks, keys = np.array([0, 1, 2]), np.array([7, 7, 7])
    counts, weights = np.array([3, 3, 4]), np.array([30, 30, 40])
    qn, qw = plan_.split_quotas(blocks, keys, counts, weights, np.array([7]), np.array([10]), np.array([100]),
                            np.array([5]), np.array([50]))
    assert qn.sum() == 5 and (qn <= counts).all() and qw.sum() <= 50


def test_water_fill_and_fill_plan() -> None:
    add = plan_.water_fill(np.array([5, 1, 3, 0]), 10, 7)
    assert add.sum() == 7 and (np.array([5, 1, 3, 0]) + add).max() <= 5
    plan = plan_.fill_plan(np.array([[2], [5]]), np.array([[5, 1, 3, 0]]), np.array([10]))
    assert sum(int(c.sum()) for _, _, c in plan) == 7 and int(plan[0][2].sum()) == 2
