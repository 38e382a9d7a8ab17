"""The clusters the CLI starts or joins: worker environment and its diagnosis."""

from __future__ import annotations

import logging
import os
import platform
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from dgl_chunked.cluster import WORKER_ENVIRONMENT, dask_client
from dgl_chunked.dispatch.new_id_map import build_map


def _arrow_pool() -> str:
    import pyarrow

    return str(pyarrow.default_memory_pool().backend_name)


def _environ(name: str) -> str | None:
    return os.environ.get(name)


def test_local_workers_start_with_the_system_allocator(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert WORKER_ENVIRONMENT == {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_TRIM_THRESHOLD_": "1048576"}
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(workers=2) as client:
        pools = client.run(lambda: __import__("pyarrow").default_memory_pool().backend_name)
        arrow = client.run(_environ, "ARROW_DEFAULT_MEMORY_POOL")
        trim = client.run(_environ, "MALLOC_TRIM_THRESHOLD_")
    assert sorted(pools.values()) == ["system", "system"]
    assert sorted(arrow.values()) == ["system", "system"]
    assert sorted(trim.values()) == ["1048576", "1048576"]  # not Dask's 65536
    assert not [r for r in caplog.records if "allocator" in r.getMessage() or "trim" in r.getMessage()]


@pytest.mark.parametrize(
    ("name", "value"), [("ARROW_DEFAULT_MEMORY_POOL", "mimalloc"), ("MALLOC_TRIM_THRESHOLD_", "4096")]
)
def test_a_variable_set_by_the_user_wins(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with dask_client(workers=1) as client:
        environ = client.run(_environ, name)
    assert list(environ.values()) == [value]


def test_dasks_value_left_by_an_earlier_cluster_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    # a nanny copies Dask's pre-spawn values into its parent's environment before it
    # spawns: after any process-based cluster this process holds Dask's 65536
    from distributed import LocalCluster

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"):
        pass
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"
    with dask_client(workers=1) as client:
        trim = client.run(_environ, "MALLOC_TRIM_THRESHOLD_")
    assert list(trim.values()) == ["1048576"]


def _lookup_faults(num_ids: int) -> int:
    """Minor page faults of ``num_ids`` new-ID lookups on a 1M-node map, in this process."""
    import resource

    import numpy as np

    rng = np.random.default_rng(0)
    owner = rng.integers(0, 2, 1 << 20)
    counts = np.bincount(owner, minlength=2)
    new_map = build_map(1 << 20, 1 << 20, np.array([[0, counts[0]]]), [owner])
    ids = rng.integers(0, 1 << 20, num_ids)
    new_map.lookup(ids[:1000])  # warm up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    new_map.lookup(ids, np.int32)
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc tunables")
def test_workers_reuse_the_heap_between_lookup_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    # with Dask's 64 KiB trim threshold every 8192-ID slice faults ~512 KiB in again:
    # 1M lookups = 123 slices, ~15k faults; the 4 MB output array alone is ~1000
    from distributed import Client, LocalCluster

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask_client(workers=1) as client:
        (ours,) = client.run(_lookup_faults, 1 << 20).values()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        (dasks,) = client.run(_lookup_faults, 1 << 20).values()  # Dask's own environment
    assert ours < 3000 < 6000 < dasks


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
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(scheduler) as client:
        assert client.run(_arrow_pool)
    assert not [r for r in caplog.records if "allocator" in r.getMessage() or "trim" in r.getMessage()]


def test_joining_workers_that_trim_the_heap_early_warns(
    scheduler: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    # the fixture's workers run in this process: they see its environment
    monkeypatch.setattr(pa, "default_memory_pool", lambda: SimpleNamespace(backend_name="system"))
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.cluster"), dask_client(scheduler):
        pass
    warned = [r.getMessage() for r in caplog.records if "MALLOC_TRIM_THRESHOLD_" in r.getMessage()]
    assert len(warned) == 1
    assert "=65536" in warned[0] and "MALLOC_TRIM_THRESHOLD_=1048576" in warned[0]


def test_cluster_options_parse_the_memory_limit_once() -> None:
    from dgl_chunked.cluster import ClusterOptions, parse_cluster_options
    from dgl_chunked.errors import OptionError

    got = parse_cluster_options(scheduler="", workers=2, threads_per_worker=3, memory_limit="1.5GiB")
    assert got == ClusterOptions(workers=2, threads_per_worker=3, memory_limit=3 * 2**29)
    assert got.asked and got.threads == 6
    assert parse_cluster_options(memory_limit=123) == ClusterOptions(memory_limit=123)
    assert not parse_cluster_options(memory_limit="auto").asked  # Dask's default: no limit of ours
    with pytest.raises(OptionError, match="memory limit: 'lots' is not a size such as 256MiB"):
        parse_cluster_options(memory_limit="lots")


def test_dask_client_takes_cluster_options() -> None:
    from dgl_chunked.cluster import ClusterOptions

    with dask_client(cluster=ClusterOptions(workers=1, memory_limit=300 * 2**20)) as client:
        limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
    assert limits == [300 * 2**20]


def test_default_scheduler_chooses_threads_on_few_cores_and_processes_on_many() -> None:
    from dgl_chunked.cluster import IN_PROCESS_BYTES, choose_scheduler

    two = choose_scheduler(2_100_000_000, cores=2, memory_bytes=24 << 30)
    assert (two.processes, two.workers) == (False, 2)
    assert "2 cores" in two.describe() and "2100 MB" in two.describe()
    many = choose_scheduler(2_100_000_000, cores=16, memory_bytes=128 << 30)
    assert (many.processes, many.workers) == (True, 16)
    big = choose_scheduler(IN_PROCESS_BYTES + 1, cores=2, memory_bytes=24 << 30)
    assert (big.processes, big.workers) == (True, 2)
    remote = choose_scheduler(None, cores=4, memory_bytes=24 << 30)
    assert (remote.processes, remote.workers) == (True, 4)
    short = choose_scheduler(IN_PROCESS_BYTES + 1, cores=64, memory_bytes=16 << 30)
    assert (short.processes, short.workers) == (True, 16)
    assert "16 GiB of memory hold 16" in short.describe()
    tiny = choose_scheduler(10, cores=8, memory_bytes=1 << 29)
    assert (tiny.processes, tiny.workers) == (True, 1)
