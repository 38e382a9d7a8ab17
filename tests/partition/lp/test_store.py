"""lp's scratch store: deleting a run's work files at its end."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.partition.lp import store as S
from dgl_chunked.storage.marker import MARKER_NAME, ForeignDataError
from dgl_chunked.storage.owned import create_owned_dir


def _run_root(tmp_path: Path, num_blocks: int) -> tuple[S.ScratchRoot, str]:
    root = S.ScratchRoot(tmp_path.as_posix())
    work = create_owned_dir(root.join("work"), "lp-work")
    S.create_dirs(root)
    for b in range(num_blocks):
        for name in ("u", "v"):
            S.save(root, S.edges_file(root, b, name), np.arange(5, dtype=np.int64))
        S.save(root, S.node_file(root, b, "tier"), np.zeros(3, np.int8))
        S.save(root, S.node_file(root, b, "part"), np.full(3, b, np.int32))  # the result
    return root, work


def test_remove_work_deletes_every_work_file_and_keeps_the_result(tmp_path: Path) -> None:
    root, work = _run_root(tmp_path, 3)
    S.remove_work(root, work, 3)
    assert not os.path.exists(work)
    assert sorted(os.listdir(root.join("result"))) == ["0.bin", "1.bin", "2.bin"]
    np.testing.assert_array_equal(S.read_result(root, 3, 6, 3), [1, 1, 1])


def test_remove_work_refuses_a_work_directory_that_is_not_ours(tmp_path: Path) -> None:
    """Nothing is deleted from a work directory without the marker, not even the entries
    the run wrote there."""
    root, work = _run_root(tmp_path, 2)
    (Path(work) / "keep.txt").write_text("a user's file")
    os.remove(os.path.join(work, MARKER_NAME))
    with pytest.raises(ForeignDataError):
        S.remove_work(root, work, 2)
    assert (Path(work) / "keep.txt").read_text() == "a user's file"
    assert sorted(os.listdir(root.join("work", "edges"))) == ["0-u.bin", "0-v.bin", "1-u.bin", "1-v.bin"]


def test_remove_files_task_deletes_the_listed_files_only(tmp_path: Path) -> None:
    root, _ = _run_root(tmp_path, 3)
    gone = [S.edges_file(root, 1, "u"), S.node_file(root, 2, "tier"), S.edges_file(root, 7, "u")]  # the last: none
    S.remove_files_task(root, gone)
    assert sorted(os.listdir(root.join("work", "edges"))) == ["0-u.bin", "0-v.bin", "1-v.bin", "2-u.bin", "2-v.bin"]
    assert sorted(os.listdir(root.join("work", "blocks"))) == ["0-tier.bin", "1-tier.bin"]


def test_pooled_bytes_counts_each_threads_pooled_and_kept_arrays() -> None:
    S.release_pools()
    S.pooled_array("entries", 1000, np.int32)  # 1250 kept: a quarter of headroom
    S.kept_array(("assignment", "r1"), lambda: np.zeros(10, np.int64))
    other: list[int] = []
    thread = threading.Thread(target=lambda: other.append(threading.get_ident()) or S.pooled_array("x", 8, np.int64))
    thread.start()
    thread.join()
    assert S.pooled_bytes() == {threading.get_ident(): 4 * 1250 + 8 * 10, other[0]: 8 * 10}
    S.release_pools()
    assert S.pooled_bytes() == {}
