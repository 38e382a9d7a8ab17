"""Task keys are unique per run, and the scheduler is the one Dask would pick.

Two runs of a command on the same input with the same options must not share the keys
of tasks that write or stage anything, or that read files which may have changed in
between: on a shared scheduler still holding the first run's results, the second run
would get them (issue 15; validate and parmetis-import did, until the run token). Keys
are recorded with a scheduler function that records every key and runs the graph
synchronously.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
from dask.local import get_sync

from dgl_chunked._dask import current_client, run_token
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import EmptyPartitionWarning
from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.chunked.validate import validate_chunked_graph
from dgl_chunked.parmetis import export_parmetis, import_parmetis
from dgl_chunked.partition import assign_partitions, compute_partition_report
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import verify_partitions

# keys of tasks with effects (writes, staging) or per-run scratch
PER_RUN = (
    "dglc-stage-",
    "dglc-number-",
    "dglc-write-",
    "dglc-synth-",
    "dglc-parmetis-",
    "dglc-verify-",
    "dglc-report-parts-",
    "dglc-assign-lp-",
    "dglc-validate-",
)


def _name(key: Hashable) -> str:
    return str(key[0] if isinstance(key, tuple) else key)


class Recorder:
    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.prefixes: tuple[str, ...] = PER_RUN  # ("",): every key

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        graph = dsk.__dask_graph__() if hasattr(dsk, "__dask_graph__") else dsk
        self.keys |= {_name(k) for k in dict(graph) if _name(k).startswith(self.prefixes)}
        return get_sync(dsk, keys, **kwargs)

    def take(self) -> set[str]:
        keys, self.keys = self.keys, set()
        return keys


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    with dask.config.set(scheduler=rec):
        yield rec


def _twice(recorder: Recorder, func: Any) -> None:
    func(1)
    first = recorder.take()
    func(2)
    second = recorder.take()
    assert first and second, "no per-run task was recorded"
    assert not first & second, sorted(first & second)[:5]


def test_synth_keys_differ_between_runs(recorder: Recorder, tmp_path: Path) -> None:
    spec = SynthSpec.homogeneous(50, 200, feat_dim=2, num_chunks=2)
    _twice(recorder, lambda i: write_synthetic_graph(tmp_path / f"g{i}", spec))


@pytest.fixture
def graph(tmp_path: Path) -> Any:
    with dask.config.set(scheduler="synchronous"):
        write_synthetic_graph(tmp_path / "g", SynthSpec.homogeneous(200, 1000, feat_dim=2, num_chunks=2))
    return open_chunked_graph(tmp_path / "g")


@pytest.mark.parametrize("method", ["random", "lp"])
def test_assignment_dispatch_report_verify_keys_differ_between_runs(
    recorder: Recorder, graph: Any, tmp_path: Path, method: str
) -> None:
    def parts(i: int) -> Any:
        return assign_partitions(graph, 2, method=method, scratch_dir=tmp_path / f"scratch{i}")

    _twice(recorder, lambda i: write_assignment(tmp_path / f"a{i}", parts(i), num_parts=2, algo_name=method))
    options = DispatchOptions(save_orig_nids=True, save_orig_eids=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        _twice(recorder, lambda i: dispatch(graph, tmp_path / "a1", tmp_path / f"o{i}", options=options))
    _twice(recorder, lambda i: compute_partition_report(graph, parts(i), 2, scratch_dir=tmp_path))
    _twice(recorder, lambda i: verify_partitions(graph, tmp_path / f"o{i}", scratch_dir=tmp_path))


def test_parmetis_export_keys_differ_between_runs(recorder: Recorder, graph: Any, tmp_path: Path) -> None:
    _twice(recorder, lambda i: export_parmetis(graph, tmp_path / f"pm{i}"))


def test_validate_keys_differ_between_runs(recorder: Recorder, graph: Any) -> None:
    recorder.prefixes = ("",)  # it only reads: no key at all may be shared
    _twice(recorder, lambda i: validate_chunked_graph(graph.metadata.base_dir))


def test_parmetis_import_keys_differ_between_runs(recorder: Recorder, graph: Any, tmp_path: Path) -> None:
    n = graph.num_nodes("_N")
    np.savetxt(tmp_path / "res.txt", np.stack([np.arange(n), np.arange(n) % 2], 1), fmt="%d")
    recorder.prefixes = ("",)  # the line counts and the parse too, not only the stores
    _twice(recorder, lambda i: import_parmetis(tmp_path / "res.txt", graph, tmp_path / f"assign{i}", num_parts=2))


def test_run_token_names_inputs_and_run() -> None:
    a, b = run_token("in/", 3), run_token("in/", 3)
    assert a != b and a.split("-")[0] == b.split("-")[0] != run_token("in/", 4).split("-")[0]


def test_scheduler_follows_dask_config_before_the_client(client: Any) -> None:
    """Dask's order: dask.config "scheduler" wins over the default Client, as in dask.compute."""
    assert current_client() is client
    with dask.config.set(scheduler="synchronous"):
        assert current_client() is None
        assert current_client(client) is client  # an explicit client always wins
    with dask.config.set(scheduler="distributed"):
        assert current_client() is client


def test_dispatch_on_a_local_scheduler_inside_a_client_context(client: Any, graph: Any, tmp_path: Path) -> None:
    """With scheduler="synchronous" set, no dispatch task reaches the Client's scheduler."""
    parts = {
        t: dask.array.zeros(graph.num_nodes(t), dtype=np.int32, chunks=graph.node_chunks(t)) for t in graph.node_types
    }
    transitions = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        dispatch(graph, parts, tmp_path / "o", num_parts=1)
    after = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
    assert after == transitions, "tasks went to the Client's scheduler"
