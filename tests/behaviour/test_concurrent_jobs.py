"""Many jobs on one Dask scheduler at once: each output is its own, as if it ran alone.

Issue 15: two ``run`` jobs sharing a scheduler exited 0, but the second output held the
first graph's partitions, because hand-named task keys (``("dglc-write-partition", p)``)
were equal across jobs and the scheduler handed back the first job's results. Here a
``dask scheduler`` with two ``dask worker`` processes serves jobs started together as
separate ``dgl-chunked run`` processes (as users on a cluster would); every output must
verify against its own input and be byte-identical to the same job run alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

from dgl_chunked.dispatch import DispatchOptions
from dgl_chunked.errors import EmptyPartitionWarning
from dgl_chunked.pipeline import run
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import verify_partitions
from tests.dispatch.helpers import output_files

pytestmark = pytest.mark.distributed

# name -> (graph, num_parts, method, seed, trainers per machine)
JOBS = {
    "g1-random-2": ("g1", 2, "random", 5, 1),
    "g2-random-2": ("g2", 2, "random", 5, 1),  # same options, other graph (the case)
    "g1-random-3": ("g1", 3, "random", 7, 1),  # same graph, other options
    "g1-lp-2": ("g1", 2, "lp", 0, 1),
    "g2-random-3": ("g2", 3, "random", 1, 1),
    "g2-lp-3": ("g2", 3, "lp", 2, 1),
    "g1-random-2-seed9": ("g1", 2, "random", 9, 1),
    "g1-random-4": ("g1", 4, "random", 3, 1),
}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("concurrent-graphs")
    specs = {"g1": SynthSpec.heterogeneous(1, seed=1), "g2": SynthSpec.heterogeneous(3, seed=2)}
    for name, spec in specs.items():
        write_synthetic_graph(root / name, spec)
    return {name: root / name for name in specs}


def _argv(job: str, graphs: dict[str, Path], out: Path) -> list[str]:
    graph, parts, method, seed, trainers = JOBS[job]
    return [
        "run",
        "--in-dir",
        str(graphs[graph]),
        "--out-dir",
        str(out),
        "--num-parts",
        str(parts),
        "--method",
        method,
        "--seed",
        str(seed),
        "--num-trainers-per-machine",
        str(trainers),
        "--save-orig-nids",
        "--save-orig-eids",
        "--no-progress",
    ]


def _alone(job: str, graphs: dict[str, Path], out: Path) -> dict[str, bytes]:
    """The job run by itself, in this process (synchronous scheduler: output bytes do not
    depend on the scheduler)."""
    graph, parts, method, seed, trainers = JOBS[job]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        run(
            graphs[graph],
            out,
            num_parts=parts,
            method=method,
            seed=seed,
            num_trainers_per_machine=trainers,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    return output_files(out)


# a lambda, so it is pickled by value (the scheduler may not import this test module)
_waiting_clients: Any = lambda dask_scheduler: sum(1 for cs in dask_scheduler.clients.values() if cs.wants_what)  # noqa: E731


def _run_together(jobs: list[str], graphs: dict[str, Path], root: Path, address: str) -> dict[str, Path]:
    """Start every job as its own ``dgl-chunked run --scheduler`` process at once.

    To make the jobs' tasks meet on the scheduler for sure, every worker thread is held
    by a gate task until every job has submitted its first tasks; then all run together.
    """
    from distributed import Client, Event

    outs = {job: root / job for job in jobs}
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    with Client(address) as client:
        gate = f"dglc-test-gate-{uuid.uuid4().hex}"
        event = Event(gate, client=client)
        workers = list(client.scheduler_info()["workers"])
        # Event.wait by reference (the workers may not import this test module)
        held = [client.submit(Event.wait, event, 300, key=f"{gate}-{i}", workers=[w]) for i, w in enumerate(workers)]
        procs = {
            job: subprocess.Popen(
                [sys.executable, "-m", "dgl_chunked", *_argv(job, graphs, outs[job]), "--scheduler", address],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=root,  # not the repository: the package comes from the environment, as for users
            )
            for job in jobs
        }
        deadline = time.monotonic() + 120
        while client.run_on_scheduler(_waiting_clients) < len(jobs) + 1 and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs.values()):
                break  # a job ended early: report it below
            time.sleep(0.2)
        event.set()
        client.gather(held)
    failed = {}
    for job, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failed[job] = err[-2000:] or out[-2000:]
    assert not failed, failed
    return outs


@pytest.fixture(scope="module")
def alone(graphs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """Each job's output when run by itself (computed once per module)."""
    root = tmp_path_factory.mktemp("alone")
    return {job: _alone(job, graphs, root / job) for job in JOBS}


def _check(jobs: list[str], graphs: dict[str, Path], outs: dict[str, Path], alone: dict[str, dict[str, bytes]]) -> None:
    for job in jobs:
        report = verify_partitions(graphs[JOBS[job][0]], outs[job])
        assert report.ok, (job, report.problems)
        assert output_files(outs[job]) == alone[job], f"{job}: output differs from the job run alone"
        left = sorted(p.name for p in outs[job].iterdir())
        parts = [f"part{p}" for p in range(JOBS[job][1])]
        assert left == [".dglc-owned.json", "metadata.json", *parts], f"{job}: left {left} (no scratch, no staging)"


def test_jobs_on_other_graphs_and_other_options_at_once(graphs, alone, module_scheduler_address, tmp_path):
    """Two graphs with the same options (the issue's case) and one graph with other options."""
    jobs = ["g1-random-2", "g2-random-2", "g1-random-3"]
    _check(jobs, graphs, _run_together(jobs, graphs, tmp_path, module_scheduler_address), alone)


def test_eight_jobs_at_once(graphs, alone, module_scheduler_address, tmp_path):
    jobs = list(JOBS)
    _check(jobs, graphs, _run_together(jobs, graphs, tmp_path, module_scheduler_address), alone)
