"""Staging.wipe: a local staging's entries removed by several threads, checked first, fingerprint first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import staging as staging_module
from dgl_chunked.dispatch.staging import Staging
from dgl_chunked.storage.owned import MARKER_NAME, ForeignDataError
from dgl_chunked.storage.trash import TRASH_MARK, leftover_trash, remove_later, wait_for_removals


def _filled(root: Path) -> Staging:
    staging = Staging(str(root))
    assert staging.start("fp-1") is False
    for name in ("edges/e/0/new_src", "edges/e/1/new_dst", "nodes/n/part", "node_feat/n/f/0"):
        arr = staging.create(name, (10,), np.int32, chunks=(4,))
        arr[...] = np.arange(10, dtype=np.int32)
    for key in ("edges/e/0", "edges/e/1", "write/0/graph"):
        staging.mark_done(key, [1, 2])
    return staging


def test_wipe_removes_every_entry_and_the_directory(tmp_path: Path) -> None:
    staging = _filled(tmp_path / "staging")
    assert len([p for p in (tmp_path / "staging").rglob("*") if p.is_file()]) > 20
    staging.wipe()
    assert not (tmp_path / "staging").exists()


def test_a_foreign_entry_stops_the_wipe_before_anything_is_removed(tmp_path: Path) -> None:
    staging = _filled(tmp_path / "staging")
    (tmp_path / "staging" / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "staging").rglob("*"))
    with pytest.raises(ForeignDataError, match="notes.txt"):
        staging.wipe()
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "staging").rglob("*")) == before


def test_an_interrupted_wipe_leaves_a_staging_no_run_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    staging = _filled(tmp_path / "staging")

    def interrupted(path: str) -> None:
        raise OSError(f"interrupted at {path}")

    monkeypatch.setattr(staging_module, "_remove_path", interrupted)
    with pytest.raises(OSError, match="interrupted"):
        staging.wipe()
    monkeypatch.undo()
    assert (tmp_path / "staging" / MARKER_NAME).exists()  # still ours, still removable
    assert staging.fingerprint() is None
    assert staging.start("fp-1") is False  # the same run starts afresh: nothing half-removed is reused
    assert staging.done_value("edges/e/0") is staging_module.MISSING


def test_a_background_wipe_takes_the_staging_away_at_once_and_removes_it_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renamed to a trash name first (no run resumes it), then removed by a thread the caller waits for."""
    staging = _filled(tmp_path / "staging")
    started: list[tuple[object, str]] = []
    monkeypatch.setattr(staging_module, "remove_later", lambda remove, what: started.append((remove, what)))
    staging.wipe(background=True)
    assert not (tmp_path / "staging").exists()  # gone from its place before the removal ran
    [trash] = leftover_trash(str(tmp_path / "staging"))
    assert Path(trash).name.startswith("staging" + TRASH_MARK)
    assert (Path(trash) / MARKER_NAME).exists() and not (Path(trash) / "fingerprint.json").exists()
    assert Staging(trash).fingerprint() is None  # nothing resumes a trash directory
    [(remove, _)] = started
    remove_later(remove, "test")  # type: ignore[arg-type]  # the real thread this time
    wait_for_removals()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_killed_runs_trash_is_removed_by_the_next_run_and_a_foreign_one_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "staging"
    monkeypatch.setattr(staging_module, "remove_later", lambda remove, what: None)  # killed before it ran
    _filled(root).wipe(background=True)
    _filled(root).wipe(background=True)
    left = leftover_trash(str(root))
    assert len(left) == 2
    (Path(left[1]) / "notes.txt").write_text("mine")  # an entry the tool never writes: not ours to delete
    (tmp_path / ("other" + TRASH_MARK + "x")).mkdir()  # another directory's trash name: not this staging's
    Staging(str(root)).remove_leftovers()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([Path(left[1]).name, "other" + TRASH_MARK + "x"])
    assert (Path(left[1]) / "notes.txt").read_text() == "mine"
