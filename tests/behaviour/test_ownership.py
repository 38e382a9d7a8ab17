"""No command deletes or alters a file it did not write: the table of issue 21, local paths.

Every writing command runs through :func:`dgl_chunked.cli.main` against a workspace
holding the golden tiny chunked graph (``chunked/``), its assignment (``assign/``),
raw inputs of ``chunk`` (``raw/``) and the user's own files. For each situation the
command must either refuse with exactly one ``error:`` line, or succeed inside its own
marked directory; in both cases every file that was there before is byte for byte
the same afterwards (ownership markers aside: a refused run may refresh its own).
The S3 half of the table is ``tests/behaviour/test_ownership_s3.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.storage.owned import MARKER_NAME, acquire_lease

USER_BYTES = b"my notes \x00\xff keep me\n"


@pytest.fixture
def work(tmp_path: Path, golden_dir: Path) -> Path:
    tiny = golden_dir / "tiny-pipeline"
    shutil.copytree(tiny / "chunked", tmp_path / "chunked")
    shutil.copytree(tiny / "partition_assignment", tmp_path / "assign")
    raw = tmp_path / "raw"
    raw.mkdir()
    np.save(raw / "e.npy", np.array([[0, 1, 2, 2, 3], [1, 2, 2, 0, 4]]))
    np.save(raw / "f.npy", np.eye(5, dtype=np.float32))
    spec = {
        "graph_name": "own",
        "node_types": {"n": {"features": {"f": {"path": "f.npy"}}}},
        "edge_types": {"n:e:n": {"source": "e.npy"}},
    }
    (raw / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "notes.txt").write_bytes(USER_BYTES)
    return tmp_path


# --- the commands ------------------------------------------------------------------------------

Argv = Callable[[Path, Path, str], list[str]]


def _synth(w: Path, out: Path, sched: str) -> list[str]:
    return ["synth", "--out-dir", str(out), "--num-nodes", "40", "--num-edges", "120", "--feat-dim", "2"]


def _chunk(w: Path, out: Path, sched: str) -> list[str]:
    return ["chunk", "--spec", str(w / "raw" / "spec.json"), "--out-dir", str(out), "--num-chunks", "2"]


def _partition(w: Path, out: Path, sched: str) -> list[str]:
    return [
        "partition",
        "--in-dir",
        str(w / "chunked"),
        "--out-dir",
        str(out),
        "--num-parts",
        "2",
        "--scheduler",
        sched,
    ]


def _export(w: Path, out: Path, sched: str) -> list[str]:
    return ["parmetis-export", "--in-dir", str(w / "chunked"), "--out-dir", str(out), "--scheduler", sched]


def _import(w: Path, out: Path, sched: str) -> list[str]:
    chunked, assign = str(w / "chunked"), str(w / "assign")
    return ["parmetis-import", "--in-dir", chunked, "--parmetis-output", assign, "--out-dir", str(out)] + [
        "--num-parts",
        "2",
        "--scheduler",
        sched,
    ]


def _dispatch(w: Path, out: Path, sched: str) -> list[str]:
    chunked, assign = str(w / "chunked"), str(w / "assign")
    return ["dispatch", "--in-dir", chunked, "--partitions-dir", assign, "--out-dir", str(out)] + [
        "--no-progress",
        "--scheduler",
        sched,
    ]


def _run(w: Path, out: Path, sched: str) -> list[str]:
    chunked = str(w / "chunked")
    return ["run", "--in-dir", chunked, "--num-parts", "2", "--out-dir", str(out), "--no-progress"] + [
        "--scheduler",
        sched,
    ]


# name -> (argv builder, kind of its output marker, reads the chunked graph, has --staging-dir)
COMMANDS: dict[str, tuple[Argv, str, bool, bool]] = {
    "synth": (_synth, "synth", False, False),
    "chunk": (_chunk, "chunk", False, True),
    "partition": (_partition, "assignment", True, False),
    "parmetis-export": (_export, "parmetis-export", True, False),
    "parmetis-import": (_import, "assignment", True, False),
    "dispatch": (_dispatch, "dispatch", True, True),
    "run": (_run, "dispatch", True, True),
}
STAGED = [c for c, v in COMMANDS.items() if v[3]]
READERS = [c for c, v in COMMANDS.items() if v[2]]


# --- helpers ---------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (ownership markers aside) -> bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MARKER_NAME
    }


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return rc, captured.err


def assert_refused(rc: int, err: str, *expected: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1 and len(lines) == 1, f"expected one error line, found rc={rc}:\n{err}"
    assert lines[0].startswith("error: "), lines[0]
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"


def assert_kept(before: dict[str, bytes], root: Path) -> None:
    """Every file of ``before`` is still there, byte for byte."""
    after = snapshot(root)
    changed = [k for k, v in before.items() if after.get(k) != v]
    assert changed == [], f"files changed or gone: {changed}"


# --- the table ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_output_holding_a_foreign_file_is_refused(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = work / "mine"
    out.mkdir()
    (out / "notes.txt").write_bytes(USER_BYTES)
    before = snapshot(work)
    rc, err = run_cli(COMMANDS[command][0](work, out, scheduler), capsys)
    assert_refused(rc, err, "notes.txt", "did not write")
    assert snapshot(work) == before
    assert not (out / MARKER_NAME).exists()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_overwrite_refuses_a_foreign_file_in_our_earlier_output(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, out = COMMANDS[command][0], work / "out"
    rc, err = run_cli(argv(work, out, scheduler), capsys)
    assert rc == 0, err
    assert json.loads((out / MARKER_NAME).read_text())["released"] is True
    (out / "zz-user.txt").write_bytes(USER_BYTES)
    before = snapshot(work)
    rc, err = run_cli([*argv(work, out, scheduler), "--overwrite"], capsys)
    assert_refused(rc, err, "zz-user.txt", "not overwritten" if command not in ("synth", "chunk") else "not cleared")
    assert snapshot(work) == before  # the earlier output too: nothing was removed
    (out / "zz-user.txt").unlink()
    rc, err = run_cli([*argv(work, out, scheduler), "--overwrite"], capsys)
    assert rc == 0, err


@pytest.mark.parametrize("command", ["chunk", *READERS])
def test_output_containing_the_input_is_refused(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(work)
    rc, err = run_cli([*COMMANDS[command][0](work, work, scheduler), "--overwrite"], capsys)
    assert_refused(rc, err, f"'{work}'", "contains the", "chunk spec" if command == "chunk" else "chunked")
    assert snapshot(work) == before
    assert not (work / MARKER_NAME).exists()


@pytest.mark.parametrize("command", READERS)
def test_output_inside_the_input_is_refused(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = work / "chunked" / "out"
    before = snapshot(work)
    rc, err = run_cli(COMMANDS[command][0](work, out, scheduler), capsys)
    assert_refused(rc, err, "is inside the chunked graph directory", str(work / "chunked"))
    assert snapshot(work) == before and not out.exists()


@pytest.mark.parametrize("command", ["dispatch", "run"])
def test_output_equal_to_the_assignment_is_refused(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(work)
    if command == "dispatch":
        argv = _dispatch(work, work / "assign", scheduler)
        expected = "the assignment directory"
    else:
        argv = [*_run(work, work / "out", scheduler), "--partitions-dir", str(work / "out" / "assign")]
        expected = "--partitions-dir"
    rc, err = run_cli(argv, capsys)
    assert_refused(rc, err, expected)
    assert snapshot(work) == before


@pytest.mark.parametrize("command", STAGED)
def test_staging_dir_with_foreign_files_works_in_its_own_marked_dir(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = work / "scratchspace"
    scratch.mkdir()
    (scratch / "notes.txt").write_bytes(USER_BYTES)
    (scratch / "sub").mkdir()
    (scratch / "sub" / "data.bin").write_bytes(USER_BYTES * 3)
    before = snapshot(work)
    rc, err = run_cli([*COMMANDS[command][0](work, work / "out", scheduler), "--staging-dir", str(scratch)], capsys)
    assert rc == 0, err
    assert_kept(before, work)
    assert sorted(p.name for p in scratch.iterdir()) == ["notes.txt", "sub"]  # our staging is gone
    assert (work / "out" / "metadata.json").is_file()


@pytest.mark.parametrize("command", ["dispatch", "run"])
def test_keep_staging_lives_in_a_marked_dir_named_after_the_output(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scratch = work / "scratchspace"
    argv = [*COMMANDS[command][0](work, work / "out", scheduler), "--staging-dir", str(scratch), "--keep-staging"]
    rc, err = run_cli(argv, capsys)
    assert rc == 0, err
    [staging] = list(scratch.iterdir())
    assert staging.name.startswith("dglc-staging-")
    marker = json.loads((staging / MARKER_NAME).read_text())
    assert marker["kind"] == "dispatch-staging" and marker["tool"] == "dgl_chunked"


@pytest.mark.parametrize("command", STAGED)
def test_staging_dir_equal_to_the_input(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """dispatch/run refuse (the staging would sit inside the input); chunk reads files, not
    its spec's folder: it works in its own marked dglc-chunk-staging-* there and removes it."""
    inp = work / ("raw" if command == "chunk" else "chunked")
    before = snapshot(work)
    rc, err = run_cli([*COMMANDS[command][0](work, work / "out", scheduler), "--staging-dir", str(inp)], capsys)
    if command == "chunk":
        assert rc == 0, err
        assert_kept(before, work)
        assert sorted(p.name for p in inp.iterdir()) == ["e.npy", "f.npy", "spec.json"]
    else:
        assert_refused(rc, err, "staging directory", "is inside the chunked graph directory")
        assert snapshot(work) == before


