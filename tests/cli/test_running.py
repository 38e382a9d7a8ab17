"""`dgl-chunked dispatch` / `run`: the staging removed in the background, and waited for before
the command returns (issue 37)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dgl_chunked.cli import main
from dgl_chunked.storage import trash


def test_the_command_returns_only_once_the_staging_is_removed(
    golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow removal (0.5 s before it starts) still ends before the command returns."""
    real = trash._run
    ran: list[str] = []

    def slow(remove, what):  # type: ignore[no-untyped-def]
        time.sleep(0.5)
        real(remove, what)
        ran.append(what)

    monkeypatch.setattr(trash, "_run", slow)
    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path / "out"
    argv = ["dispatch", "--in-dir", str(tiny / "chunked"), "--partitions-dir", str(tiny / "partition_assignment")]
    assert main([*argv, "--out-dir", str(out), "--no-progress"]) == 0
    assert len(ran) == 1 and "_staging" + trash.TRASH_MARK in ran[0]  # removed in the background
    assert sorted(p.name for p in out.iterdir()) == [".dglc-owned.json", "metadata.json", "part0", "part1"]
