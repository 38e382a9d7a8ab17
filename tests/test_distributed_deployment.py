"""A real distributed deployment: `dask scheduler` + 2 `dask worker` processes on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dgl_chunked.cli import main

from .dispatch.helpers import output_files

pytestmark = pytest.mark.distributed

DASK = str(Path(sys.executable).parent / "dask")


@pytest.fixture
def scheduler_address(tmp_path: Path) -> Iterator[str]:
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            if time.monotonic() > deadline:
                pytest.fail("dask scheduler did not start within 60 s")
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for i in range(2):
            procs.append(subprocess.Popen(
                [DASK, "worker", address, "--nthreads", "1", "--no-dashboard",
                 "--name", f"w{i}", "--local-directory", str(tmp_path / f"w{i}")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address) as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def test_run_on_external_scheduler_matches_local_cluster(tmp_path, scheduler_address):
    chunked = tmp_path / "chunked"
    assert main(["synth", "--out-dir", str(chunked), "--preset", "heterogeneous", "--seed", "2"]) == 0
    common = ["run", "--in-dir", str(chunked), "--num-parts", "3", "--seed", "5",
              "--save-orig-nids", "--save-orig-eids", "--no-progress"]
    assert main([*common, "--out-dir", str(tmp_path / "remote"), "--scheduler", scheduler_address]) == 0
    assert main([*common, "--out-dir", str(tmp_path / "local"), "--workers", "2"]) == 0
    remote, local = output_files(tmp_path / "remote"), output_files(tmp_path / "local")
    assert len(remote) == 1 + 3 * 5
    assert remote == local
    assert main(["verify", "--in-dir", str(chunked), "--out-dir", str(tmp_path / "remote")]) == 0
