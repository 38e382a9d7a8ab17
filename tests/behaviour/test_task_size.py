"""Read tasks sized by bytes: many small files coalesced, output independent of the task size.

The suite runs with one file per task (``DGLC_TASK_SIZE=1``, conftest.py); here the
task size is set per call, from one file per task to the whole type in one task, and
every command must give the same bytes: ``dispatch`` / ``run`` (random and lp), the
report of ``partition``, ``verify`` and ``validate``. A graph of many small files
(a Spark job's part files) must also give exactly the output of the same rows in a
few files, in fewer tasks. Costs about 10 s.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgl_chunked import (
    DispatchOptions,
    dispatch,
    open_chunked_graph,
    run,
    validate_chunked_graph,
    verify_partitions,
)
from dgl_chunked.cli import main
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.groups import DEFAULT_TASK_BYTES, group_ranges, resolve_task_bytes
from dgl_chunked.partition import assign_partitions, compute_partition_report
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import load_truth, write_graph_from_truth
from tests.dispatch.helpers import output_files

ORIG = DispatchOptions(save_orig_nids=True, save_orig_eids=True)
SIZES = [1, 20_000, DEFAULT_TASK_BYTES]  # one file per task, a few files per task, a whole type per task


@given(weights=st.lists(st.integers(0, 1000), max_size=40), task=st.integers(1, 5000))
def test_groups_are_consecutive_and_as_many_as_the_quotas(weights: list[int], task: int) -> None:
    ranges = group_ranges(weights, task)
    assert [i for lo, hi in ranges for i in range(lo, hi)] == list(range(len(weights)))
    assert all(hi > lo for lo, hi in ranges)
    total = sum(weights)
    assert len(ranges) <= max(1, -(-total // task)) if weights else ranges == []
    for lo, hi in ranges[:-1]:  # a range closes at the file that fills its quota, not later
        assert sum(weights[lo : hi - 1]) < -(-total // max(1, -(-total // task))) or hi - lo == 1


def test_task_size_from_argument_environment_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_task_bytes("64MiB") == 64 << 20
    assert resolve_task_bytes(1000) == 1000
    monkeypatch.setenv("DGLC_TASK_SIZE", "2KiB")
    assert resolve_task_bytes(None) == 2048
    monkeypatch.delenv("DGLC_TASK_SIZE")
    assert resolve_task_bytes(None) == DEFAULT_TASK_BYTES
    for bad in ("lots", "0", -1):
        with pytest.raises(OptionError, match="task size"):
            resolve_task_bytes(bad)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``few``: a heterogeneous graph in 2-3 files per type; ``many``: its rows in 12
    Parquet files per edge type and feature (unaligned with each other)."""
    root = tmp_path_factory.mktemp("graphs")
    spec = SynthSpec.heterogeneous(scale=1, seed=3)
    from dataclasses import replace

    write_synthetic_graph(root / "few", replace(spec, num_edge_chunks=3, num_node_chunks=2, num_feature_chunks=2))
    truth = load_truth(root / "few")
    write_graph_from_truth(
        root / "many", truth, edge_chunks=12, feature_chunks=11, edge_format="parquet", feature_format="parquet"
    )
    return {"few": root / "few", "many": root / "many"}


