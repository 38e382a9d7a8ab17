"""Crash and restart: a killed client resumes from staging; a killed worker costs nothing.

Faults are injected for real and at a chosen point, never by timing: the client is a
subprocess that SIGKILLs itself right after its N-th completion record of one kind
(staging or writing partitions); a `dask worker` process SIGKILLs itself right after
finishing its N-th edge-staging task (``dgl_chunked.testing.KillWorkerAfter``).
Every scenario ends with output byte-identical to an undisturbed run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
import os, signal, sys, dask
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.dispatch.staging import Staging

prefix, limit, seen = sys.argv[4], int(sys.argv[5]), []
mark_done = Staging.mark_done

def crash_after_limit(self, key, value, stamp=""):  # the fault: SIGKILL right after the limit-th record
    mark_done(self, key, value, stamp)
    if key.startswith(prefix):
        seen.append(key)
        if len(seen) == limit:
            os.kill(os.getpid(), signal.SIGKILL)

Staging.mark_done = crash_after_limit
with dask.config.set(scheduler="synchronous"):
    dispatch(sys.argv[1], sys.argv[2], sys.argv[3],
             options=DispatchOptions(save_orig_nids=True, save_orig_eids=True))
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A graph with several edge chunks and partitions to interrupt, and a clean run."""
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
                "20000",
                "--num-edges",
                "200000",
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


def _crash_client_after(graph, out: Path, prefix: str, limit: int) -> dict[str, float]:
    """Run the client until its ``limit``-th completion record starting with ``prefix``, then SIGKILL it."""
    chunked, assign, _ = graph
    args = [sys.executable, "-c", CLIENT, str(chunked), str(assign), str(out), prefix, str(limit)]
    proc = subprocess.run(args, timeout=600, check=False)
    assert proc.returncode == -signal.SIGKILL, "the client finished before the fault was injected"
    assert not (out / "metadata.json").exists()
    lease = json.loads((out / ".dglc-owned.json").read_text())  # the dead client still holds it
    assert not lease["released"]
    markers = _markers(out)
    assert _count(markers, prefix) == limit
    return markers


def _count(markers: dict[str, float], prefix: str) -> int:
    return sum(name.startswith(quote(prefix, safe="")) for name in markers)


@pytest.mark.parametrize("moment", ["staging", "finalisation"])
def test_killed_client_resumes_from_staging(graph, tmp_path, moment):
    chunked, assign, clean = graph
    out = tmp_path / "out"
    if moment == "staging":
        before = _crash_client_after(graph, out, "edges/", 3)
        assert _count(before, "write/") == 0
    else:
        before = _crash_client_after(graph, out, "write/", 1)
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, assign, out, options=replace(OPTIONS, keep_staging=True))
    lease = json.loads((out / ".dglc-owned.json").read_text())  # taken over at once (dead pid), released
    assert lease["pid"] == os.getpid() and lease["released"]
    after = _markers(out)
    # work finished before the crash was not redone: its completion records are untouched
    assert {k: after[k] for k in before} == before
    assert output_files(out) == output_files(clean)


def test_a_partition_with_no_finished_file_starts_empty(graph, tmp_path):
    """A partial file an earlier run left in ``_tmp_part0/`` (a split writer killed before its
    rename, from a run on more threads) is removed when none of the partition's files finished,
    and never published into ``part0/``."""
    chunked, assign, clean = graph
    out = tmp_path / "out"
    _crash_client_after(graph, out, "edges/", 3)
    (out / "_tmp_part0").mkdir()
    (out / "_tmp_part0" / "node_feat.dgl.parts-dglc").write_bytes(b"partial")
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, assign, out, options=OPTIONS)
    assert output_files(out) == output_files(clean)


def test_changed_assignment_invalidates_staging(graph, tmp_path):
    chunked, assign, _ = graph
    out = tmp_path / "out"
    _crash_client_after(graph, out, "edges/", 2)
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
    from distributed import Client

    from dgl_chunked.testing import KillWorkerAfter

    chunked, assign, clean = graph
    out = tmp_path / "out"
    with Client(scheduler_address) as client:
        workers = client.run(os.getpid)
        victim = min(workers.values())
        client.register_plugin(KillWorkerAfter("dglc-stage-edges", 2, victim), name="dglc-kill-worker")
        dispatch(chunked, assign, out, options=OPTIONS, client=client)
        survivors = set(client.run(os.getpid).values())
    assert victim not in survivors, "the worker was never killed: the fault was not injected"
    assert output_files(out) == output_files(clean)
    assert np.all([(out / f"part{p}" / "graph.dgl").exists() for p in range(6)])


def test_rerun_after_a_damaged_file_is_replaced_redoes_only_its_tasks(graph, tmp_path):
    """A damaged edge file fails the run with the file named; once the user puts a good
    copy back, the rerun keeps every task that read other files and redoes its own."""
    import shutil

    import dask

    from dgl_chunked.errors import ChunkMismatchError, ChunkReadError

    chunked, assign, clean = graph
    copy, out = tmp_path / "chunked", tmp_path / "out"
    shutil.copytree(chunked, copy)
    meta = json.loads((copy / "metadata.json").read_text())
    victim = copy / meta["edges"]["_N:_E:_N"]["data"][9]
    good = victim.read_bytes()
    victim.write_bytes(good[: len(good) // 2] + b"\x00\xff damaged \x01\n" + good[len(good) // 2 :])
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises((ChunkMismatchError, ChunkReadError), match=victim.name),
    ):
        dispatch(copy, assign, out, options=OPTIONS)
    assert not (out / "metadata.json").exists()
    before = _markers(out)
    victim_task = "edges%2F_N%3A_E%3A_N%2F9.json"
    assert len(before) >= 10 and victim_task not in before  # the tasks Dask ran before the failure
    victim.write_bytes(good)  # the user's replacement: same bytes, a new file
    with dask.config.set(scheduler="synchronous"):
        dispatch(copy, assign, out, options=replace(OPTIONS, keep_staging=True))
    after = _markers(out)
    assert {k: after[k] for k in before} == before  # nothing that read other files was redone
    assert victim_task in after
    assert output_files(out) == output_files(clean)
