"""Run ``dgl_side.py`` under the side virtualenv that has real DGL 2.1.0.

The package's own environment has no torch or DGL (and numpy 2); the DGL venv has
numpy 1.x. The two only exchange files: our writer's output goes in, an ``.npz``
of what DGL loaded comes back.

Environment:

* ``DGL_VENV_PYTHON``: the DGL venv's python (default
  ``~/.cache/dgl_chunked/dgl210/bin/python`` when it exists);
* ``DGLC_REQUIRE_REAL_DGL=1``: fail instead of skip when that python is missing.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

__all__ = [
    "DGL_SIDE",
    "assert_real_dgl_loads",
    "assert_same_arrays",
    "dgl_python",
    "graphbolt_pickle",
    "load_graphbolts",
    "require_dgl",
    "run_dgl",
    "run_dgl_json",
    "split_files",
]

DGL_SIDE = Path(__file__).with_name("dgl_side.py")
ZYGOTE = Path(__file__).with_name("zygote.py")
_DEFAULT = Path.home() / ".cache" / "dgl_chunked" / "dgl210" / "bin" / "python"
_TIMEOUT_S = 300


def dgl_python() -> str | None:
    """The DGL venv's python: ``$DGL_VENV_PYTHON``, else the default path; None if absent."""
    configured = os.environ.get("DGL_VENV_PYTHON")
    candidate = Path(configured) if configured else _DEFAULT
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def require_dgl() -> str:
    """The DGL python, or skip the test (fail when ``DGLC_REQUIRE_REAL_DGL=1``)."""
    python = dgl_python()
    if python is None:
        message = (
            "real DGL not available: set DGL_VENV_PYTHON to a python with dgl 2.1.0 "
            f"(default {_DEFAULT}; install it with scripts/setup-real-dgl.sh)"
        )
        if os.environ.get("DGLC_REQUIRE_REAL_DGL") == "1":
            pytest.fail(message + " and DGLC_REQUIRE_REAL_DGL=1")
        pytest.skip(message)
    return python


def run_dgl(mode: str, *args: str, timeout: float = _TIMEOUT_S, script: Path = DGL_SIDE) -> dict[str, np.ndarray]:
    """Run ``dgl_side.py MODE ARGS... OUT.npz`` (or another ``script``) in the DGL venv and return the arrays.

    The DGL side runs in its own session; on timeout the whole process group
    (including a ``distgraph-server`` child) is killed.

    Raises
    ------
    AssertionError
        The DGL side failed (non-zero exit) or timed out; the message carries its stderr.
    """
    python = require_dgl()
    with tempfile.TemporaryDirectory(prefix="dglc-realdgl-") as tmp:
        target = Path(tmp) / "out.npz"
        env = _side_env()
        cmd = [python, str(script), mode, *map(str, args), str(target)]
        forked = _ZYGOTES.run(python, cmd[1:], cwd=tmp, env=env, timeout=timeout)
        if forked is not None:
            returncode, stderr, problem = forked
        else:
            returncode, stderr, problem = _run_fresh(cmd, cwd=tmp, env=env, timeout=timeout)
        if returncode != 0 or not target.exists():
            raise AssertionError(
                f"real DGL failed on {mode} {' '.join(map(str, args))} ({problem}).\n"
                f"command: {' '.join(cmd)}\n--- stderr (last 6000 chars) ---\n{stderr[-6000:]}"
            )
        with np.load(target, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}


def _side_env() -> dict[str, str]:
    """The side scripts' environment: ours without ``PYTHON*``, one OpenMP thread by default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run_fresh(cmd: list[str], *, cwd: str, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Run ``cmd`` in a fresh interpreter of its own session: exit code, stderr, what went wrong."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True
    )
    try:
        _, stderr = proc.communicate(timeout=timeout)
        problem = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        problem = f"timed out after {timeout:.0f} s and was killed"
    return proc.returncode, stderr, problem


class _Zygote:
    """One :mod:`zygote` process (DGL imported once) and its reply pipe, read a line at a time."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, str(ZYGOTE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=_side_env(), start_new_session=True,
        )  # fmt: skip
        self.buffer = b""

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float | None) -> dict[str, Any] | None:
        """The next reply line; None when ``timeout`` seconds pass first. Raises EOFError
        when the zygote is gone."""
        assert self.proc.stdout is not None
        fd, deadline = self.proc.stdout.fileno(), None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            data = os.read(fd, 4096)
            if not data:
                raise EOFError("the DGL zygote exited")
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()  # its loop ends
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