def _dispatch(graph_dir: Path, out: Path, task_bytes: int) -> dict[str, int]:
    graph = open_chunked_graph(graph_dir, task_bytes=task_bytes)
    parts = assign_partitions(graph, 3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave a partition empty
        result = dispatch(graph, parts, out, num_parts=3, options=ORIG)
    return result.step_tasks


def test_dispatch_bytes_do_not_depend_on_task_size_or_files(graphs: dict[str, Path], tmp_path: Path) -> None:
    reference = None
    tasks = {}
    for name, graph in graphs.items():
        for size in SIZES if name == "many" else [DEFAULT_TASK_BYTES]:
            out = tmp_path / f"{name}-{size}"
            tasks[(name, size)] = _dispatch(graph, out, size)["stage edges and features"]
            files = output_files(out)
            reference = reference or files
            assert files == reference, (name, size)
    meta = json.loads((graphs["many"] / "metadata.json").read_text())
    sources = len(meta["edges"]) + sum(len(f) for d in ("node_data", "edge_data") for f in meta[d].values())
    assert tasks[("many", 1)] == 12 * len(meta["edges"]) + 11 * (sources - len(meta["edges"]))
    assert tasks[("many", DEFAULT_TASK_BYTES)] == sources  # one read task per edge type and feature
    assert tasks[("many", 1)] > tasks[("many", 20_000)] > tasks[("many", DEFAULT_TASK_BYTES)]
    graph = open_chunked_graph(graphs["many"], task_bytes=20_000)
    assert verify_partitions(graph, tmp_path / "many-20000").ok


@pytest.mark.parametrize("method", ["random", "lp"])
def test_run_and_report_do_not_depend_on_task_size(graphs: dict[str, Path], tmp_path: Path, method: str) -> None:
    outputs, reports = [], []
    for size in (5000, DEFAULT_TASK_BYTES):
        graph = open_chunked_graph(graphs["many"], task_bytes=size)
        groups = [len(graph.edge_groups(e)) for e in graph.edge_types]  # 12 files per type
        assert set(groups) == {1} if size == DEFAULT_TASK_BYTES else max(groups) > 1 and min(groups) < 12
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(graph, tmp_path / f"out-{size}", num_parts=2, method=method, options=ORIG)
        outputs.append(output_files(tmp_path / f"out-{size}"))
        parts = assign_partitions(graph, 2, method=method)
        reports.append(compute_partition_report(graph, parts, 2, scratch_dir=tmp_path).to_dict())
    assert outputs[0] == outputs[1]
    assert reports[0] == reports[1]


def test_validate_groups_files_and_reports_the_same(graphs: dict[str, Path], tmp_path: Path) -> None:
    reports = [validate_chunked_graph(graphs["many"], task_bytes=size) for size in (1, DEFAULT_TASK_BYTES)]
    assert all(r.ok for r in reports)
    assert reports[0].summary == reports[1].summary
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(graphs["many"], bad)
    meta = json.loads((bad / "metadata.json").read_text())
    victim = bad / meta["edges"][next(iter(meta["edges"]))]["data"][5]
    victim.write_bytes(victim.read_bytes()[:40])
    problems = [validate_chunked_graph(bad, task_bytes=size).problems for size in (1, DEFAULT_TASK_BYTES)]
    assert problems[0] == problems[1] and len(problems[0]) == 1 and victim.name in problems[0][0]


def test_cli_task_size_flag(graphs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["validate", "--in-dir", str(graphs["many"])]
    assert main([*argv, "--task-size", "1MiB"]) == 0
    assert main([*argv, "--task-size", "lots"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: task size: 'lots' is not a size such as 256MiB or a number of bytes"]


def test_an_edge_error_names_the_file_inside_a_group(graphs: dict[str, Path], tmp_path: Path) -> None:
    """A node ID out of range in the 8th of 12 files read by one task: that file and its row."""
    import shutil

    from dgl_chunked.errors import ChunkMismatchError
    from dgl_chunked.io.chunked.formats import read_edge_chunk, write_edge_chunk

    shutil.copytree(graphs["many"], tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "metadata.json").read_text())
    etype = next(iter(meta["edges"]))
    victim = str(tmp_path / "g" / meta["edges"][etype]["data"][7])
    src, dst = read_edge_chunk(victim, fmt="parquet", options={})
    dst = dst.copy()
    dst[2] = 10**9
    write_edge_chunk(victim, src, dst, fmt="parquet")
    graph = open_chunked_graph(tmp_path / "g", task_bytes=DEFAULT_TASK_BYTES)
    assert len(graph.edge_groups(etype)) == 1
    parts = assign_partitions(graph, 2)
    with pytest.raises(ChunkMismatchError, match=rf"{meta['edges'][etype]['data'][7]}: row 3 has destination"):
        dispatch(graph, parts, tmp_path / "out", num_parts=2)
    assert not (tmp_path / "out" / "metadata.json").exists()
    assert np.all([not p.name.startswith("part") for p in (tmp_path / "out").iterdir()])


def test_node_chunks_are_coalesced_like_read_tasks() -> None:
    """Many node chunks (a Spark job's) make as many partitioner tasks as few chunks of the same nodes."""
    from dgl_chunked.io.chunked.graph import ChunkedGraph
    from dgl_chunked.io.chunked.metadata import parse_metadata

    per_chunk = [[250] * 40, [7, 0, 5], [0]]
    doc = {
        "graph_name": "g",
        "node_type": ["a", "b", "c"],
        "num_nodes_per_type": [sum(c) for c in per_chunk],
        "num_nodes_per_chunk": per_chunk,
        "edge_type": [],
        "edges": {},
        "node_data": {},
        "edge_data": {},
    }
    meta = parse_metadata(doc, base_dir="/in")
    one_per_chunk = ChunkedGraph(meta, task_bytes=1)
    assert [one_per_chunk.node_chunks(t) for t in "abc"] == [(250,) * 40, (7, 5), (0,)]  # an empty chunk joins the next
    whole = ChunkedGraph(meta, task_bytes=DEFAULT_TASK_BYTES)
    assert [whole.node_chunks(t) for t in "abc"] == [(10_000,), (12,), (0,)]
    assert ChunkedGraph(meta, task_bytes=32 * 2500).node_chunks("a") == (2500,) * 4  # 32 bytes per node


def test_a_feature_file_of_another_dtype_is_named_inside_a_group(graphs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    from dgl_chunked.errors import ChunkMismatchError
    from dgl_chunked.io.chunked.formats import read_feature_chunk, write_feature_chunk

    shutil.copytree(graphs["many"], tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "metadata.json").read_text())
    ntype, feats = next((t, f) for t, f in meta["node_data"].items() if f)
    feat, source = next((f, s) for f, s in feats.items() if len(s["data"]) > 4)
    victim = str(tmp_path / "g" / source["data"][4])
    array = np.asarray(read_feature_chunk(victim, fmt="parquet", options={}))
    write_feature_chunk(victim, array.astype(np.float64 if array.dtype != np.float64 else np.float32), fmt="parquet")
    graph = open_chunked_graph(tmp_path / "g", task_bytes=DEFAULT_TASK_BYTES)
    assert len(graph.feature_groups("node", ntype, feat)) == 1
    with pytest.raises(ChunkMismatchError, match=rf"{source['data'][4]}.*all files of a feature must share one dtype"):
        dispatch(graph, assign_partitions(graph, 2), tmp_path / "out", num_parts=2)
    assert not (tmp_path / "out" / "metadata.json").exists()
