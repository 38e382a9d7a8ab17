"""``dgl-chunked inspect``: summaries of DGL files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.io.dgl.binary import HomogeneousGraph, describe_dgl_file, write_graph


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_tensor_dict(capsys: pytest.CaptureFixture[str], golden_dir: Path) -> None:
    path = golden_dir / "serialization" / "t_two.dgl"
    code, out, _ = run(capsys, str(path), "--values", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == str(path)
    assert lines[1] == "kind: tensor dict (dgl.data.utils.load_tensors), 2 entries, 187 bytes"
    assert lines[2:] == [
        "  bb  float32   (2, 2)",
        "    values: [1., 1.] ... (4 values)",
        "  a   int64     (3,)",
        "    values: [0, 1] ... (3 values)",
    ]


def test_inspect_graph(capsys: pytest.CaptureFixture[str], golden_dir: Path) -> None:
    code, out, _ = run(capsys, str(golden_dir / "serialization" / "g_feat.dgl"), "--values", "4")
    assert code == 0
    for expected in (
        "kind: graph file (dgl.load_graphs), format version 2, 1 graph(s), 5149 bytes",
        "  lab  int64     (1,)",
        "  idtype: int64",
        "    _N: 4",
        "    (_N, _E, _N): 4 edges; stored: coo; allowed: coo, csr, csc",
        "      src: [0, 0, 1, 2]",
        "      dst: [1, 2, 2, 0]",
        "    x  int64     (4,)",
        "    w  float32   (4,)",
    ):
        assert expected in out.splitlines(), expected


def test_inspect_hetero_and_int32(capsys: pytest.CaptureFixture[str], golden_dir: Path) -> None:
    _, out, _ = run(capsys, str(golden_dir / "serialization" / "hg.dgl"))
    assert "    (user, plays, game): 2 edges; stored: coo; allowed: coo, csr, csc" in out
    assert "  ndata[user]:" in out and "  edata[user:plays:game]:" in out and "values" not in out
    _, out, _ = run(capsys, str(golden_dir / "serialization" / "g_int32.dgl"))
    assert "  idtype: int32" in out.splitlines()


def test_inspect_annotate(capsys: pytest.CaptureFixture[str], golden_dir: Path) -> None:
    code, out, _ = run(capsys, str(golden_dir / "serialization" / "g_default.dgl"), "--annotate")
    assert code == 0
    assert out == (golden_dir / "serialization" / "annot_g_default.txt").read_text()


def test_inspect_our_graph(tmp_path: Path) -> None:
    path = tmp_path / "graph.dgl"
    graph = HomogeneousGraph(
        num_nodes=3, src=np.array([0, 1]), dst=np.array([1, 2]), ndata={"_ID": np.arange(3)}, idtype=np.dtype(np.int32)
    )
    write_graph(path, graph, formats=("coo", "csc"))
    text = describe_dgl_file(path)
    assert "    (_N, _E, _N): 2 edges; stored: coo, csc; allowed: coo, csr, csc" in text
    assert "    _ID  int64     (3,)" in text and "  idtype: int32" in text


def test_inspect_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.dgl"
    bad.write_bytes(b"not a dgl file at all")
    code, _, err = run(capsys, str(bad))
    assert code == 1 and err.startswith(f"error: {bad}: corrupt or unsupported DGL file at byte offset 0")
    code, _, err = run(capsys, str(tmp_path / "missing.dgl"))
    assert code == 1 and err.startswith(f"error: {tmp_path / 'missing.dgl'}: No such file or directory")
    code, _, err = run(capsys, str(bad), "--values", "-1")
    assert code == 2
