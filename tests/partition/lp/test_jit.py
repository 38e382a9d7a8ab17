"""``lp``'s numba kernels compile once per machine (:mod:`dgl_chunked.partition.lp.jit`):
a process whose kernel another process is compiling waits for it and then loads the
cached result, instead of compiling the same kernel beside it (issue #38)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.partition.lp import jit

_TOY = """
import numpy as np

from dgl_chunked.partition.lp.jit import compiled


def _step(x):
    return 3 * x + 1


def _total(a, k):
    s = 0
    for x in a:
        s += _step(x) * k
    return s


def main():
    kernel = compiled(globals(), ["_step"], "_total")
    print("calling", flush=True)
    got = kernel(np.arange(10, dtype=np.int32), 2)
    print(got, sum(kernel.dispatcher.stats.cache_misses.values()), flush=True)
"""


def _toy_module(tmp_path: Path) -> Path:
    path = tmp_path / "toy_kernel_module.py"
    path.write_text(textwrap.dedent(_TOY))
    return path


def _toy_namespace(tmp_path: Path) -> dict[str, Any]:
    """The toy module's globals, imported from its file (numba caches only functions
    defined in a file)."""
    spec = importlib.util.spec_from_file_location("toy_kernel_module", _toy_module(tmp_path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def test_a_kernel_returns_what_its_python_function_does_and_compiles_once_per_type(tmp_path: Path) -> None:
    """:func:`.jit.compiled` replaces the helpers in the namespace by their numba
    versions and returns the kernel: the Python function's results, one compiled
    version per set of argument types however often it is called."""
    namespace = _toy_namespace(tmp_path)
    python_total = namespace["_total"]
    kernel = jit.compiled(namespace, ["_step"], "_total")
    assert type(namespace["_step"]).__name__ == "CPUDispatcher"
    assert jit.compiled(namespace, ["_step"], "_step").dispatcher is namespace["_step"]
    for dtype in (np.int32, np.int64, np.int32):
        a = np.arange(7, dtype=dtype)
        assert kernel(a, 5) == python_total(list(a), 5) == 5 * (3 * 21 + 7)
    assert len(kernel.dispatcher.signatures) == 2


def test_a_kernel_has_the_versions_numba_would_compile(tmp_path: Path) -> None:
    """Calls that numba's own dispatch would run on a version it has, or compile a new
    version for, do the same through a :class:`.jit.HostKernel` (an array of another
    layout gets its own version; an ``int`` runs the ``int64`` one)."""
    import numba

    namespace = _toy_namespace(tmp_path)
    plain = numba.njit(namespace["_total"])  # the same function, dispatched by numba alone
    kernel = jit.compiled(namespace, ["_step"], "_total")
    calls = [(np.arange(14)[::2], np.int64(1)), (np.arange(7), 1), (np.arange(7), np.int64(2)), (np.arange(3.0), 1)]
    for args in calls:
        assert kernel(*args) == plain(*args)
    assert kernel.dispatcher.signatures == plain.signatures
    assert len(plain.signatures) == 3


def test_processes_wait_for_the_one_compiling_and_load_its_cache(tmp_path: Path) -> None:
    """Two processes with an empty numba cache call the same kernel while this test
    holds the machine's lock for it: neither runs it before the lock is released, and
    then one compiles it and the other loads that from the cache (one miss in all)."""
    _toy_module(tmp_path)
    env = _env(tmp_path)
    name = "toy_kernel_module._total"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path))
        assert jit.lock_path().startswith(str(tmp_path))
        with jit.machine_lock(name):
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", "import toy_kernel_module; toy_kernel_module.main()"],
                    env=env,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=tmp_path,
                )
                for _ in range(2)
            ]
            for proc in procs:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "calling"
            time.sleep(1.5)  # long enough to compile and run the toy kernel unlocked
            assert [proc.poll() for proc in procs] == [None, None]
        outputs = [proc.communicate(timeout=120)[0].split() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert [int(out[0]) for out in outputs] == [2 * (3 * 45 + 10)] * 2
    assert sorted(int(out[1]) for out in outputs) == [0, 1]


def test_without_a_lock_file_the_kernel_compiles_unlocked(tmp_path: Path) -> None:
    """Where the lock file cannot be opened (its directory is missing), the lock is
    skipped: the kernel still compiles and runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jit, "lock_path", lambda: str(tmp_path / "missing" / "x.lock"))
        kernel = jit.compiled(_toy_namespace(tmp_path), ["_step"], "_total")
        assert kernel(np.arange(3, dtype=np.int64), 1) == 3 * 3 + 3
    assert not (tmp_path / "missing").exists()


