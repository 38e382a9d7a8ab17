"""Shared fixtures: golden files, schedulers, clusters."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DGLC_SHARED_DIR", REPO.parent / "shared"))
GOLDEN = SHARED / "spec" / "golden"


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """``../shared/spec/golden`` (override with DGLC_SHARED_DIR)."""
    if not GOLDEN.is_dir():
        pytest.fail(f"golden files not found at {GOLDEN}; set DGLC_SHARED_DIR to the shared/ folder")
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

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        yield cluster


@pytest.fixture
def client(cluster: object) -> Iterator[object]:
    from distributed import Client

    with Client(cluster) as client:  # type: ignore[arg-type]
        yield client


@pytest.fixture(scope="session")
def process_cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield cluster


@pytest.fixture
def process_client(process_cluster: object) -> Iterator[object]:
    from distributed import Client

    with Client(process_cluster) as client:  # type: ignore[arg-type]
        yield client
