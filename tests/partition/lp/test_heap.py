"""glibc's mmap threshold while ``lp`` runs on workers (:mod:`dgl_chunked.partition.lp.heap`):
raised where the environment fixed it (its effect on page faults is measured in
``benchmarks/results/lp.json``, ``heap_session7``), and put back after the driver's run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.partition.lp import heap
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

glibc = pytest.mark.skipif(heap._libc() is None, reason="glibc's mallopt only")

_SET = textwrap.dedent(
    """
    import json, sys
    from dgl_chunked.partition.lp import heap
    print(json.dumps([heap.set_mmap_threshold(int(sys.argv[1])), heap.set_mmap_threshold(None)]))
    """
)


def _set_and_put_back(env: dict[str, str]) -> list[int | None]:
    """In a fresh process with ``env`` (and no other ``MALLOC_`` variable): what
    raising the threshold and putting it back return."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    command = [sys.executable, "-c", _SET, str(heap.LP_MMAP_THRESHOLD)]
    out = subprocess.run(command, env={**clean, **env}, capture_output=True, text=True, check=True)
    got: list[int | None] = json.loads(out.stdout)
    return got


@glibc
def test_a_fixed_threshold_is_raised_and_put_back() -> None:
    """``MALLOC_TRIM_THRESHOLD_`` (as on Dask's workers) fixes the threshold at glibc's
    128 KiB: raised to 16 MiB, then back to 128 KiB; ``MALLOC_MMAP_THRESHOLD_``'s value
    comes back where it is set."""
    assert _set_and_put_back({"MALLOC_TRIM_THRESHOLD_": "1048576"}) == [heap.LP_MMAP_THRESHOLD, 128 << 10]
    assert _set_and_put_back({"MALLOC_MMAP_THRESHOLD_": "262144"}) == [heap.LP_MMAP_THRESHOLD, 262144]


_NESTED = textwrap.dedent(
    """
    import json, sys
    from dgl_chunked.partition.lp import heap
    t = int(sys.argv[1])
    print(json.dumps([heap.set_mmap_threshold(x) for x in (t, t, None, None)]))
    """
)


@glibc
def test_two_runs_raising_it_put_it_back_when_both_end() -> None:
    """Two ``lp`` jobs on one cluster: the first to end leaves the threshold raised for
    the other; the second puts the environment's value back."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    command = [sys.executable, "-c", _NESTED, str(heap.LP_MMAP_THRESHOLD)]
    env = {**clean, "MALLOC_TRIM_THRESHOLD_": "1048576"}
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    t = heap.LP_MMAP_THRESHOLD
    assert json.loads(out.stdout) == [t, t, t, 128 << 10]


@glibc
def test_a_threshold_glibc_adjusts_is_left_alone() -> None:
    """No fixing variable: glibc raises the threshold itself (to 32 MiB as arrays are
    freed), and setting one would stop that: nothing is set."""
    assert _set_and_put_back({}) == [None, None]


@glibc
def test_putting_back_restores_the_environments_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(256 << 10))
    try:
        assert heap.set_mmap_threshold(heap.LP_MMAP_THRESHOLD) == heap.LP_MMAP_THRESHOLD
    finally:
        assert heap.set_mmap_threshold(None) == 256 << 10


_CALLS: list[int | None] = []


def _record(nbytes: int | None) -> int | None:
    """Stands for :func:`heap.set_mmap_threshold` on the in-process workers (pickled by
    reference, so their calls land in this module's list)."""
    _CALLS.append(nbytes)
    return nbytes


def test_the_driver_raises_it_on_every_worker_and_puts_it_back(
    tmp_path: Path, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lp`` on a distributed cluster: each worker gets the threshold before the
    driver's rounds and the value back after them, once each."""
    _CALLS.clear()
    monkeypatch.setattr(heap, "set_mmap_threshold", _record)
    spec = SynthSpec.homogeneous(3000, 20_000, feat_dim=None, num_chunks=2, seed=0)
    graph = open_chunked_graph(write_synthetic_graph(tmp_path / "g", spec).base_dir)
    lp_module._RESULTS.clear()
    part = dask.compute(assign_partitions(graph, 2, method="lp")["_N"])[0]
    assert np.bincount(part).size == 2
    workers = len(client.scheduler_info()["workers"])
    want = [heap.LP_MMAP_THRESHOLD] * workers + [None] * workers
    assert list(_CALLS) == want


def test_a_cluster_that_cannot_take_the_setting_does_not_stop_lp() -> None:
    """Best effort: a client whose ``run`` fails (a worker gone) still runs the block."""

    class Failing:
        def run(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("worker gone")

    ran = []
    with heap.large_arrays_on_heap(Failing()):
        ran.append(True)
    assert ran == [True]


def test_the_free_heap_is_handed_back_where_glibc_runs() -> None:
    """``malloc_trim(0)`` after the driver's METIS runs: done under glibc, skipped elsewhere."""
    assert heap.give_back_free_heap() is (heap._libc() is not None)


_TRIM = textwrap.dedent(
    """
    import json, re
    import numpy as np
    from dgl_chunked.partition.lp import heap

    def rss():
        return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) << 10

    got = {"before_raise": heap.trim_after_task(0)}
    heap.set_mmap_threshold(heap.LP_MMAP_THRESHOLD)
    got["first"] = heap.trim_after_task()  # the first task after the raise sets the base
    got["no_growth"] = heap.trim_after_task()
    big, pins = [], []
    for _ in range(192):  # 1 MiB arrays from the heap, each pinned below the next by a small one
        big.append(np.ones(1 << 17, np.int64))
        pins.append(np.ones(4096, np.int64))
    del big  # 192 MiB free inside the heap, below live objects: no top to trim
    got["below_limit"] = heap.trim_after_task(1 << 40)
    before = rss()
    got["grown"] = heap.trim_after_task()
    got["rss_drop"] = before - rss()
    got["again"] = heap.trim_after_task()
    got["pins"] = int(sum(int(p.sum()) for p in pins))
    heap.set_mmap_threshold(None)
    got["after_the_run"] = heap.trim_after_task()
    heap.set_mmap_threshold(heap.LP_MMAP_THRESHOLD)
    got["next_runs_first"] = heap.trim_after_task()
    print(json.dumps(got))
    """
)


@glibc
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux's /proc/self/statm only")
def test_a_worker_whose_heap_grew_hands_its_free_pages_back() -> None:
    """Under the raised threshold, 192 MiB freed below live arrays stay resident until
    a task ends with the worker's anonymous memory grown by more than
    :data:`heap.TRIM_GROWN_BY` since the last trim: then they go back, once. A process
    whose threshold lp did not raise (local threads, or after the run) keeps its pages;
    the next run's first task trims again and sets its own base."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env = {**clean, "MALLOC_TRIM_THRESHOLD_": "1048576"}
    out = subprocess.run([sys.executable, "-c", _TRIM], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["before_raise"] is False
    assert got["first"] is True
    assert got["no_growth"] is False
    assert got["below_limit"] is False
    assert got["grown"] is True
    assert got["rss_drop"] >= 160 << 20
    assert got["again"] is False
    assert got["pins"] == 192 * 4096
    assert got["after_the_run"] is False
    assert got["next_runs_first"] is True
