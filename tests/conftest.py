"""Shared fixtures: golden files, schedulers, clusters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "golden"

# runs inside the real-DGL virtualenv only (imports dgl); --doctest-modules must not import it
collect_ignore = ["realdgl/dgl_side.py"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow (CI sets DGLC_RUN_SLOW=1)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests are opt-in locally: ``--runslow`` or ``DGLC_RUN_SLOW=1`` (always set in CI)."""
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


@pytest.fixture
def scheduler_address(tmp_path: Path) -> Iterator[str]:
    sched_file = tmp_path / "scheduler.json"
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
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            if time.monotonic() > deadline:
                pytest.fail("dask scheduler did not start within 60 s")
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        DASK,
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--name",
                        f"w{i}",
                        "--local-directory",
                        str(tmp_path / f"w{i}"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        from distributed import Client

        with Client(address) as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
