"""The clusters the CLI starts or joins: worker environment and its diagnosis."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from dgl_chunked.cluster import WORKER_ENVIRONMENT, dask_client


def _arrow_pool() -> str:
    import pyarrow

    return str(pyarrow.default_memory_pool().backend_name)


def test_local_workers_start_with_the_system_allocator(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert WORKER_ENVIRONMENT == {"ARROW_DEFAULT_MEMORY_POOL": "system"}
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(workers=2) as client:
        pools = client.run(lambda: __import__("pyarrow").default_memory_pool().backend_name)
        environ = client.run(lambda: __import__("os").environ.get("ARROW_DEFAULT_MEMORY_POOL"))
    assert sorted(pools.values()) == ["system", "system"]
    assert sorted(environ.values()) == ["system", "system"]
    assert not [r for r in caplog.records if "allocator" in r.getMessage()]


def test_a_variable_set_by_the_user_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    with dask_client(workers=1) as client:
        environ = client.run(lambda: __import__("os").environ.get("ARROW_DEFAULT_MEMORY_POOL"))
    assert list(environ.values()) == ["mimalloc"]


def test_joining_workers_with_a_caching_allocator_warns(
    scheduler: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    # the fixture's workers run in this process: make its Arrow report a caching allocator
    monkeypatch.setattr(pa, "default_memory_pool", lambda: SimpleNamespace(backend_name="jemalloc"))
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(scheduler):
        pass
    warned = [r.getMessage() for r in caplog.records if "allocator" in r.getMessage()]
    assert len(warned) == 1
    assert "jemalloc" in warned[0] and "ARROW_DEFAULT_MEMORY_POOL=system" in warned[0]


def test_joining_workers_with_the_system_allocator_is_quiet(
    scheduler: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(pa, "default_memory_pool", lambda: SimpleNamespace(backend_name="system"))
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(scheduler) as client:
        assert client.run(_arrow_pool)
    assert not [r for r in caplog.records if "allocator" in r.getMessage()]
