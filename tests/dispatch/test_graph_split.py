"""A partition's graph.dgl written by several tasks, by row range of its edges (issue 37):
more tasks in the write step where the cluster has threads to spare, the same bytes as the
one-task writer."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, api, dispatch, graph_split
from dgl_chunked.dispatch.write_pieces import cluster_threads
from dgl_chunked.io.dgl.binary import read_graphs

from .helpers import output_files

KINDS = 5  # graph, node_feat, edge_feat, orig_nids, orig_eids


@pytest.fixture
def many_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write step sees a cluster of 1024 threads: every file that may split does, as far as it goes."""
    monkeypatch.setattr(api, "cluster_threads", lambda client: 1024)


def _dispatch(golden_dir: Path, out: Path, caplog: pytest.LogCaptureFixture, client: Any = None, **kw: Any) -> int:
    """Dispatch the tiny golden graph into ``out``; return the write step's task count."""
    tiny = golden_dir / "tiny-pipeline"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dgl_chunked.dispatch.api"):
        dispatch(
            tiny / "chunked",
            tiny / "partition_assignment",
            out,
            client=client,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True, overwrite=True, **kw),
        )
    (line,) = [r.getMessage() for r in caplog.records if "step: write partitions" in r.getMessage()]
    match = re.search(r"\((\d+) tasks\)", line)
    assert match is not None, line
    return int(match.group(1))


def _edges_per_part(out: Path) -> list[int]:
    return [int(read_graphs(p / "graph.dgl")[0][0].num_edges()) for p in sorted(out.glob("part*"))]


