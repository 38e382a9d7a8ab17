"""A real distributed deployment: `dask scheduler` + 2 `dask worker` processes on 127.0.0.1."""

from __future__ import annotations

import pytest

from dgl_chunked.cli import main
from tests.dispatch.helpers import output_files

pytestmark = pytest.mark.distributed


def test_run_on_external_scheduler_matches_local_cluster(tmp_path, scheduler_address):
    chunked = tmp_path / "chunked"
    assert main(["synth", "--out-dir", str(chunked), "--preset", "heterogeneous", "--seed", "2"]) == 0
    common = [
        "run",
        "--in-dir",
        str(chunked),
        "--num-parts",
        "3",
        "--seed",
        "5",
        "--save-orig-nids",
        "--save-orig-eids",
        "--no-progress",
    ]
    assert main([*common, "--out-dir", str(tmp_path / "remote"), "--scheduler", scheduler_address]) == 0
    assert main([*common, "--out-dir", str(tmp_path / "local"), "--workers", "2"]) == 0
    remote, local = output_files(tmp_path / "remote"), output_files(tmp_path / "local")
    assert len(remote) == 1 + 3 * 5
    assert remote == local
    assert main(["verify", "--in-dir", str(chunked), "--out-dir", str(tmp_path / "remote")]) == 0
