"""An error found inside a Dask task prints only the ``error:`` line, under every cluster option.

The CLI runs in a subprocess, so the stderr of its LocalCluster's worker processes
(where Dask logs a failed task with its traceback) is what the test reads. One scenario
per command family: ``remap`` (a repeated pair ID), ``lookup`` (an unknown key) and
``chunk`` (an edge naming an unknown key), each found by a task, never by the client.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dgl_chunked.chunk import read_orig_keys
from dgl_chunked.remap import RemapError

from .conftest import Parts

CLUSTERS = {"threads": [], "workers": ["--workers", "2"]}


def _cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dgl_chunked", *argv], capture_output=True, text=True, timeout=300, check=False
    )


def _one_error_line(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])


@pytest.mark.slow
@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_task_errors_print_one_line(keyed: tuple[Parts, dict[str, Path]], tmp_path: Path, cluster: str) -> None:
    parts, raw = keyed
    flags = CLUSTERS[cluster]
    # remap: a new ID given twice, found while grouping the pairs by block
    np.save(tmp_path / "ids.npy", np.array([0, 1, 2, 1]))
    np.save(tmp_path / "rows.npy", np.arange(4.0))
    done = _cli(
        [
            "remap", "--partitions", str(parts.out), "--out-dir", str(tmp_path / "r"),
            "--result", f"account={tmp_path / 'rows.npy'}", "--ids", f"account={tmp_path / 'ids.npy'}", *flags,
        ]
    )  # fmt: skip
    _one_error_line(done, "ids.npy row 3", "repeats")
    # lookup: a key that is not a node, found while joining a bucket
    keys = read_orig_keys(parts.chunked, "account")
    (tmp_path / "q.csv").write_text(f"key\n{keys[0]}\nacct-nobody\n")
    done = _cli(
        [
            "lookup", "--partitions", str(parts.out), "--in-dir", str(parts.chunked), "--out-dir", str(tmp_path / "l"),
            "--queries", str(tmp_path / "q.csv"), *flags,
        ]
    )  # fmt: skip
    _one_error_line(done, "q.csv line 3", "'acct-nobody'", "not a node")
    # chunk: an edge whose source key is not a node, found while mapping the edge chunks
    bad = tmp_path / "raw"
    shutil.copytree(raw["nodes"].parent, bad)
    edges = pd.read_parquet(bad / "edges.parquet")
    numeric = pd.api.types.is_integer_dtype(edges["src"])
    edges.loc[len(edges) // 2, "src"] = -12345 if numeric else "acct-nobody"
    edges.to_parquet(bad / "edges.parquet")
    done = _cli(
        ["chunk", "--spec", str(bad / "spec.json"), "--out-dir", str(tmp_path / "c"), "--num-chunks", "3", *flags]
    )
    _one_error_line(done, "edges.parquet", "-12345" if numeric else "'acct-nobody'")
    assert not (tmp_path / "c" / "metadata.json").exists()
    assert json.loads((bad / "spec.json").read_text())["graph_name"] == "planted"


def test_every_user_error_survives_pickling() -> None:
    """A task's error reaches the client pickled: it must arrive as the same class with the same message
    (and ``problems``), or the CLI would not know it for a user error."""
    import importlib
    import pickle
    import pkgutil

    import dgl_chunked
    from dgl_chunked.errors import DglChunkedError

    for module in pkgutil.walk_packages(dgl_chunked.__path__, "dgl_chunked."):
        importlib.import_module(module.name)

    def subclasses(cls: type) -> list[type]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    found = {c for c in subclasses(DglChunkedError) if c.__module__.startswith("dgl_chunked.")}
    assert len(found) >= 15
    for cls in found:
        err = cls("part3/graph.dgl: something to fix")
        err.problems = ["a", "b"]  # type: ignore[attr-defined]
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == str(err) and back.problems == ["a", "b"], cls


def _fail() -> None:
    raise RemapError("bad.npy row 3: broken")


def _slow_write(path: str) -> int:
    import time

    time.sleep(1.5)
    Path(path).write_text("done")
    return 1


def _threaded_compute(tasks: list[object]) -> None:
    from dgl_chunked.cli.context import local_threads
    from dgl_chunked.compute import StepRunner

    with local_threads():
        StepRunner(client=None, progress=False, command="test").compute(tasks, "test")


@pytest.mark.parametrize("where", ["threads", "cluster"])
def test_a_failed_step_returns_after_its_running_tasks(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    """The caller cleans up its staging right after the error: no task of the step may still be writing."""
    from dask.delayed import delayed

    from dgl_chunked.compute import StepRunner

    target = tmp_path / "late.txt"
    tasks = [
        delayed(_slow_write, pure=False)(str(target), dask_key_name="dglc-test-slow"),
        delayed(_fail, pure=False)(dask_key_name="dglc-test-fail"),
    ]
    with pytest.raises(RemapError, match="broken"):
        if where == "threads":
            _threaded_compute(tasks)
        else:
            StepRunner(client=request.getfixturevalue("client"), progress=False, command="test").compute(tasks, "test")
    assert target.read_text() == "done"
