"""The default scheduler of ``partition``, ``remap``, ``lookup`` and ``chunk`` (issue 37): chosen from
the machine and the command's own input size, logged at INFO with its reason; cluster flags win."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

import dgl_chunked.cli.context as context
import dgl_chunked.cluster as cluster_module
from dgl_chunked.cli import main
from dgl_chunked.cli.sizing import input_bytes
from dgl_chunked.cluster import ClusterOptions
from dgl_chunked.io.chunked.graph import open_chunked_graph


def _chunk_spec(tmp_path: Path) -> tuple[Path, int]:
    """A raw graph's spec, and the bytes of the raw files it names."""
    np.save(tmp_path / "e.npy", np.array([[0, 1, 2, 2], [1, 2, 2, 0]]))
    np.save(tmp_path / "f.npy", np.eye(3, dtype=np.float64))
    spec = {
        "graph_name": "cli",
        "node_types": {"n": {"features": {"f": {"path": "f.npy", "dtype": "float32"}}}},
        "edge_types": {"n:e:n": {"source": "e.npy"}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return tmp_path / "spec.json", (tmp_path / "e.npy").stat().st_size + (tmp_path / "f.npy").stat().st_size


def _commands(tmp_path: Path, tiny_chunked: Path) -> dict[str, tuple[list[str], str, str, int]]:
    """Per command: its argv, the library call it makes (module, name), what it measures and the bytes."""
    spec, raw = _chunk_spec(tmp_path)
    np.save(tmp_path / "r0.npy", np.zeros(100))
    np.save(tmp_path / "r1.npy", np.zeros(50))
    np.save(tmp_path / "q.npy", np.arange(7))
    meta = open_chunked_graph(tiny_chunked).metadata
    edges = sum(Path(p).stat().st_size for s in meta.edges.values() for p in s.paths)
    results = (tmp_path / "r0.npy").stat().st_size + (tmp_path / "r1.npy").stat().st_size
    out = str(tmp_path / "out")
    return {
        "partition": (
            ["partition", "--in-dir", str(tiny_chunked), "--out-dir", out, "--num-parts", "2"],
            "dgl_chunked.cli.partitioning:make_assignment",
            "edge files",
            edges,
        ),
        "remap": (
            ["remap", "--partitions", "P", "--out-dir", out, "--result", f"paper={tmp_path}/r*.npy"],
            "dgl_chunked.cli.remapping:remap_results",
            "results",
            results,
        ),
        "lookup": (
            ["lookup", "--partitions", "P", "--out-dir", out, "--queries", str(tmp_path / "q.npy")],
            "dgl_chunked.cli.remapping:lookup_ids",
            "queries",
            (tmp_path / "q.npy").stat().st_size,
        ),
        "chunk": (
            ["chunk", "--spec", str(spec), "--out-dir", out, "--num-chunks", "2"],
            "dgl_chunked.cli.preparing:chunk_graph",
            "raw input",
            raw,
        ),
    }


def _run(
    argv: list[str], call: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[list[ClusterOptions], Any, list[str]]:
    """Run a command with its library call replaced: the clusters it asked for, the scheduler
    current during the call, and the INFO lines of the choice."""
    import importlib

    module, name = call.split(":")
    started: list[ClusterOptions] = []
    seen: dict[str, Any] = {}

    @contextlib.contextmanager
    def fake_cluster(options: ClusterOptions) -> Iterator[None]:
        started.append(options)
        with dask.config.set(scheduler="sync"):
            yield

    def record(*args: Any, **kwargs: Any) -> Any:
        seen["scheduler"] = dask.config.get("scheduler", None)
        raise SystemExit(0)

    monkeypatch.setattr(importlib.import_module(module), name, record)
    monkeypatch.setattr(context, "cli_client", fake_cluster)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dgl_chunked.cli.sizing"):
        assert main(argv) == 0
    lines = [r.getMessage() for r in caplog.records if "scheduler:" in r.getMessage()]
    return started, seen["scheduler"], lines


@pytest.mark.parametrize("command", ["partition", "remap", "lookup", "chunk"])
def test_default_scheduler_is_chosen_from_the_input_and_logged(
    command: str,
    tmp_path: Path,
    tiny_chunked: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv, call, what, size = _commands(tmp_path, tiny_chunked)[command]
    monkeypatch.setattr(cluster_module, "WORKER_MEMORY_BYTES", 1)  # memory never limits the count here

    monkeypatch.setattr(cluster_module.os, "cpu_count", lambda: 2)
    started, scheduler, lines = _run(argv, call, monkeypatch, caplog)
    assert started == [] and scheduler is context.settled_threaded_get  # local threads
    assert lines == [f"{command}: scheduler: 2 local threads ({what} of {size / 1e6:.0f} MB, 2 cores: "
                     "threads measured faster up to 4)"]  # fmt: skip

    # the measure is exactly the command's input bytes: threads up to it, processes one byte below
    monkeypatch.setattr(cluster_module, "IN_PROCESS_BYTES", size)
    assert _run(argv, call, monkeypatch, caplog)[0] == []
    monkeypatch.setattr(cluster_module, "IN_PROCESS_BYTES", size - 1)
    assert _run(argv, call, monkeypatch, caplog)[0] == [ClusterOptions(workers=2)]
    monkeypatch.undo()
    monkeypatch.setattr(cluster_module, "WORKER_MEMORY_BYTES", 1)

    monkeypatch.setattr(cluster_module.os, "cpu_count", lambda: 16)
    started, scheduler, lines = _run(argv, call, monkeypatch, caplog)
    assert started == [ClusterOptions(workers=16)] and scheduler == "sync"  # the LocalCluster it chose
    assert lines == [f"{command}: scheduler: 16 worker process(es) x 1 thread ({what} of {size / 1e6:.0f} MB, "
                     "16 cores: processes measured 1.4x faster than threads on 16)"]  # fmt: skip


@pytest.mark.parametrize("command", ["partition", "remap", "lookup", "chunk"])
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--workers", "3"], ClusterOptions(workers=3)),
        (["--workers", "1", "--threads-per-worker", "4"], ClusterOptions(workers=1, threads_per_worker=4)),
        (["--scheduler", "tcp://127.0.0.1:1"], ClusterOptions(scheduler="tcp://127.0.0.1:1")),
        (["--memory-limit", "1GiB"], ClusterOptions(memory_limit=1 << 30)),
    ],
)
def test_cluster_flags_win_over_the_choice(
    command: str,
    flags: list[str],
    expected: ClusterOptions,
    tmp_path: Path,
    tiny_chunked: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv, call, _, _ = _commands(tmp_path, tiny_chunked)[command]
    monkeypatch.setattr(cluster_module.os, "cpu_count", lambda: 2)  # the default would be local threads
    started, scheduler, lines = _run([*argv, *flags], call, monkeypatch, caplog)
    assert started == [expected] and scheduler == "sync" and lines == []


@pytest.mark.parametrize("command", ["partition", "chunk"])
def test_threads_per_worker_alone_sizes_the_chosen_processes(
    command: str,
    tmp_path: Path,
    tiny_chunked: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv, call, _, _ = _commands(tmp_path, tiny_chunked)[command]
    monkeypatch.setattr(cluster_module, "WORKER_MEMORY_BYTES", 1)
    monkeypatch.setattr(cluster_module.os, "cpu_count", lambda: 16)
    started, _, lines = _run([*argv, "--threads-per-worker", "4"], call, monkeypatch, caplog)
    assert started == [ClusterOptions(workers=4, threads_per_worker=4)]
    assert len(lines) == 1 and lines[0].startswith(f"{command}: scheduler: 4 worker process(es) x 4 threads (")


def test_input_bytes_sums_files_globs_and_directories(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a").write_bytes(b"x" * 10)
    (tmp_path / "d" / "sub" / "b").write_bytes(b"x" * 5)
    (tmp_path / "f1.bin").write_bytes(b"x" * 7)
    (tmp_path / "f2.bin").write_bytes(b"x" * 3)
    assert input_bytes([str(tmp_path / "d")]) == 15
    assert input_bytes([str(tmp_path / "f*.bin")]) == 10
    assert input_bytes([str(tmp_path / "d"), str(tmp_path / "f1.bin")]) == 22
    assert input_bytes([str(tmp_path / "f1.bin"), "s3://bucket/x"]) is None  # remote: a cluster
    assert input_bytes([str(tmp_path / "missing*.bin")]) is None
