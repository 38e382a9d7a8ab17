"""StepRunner and compute_settled (dgl_chunked.compute): step lines name their command; run_everywhere
skips a worker that left; a failed computation returns after its running tasks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from distributed.comm.core import CommClosedError

from dgl_chunked.compute import StepRunner, compute_settled


class _Client:
    """What ``client.run(func, on_error="return")`` gives: one result per worker."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.calls: list[tuple[Any, str]] = []

    def run(self, func: Any, *, on_error: str = "raise") -> dict[str, Any]:
        self.calls.append((func, on_error))
        return self.results


def test_runs_here_and_in_every_worker() -> None:
    ran: list[str] = []
    client = _Client({"tcp://a": None, "tcp://b": None})
    StepRunner(client=client, progress=False, command="test").run_everywhere(lambda: ran.append("here"))
    assert ran == ["here"]
    assert len(client.calls) == 1
    assert client.calls[0][1] == "return"


def test_a_worker_that_left_is_skipped() -> None:
    client = _Client({"tcp://a": None, "tcp://b": CommClosedError("in <TCP (closed) Scheduler Broadcast>")})
    StepRunner(client=client, progress=False, command="test").run_everywhere(lambda: None)  # no error


def test_an_error_of_the_function_is_raised() -> None:
    client = _Client({"tcp://a": None, "tcp://b": ValueError("bad cache")})
    with pytest.raises(ValueError, match="bad cache"):
        StepRunner(client=client, progress=False, command="test").run_everywhere(lambda: None)


def test_step_lines_name_the_command_and_its_logger(caplog: pytest.LogCaptureFixture) -> None:
    from dask.delayed import delayed

    tasks = [delayed(lambda x: x * 2, pure=True)(i, dask_key_name=f"dglc-test-double-{i}") for i in range(3)]
    runner = StepRunner(client=None, progress=False, command="remap")
    with caplog.at_level(logging.INFO, logger="dgl_chunked"):
        assert runner.compute(tasks, "double") == (0, 2, 4)
    [record] = [r for r in caplog.records if " step: " in r.getMessage()]
    assert (record.name, record.getMessage()) == ("dgl_chunked.remap", "remap step: double (3 tasks)")
    assert runner.tasks == {"double": 3} and set(runner.seconds) == {"double"}


def test_a_repeated_task_key_names_the_command() -> None:
    from dask.delayed import delayed

    tasks = [delayed(abs, pure=False)(-1, dask_key_name="dglc-test-same") for _ in range(2)]
    with pytest.raises(RuntimeError, match=r"^lookup step 'twice': 1 task key\(s\) repeat$"):
        StepRunner(client=None, progress=False, command="lookup").compute(tasks, "twice")


def _chain(token: str) -> list[Any]:
    """Two inner tasks and the one that consumes them: the inner results are large lists."""
    from dask.delayed import delayed

    inner = [
        delayed(lambda n: list(range(n)), pure=False)(1000 + i, dask_key_name=f"dglc-{token}-in-{i}") for i in range(2)
    ]
    last = delayed(lambda a, b: len(a) + len(b), pure=False)(*inner, dask_key_name=f"dglc-{token}-sum")
    return [*inner, last]


@pytest.mark.parametrize("where", ["local", "client"])
def test_keep_brings_back_only_the_kept_results(where: str, request: pytest.FixtureRequest) -> None:
    client = request.getfixturevalue("client") if where == "client" else None
    runner = StepRunner(client=client, progress=False, command="dispatch")
    assert runner.compute(_chain(f"keep-{where}"), "chain", keep=[2]) == (None, None, 2001)
    assert runner.tasks == {"chain": 3}  # the step still counts every task
    assert runner.compute(_chain(f"all-{where}"), "chain") == (list(range(1000)), list(range(1001)), 2001)
    if client is not None:  # nothing of the step is left in the cluster: the inner results were released
        assert not [k for k in client.who_has() if "keep-" in str(k)]


def test_an_inner_task_error_is_raised_with_keep(client: Any) -> None:
    from dask.delayed import delayed

    def fail() -> int:
        raise ValueError("inner task failed")

    inner = delayed(fail, pure=False)(dask_key_name="dglc-test-fail-inner")
    last = delayed(lambda x: x, pure=False)(inner, dask_key_name="dglc-test-fail-last")
    with pytest.raises(ValueError, match="inner task failed"):
        StepRunner(client=client, progress=False, command="dispatch").compute([inner, last], "fail", keep=[1])


# --- compute_settled / settling --------------------------------------------------


def _slow_write(path: str) -> int:
    import time

    time.sleep(1.0)
    Path(path).write_text("done")
    return 1


def _fail(_: int = 0) -> int:
    raise ValueError("a task failed")


def test_compute_settled_equals_dask_compute(client: Any) -> None:
    import dask
    import dask.array as da
    import numpy as np

    x = da.arange(10, chunks=3)
    args = ({"sum": x.sum(), "plain": 7}, [x * 2], x.max())
    with dask.config.set(scheduler="synchronous"):
        expected = dask.compute(*args)
    got = compute_settled(*args)  # on the current client
    assert repr(got) == repr(expected)
    assert np.array_equal(got[1][0], np.arange(10) * 2)


def test_a_failed_computation_returns_after_its_running_dependencies(client: Any, tmp_path: Path) -> None:
    """The failing task and a slow one both feed the one result: the error leaves only
    when the slow task (a dependency, not a future of the caller) has finished writing."""
    from dask.delayed import delayed

    target = tmp_path / "late.txt"
    slow = delayed(_slow_write, pure=False)(str(target), dask_key_name="dglc-test-settled-slow")
    bad = delayed(_fail, pure=False)(dask_key_name="dglc-test-settled-fail")
    total = delayed(sum, pure=False)([slow, bad], dask_key_name="dglc-test-settled-sum")
    with pytest.raises(ValueError, match="a task failed"):
        compute_settled({"total": total}, client=client)
    assert target.read_text() == "done"
    assert not [k for k in client.who_has() if "settled" in str(k)]  # nothing of it is kept