class _Zygotes:
    """The test process's zygotes, one per DGL python, started on first use.

    :meth:`run` returns None where a fresh interpreter must run the script instead:
    ``DGLC_DGL_ZYGOTE=0``, another thread using the zygote, or a zygote that could not
    start or died before forking (what the script then does is what it always did)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[tuple[int, str], _Zygote] = {}
        atexit.register(self.close)

    def run(
        self, python: str, argv: list[str], *, cwd: str, env: dict[str, str], timeout: float
    ) -> tuple[int, str, str] | None:
        if os.environ.get("DGLC_DGL_ZYGOTE") == "0" or not self.lock.acquire(blocking=False):
            return None
        try:
            key = (os.getpid(), python)
            zygote = self.started.get(key) or self.started.setdefault(key, _Zygote(python))
            out, err = Path(cwd) / "side.stdout", Path(cwd) / "side.stderr"
            try:
                zygote.send({"argv": argv, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err)})
                started = zygote.reply(timeout=120)  # importing DGL, the first time
            except (EOFError, OSError):
                started = None
            if started is None:
                self.started.pop(key).proc.kill()
                return None
            try:
                ended, problem = zygote.reply(timeout), ""
                if ended is None:
                    os.killpg(int(started["pid"]), signal.SIGKILL)
                    ended, problem = zygote.reply(None), f"timed out after {timeout:.0f} s and was killed"
            except EOFError:
                self.started.pop(key)
                ended, problem = {"status": -1}, "the DGL zygote died while the script ran"
            assert ended is not None
            status = int(ended["status"])
            return status, err.read_text(errors="replace"), problem or f"exit {status}"
        finally:
            self.lock.release()

    def close(self) -> None:
        for zygote in self.started.values():
            zygote.close()
        self.started.clear()


_ZYGOTES = _Zygotes()


def run_dgl_json(
    mode: str, *args: str, timeout: float = _TIMEOUT_S, script: Path = DGL_SIDE
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """:func:`run_dgl`, with the ``__json__`` facts decoded and removed from the arrays."""
    arrays = run_dgl(mode, *args, timeout=timeout, script=script)
    return arrays, json.loads(str(arrays.pop("__json__")))


def split_files(arrays: dict[str, np.ndarray], count: int) -> list[dict[str, np.ndarray]]:
    """Split ``f{j}/...`` keys of a multi-file run into one dict per file (prefix removed)."""
    out: list[dict[str, np.ndarray]] = [{} for _ in range(count)]
    for key, value in arrays.items():
        head, _, rest = key.partition("/")
        out[int(head[1:])][rest] = value
    return out


def load_graphbolts(*configs: str | Path) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """``load_partition(use_graphbolt=True)`` of every partition of each config, in one DGL
    subprocess (importing DGL is most of a run's time); per config, its arrays and facts."""
    arrays, info = run_dgl_json("graphbolts", *map(str, configs))
    return list(zip(split_files(arrays, len(configs)), (info[f"f{j}"] for j in range(len(configs))), strict=True))


def assert_same_array(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Equal dtype, shape and values, bit for bit (NaNs included)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype.itemsize in (1, 2, 4, 8) and got.dtype != bool:
        got, want = got.view(f"u{got.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}")
    np.testing.assert_array_equal(got, want, err_msg=what)


def assert_same_arrays(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """The same keys, and every array the same (:func:`assert_same_array`)."""
    assert set(got) == set(want), sorted(set(got) ^ set(want))
    for key in want:
        assert_same_array(got[key], want[key], key)


def graphbolt_pickle(path: str | Path) -> bytes:
    """The ``data.pkl`` record of a GraphBolt graph file (its pickle, whatever the zip's
    other bytes): what two converters must write alike."""
    from dgl_chunked.io.formats.torch_zip import TorchZipReader

    path = Path(path)
    with open(path, "rb") as f:
        return TorchZipReader(f, path.stat().st_size, str(path)).read("data.pkl")


def assert_real_dgl_loads(out_dir: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Real DGL's ``load_partition`` (DGL_DIST_DEBUG=1) and ``load_partition_feats`` of
    every partition in ``out_dir`` see exactly our files: graph, data, features, ranges.

    Returns DGL's arrays and facts for further checks.
    """
    from dgl_chunked.verify import load_partition_output

    config, parts = load_partition_output(out_dir)
    arrays, info = run_dgl_json("partition", str(Path(out_dir) / "metadata.json"))
    for p, part in enumerate(parts):
        facts = info[f"p{p}"]
        assert facts["graph_name"] == config.graph_name
        assert facts["ntypes"] == list(config.ntypes)
        assert facts["etypes"] == list(config.etypes)
        assert facts["num_inner_nodes"] == sum(r[p][1] - r[p][0] for r in config.node_map.values())
        assert_same_array(arrays[f"p{p}/src"], part.src, "src")
        assert_same_array(arrays[f"p{p}/dst"], part.dst, "dst")
        for kind, data in (("ndata", part.ndata), ("edata", part.edata)):
            for name, value in data.items():
                assert_same_array(arrays[f"p{p}/{kind}/{name}"], value, f"{kind}/{name}")
        for kind, feats in (("node", part.node_feats), ("edge", part.edge_feats)):
            prefix = f"p{p}/{kind}_feats/"
            assert {k[len(prefix) :] for k in arrays if k.startswith(prefix)} == set(feats)
            for key, value in feats.items():
                assert_same_array(arrays[prefix + key], value, key)
                assert_same_array(arrays[f"p{p}/partition_feats/{kind}/{key}"], value, key)
        gpb = facts["gpb"]
        assert gpb["num_partitions"] == config.num_parts
        for ntype, ranges in config.node_map.items():
            np.testing.assert_array_equal(np.asarray(gpb["node_map"][ntype]), ranges)
        for etype, ranges in config.edge_map.items():
            np.testing.assert_array_equal(np.asarray(gpb["edge_map"][etype]), ranges)
    return arrays, info


if __name__ == "__main__":  # manual use: python -m tests.realdgl.harness tensors FILE
    result = run_dgl(sys.argv[1], *sys.argv[2:])
    for name, value in result.items():
        print(name, value.dtype, value.shape)
