"""The real-DGL side scripts run as forks of one process that imported DGL (``zygote.py``)
do what they do in a fresh interpreter: the same arrays, argv, working directory and
environment, the same failures and stderr, the same kill of the whole session on timeout."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.io.dgl import write_tensor_dict

from .harness import run_dgl, run_dgl_json

pytestmark = pytest.mark.realdgl

# A side script of the test's own: what it sees, in an .npz (argv[-1]), then what it is told
# to do (argv[1]): exit with a code after writing to stderr, or start a child and wait.
PROBE = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    import numpy as np
    import dgl

    mode = sys.argv[1]
    facts = {"argv": sys.argv[1:], "cwd": os.getcwd(), "probe": os.environ.get("DGLC_ZYGOTE_PROBE"),
             "main": __name__, "dgl": dgl.__version__, "path0": sys.path[0],
             "parent": open(f"/proc/{os.getppid()}/cmdline").read().split("\\0")}
    np.savez(sys.argv[-1], __json__=np.array(json.dumps(facts)))
    if mode == "fail":
        print("the probe failed on purpose", file=sys.stderr)
        sys.exit(3)
    if mode == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(sys.argv[2], "w") as f:
            f.write(str(child.pid))
        time.sleep(600)
    """
)


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    script = tmp_path / "probe_side.py"
    script.write_text(PROBE)
    return script


@pytest.fixture(params=["zygote", "fresh"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DGLC_DGL_ZYGOTE", "1" if request.param == "zygote" else "0")
    return str(request.param)


def test_a_fork_sees_what_a_fresh_interpreter_sees(probe: Path, route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DGLC_ZYGOTE_PROBE", f"set by the test ({route})")
    _, facts = run_dgl_json("look", "a b", script=probe)
    assert facts["argv"][:2] == ["look", "a b"] and facts["argv"][2].endswith("out.npz")
    assert Path(facts["cwd"]).name.startswith("dglc-realdgl-") and Path(facts["cwd"]) == Path(facts["argv"][2]).parent
    assert facts["probe"] == f"set by the test ({route})"
    assert facts["main"] == "__main__" and facts["dgl"] == "2.1.0"
    assert facts["path0"] == str(probe.parent)
    assert _from_zygote(facts) == (route == "zygote"), facts["parent"]


def test_dgl_loads_the_same_arrays_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.dgl"
    tensors = {"a": np.arange(12, dtype=np.int64).reshape(3, 4), "b/feat": np.linspace(0, 1, 7, dtype=np.float32)}
    write_tensor_dict(path, tensors)
    loaded = []
    for flag in ("1", "0"):
        monkeypatch.setenv("DGLC_DGL_ZYGOTE", flag)
        loaded.append(run_dgl("tensors", str(path)))
    assert loaded[0].keys() == loaded[1].keys() and {"f0/a", "f0/b/feat"} <= set(loaded[0])
    for key in loaded[0]:
        np.testing.assert_array_equal(loaded[0][key], loaded[1][key])
    np.testing.assert_array_equal(loaded[0]["f0/a"], tensors["a"])


def test_a_failing_script_reports_its_exit_code_and_stderr(probe: Path, route: str) -> None:
    with pytest.raises(AssertionError, match=r"(?s)on fail .*\(exit 3\).*the probe failed on purpose"):
        run_dgl("fail", script=probe)


def test_a_forked_script_past_its_timeout_is_killed_with_its_children(
    probe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DGLC_DGL_ZYGOTE", "1")  # a fresh interpreter's kill is the code before the zygote
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"timed out after 8 s and was killed"):
        run_dgl("hang", str(pid_file), timeout=8, script=probe)
    assert time.monotonic() - started < 40
    _, facts = run_dgl_json("look", script=probe)  # the zygote serves the next script
    assert _from_zygote(facts)
    child = int(pid_file.read_text())
    for _ in range(100):  # killed with its parent's session, then reaped by init
        if not _running(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail(f"the script's child {child} outlived the timeout")


def _from_zygote(facts: dict[str, Any]) -> bool:
    """Whether the probe's parent process ran ``zygote.py``."""
    return any(os.path.basename(arg) == "zygote.py" for arg in facts["parent"])


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
