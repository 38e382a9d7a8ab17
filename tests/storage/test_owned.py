"""Owned directories: marker, removal only of what is ours, overlap checks, leases."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dgl_chunked.errors import OutputExistsError
from dgl_chunked.storage.owned import (
    MARKER_NAME,
    ForeignDataError,
    LeaseHeldError,
    OverlapError,
    acquire_lease,
    check_no_overlap,
    clear_owned,
    create_owned_dir,
    make_scratch_dir,
    prepare_owned_output,
    read_marker,
    remove_owned,
)


def _foreign(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"user notes\x00\xff" + os.urandom(16)
    path.write_bytes(data)
    return data


def test_create_marks_a_new_dir_and_reuses_it(tmp_path: Path) -> None:
    out = str(tmp_path / "a" / "out")
    assert create_owned_dir(out, "dispatch") == out
    marker = read_marker(out)
    assert marker is not None and marker.kind == "dispatch" and marker.released
    assert marker.host == socket.gethostname() and marker.pid == os.getpid()
    body = json.loads((tmp_path / "a" / "out" / MARKER_NAME).read_text())
    assert body["tool"] == "dgl_chunked" and body["run_id"] == marker.run_id
    (tmp_path / "a" / "out" / "part0").mkdir()
    assert create_owned_dir(out, "dispatch") == out  # ours: reused
    assert read_marker(out) == marker


def test_create_accepts_an_empty_dir(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    create_owned_dir(str(tmp_path / "empty"), "chunk")
    assert read_marker(str(tmp_path / "empty")).kind == "chunk"  # type: ignore[union-attr]


def test_create_refuses_foreign_entries_and_other_kinds(tmp_path: Path) -> None:
    data = _foreign(tmp_path / "out" / "notes.txt")
    with pytest.raises(ForeignDataError, match=r"notes\.txt.*did not write"):
        create_owned_dir(str(tmp_path / "out"), "dispatch")
    assert (tmp_path / "out" / "notes.txt").read_bytes() == data
    assert not (tmp_path / "out" / MARKER_NAME).exists()
    create_owned_dir(str(tmp_path / "chunked"), "chunk")
    with pytest.raises(ForeignDataError, match="'chunk' directory, not a 'dispatch' one"):
        create_owned_dir(str(tmp_path / "chunked"), "dispatch")
    with pytest.raises(ForeignDataError, match="expected a directory, found a file"):
        create_owned_dir(str(tmp_path / "out" / "notes.txt"), "dispatch")


def test_a_foreign_file_named_like_the_marker_is_not_ours(tmp_path: Path) -> None:
    _foreign(tmp_path / "out" / MARKER_NAME)
    with pytest.raises(ForeignDataError, match="expected a dgl_chunked marker"):
        remove_owned(str(tmp_path / "out"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / MARKER_NAME).write_text(json.dumps({"tool": "someone-else"}))
    with pytest.raises(ForeignDataError):
        create_owned_dir(str(tmp_path / "other"), "dispatch")
    assert (tmp_path / "other" / MARKER_NAME).read_text() == json.dumps({"tool": "someone-else"})


def test_scratch_dir_lives_inside_a_foreign_parent(tmp_path: Path) -> None:
    data = _foreign(tmp_path / "scratch" / "notes.txt")
    path = make_scratch_dir(str(tmp_path / "scratch"), "staging", "abc")
    assert path == str(tmp_path / "scratch" / "dglc-staging-abc")
    (Path(path) / "x.bin").write_bytes(b"1")
    assert make_scratch_dir(str(tmp_path / "scratch"), "staging", "abc") == path  # reused
    remove_owned(path)
    assert sorted(os.listdir(tmp_path / "scratch")) == ["notes.txt"]
    assert (tmp_path / "scratch" / "notes.txt").read_bytes() == data
    with pytest.raises(ValueError, match="token"):
        make_scratch_dir(str(tmp_path / "scratch"), "staging", "a/b")


def test_remove_refuses_unmarked_and_unexpected(tmp_path: Path) -> None:
    data = _foreign(tmp_path / "user" / "notes.txt")
    with pytest.raises(ForeignDataError, match=f"lacks the marker {MARKER_NAME}"):
        remove_owned(str(tmp_path / "user"))
    assert (tmp_path / "user" / "notes.txt").read_bytes() == data
    out = create_owned_dir(str(tmp_path / "out"), "dispatch")
    (tmp_path / "out" / "part0").mkdir()
    (tmp_path / "out" / "part0" / "graph.dgl").write_bytes(b"g")
    data = _foreign(tmp_path / "out" / "notes.txt")
    with pytest.raises(ForeignDataError, match=r"not removed; found '.*notes\.txt'"):
        remove_owned(out, expected=["part*", "metadata.json"])
    with pytest.raises(ForeignDataError, match=r"not cleared; found '.*notes\.txt'"):
        clear_owned(out, expected=["part*"])
    assert (tmp_path / "out" / "notes.txt").read_bytes() == data
    assert (tmp_path / "out" / "part0" / "graph.dgl").read_bytes() == b"g"  # nothing removed
    remove_owned(str(tmp_path / "missing"))  # a missing path is fine


def test_clear_keeps_the_marker_and_remove_removes_all(tmp_path: Path) -> None:
    out = create_owned_dir(str(tmp_path / "out"), "dispatch")
    (tmp_path / "out" / "part0").mkdir()
    (tmp_path / "out" / "metadata.json").write_text("{}")
    clear_owned(out, expected=["part*", "metadata.json"])
    assert os.listdir(out) == [MARKER_NAME]
    remove_owned(out, expected=["part*"])
    assert not os.path.exists(out)


def test_an_output_with_a_manifest_is_finished_only_when_the_manifest_is_there(tmp_path: Path) -> None:
    """remap's and lookup's rule: an interrupted output (ours, no manifest) is redone without --overwrite."""
    out = str(tmp_path / "out")

    def prepare(overwrite: bool) -> None:
        prepare_owned_output(
            out, "remap", overwrite=overwrite, expected=["nodes", "_tmp", "remap.json"], manifest="remap.json"
        )

    prepare(False)
    (tmp_path / "out" / "_tmp").mkdir()  # an interrupted run: emptied, no flag needed
    prepare(False)
    assert os.listdir(out) == [MARKER_NAME]
    (tmp_path / "out" / "nodes").mkdir()
    (tmp_path / "out" / "remap.json").write_text("{}")
    with pytest.raises(OutputExistsError, match=r"holds an earlier remap output \(remap\.json\); pass --overwrite"):
        prepare_owned_output(
            out, "remap", overwrite=False, expected=["nodes", "_tmp", "remap.json"], manifest="remap.json"
        )
    assert sorted(os.listdir(out)) == sorted([MARKER_NAME, "nodes", "remap.json"])  # nothing removed
    _foreign(tmp_path / "out" / "notes.txt")
    with pytest.raises(ForeignDataError, match="notes.txt"):  # checked before anything is removed
        prepare_owned_output(
            out, "remap", overwrite=True, expected=["nodes", "_tmp", "remap.json"], manifest="remap.json"
        )
    assert (tmp_path / "out" / "remap.json").exists()
    (tmp_path / "out" / "notes.txt").unlink()
    prepare(True)
    assert os.listdir(out) == [MARKER_NAME]


@pytest.mark.parametrize(
    ("out", "inp", "relation"),
    [
        ("data", "data", "is the same location as"),
        ("data/out", "data", "is inside"),
        ("data", "data/raw/spec.yaml", "contains"),
        ("data/", "data/raw", "contains"),
    ],
)
def test_overlap_is_refused_naming_both(tmp_path: Path, out: str, inp: str, relation: str) -> None:
    with pytest.raises(OverlapError) as info:
        check_no_overlap({"--out-dir": str(tmp_path / out)}, {"raw source": str(tmp_path / inp)})
    msg = str(info.value)
    assert relation in msg and "--out-dir" in msg and "raw source" in msg and str(tmp_path / inp) in msg


def test_overlap_resolves_symlinks_and_ignores_siblings(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(OverlapError, match="is inside"):
        check_no_overlap({"--staging-dir": str(tmp_path / "link" / "st")}, {"input": str(tmp_path / "real")})
    check_no_overlap({"out": str(tmp_path / "data2")}, {"input": str(tmp_path / "data")})
    check_no_overlap({"out": "memory://bucket/data"}, {"input": str(tmp_path / "data")})
    with pytest.raises(OverlapError, match="contains"):
        check_no_overlap({"out": "memory://bucket"}, {"input": "memory://bucket/data/x.csv"})


def test_second_lease_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with acquire_lease(out, "dispatch") as lease:
        marker = read_marker(out)
        assert marker is not None and not marker.released and marker.run_id == lease.run_id
        with pytest.raises(LeaseHeldError, match=f"host {socket.gethostname()}, pid {os.getpid()}, started"):
            acquire_lease(out, "dispatch")
        lease.check()
    assert read_marker(out).released  # type: ignore[union-attr]
    with acquire_lease(out, "dispatch"):  # free again
        pass


def test_heartbeat_keeps_the_lease_fresh(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    with acquire_lease(out, "dispatch", heartbeat_every=0.05):
        first = read_marker(out).heartbeat  # type: ignore[union-attr]
        time.sleep(1.2)  # past stale_after below: only the heartbeats keep the lease held
        assert read_marker(out).heartbeat > first  # type: ignore[union-attr]
        with pytest.raises(LeaseHeldError):  # 1 s of slack for a heartbeat thread held up by load
            acquire_lease(out, "dispatch", stale_after=1.0)


def test_stale_lease_is_taken_over_and_the_loser_notices(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    first = acquire_lease(out, "dispatch", heartbeat_every=0.1)
    first._stop.set()  # the holder hangs: no more heartbeats
    first._thread.join()
    time.sleep(0.3)
    with acquire_lease(out, "dispatch", stale_after=0.2) as second:
        assert read_marker(out).run_id == second.run_id  # type: ignore[union-attr]
        first._stop.clear()
        first._thread = threading.Thread(target=first._beat, args=(0.05,), daemon=True)
        first._thread.start()
        time.sleep(0.3)
        with pytest.raises(LeaseHeldError, match="took over this directory"):
            first.check()
        first.release()  # does not release the new holder's lease
        assert not read_marker(out).released  # type: ignore[union-attr]


def test_lease_of_a_dead_process_on_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    code = (
        "import os, sys; from dgl_chunked.storage.owned import acquire_lease; "
        f"acquire_lease({out!r}, 'dispatch'); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})
    marker = read_marker(out)
    assert marker is not None and not marker.released and marker.pid != os.getpid()
    with acquire_lease(out, "dispatch") as lease:  # the heartbeat is fresh but the pid is gone
        assert lease.run_id != marker.run_id