@pytest.mark.parametrize("command", list(COMMANDS))
def test_second_run_on_the_same_output_is_refused_naming_the_holder(
    command: str, work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, kind = COMMANDS[command][0], COMMANDS[command][1]
    out = work / "out"
    with acquire_lease(str(out), kind):  # the first run, still working
        before = snapshot(work)
        rc, err = run_cli(argv(work, out, scheduler), capsys)
        assert_refused(rc, err, "another dgl_chunked run is working here", f"host {socket.gethostname()}")
        assert f"pid {os.getpid()}, started" in err
        assert snapshot(work) == before
    rc, err = run_cli(argv(work, out, scheduler), capsys)  # once it is done, the output is free
    assert rc == 0, err


def test_stale_lease_of_a_crashed_run_is_taken_over_and_the_run_completes(
    work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A marker whose holder stopped heart-beating long ago (another host: its pid cannot be checked)."""
    out = work / "out"
    out.mkdir()
    stale = {
        "tool": "dgl_chunked",
        "kind": "dispatch",
        "run_id": "crashed",
        "version": "0.1.0",
        "host": "some-other-host",
        "pid": 1,
        "created": 1.0,
        "started": 1.0,
        "heartbeat": 1.0,
        "released": False,
    }
    (out / MARKER_NAME).write_text(json.dumps(stale))
    rc, err = run_cli(_dispatch(work, out, scheduler), capsys)
    assert rc == 0, err
    marker = json.loads((out / MARKER_NAME).read_text())
    assert marker["run_id"] != "crashed" and marker["released"] and marker["created"] == 1.0


def test_chunk_overwrite_never_removes_the_raw_input(
    work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's second example: ``chunk --spec work/raw/spec.yaml --out-dir work --overwrite``."""
    before = snapshot(work)
    rc, err = run_cli([*_chunk(work, work, scheduler), "--overwrite"], capsys)
    assert_refused(rc, err, "contains the chunk spec", str(work / "raw" / "spec.json"))
    assert snapshot(work) == before
