"""The partition quality report against a numpy oracle."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError, ChunkReadError
from dgl_chunked.io.assignment import open_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import PartitionReport, assign_partitions, compute_partition_report, report_kernels
from dgl_chunked.partition import report as report_module
from dgl_chunked.storage.buckets import write_buckets
from dgl_chunked.testing import GraphTruth, load_truth, make_chunked_graph


def oracle(graph: ChunkedGraph, truth: GraphTruth, parts: dict[str, np.ndarray], num_parts: int) -> dict[str, Any]:
    """Every report field, computed eagerly with plain numpy and Python sets."""
    md = graph.metadata
    out: dict[str, Any] = {"nodes": {}, "masks": {}, "owned_edges": {}, "cut_edges": {}}
    for t in md.node_types:
        out["nodes"][t] = np.bincount(parts[t], minlength=num_parts).tolist()
        for f, values in truth.node_data.get(t, {}).items():
            if "mask" in f and (values.dtype == np.bool_ or values.dtype.kind in "iu"):
                picked = parts[t][values.reshape(-1) != 0]
                out["masks"].setdefault(t, {})[f] = np.bincount(picked, minlength=num_parts).tolist()
    halo: dict[str, list[set[int]]] = {t: [set() for _ in range(num_parts)] for t in md.node_types}
    for spec in md.edge_types:
        src, dst = truth.edges[spec.name]
        sp, dp = parts[spec.src_type][src], parts[spec.dst_type][dst]
        out["owned_edges"][spec.name] = np.bincount(dp, minlength=num_parts).tolist()
        out["cut_edges"][spec.name] = int((sp != dp).sum())
        for s, p, q in zip(src.tolist(), sp.tolist(), dp.tolist(), strict=True):
            if p != q:
                halo[spec.src_type][q].add(s)
    out["halo_nodes"] = {t: [len(s) for s in sets] for t, sets in halo.items()}
    return out


def _check(report: PartitionReport, expected: dict[str, Any]) -> None:
    got = report.to_dict()
    for key in ("nodes", "masks", "owned_edges", "cut_edges", "halo_nodes"):
        assert got[key] == expected[key], key
    total = sum(sum(v) for v in expected["owned_edges"].values())
    assert report.num_edges == total
    assert report.edge_cut == sum(expected["cut_edges"].values())
    assert report.edge_cut_fraction == report.edge_cut / total


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[ChunkedGraph, GraphTruth]:
    meta = make_chunked_graph(tmp_path_factory.mktemp("small"))
    return open_chunked_graph(meta.base_dir), load_truth(meta)


@pytest.mark.parametrize(("num_parts", "seed"), [(1, 0), (3, 1), (4, 7), (50, 2)])
def test_report_matches_numpy_oracle(small: tuple[ChunkedGraph, GraphTruth], num_parts: int, seed: int) -> None:
    graph, truth = small
    lazy = assign_partitions(graph, num_parts, seed=seed)
    parts = {t: a.compute() for t, a in lazy.items()}
    report = compute_partition_report(graph, lazy, num_parts)
    _check(report, oracle(graph, truth, parts, num_parts))
    assert report.masks and "train_mask" in report.masks["paper"]


@pytest.mark.parametrize(("flag_bytes", "num_parts"), [(12, 3), (24, 4), (7, 7)])
def test_halo_counts_over_many_node_ranges_match_the_oracle(
    small: tuple[ChunkedGraph, GraphTruth], monkeypatch: pytest.MonkeyPatch, flag_bytes: int, num_parts: int
) -> None:
    """The HALO count cut into node ranges of a few nodes each (ranges across node-type
    boundaries, a last range cut short): the same counts as the oracle's sets."""
    graph, truth = small
    monkeypatch.setattr(report_kernels, "HALO_FLAG_BYTES", flag_bytes)  # where halo_ranges reads it
    width, num_ranges = report_kernels.halo_ranges(int(graph.metadata.node_type_offsets[-1]), num_parts)
    assert width == max(1, flag_bytes // num_parts) and num_ranges > 5
    lazy = assign_partitions(graph, num_parts, seed=3)
    parts = {t: a.compute() for t, a in lazy.items()}
    _check(compute_partition_report(graph, lazy, num_parts), oracle(graph, truth, parts, num_parts))


def test_a_failed_halo_write_leaves_no_scratch(
    small: tuple[ChunkedGraph, GraphTruth], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A HALO bucket file that cannot be written: the error reaches the caller and the
    report's scratch directory (its Zarr copy, the files written so far) is removed."""
    graph, _ = small
    calls: list[str] = []

    def full(path: str, *args: Any, **kwargs: Any) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.EFBIG, "File too large", path)
        write_buckets(path, *args, **kwargs)

    monkeypatch.setattr(report_module, "write_buckets", full)
    with dask.config.set(scheduler="synchronous"), pytest.raises(OSError, match="File too large"):
        compute_partition_report(graph, assign_partitions(graph, 3, seed=1), 3, scratch_dir=tmp_path)
    assert len(calls) == 2 and "/halo/" in calls[1]
    assert list(tmp_path.iterdir()) == []


def test_a_missing_edge_file_on_a_cluster_is_reported_and_leaves_no_scratch(
    client: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One edge task fails at once while another is still writing its HALO buckets: the
    caller gets the missing file's error only after that write, and no scratch remains
    (before, the removal raced the write and could report the race instead)."""
    import time

    meta = make_chunked_graph(tmp_path / "graph")
    graph = open_chunked_graph(meta.base_dir)
    first = next(g for g in graph.edge_groups(graph.metadata.edge_types[0].name) if g.rows)
    missing = first.refs[0].path
    Path(missing).unlink()

    started: list[str] = []
    finished: list[str] = []

    def slow(path: str, *args: Any, **kwargs: Any) -> None:
        started.append(path)
        time.sleep(0.5)
        try:
            write_buckets(path, *args, **kwargs)
        finally:
            finished.append(path)

    monkeypatch.setattr(report_module, "write_buckets", slow)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(ChunkReadError, match="does not exist") as err:
        compute_partition_report(graph, assign_partitions(graph, 3, seed=1), 3, scratch_dir=scratch)
    in_flight_at_return = len(started) - len(finished)
    assert in_flight_at_return == 0
    assert Path(missing).name in str(err.value)
    assert list(scratch.iterdir()) == []


def test_report_on_dgl_golden_assignment(golden_dir: Path, tiny_chunked: Path) -> None:
    graph = open_chunked_graph(tiny_chunked)
    meta, lazy = open_assignment(golden_dir / "tiny-pipeline" / "partition_assignment", graph.metadata)
    parts = {t: a.compute() for t, a in lazy.items()}
    report = compute_partition_report(graph, lazy, meta.num_parts)
    _check(report, oracle(graph, load_truth(graph.metadata), parts, meta.num_parts))
    assert report.masks == {"author": {"mask": [1, 1]}}
    assert report.balance()["nodes/author"] == 1.0


def test_report_with_skewed_parts_and_balance(small: tuple[ChunkedGraph, GraphTruth]) -> None:
    graph, truth = small
    parts = {t: (np.arange(graph.num_nodes(t)) % 2 == 0).astype(np.int32) * 2 for t in graph.node_types}
    lazy = {t: da.from_array(v, chunks=4) for t, v in parts.items()}  # chunks unlike the graph's
    report = compute_partition_report(graph, lazy, 3)
    _check(report, oracle(graph, truth, parts, 3))
    nodes = report.nodes["paper"]
    assert nodes[1] == 0 and report.balance()["nodes/paper"] == pytest.approx(max(nodes) / (sum(nodes) / 3))


def test_report_on_two_worker_cluster_equals_sync(small: tuple[ChunkedGraph, GraphTruth], client: object) -> None:
    graph, _ = small
    lazy = assign_partitions(graph, 4, seed=9)
    on_cluster = compute_partition_report(graph, lazy, 4)
    with dask.config.set(scheduler="synchronous"):
        on_sync = compute_partition_report(graph, lazy, 4)
    assert on_cluster == on_sync


def test_out_of_range_ids_are_rejected(small: tuple[ChunkedGraph, GraphTruth]) -> None:
    graph, _ = small
    lazy = assign_partitions(graph, 4, seed=0)
    with pytest.raises(AssignmentError, match=r"expected partition IDs in \[0, 3\)"):
        compute_partition_report(graph, lazy, 3)
    wide = {t: a.astype(np.int64) for t, a in assign_partitions(graph, 4, seed=0).items()}
    wide["paper"][3] = (1 << 32) + 1  # a 32-bit cast would make it partition 1
    with pytest.raises(AssignmentError, match=r"found 4294967297 \(block row 3\)"):
        compute_partition_report(graph, wide, 4)
    lazy["paper"] = lazy["paper"][:-1]
    with pytest.raises(AssignmentError, match=r"parts\['paper'\]: expected 20 partition IDs"):
        compute_partition_report(graph, lazy, 4)


def test_output_formats(small: tuple[ChunkedGraph, GraphTruth], tmp_path: Path) -> None:
    graph, _ = small
    report = compute_partition_report(graph, assign_partitions(graph, 2, seed=4), 2)
    report.to_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["num_parts"] == 2 and data["edge_cut"] == report.edge_cut
    assert data["balance"]["owned_edges/total"] == report.balance()["owned_edges/total"]
    table = report.to_table()
    assert f"edge cut: {report.edge_cut} of {report.num_edges} edges" in table
    assert "train_mask paper" in table and "HALO nodes (all)" in table and "max/mean" in table


def test_integer_masks_count_their_nonzero_nodes(tmp_path: Path) -> None:
    """GSProcessing writes int8 masks (0/1, ``shape`` metadata): counted like boolean ones."""
    from tests.gsprocessing import write_assignment_txt, write_gsprocessing_graph

    truth = write_gsprocessing_graph(tmp_path / "gsp")
    graph = open_chunked_graph(truth.root)
    assert graph.node_feature("user", "train_mask").dtype == np.int8
    parts = write_assignment_txt(truth, tmp_path / "assign", num_parts=3)
    meta, lazy = open_assignment(tmp_path / "assign", graph.metadata)
    report = compute_partition_report(graph, lazy, meta.num_parts)
    for mask in ("train_mask", "val_mask", "test_mask"):
        values = truth.node_features["user"][mask].reshape(-1)
        assert values.dtype == np.int8 and 0 < np.count_nonzero(values) < values.size
        want = np.bincount(parts["user"][values != 0], minlength=3).tolist()
        assert report.masks["user"][mask] == want, mask
    assert set(report.masks) == {"user"}
