"""How the LocalClusters of ``dask_client`` start their worker processes (forkserver or spawn)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import dask
import pytest

from dgl_chunked.cluster import START_METHOD_KEY, worker_start_method
from dgl_chunked.errors import OptionError

REPO = Path(__file__).resolve().parents[1]

# Run in a fresh interpreter: a process has one forkserver, started by its first cluster.
SCRIPT = '''
import json, os, sys


def facts():
    import pyarrow

    return {
        "ppid": os.getppid(),
        "preloaded": "dgl_chunked.dispatch.kernels" in sys.modules,
        "trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        "pool": pyarrow.default_memory_pool().backend_name,
        "parent_trim": parent_environ().get("MALLOC_TRIM_THRESHOLD_"),
    }


def parent_environ():
    """The environment the parent process was started with (what its glibc read)."""
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


def faults():
    """Minor page faults of 1M new-ID lookups on a 1M-node map (glibc's trim threshold at work)."""
    import resource

    import numpy as np

    from dgl_chunked.dispatch.new_id_map import build_map

    rng = np.random.default_rng(0)
    owner = rng.integers(0, 2, 1 << 20)
    counts = np.bincount(owner, minlength=2)
    new_map = build_map(1 << 20, 1 << 20, np.array([[0, counts[0]]]), [owner])
    ids = rng.integers(0, 1 << 20, 1 << 20)
    new_map.lookup(ids[:1000])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    new_map.lookup(ids, np.int32)
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)


def main():
    from dgl_chunked.cluster import dask_client

    out = {"pid": os.getpid()}
    if "early" in sys.argv[1:]:  # as the CLI does, before anything imports distributed
        from dgl_chunked.cluster import start_forkserver

        out["early"] = [start_forkserver(), "distributed" in sys.modules]
    with dask_client(workers=2) as client:
        out["first"] = sorted(client.run(facts).values(), key=str)
        out["faults"] = sorted(client.run(faults).values())
        client.restart()
        out["restarted"] = sorted(client.run(facts).values(), key=str)
    if "other-env" in sys.argv[1:]:
        os.environ["MALLOC_TRIM_THRESHOLD_"] = "4096"
        with dask_client(workers=1) as client:
            out["other_env"] = list(client.run(facts).values())
            out["other_faults"] = list(client.run(faults).values())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
'''


def _run_script(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    script = tmp_path / "clusters.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if k not in ("MALLOC_TRIM_THRESHOLD_", "ARROW_DEFAULT_MEMORY_POOL")}
    environ.update(env or {})
    done = subprocess.run(
        [sys.executable, str(script), *args], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.skipif(platform.system() != "Linux", reason="forkserver and glibc's malloc tunables")
def test_workers_are_forks_of_one_preloaded_forkserver_with_the_worker_environment(tmp_path: Path) -> None:
    got = _run_script(tmp_path, "other-env")
    first, restarted = got["first"], got["restarted"]
    forkserver = first[0]["ppid"]
    assert forkserver != got["pid"]  # not spawned by this process's nannies
    assert [w["ppid"] for w in first] == [forkserver, forkserver]
    assert [(w["trim"], w["pool"]) for w in first] == [("1048576", "system")] * 2
    assert [w["parent_trim"] for w in first] == ["1048576"] * 2  # the forkserver's own environment
    # glibc read MALLOC_TRIM_THRESHOLD_ in the forkserver and its forks kept it: with Dask's
    # 64 KiB the 1M lookups fault ~15k pages (tests/test_cluster.py), with 1 MiB < 3000
    assert len(got["faults"]) == 2 and max(got["faults"]) < 3000 < 6000 < got["other_faults"][0]
    # a nanny's restart forks the same server: the task modules are there before any task
    assert [(w["ppid"], w["preloaded"], w["trim"], w["pool"]) for w in restarted] == [
        (forkserver, True, "1048576", "system")
    ] * 2
    # the forkserver started with 1 MiB: a cluster asked under another value spawns its workers
    assert [(w["ppid"], w["trim"]) for w in got["other_env"]] == [(got["pid"], "4096")]


@pytest.mark.skipif(platform.system() != "Linux", reason="forkserver")
def test_a_forkserver_started_before_distributed_is_imported_gets_the_worker_environment(tmp_path: Path) -> None:
    # start_forkserver reads distributed's pre-spawn defaults without importing it
    got = _run_script(tmp_path, "early")
    assert got["early"] == [True, False]
    assert len({w["ppid"] for w in got["first"] + got["restarted"]}) == 1
    assert got["first"][0]["ppid"] != got["pid"]
    assert [(w["parent_trim"], w["trim"], w["pool"]) for w in got["first"]] == [("1048576", "1048576", "system")] * 2
    assert [w["preloaded"] for w in got["restarted"]] == [True, True]


@pytest.mark.skipif(platform.system() != "Linux", reason="forkserver")
def test_the_config_key_goes_back_to_spawn(tmp_path: Path) -> None:
    got = _run_script(tmp_path, env={"DASK_DGL_CHUNKED__MULTIPROCESSING_METHOD": "spawn"})
    assert [w["ppid"] for w in got["first"] + got["restarted"]] == [got["pid"]] * 4
    assert [w["preloaded"] for w in got["restarted"]] == [False, False]  # a spawned worker imports on demand
    assert [(w["trim"], w["pool"]) for w in got["first"]] == [("1048576", "system")] * 2
    # the parent is the script itself, started without the variable (spawn execs each worker anew)
    assert [w["parent_trim"] for w in got["first"]] == [None, None]


def test_worker_start_method_follows_dasks_key_then_ours() -> None:
    assert START_METHOD_KEY == "dgl_chunked.multiprocessing-method"
    expected_default = "forkserver" if platform.system() != "Windows" else "spawn"
    assert worker_start_method() == expected_default
    with dask.config.set({START_METHOD_KEY: "spawn"}):
        assert worker_start_method() == "spawn"
    # Dask's own key set to anything but its default spawn: the user's choice wins
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork", START_METHOD_KEY: "forkserver"}):
        assert worker_start_method() == "fork"
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver", START_METHOD_KEY: "spawn"}):
        assert worker_start_method() == "forkserver"
    with dask.config.set({START_METHOD_KEY: "vfork"}), pytest.raises(OptionError) as err:
        worker_start_method()
    assert str(err.value) == (
        "Dask config dgl_chunked.multiprocessing-method: 'vfork' is not forkserver, spawn or fork; set one of them"
    )
