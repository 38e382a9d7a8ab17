"""The ``metis`` method: quality on a power-law graph, mask balance, memory refusal."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import (
    MetisMemoryError,
    PartitionReport,
    assign_partitions,
    compute_partition_report,
    estimate_metis_memory,
)
from dgl_chunked.partition.metis import metis_parts, rebalance_strata, strata_labels, symmetric_csr
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import raise_if_dask_computes

pytest.importorskip("pymetis")

MASKS = ["train_mask", "val_mask", "test_mask"]


@pytest.fixture(scope="module")
def rmat(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    """R-MAT power-law graph, 20k nodes / 200k edges, with train/val/test masks (60/20/20)."""
    spec = SynthSpec.homogeneous(20_000, 200_000, distribution="powerlaw", feat_dim=None, num_chunks=4, seed=1)
    return open_chunked_graph(write_synthetic_graph(tmp_path_factory.mktemp("rmat") / "g", spec).base_dir)


@pytest.fixture(scope="module")
def reports(rmat: ChunkedGraph) -> dict[str, PartitionReport]:
    out = {}
    for name, kwargs in {
        "random": {},
        "metis": {"method": "metis"},
        "metis-masks": {"method": "metis", "balance_ntypes": MASKS},
    }.items():
        out[name] = compute_partition_report(rmat, assign_partitions(rmat, 4, seed=0, **kwargs), 4)
    return out


def test_metis_cuts_far_fewer_edges_than_random(reports: dict[str, PartitionReport]) -> None:
    random_cut, metis_cut = reports["random"].edge_cut_fraction, reports["metis"].edge_cut_fraction
    print(f"\nR-MAT 20k nodes / 200k edges, 4 parts: edge cut random {random_cut:.3f}, metis {metis_cut:.3f}")
    # measured (seed 0): random 0.748, metis 0.275
    assert metis_cut < 0.5 * random_cut
    assert sum(reports["metis"].halo_nodes["_N"]) < 0.7 * sum(reports["random"].halo_nodes["_N"])


def test_masks_balanced_within_5_percent(reports: dict[str, PartitionReport]) -> None:
    report = reports["metis-masks"]
    for mask in MASKS:
        counts = np.array(report.masks["_N"][mask])
        assert np.abs(counts / counts.mean() - 1).max() <= 0.05, (mask, counts)
    nodes = np.array(report.nodes["_N"])
    assert np.abs(nodes / nodes.mean() - 1).max() <= 0.05
    assert report.edge_cut_fraction < 0.5 * reports["random"].edge_cut_fraction  # repair keeps the cut


def test_deterministic_and_lazy(rmat: ChunkedGraph) -> None:
    with raise_if_dask_computes():
        parts = assign_partitions(rmat, 3, method="metis", seed=5)
    arr = parts["_N"]
    assert arr.dtype == np.int32 and arr.chunks == (rmat.node_chunks("_N"),) and arr.name.startswith("dglc-assign")
    first = arr.compute()
    np.testing.assert_array_equal(first, assign_partitions(rmat, 3, method="metis", seed=5)["_N"].compute())
    assert set(np.unique(first)) == {0, 1, 2}


def test_named_by_the_files_not_by_the_open(tmp_path: Path) -> None:
    """Another open of unchanged files gives the same assignment name (a rerun's dispatch
    resumes on it); a replaced edge file gives a new one (never a stale result)."""
    spec = SynthSpec.homogeneous(200, 1_000, feat_dim=None, num_chunks=2, seed=3)
    base = write_synthetic_graph(tmp_path / "g", spec).base_dir

    def name() -> str:
        return str(assign_partitions(open_chunked_graph(base), 2, method="metis", seed=0)["_N"].name)

    first = name()
    assert name() == first
    edge_file = Path(open_chunked_graph(base).edge_chunks("_N:_E:_N")[0].path)
    lines = edge_file.read_text().splitlines()
    (tmp_path / "e.txt").write_text("\n".join(reversed(lines)) + "\n")
    (tmp_path / "e.txt").replace(edge_file)
    assert name() != first


def test_refuses_over_memory_limit_before_reading(rmat: ChunkedGraph) -> None:
    need = estimate_metis_memory(20_000, 200_000)
    with raise_if_dask_computes(), pytest.raises(MetisMemoryError) as info:
        assign_partitions(rmat, 4, method="metis", max_memory=need - 1)
    message = str(info.value)
    assert f"estimated {need} bytes" in message and f"at most {need - 1} bytes" in message
    assert "method 'random'" in message
    assert isinstance(info.value, AssignmentError)
    assign_partitions(rmat, 4, method="metis", max_memory=need)  # at the limit: accepted


def test_missing_pymetis_names_the_extra(rmat: ChunkedGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymetis", None)
    with pytest.raises(ImportError, match=r"pip install dgl_chunked\[metis\]"):
        assign_partitions(rmat, 2, method="metis")


def test_heterogeneous_golden_graph(tiny_chunked: Path) -> None:
    graph = open_chunked_graph(tiny_chunked)
    parts = assign_partitions(graph, 2, method="metis", balance_ntypes=["mask"])
    report = compute_partition_report(graph, parts, 2)
    assert report.masks["author"]["mask"] == [1, 1]
    for ntype in graph.node_types:  # every node type split evenly (its own stratum)
        counts = report.nodes[ntype]
        assert max(counts) - min(counts) <= 1, (ntype, counts)


# --- kernels ------------------------------------------------------------------------------


def test_symmetric_csr_dedups_and_drops_self_loops() -> None:
    src = np.array([0, 1, 0, 2, 2, 3])
    dst = np.array([1, 0, 1, 2, 3, 2])
    xadj, adjncy = symmetric_csr(src, dst, 5)
    assert xadj.tolist() == [0, 1, 2, 3, 4, 4]
    assert adjncy.tolist() == [1, 0, 3, 2]


def test_metis_parts_edge_cases() -> None:
    xadj, adjncy = symmetric_csr(np.array([0]), np.array([0]), 4)  # only a self-loop: no edges
    assert metis_parts(xadj, adjncy, 2, seed=0).tolist() == [0, 1, 0, 1]
    assert metis_parts(xadj, adjncy, 1, seed=0).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("num_nodes", [3, 16])
def test_no_more_nodes_than_parts_one_per_part_and_nothing_printed(
    num_nodes: int, capfd: pytest.CaptureFixture[str]
) -> None:
    """METIS would print "too many parts" to the process's standard output (the C
    library's, past Python's), into the ``partition`` command's report."""
    ring = np.arange(num_nodes)
    xadj, adjncy = symmetric_csr(ring, (ring + 1) % num_nodes, num_nodes)
    assert metis_parts(xadj, adjncy, 16, seed=0).tolist() == list(range(num_nodes))
    assert capfd.readouterr() == ("", "")