def test_split_graph_files_are_the_one_task_files_byte_for_byte(
    golden_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    many_threads: None,
) -> None:
    one = tmp_path / "one"
    assert _dispatch(golden_dir, one, caplog) == 2 * KINDS  # two partitions: a task per file
    edges = _edges_per_part(one)
    assert min(edges) > 7

    for per_task in (3, 7, max(edges) - 1):  # ranges cut inside the staged segments and across them
        monkeypatch.setattr(graph_split, "GRAPH_TASK_EDGES", per_task)
        split = tmp_path / f"split-{per_task}"
        tasks = _dispatch(golden_dir, split, caplog)
        ranges = [-(-e // per_task) for e in edges]
        # per split partition: HALO tasks (at most HALO_TASKS), an edge-rows task per range, the
        # skeleton, the rename, and the other four files' tasks; a partition of one range: a task per file
        halos = [min(graph_split.HALO_TASKS, r) for r in ranges]
        assert tasks == sum(h + r + 2 + KINDS - 1 if r > 1 else KINDS for h, r in zip(halos, ranges, strict=True))
        assert sorted(r > 1 for r in ranges) == ([False, True] if per_task == max(edges) - 1 else [True, True])
        assert output_files(split) == output_files(one)
        if per_task == 3:
            assert max(ranges) > graph_split.HALO_TASKS  # some HALO tasks cover several ranges
        assert not list(split.rglob(graph_split.PARTIAL_NAME))


def test_split_graph_files_written_by_worker_processes(
    golden_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    process_client: Any,
) -> None:
    """Ranges written by two worker processes into one file at their offsets."""
    assert cluster_threads(process_client) == 2  # two worker processes of one thread
    monkeypatch.setattr(api, "cluster_threads", lambda client: 64)
    with dask.config.set(scheduler="synchronous"):
        _dispatch(golden_dir, tmp_path / "one", caplog)
    monkeypatch.setattr(graph_split, "GRAPH_TASK_EDGES", 5)
    tasks = _dispatch(golden_dir, tmp_path / "split", caplog, client=process_client)
    assert tasks > 2 * KINDS
    assert output_files(tmp_path / "split") == output_files(tmp_path / "one")


def test_only_coo_one_hop_local_graph_files_split(
    golden_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    many_threads: None,
) -> None:
    monkeypatch.setattr(graph_split, "GRAPH_TASK_EDGES", 3)
    assert _dispatch(golden_dir, tmp_path / "csc", caplog, graph_formats=("csc",)) == 2 * KINDS
    assert _dispatch(golden_dir, tmp_path / "hops", caplog, halo_hops=2) == 2 * KINDS


def test_a_rerun_after_a_lost_skeleton_keeps_what_the_ranges_wrote(tmp_path: Path) -> None:
    """The skeleton writer does not truncate: written again, it leaves the holes' bytes."""
    from dgl_chunked.io.dgl.binary import ArraySpans, HomogeneousGraph, Reserved, write_graph, write_graph_skeleton

    src, dst = np.array([0, 1, 2, 2]), np.array([1, 2, 0, 1])
    ids = np.arange(3, dtype=np.int64)
    full = tmp_path / "full.dgl"
    write_graph(full, HomogeneousGraph(num_nodes=3, src=src, dst=dst, ndata={"_ID": ids}))
    holes = [Reserved((4,), "<i8"), Reserved((4,), "<i8")]
    spans = ArraySpans((3,), np.int64, lambda: iter([ids]))
    graph = HomogeneousGraph(num_nodes=3, src=holes[0], dst=holes[1], ndata={"_ID": spans})
    path = str(tmp_path / "holes.dgl")
    size = write_graph_skeleton(path, graph)
    assert size == full.stat().st_size and None not in (holes[0].offset, holes[1].offset)
    with open(path, "r+b") as f:
        for hole, values in zip(holes, (src, dst), strict=True):
            f.seek(int(hole.offset))  # type: ignore[arg-type]
            f.write(values.astype("<i8").tobytes())
    assert Path(path).read_bytes() == full.read_bytes()
    write_graph_skeleton(path, graph)  # again, as after a lost worker
    assert Path(path).read_bytes() == full.read_bytes()


@pytest.mark.parametrize("per_task", [8, 40])
def test_split_feature_files_are_the_one_task_files_byte_for_byte(
    per_task: int,
    golden_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    many_threads: None,
) -> None:
    from dgl_chunked.dispatch import feature_split

    one = tmp_path / "one"
    assert _dispatch(golden_dir, one, caplog) == 2 * KINDS
    monkeypatch.setattr(feature_split, "FEATURE_TASK_BYTES", per_task)
    split = tmp_path / "split"
    tasks = _dispatch(golden_dir, split, caplog)
    files = output_files(one)
    feature_files = [k for k in files if k.endswith(("node_feat.dgl", "edge_feat.dgl"))]
    assert len(feature_files) == 4 and all(len(files[k]) > 100 for k in feature_files)
    # each of the 4 files (bool, float32[4], int64 and float64 features) split: a skeleton, a task
    # per piece of at most per_task bytes of its payloads, the rename
    assert tasks > 2 * KINDS + 4 * 3 and all(len(files[k]) > 2 * per_task for k in feature_files)
    assert output_files(split) == files
    assert not list(split.rglob("*.parts-dglc"))


@pytest.mark.parametrize(
    ("threads", "tasks"),
    [
        (2, 2 * KINDS),  # fewer threads than the step's 10 files: a task per file
        (10, 2 * KINDS),  # as many: every thread is busy already
        (11, 2 * KINDS + 5),  # one spare thread: one graph file in 2 ranges (2 HALO, skeleton, 2 ranges, rename)
        (16, 2 * KINDS - 2 + 2 * (2 * 4 + 2)),  # six spare: both graph files in 4 ranges
    ],
)
def test_files_split_only_into_the_threads_they_would_leave_idle(
    threads: int,
    tasks: int,
    golden_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """2 partitions x 5 files on Dask's threaded scheduler of ``threads`` threads: a file is split
    only into the threads the other files leave idle, the larger files first."""
    with dask.config.set(scheduler="synchronous"):
        one = tmp_path / "one"
        _dispatch(golden_dir, one, caplog)
    edges = _edges_per_part(one)
    monkeypatch.setattr(graph_split, "GRAPH_TASK_EDGES", 3)
    assert min(edges) >= 4 * 3  # each graph file may take 4 ranges or more; the feature files stay whole
    with dask.config.set(scheduler="threads", num_workers=threads):
        assert cluster_threads() == threads
        assert _dispatch(golden_dir, tmp_path / "out", caplog) == tasks
    assert output_files(tmp_path / "out") == output_files(one)


def test_a_feature_file_split_in_two_pieces_across_its_features(
    golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One spare thread: the largest feature file in two pieces of about equal bytes, each
    covering rows of several features where the cut falls so."""
    from dgl_chunked.dispatch import feature_split

    with dask.config.set(scheduler="synchronous"):
        one = tmp_path / "one"
        _dispatch(golden_dir, one, caplog)
    monkeypatch.setattr(feature_split, "FEATURE_TASK_BYTES", 8)
    monkeypatch.setattr(api, "cluster_threads", lambda client: 2 * KINDS + 1)
    # the graph files stay whole (GRAPH_TASK_EDGES is 1M); one feature file: skeleton, 2 pieces, rename
    assert _dispatch(golden_dir, tmp_path / "out", caplog) == 2 * KINDS - 1 + 4
    assert output_files(tmp_path / "out") == output_files(one)
    assert not list((tmp_path / "out").rglob("*.parts-dglc"))
