"""Every method without its package: one clear refusal naming what to install, never a
silently worse partitioner (issue #38). The packages are hidden through ``sys.modules``
(``None`` there makes ``import`` raise ImportError), as on an install without them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dgl_chunked.cli import cli
from dgl_chunked.errors import MissingPackageError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions

# method -> (the package it needs, what the refusal tells to install)
NEEDS = {
    "metis": ("pymetis", "pip install dgl_chunked[metis]"),
    "kaminpar": ("kaminpar", "pip install dgl_chunked[kaminpar]"),
    "lp": ("pymetis", "pip install pymetis"),
}


@pytest.mark.parametrize("method", sorted(NEEDS))
def test_method_refuses_without_its_package(tiny_chunked: Path, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module, fix = NEEDS[method]
    monkeypatch.setitem(sys.modules, module, None)
    graph = open_chunked_graph(tiny_chunked)
    with pytest.raises(
        MissingPackageError, match=f"^method '{method}' needs {module}, which is not installed: {re.escape(fix)}"
    ) as err:
        assign_partitions(graph, 2, method=method)  # refused before anything is computed
    assert isinstance(err.value, ImportError)


@pytest.mark.parametrize("method", sorted(NEEDS))
def test_cli_refuses_in_one_line(
    tiny_chunked: Path, tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, fix = NEEDS[method]
    monkeypatch.setitem(sys.modules, module, None)
    out = tmp_path / "out"
    args = ["partition", "--in-dir", str(tiny_chunked), "--out-dir", str(out), "--num-parts", "2", "--method", method]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: method '{method}' needs {module}, which is not installed: ")
    assert fix in lines[0]
    assert not out.exists() or not list(out.glob("*.txt"))  # nothing written that looks like an assignment


def test_random_needs_no_optional_package(tiny_chunked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = open_chunked_graph(tiny_chunked)
    expected = {t: a.compute() for t, a in assign_partitions(graph, 2, method="random", seed=3).items()}
    for module in ("pymetis", "kaminpar"):
        monkeypatch.setitem(sys.modules, module, None)
    got = {t: a.compute() for t, a in assign_partitions(graph, 2, method="random", seed=3).items()}
    assert got.keys() == expected.keys() == set(graph.node_types)
    for t in got:
        assert got[t].size == graph.metadata.num_nodes(t)
        assert got[t].tobytes() == expected[t].tobytes()


def test_s3_url_without_s3fs_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)
    # fsspec keeps the class of a protocol it has imported (an earlier S3 test's): forget it
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)
    args = ["partition", "--in-dir", "s3://bucket/graph", "--out-dir", str(tmp_path / "out"), "--num-parts", "2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        "error: s3://bucket/graph: Install s3fs to access S3: pip install dgl_chunked[s3]"
    ]
