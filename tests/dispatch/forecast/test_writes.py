"""The forecast's write step plans the pieces the run splits its files into (issue 37):
for the cluster it forecasts, the tasks a real run submits, and the bytes of a run
whose files are not split unchanged."""

from __future__ import annotations

from pathlib import Path

import dask
import pytest

import dgl_chunked as dglc
from dgl_chunked.dispatch import feature_split, graph_split
from dgl_chunked.dispatch.forecast import forecast_dispatch, forecast_network
from dgl_chunked.dispatch.forecast.requests import REQUEST_DOWN_BYTES, REQUEST_UP_BYTES, split_file_requests
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

from ..helpers import output_files

WRITE = "write partitions"


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("writes") / "chunked"
    spec = SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_feat_dim=2, seed=0)
    write_synthetic_graph(root, spec)
    return root


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files that may split: a graph file (about 100k edges) in 4 ranges at most (never near a
    range's boundary), a feature file in a piece per 64 KiB. Every choice of ``file_pieces`` below
    is clear by 25% or more, so the partitions' few edges above or below the balance change none."""
    monkeypatch.setattr(graph_split, "GRAPH_TASK_EDGES", 30_000)
    monkeypatch.setattr(feature_split, "FEATURE_TASK_BYTES", 64 << 10)


@pytest.mark.parametrize(
    ("threads", "tasks"),
    [
        (2, 6),  # 2 partitions x 3 files: a task per file
        # 4 spare threads: both graph files (3.0 MB each) in 3 ranges (3 HALO, skeleton, 3 ranges, rename)
        (10, 2 * (3 + 1 + 3 + 1) + 2 + 2),
        # 10 spare: the graph files in 4 ranges (their most), then the feature files (0.80 and 0.75 MB)
        # in 2 pieces each (skeleton, 2 pieces, rename)
        (16, 2 * (4 + 1 + 4 + 1) + 4 * (1 + 2 + 1)),
    ],
)
def test_forecast_write_tasks_are_the_tasks_a_run_submits(
    graph_dir: Path, tmp_path: Path, small_pieces: None, threads: int, tasks: int
) -> None:
    options = dglc.DispatchOptions(block_rows=4096)
    plan = dglc.forecast_run(graph_dir, tmp_path / "plan", num_parts=2, workers=threads, options=options)
    planned = {s.name: s.tasks for s in plan.stages}[WRITE]
    with dask.config.set(scheduler="threads", num_workers=threads):
        result = dglc.run(graph_dir, tmp_path / "out", num_parts=2, options=options)
    assert planned == result.step_tasks[WRITE] == tasks
    assert plan.writes is not None and plan.writes.tasks == tasks
    assert f"write partitions: {tasks} tasks for 2 x 3 files on {threads} thread(s)" in plan.table()
    if threads > 2:
        one = tmp_path / "one"
        with dask.config.set(scheduler="threads", num_workers=2):
            dglc.run(graph_dir, one, num_parts=2, options=options)
        assert output_files(tmp_path / "out") == output_files(one)  # the same bytes, split or not


def test_the_forecast_splits_nothing_a_run_would_not_split(graph_dir: Path, tmp_path: Path, small_pieces: None) -> None:
    """A CSC graph, a URL output: one task per file on any number of threads (as the run)."""
    graph = open_chunked_graph(graph_dir)
    csc = forecast_dispatch(graph, 2, workers=64, options=dglc.DispatchOptions(graph_formats=("coo", "csc")))
    assert csc.writes is not None
    assert [f.pieces for f in csc.writes.files][0] == (1, 1)  # the graph files stay whole
    assert csc.writes.files[1].pieces != (1, 1)  # the feature files still split
    remote = forecast_dispatch(graph, 2, workers=64, out_dir="s3://bucket/out")
    assert remote.writes is not None and remote.writes.tasks == 6


def test_network_bytes_unchanged_where_no_file_splits_and_requests_count_the_pieces(
    graph_dir: Path, small_pieces: None
) -> None:
    graph = open_chunked_graph(graph_dir)
    opts = dglc.DispatchOptions(block_rows=4096)

    def write_step(threads: int) -> tuple[int, int, int]:
        """(payload bytes down, payload bytes up, requests) of the write step."""
        forecast = forecast_dispatch(graph, 2, workers=threads, options=opts)
        net = forecast_network(graph, 2, forecast, options=opts, hosts=1, processes_per_host=threads)
        step = next(s for s in net.stages if s.name == WRITE)
        headers = (step.requests * REQUEST_DOWN_BYTES, step.requests * REQUEST_UP_BYTES)
        return step.down_bytes - headers[0], step.up_bytes - headers[1], step.requests

    none = forecast_dispatch(graph, 2, workers=6, options=opts)
    assert none.writes is not None and all(f.pieces == (1, 1) for f in none.writes.files)
    base = write_step(2)
    assert write_step(6) == base  # as many threads as files: nothing splits, nothing changes
    split = forecast_dispatch(graph, 2, workers=16, options=opts)
    assert split.writes is not None
    extra = sum(split_file_requests(f.kind, n) for f in split.writes.files for n in f.pieces)
    # per graph file in 4 ranges: its partial file (2), 3 HALO and 2 x 3 range cuts (3 each); per
    # feature file in 2 pieces: 2 and one cut
    assert extra == 2 * (2 + 3 * (3 + 2 * 3)) + 4 * (2 + 3 * 1)
    assert write_step(16) == (base[0], base[1], base[2] + extra)  # the same payload, the pieces' requests
