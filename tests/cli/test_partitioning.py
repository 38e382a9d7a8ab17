"""``dgl-chunked partition`` and ``dgl-chunked report``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from dgl_chunked.cli import cli


def test_partition_writes_assignment_and_report(tiny_chunked: Path, tmp_path: Path) -> None:
    out = tmp_path / "assign"
    args = ["partition", "--in-dir", str(tiny_chunked), "--out-dir", str(out), "--num-parts", "3", "--seed", "4"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "edge cut:" in result.output and "max/mean" in result.output
    assert json.loads((out / "partition_meta.json").read_text()) == {
        "algo_name": "random",
        "num_parts": 3,
        "version": "1.0.0",
    }
    assert json.loads((out / "dglc_partition.json").read_text())["seed"] == 4
    report = json.loads((out / "report.json").read_text())
    assert report["num_parts"] == 3 and report["num_nodes"] == 32 and report["num_edges"] == 65
    assert len(np.loadtxt(out / "paper.txt")) == 15

    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and "--overwrite" in again.output
    assert CliRunner().invoke(cli, [*args, "--overwrite"]).exit_code == 0


def test_partition_metis_with_masks(tiny_chunked: Path, tmp_path: Path) -> None:
    out = tmp_path / "assign"
    result = CliRunner().invoke(
        cli,
        [
            "partition",
            "--in-dir",
            str(tiny_chunked),
            "--out-dir",
            str(out),
            "--num-parts",
            "2",
            "--method",
            "metis",
            "--balance-ntypes",
            "mask",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "partition_meta.json").read_text())["algo_name"] == "metis"
    assert json.loads((out / "report.json").read_text())["masks"]["author"]["mask"] == [1, 1]


def test_partition_user_errors(tiny_chunked: Path, tmp_path: Path) -> None:
    base = ["partition", "--in-dir", str(tiny_chunked), "--out-dir", str(tmp_path / "a"), "--num-parts", "2"]
    result = CliRunner().invoke(cli, [*base, "--balance-ntypes", "nope"])
    assert result.exit_code == 1 and "balance_ntypes" in result.output
    result = CliRunner().invoke(cli, [*base, "--method", "metis", "--max-memory", "1KiB"])
    assert result.exit_code == 1 and "method 'random'" in result.output


def test_report_on_dgl_directory(tiny_chunked: Path, golden_dir: Path, tmp_path: Path) -> None:
    assign = golden_dir / "tiny-pipeline" / "partition_assignment"
    result = CliRunner().invoke(
        cli,
        ["report", "--in-dir", str(tiny_chunked), "--partitions-dir", str(assign), "--json", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 0, result.output
    assert "2 partitions, 32 nodes, 65 edges" in result.output
    assert json.loads((tmp_path / "r.json").read_text())["nodes"]["author"] == [6, 6]


def test_dispatch_lookup_cache_flag(tiny_chunked: Path, tmp_path: Path) -> None:
    """``--lookup-cache`` takes sizes (0 turns the cache off) and names itself when wrong."""
    assign = tmp_path / "assign"
    ok = CliRunner().invoke(
        cli, ["partition", "--in-dir", str(tiny_chunked), "--out-dir", str(assign), "--num-parts", "2"]
    )
    assert ok.exit_code == 0, ok.output
    base = ["dispatch", "--in-dir", str(tiny_chunked), "--partitions-dir", str(assign), "--no-progress"]
    bad = CliRunner().invoke(cli, [*base, "--out-dir", str(tmp_path / "bad"), "--lookup-cache", "lots"])
    assert bad.exit_code == 2 and "--lookup-cache" in bad.output and "'lots'" in bad.output
    outs = []
    for size in ("0", "1KiB"):
        out = tmp_path / f"out-{size}"
        result = CliRunner().invoke(cli, [*base, "--out-dir", str(out), "--lookup-cache", size])
        assert result.exit_code == 0, result.output
        outs.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*.dgl")})
    assert outs[0] == outs[1] and len(outs[0]) == 6