def test_rebalance_strata_brings_every_stratum_within_tolerance() -> None:
    rng = np.random.default_rng(0)
    n, num_parts = 4000, 4
    src, dst = rng.integers(0, n, 20_000), rng.integers(0, n, 20_000)
    xadj, adjncy = symmetric_csr(src, dst, n)
    mask = rng.random(n) < 0.1
    labels = strata_labels(np.array([0, n]), [[mask]])
    part = np.where(np.arange(n) < n // 2, 0, rng.integers(0, num_parts, n)).astype(np.int32)  # skewed
    fixed, moved = rebalance_strata(part, labels, xadj, adjncy, num_parts, tolerance=0.03)
    for stratum in (mask, ~mask):
        counts = np.bincount(fixed[stratum], minlength=num_parts)
        assert np.abs(counts / counts.mean() - 1).max() <= 0.03 + 1 / counts.mean()
    assert moved == int((fixed != part).sum()) and moved < n // 2
    again, moved_again = rebalance_strata(fixed, labels, xadj, adjncy, num_parts, tolerance=0.03)
    assert moved_again == 0 and np.array_equal(again, fixed)


def test_strata_labels_first_mask_wins() -> None:
    offsets = np.array([0, 3, 5])
    labels = strata_labels(offsets, [[np.array([1, 1, 0], bool), np.array([0, 1, 1], bool)], []])
    assert labels.tolist() == [1, 1, 2, 3, 3]


def test_metis_ncuts_keeps_the_best_of_several_partitions() -> None:
    """``ncuts`` reaches METIS: the best of 4 partitions never cuts more than the first
    (the one ``ncuts=1`` returns), and less on some of these random graphs."""

    pytest.importorskip("pymetis")
    rng = np.random.default_rng(0)
    cuts = []
    for n, m, parts in ((2000, 8000, 4), (3000, 20000, 8), (1000, 3000, 16)):
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = src != dst
        u, v = np.r_[src[keep], dst[keep]], np.r_[dst[keep], src[keep]]
        v = v[np.argsort(u, kind="stable")]
        xadj = np.r_[0, np.cumsum(np.bincount(u, minlength=n))]
        rows = np.repeat(np.arange(n), np.diff(xadj))
        for ncuts in (1, 4):
            part = metis_parts(xadj, v, parts, seed=0, ncuts=ncuts)
            cuts.append(int((part[rows] != part[v]).sum()))
    one, four = cuts[0::2], cuts[1::2]
    assert all(b <= a for a, b in zip(one, four, strict=True)) and four != one, cuts
