"""Shared fixtures: golden files, schedulers, clusters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dask
import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "golden"

# runs inside the real-DGL virtualenv only (imports dgl); --doctest-modules must not import it
# scripts run with the real-DGL/torch interpreter, never imported by the suite (--doctest-modules would)
collect_ignore = [
    "realdgl/dgl_side.py",
    "realdgl/gnn_side.py",
    "realdgl/dgl_side_gb24.py",
    "realdgl/dgl_side_common.py",
    "realdgl/dgl240_converter.py",
    "realdgl/zygote.py",
]
collect_ignore_glob = ["data/*"]

# The suite's graphs are a few KiB: at the default task size every type would be one read
# task. One file per task keeps the multi-task paths (unaligned feature and edge tasks,
# resume after N tasks, per-task errors) exercised; tests/behaviour/test_task_size.py checks that
# coalescing gives the same bytes, and sets the size it tests explicitly. Subprocesses
# (CLI tests, workers) inherit it.
os.environ.setdefault("DGLC_TASK_SIZE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow (CI sets DGLC_RUN_SLOW=1)")


# Folders whose files take 10-170 s each (clusters, S3 servers, real DGL in subprocesses),
# and the files elsewhere that took over 30 s in a CI run (session 26's --durations):
# collected first, so that pytest-xdist, which hands out whole files in collection order,
# starts them first and ends the run on files of a second or two, not on one of these
# while the other process waits.
_LONG_FILES_FIRST = (
    "tests/realdgl/",
    "tests/behaviour/",
    "tests/dispatch/forecast/",
    "tests/dispatch/test_dispatch_resume.py",
    "tests/dispatch/test_dispatch_synth.py",
    "tests/chunk/test_chunk_mag_shaped.py",
    "tests/dispatch/test_dispatch_wide_ids.py",
    "tests/remap/test_remap_task_errors.py",
    "tests/partition/lp/test_taskgraph.py",
)


def _runs_long(item: pytest.Item) -> bool:
    path = item.path.relative_to(REPO).as_posix() if item.path.is_relative_to(REPO) else ""
    return path.startswith(_LONG_FILES_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long-running folders' files first (:data:`_LONG_FILES_FIRST`); ``slow`` tests
    are opt-in locally: ``--runslow`` or ``DGLC_RUN_SLOW=1`` (always set in CI)."""
    items.sort(key=lambda item: not _runs_long(item))  # stable: files keep their order otherwise
    if config.getoption("--runslow") or os.environ.get("DGLC_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or DGLC_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """``tests/data/golden``: files written by real DGL 2.1.0 (``scripts/make-golden.py``)."""
    return GOLDEN


@pytest.fixture(scope="session")
def tiny_chunked(golden_dir: Path) -> Path:
    """The golden tiny chunked graph (read-only)."""
    return golden_dir / "tiny-pipeline" / "chunked"


@pytest.fixture(autouse=True)
def _synchronous_scheduler(request: pytest.FixtureRequest) -> Iterator[None]:
    """Unit tests run on the synchronous scheduler; cluster tests keep their Client's."""
    if "client" in request.fixturenames or "process_client" in request.fixturenames:
        yield
        return
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="session")
def cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture
def client(cluster: object) -> Iterator[object]:
    from distributed import Client

    with Client(cluster) as client:  # type: ignore[arg-type]
        yield client


def s3_options(endpoint: str) -> dict[str, Any]:
    """The s3fs storage options that reach the test S3 server at ``endpoint`` (moto's
    fixed test credentials)."""
    return {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }


def make_bucket(options: dict[str, Any], name: str) -> str:
    """Create bucket ``name`` on the S3 server of the s3fs ``options`` (see :func:`moto_s3`)."""
    import boto3

    boto3.client(
        "s3",
        endpoint_url=options["endpoint_url"],
        aws_access_key_id=options["key"],
        aws_secret_access_key=options["secret"],
        region_name="us-east-1",
    ).create_bucket(Bucket=name)
    return name


@contextmanager
def moto_s3(bucket: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """A moto S3 server on 127.0.0.1 (a free port) holding ``bucket``; yields its endpoint
    and the s3fs storage options that reach it."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        options = s3_options(endpoint)
        make_bucket(options, bucket)
        yield endpoint, options
    finally:
        server.stop()


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A quiet in-process cluster per test module, for CLI commands given ``--scheduler``."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0", silence_logs=logging.CRITICAL
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="session")
def process_cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture
def process_client(process_cluster: object) -> Iterator[object]:
    from distributed import Client

    with Client(process_cluster) as client:  # type: ignore[arg-type]
        yield client


DASK = str(Path(sys.executable).parent / "dask")


def _read_address(sched_file: Path, deadline: float) -> str:
    """The address in a ``--scheduler-file`` once the scheduler has written it whole."""
    while True:
        try:
            return str(json.loads(sched_file.read_text())["address"])
        except (FileNotFoundError, ValueError, KeyError):
            if time.monotonic() > deadline:
                pytest.fail("dask scheduler did not start within 60 s")
            time.sleep(0.2)


@contextmanager
def dask_processes(
    workdir: Path, worker_cmd: Callable[[list[str], int], list[str]] | None = None, n_workers: int = 2
) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A ``dask scheduler`` and ``n_workers`` ``dask worker`` processes on 127.0.0.1.

    ``worker_cmd(argv, i)`` may wrap worker ``i``'s command line (e.g. in ``unshare``).
    Yields the scheduler address and the worker processes (index ``i``), then stops them.
    """
    sched_file = workdir / "scheduler.json"
    procs = [
        subprocess.Popen(
            [
                DASK,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    workers: list[subprocess.Popen[bytes]] = []
    try:
        address = _read_address(sched_file, time.monotonic() + 60)
        for i in range(n_workers):
            workers.append(start_worker(address, workdir, i, worker_cmd))
        procs += workers
        from distributed import Client

        with Client(address) as c:
            c.wait_for_workers(n_workers, timeout=60)
        yield address, workers
    finally:
        for proc in reversed(procs + [w for w in workers if w not in procs]):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs + workers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def start_worker(
    address: str, workdir: Path, i: int, worker_cmd: Callable[[list[str], int], list[str]] | None = None
) -> subprocess.Popen[bytes]:
    """One ``dask worker`` process named ``w<i>`` (one thread), optionally wrapped."""
    argv = [DASK, "worker", address, "--nthreads", "1", "--no-dashboard", "--name", f"w{i}"]
    argv += ["--local-directory", str(workdir / f"w{i}")] if worker_cmd is None else []
    return subprocess.Popen(
        worker_cmd(argv, i) if worker_cmd else argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.fixture
def scheduler_address(tmp_path: Path) -> Iterator[str]:
    with dask_processes(tmp_path) as (address, _):
        yield address


@pytest.fixture(scope="module")
def module_scheduler_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """As ``scheduler_address``, shared by a module's tests."""
    with dask_processes(tmp_path_factory.mktemp("dask")) as (address, _):
        yield address
