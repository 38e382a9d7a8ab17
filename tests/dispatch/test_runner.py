"""StageRunner.run_everywhere: every worker runs the function; a worker that left is skipped."""

from __future__ import annotations

from typing import Any

import pytest
from distributed.comm.core import CommClosedError

from dgl_chunked.dispatch.runner import StageRunner


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
    StageRunner(client=client, progress=False).run_everywhere(lambda: ran.append("here"))
    assert ran == ["here"]
    assert len(client.calls) == 1
    assert client.calls[0][1] == "return"


def test_a_worker_that_left_is_skipped() -> None:
    client = _Client({"tcp://a": None, "tcp://b": CommClosedError("in <TCP (closed) Scheduler Broadcast>")})
    StageRunner(client=client, progress=False).run_everywhere(lambda: None)  # no error


def test_an_error_of_the_function_is_raised() -> None:
    client = _Client({"tcp://a": None, "tcp://b": ValueError("bad cache")})
    with pytest.raises(ValueError, match="bad cache"):
        StageRunner(client=client, progress=False).run_everywhere(lambda: None)
