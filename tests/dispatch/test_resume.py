"""Crash and restart: a killed client resumes from staging; a killed worker costs nothing.

Faults are injected for real: the client is a subprocess killed with SIGKILL while
staging or while writing partitions; a `dask worker` process is killed mid-dispatch.
Every scenario ends with output byte-identical to an undisturbed run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch

from .helpers import output_files

OPTIONS = DispatchOptions(save_orig_nids=True, save_orig_eids=True)

CLIENT = """
import sys, dask
from dgl_chunked.dispatch import DispatchOptions, dispatch
with dask.config.set(scheduler="synchronous"):
    dispatch(sys.argv[1], sys.argv[2], sys.argv[3],
             options=DispatchOptions(save_orig_nids=True, save_orig_eids=True))
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A graph whose staging and writing take long enough to be interrupted, and a clean run."""
    root = tmp_path_factory.mktemp("resume")
    chunked, assign, clean = root / "chunked", root / "assign", root / "clean"
    assert (
        main(
            [
                "synth",
                "--out-dir",
                str(chunked),
                "--preset",
                "homogeneous",
                "--num-nodes",
                "100000",
                "--num-edges",
                "1200000",
                "--num-chunks",
                "16",
                "--feat-dim",
                "8",
            ]
        )
        == 0
    )
    assert (
        main(["partition", "--in-dir", str(chunked), "--out-dir", str(assign), "--num-parts", "6", "--seed", "1"]) == 0
    )
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, assign, clean, options=OPTIONS)
    return chunked, assign, clean


def _markers(out: Path) -> dict[str, float]:
    done = out / "_staging" / "_done"
    found = {}
    for path in done.iterdir() if done.is_dir() else []:
        try:
            if path.name.endswith(".json"):
                found[path.name] = path.stat().st_mtime_ns
        except FileNotFoundError:  # a record being renamed into place right now
            pass
    return found


def _kill_client_when(graph, out: Path, ready) -> dict[str, float]:
    chunked, assign, _ = graph
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(chunked), str(assign), str(out)])
    try:
        deadline = time.monotonic() + 240
        while not ready(_markers(out)):
            if proc.poll() is not None:
                pytest.fail("the client finished before the fault could be injected")
            if time.monotonic() > deadline:
                pytest.fail("timed out waiting for the moment to kill the client")
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "metadata.json").exists()
    lease = json.loads((out / ".dglc-owned.json").read_text())  # the dead client still holds it
    assert lease["pid"] == proc.pid and not lease["released"]
    return _markers(out)


def _count(markers: dict[str, float], prefix: str) -> int:
    return sum(name.startswith(quote(prefix, safe="")) for name in markers)


@pytest.mark.parametrize("moment", ["staging", "finalisation"])
def test_killed_client_resumes_from_staging(graph, tmp_path, moment):
    chunked, assign, clean = graph
    out = tmp_path / "out"
    if moment == "staging":
        before = _kill_client_when(graph, out, lambda m: _count(m, "edges/") >= 3)
        assert _count(before, "write/") == 0
    else:
        before = _kill_client_when(graph, out, lambda m: _count(m, "write/") >= 1)
    assert before
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, assign, out, options=replace(OPTIONS, keep_staging=True))
    lease = json.loads((out / ".dglc-owned.json").read_text())  # taken over at once (dead pid), released
    assert lease["pid"] == os.getpid() and lease["released"]
    after = _markers(out)
    # work finished before the crash was not redone: its completion records are untouched
    assert {k: after[k] for k in before} == before
    assert output_files(out) == output_files(clean)


def test_changed_assignment_invalidates_staging(graph, tmp_path):
    chunked, assign, _ = graph
    out = tmp_path / "out"
    _kill_client_when(graph, out, lambda m: _count(m, "edges/") >= 2)
    changed = tmp_path / "assign2"
    assert (
        main(["partition", "--in-dir", str(chunked), "--out-dir", str(changed), "--num-parts", "6", "--seed", "2"]) == 0
    )
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, changed, out, options=OPTIONS)
        dispatch(chunked, changed, tmp_path / "fresh", options=OPTIONS)
    assert output_files(out) == output_files(tmp_path / "fresh")


@pytest.mark.distributed
def test_killed_worker_process_costs_nothing(graph, tmp_path, scheduler_address):
    import psutil
    from distributed import Client

    chunked, assign, clean = graph
    out = tmp_path / "out"
    with Client(scheduler_address) as client:
        pids = sorted(client.run(os.getpid).values())
        errors: list[BaseException] = []

        def job() -> None:
            try:
                dispatch(chunked, assign, out, options=OPTIONS, client=client)
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        thread = threading.Thread(target=job)
        thread.start()
        deadline = time.monotonic() + 240
        while _count(_markers(out), "edges/") < 2:
            assert thread.is_alive(), errors
            assert time.monotonic() < deadline, "dispatch never reached edge staging"
            time.sleep(0.005)
        victim = psutil.Process(pids[0])
        victim.kill()
        victim.wait(timeout=30)
        thread.join(timeout=600)
        assert not errors, errors
    assert output_files(out) == output_files(clean)
    assert np.all([(out / f"part{p}" / "graph.dgl").exists() for p in range(6)])