def test_a_file_system_without_locks_is_not_waited_on(tmp_path: Path) -> None:
    """``lockf`` failing for another reason than a holder (``ENOLCK``: a file system
    without locks) skips the lock at once instead of retrying until ``wait``."""
    import errno
    import fcntl

    calls = []

    def no_locks(*args: Any) -> None:
        calls.append(args)
        raise OSError(errno.ENOLCK, "No locks available")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path))
        patch.setattr(fcntl, "lockf", no_locks)
        start = time.monotonic()
        with jit.machine_lock("toy_kernel_module._total", wait=30):
            pass
    assert len(calls) == 1 and time.monotonic() - start < 5


def test_a_lock_held_past_the_wait_is_given_up(tmp_path: Path) -> None:
    """A process that holds a kernel's lock and never lets go (stopped while
    compiling) delays the others by ``wait`` seconds, then they go on unlocked."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmp_path))
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD, "toy_kernel_module._total"],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(tmp_path),
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            start = time.monotonic()
            with jit.machine_lock("toy_kernel_module._total", wait=0.5):
                waited = time.monotonic() - start
            with jit.machine_lock("another kernel", wait=0.5):
                assert time.monotonic() - start - waited < 0.4
        finally:
            holder.kill()
            holder.wait()
    assert 0.5 <= waited < 5


_HOLD = """
import sys, time
from dgl_chunked.partition.lp import jit
with jit.machine_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    """Subprocesses: this checkout importable, numba's cache and the lock file under
    ``tmp_path``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[3]), env.get("PYTHONPATH", "")])
    return env


def test_no_lp_kernel_is_compiled_for_a_literal_argument(tmp_path: Path) -> None:
    """A constant passed from one compiled function to another (``0``, ``True``) made
    numba compile the callee once for that literal and once for the variable's type
    (four kernels compiled twice, issue #38). With an empty cache (a subprocess: a
    kernel loaded from the cache compiles no helper), after the paths that passed
    them, no compiled function of the kernel modules has a literal in its signature."""
    out = subprocess.run(
        [sys.executable, "-c", _LITERALS], env=_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    literal, compiled_helpers = out.stdout.strip().split("\n")
    assert literal == "[]"
    assert int(compiled_helpers) >= 8  # the helpers were compiled here, not loaded: the check saw them


_LITERALS = """
import numpy as np
from numba import types
from numba.core.dispatcher import Dispatcher

from dgl_chunked.partition.lp import entry_kernels, node_kernels, pair_sums, round_kernels

rng = np.random.default_rng(0)
a, b, w = rng.integers(0, 50, 5000), rng.integers(0, 50, 5000), rng.integers(1, 9, 5000)
pair_sums.pair_sums(a, b, w)  # b's range small: sorted by b first
pair_sums.pair_sums(a, b * 10**6, w)
umap = rng.integers(-1, 40, 50)
pair_sums._HASH_LOG_SLOTS = 8  # the table fills: the rest sorted and merged
got = pair_sums.sorted_pairs(a, b, w, umap, umap, few=True)
entry_kernels.pair_pieces(got, np.array([0, 20, 40], np.int64))
entry_kernels.split_entries(a, b, w, np.array([0, 10, 30, 50], np.int64))
round_kernels.sorted_by(rng.integers(0, 4, 5000), 4, a, b, np.empty_like(a), np.empty_like(b))
literal, helpers = [], 0
for module in (entry_kernels, node_kernels, pair_sums, round_kernels):
    for name, value in vars(module).items():
        if isinstance(value, Dispatcher):
            helpers += bool(value.signatures)
            literal += [(name, s) for s in value.signatures if any(isinstance(t, types.Literal) for t in s)]
print(literal)
print(helpers)
"""
