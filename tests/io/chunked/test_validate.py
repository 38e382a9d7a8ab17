"""Tests for dgl_chunked.io.chunked.validate and the ``validate`` command: every problem, named."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.errors import ValidationFailed
from dgl_chunked.io.chunked.validate import ValidationReport, validate_chunked_graph
from dgl_chunked.testing import CountingScheduler


@pytest.fixture
def broken(tiny_chunked: Path, tmp_path: Path) -> Path:
    """A writable copy of the golden tiny graph, to break."""
    out = tmp_path / "chunked"
    shutil.copytree(tiny_chunked, out)
    return out


def _edit_meta(d: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((d / "metadata.json").read_text())
    edit(meta)
    (d / "metadata.json").write_text(json.dumps(meta, indent=2))


def _edit_lines(path: Path, edit: Callable[[list[str]], None]) -> None:
    lines = path.read_text().splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n")


def _set_line(index: int, text: str) -> Callable[[list[str]], None]:
    def edit(lines: list[str]) -> None:
        lines[index] = text

    return edit


EI = "edge_index"
CITES1 = f"{EI}/paper:cites:paper1.txt"
WRITES0 = f"{EI}/author:writes:paper0.txt"

# (name, how to break the copy, substrings the output must contain)
BREAKAGES: list[tuple[str, Callable[[Path], None], list[str]]] = [
    (
        "missing file",
        lambda d: (d / CITES1).unlink(),
        ["missing file", "paper:cites:paper1.txt", "does not exist"],
    ),
    (
        "wrong row count",
        lambda d: _edit_lines(d / CITES1, lambda ls: ls.pop()),
        ["paper:cites:paper1.txt", "expected 15 rows", "found 14"],
    ),
    (
        "node ID out of range",
        lambda d: _edit_lines(d / WRITES0, _set_line(2, "3 15")),
        ["author:writes:paper0.txt", "row 3", "dst ID 15 is out of range [0, 15)"],
    ),
    (
        "negative ID",
        lambda d: _edit_lines(d / WRITES0, _set_line(4, "-1 2")),
        ["author:writes:paper0.txt", "row 5", "src ID -1 is negative"],
    ),
    (
        "non-integer ID",
        lambda d: _edit_lines(d / WRITES0, _set_line(1, "3 x")),
        ["author:writes:paper0.txt", "row 2", "expected an integer node ID, found 'x'"],
    ),
    (
        "wrong number of columns",
        lambda d: _edit_lines(d / WRITES0, _set_line(6, "1 2 3")),
        ["author:writes:paper0.txt", "row 7", "expected 2 columns"],
    ),
    (
        "header row",
        lambda d: _edit_lines(d / WRITES0, lambda ls: ls.insert(0, "src dst")),
        ["author:writes:paper0.txt", "row 1", "header"],
    ),
    (
        "empty file",
        lambda d: (d / CITES1).write_bytes(b""),
        ["paper:cites:paper1.txt", "is empty", "declares 15 rows"],
    ),
    (
        "bad JSON",
        lambda d: (d / "metadata.json").write_text('{"graph_name": "tiny",'),
        ["metadata.json", "expected valid JSON"],
    ),
    (
        "missing key",
        lambda d: _edit_meta(d, lambda m: m.pop("node_type")),
        ["node_type: expected a list of names, found nothing (key missing)"],
    ),
    (
        "non-canonical edge type",
        lambda d: _edit_meta(d, lambda m: m["edge_type"].__setitem__(1, "writes")),
        ["edge_type[1]", "canonical 'src:rel:dst'", "'writes'"],
    ),
    (
        "edge type end not a node type",
        lambda d: _edit_meta(d, lambda m: m["edge_type"].__setitem__(2, "paper:cites:venue")),
        ["edge_type[2]", "'venue'"],
    ),
    (
        "chunk-count mismatch",
        lambda d: _edit_meta(d, lambda m: m["num_edges_per_chunk"].__setitem__(0, [10])),
        ["num_edges_per_chunk[0]", "2 counts, one per file"],
    ),
    (
        "per_chunk sum != per_type",
        lambda d: _edit_meta(d, lambda m: m["num_edges_per_type"].__setitem__(0, 11)),
        ["num_edges_per_chunk[0]", "summing to num_edges_per_type[0] = 11"],
    ),
    (
        "dtype mismatch across chunks",
        lambda d: np.save(d / "edge_data/paper:cites:paper/w-1.npy", np.zeros(15, np.float32)),
        ["w-1.npy", "has dtype float32", "w-0.npy", "float64"],
    ),
    (
        "3-D feature",
        lambda d: np.save(d / "node_data/paper/feat-0.npy", np.zeros((8, 2, 2), np.float32)),
        ["feat-0.npy", "expected a 1-D or 2-D array", "(8, 2, 2)"],
    ),
    (
        "unsupported dtype",
        lambda d: np.save(d / "node_data/paper/label-0.npy", np.zeros(8, np.uint32)),
        ["label-0.npy", "found uint32"],
    ),
    (
        "truncated .npy",
        lambda d: (d / "node_data/paper/feat-1.npy").write_bytes((d / "node_data/paper/feat-1.npy").read_bytes()[:-5]),
        ["feat-1.npy", "truncated"],
    ),
    (
        "'/' in a feature name",
        lambda d: _edit_meta(
            d,
            lambda m: m["node_data"]["paper"].__setitem__("a/b", m["node_data"]["paper"]["feat"]),
        ),
        ['node_data["paper"]["a/b"]', "without '/'"],
    ),
    (
        "':' in a node type",
        lambda d: _edit_meta(d, lambda m: m["node_type"].__setitem__(1, "insti:tution")),
        ["node_type[1]", "without ':'"],
    ),
    (
        "'/' in an edge type",
        lambda d: _edit_meta(d, lambda m: m["edge_type"].__setitem__(0, "author:affil/iated:institution")),
        ["edge_type[0]", "without '/'"],
    ),
    (
        "unknown format name",
        lambda d: _edit_meta(
            d,
            lambda m: m["edges"]["paper:cites:paper"]["format"].__setitem__("name", "hdf5"),
        ),
        ['edges["paper:cites:paper"].format.name', "'hdf5'"],
    ),
    (
        "duplicate type names",
        lambda d: _edit_meta(d, lambda m: m["node_type"].__setitem__(1, "author")),
        ["node_type: expected unique names, found 'author'"],
    ),
    (
        "edge_data key not an edge type",
        lambda d: _edit_meta(d, lambda m: m["edge_data"].__setitem__("writes", {})),
        ['edge_data["writes"]', "canonical"],
    ),
    (
        "node_data key not a node type",
        lambda d: _edit_meta(d, lambda m: m["node_data"].__setitem__("venue", {})),
        ['node_data["venue"]'],
    ),
    (
        "feature rows differ from the type count",
        lambda d: _edit_meta(d, lambda m: m["node_data"]["paper"]["label"]["data"].pop()),
        ['node_data["paper"]["label"]', "expected 15 rows in total", "found 8"],
    ),
    (
        "edge feature rows differ from the edge count",
        lambda d: np.save(d / "edge_data/author:writes:paper/year-1.npy", np.zeros(11, np.int64)),
        ['edge_data["author:writes:paper"]["year"]', "expected 25 rows", "found 24"],
    ),
]


def test_golden_passes_and_prints_summary(tiny_chunked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--in-dir", str(tiny_chunked)]) == 0
    out = capsys.readouterr().out
    assert "ok:" in out
    assert "paper:cites:paper" in out and "feat (15, 4) float32" in out and "mask (12,) bool" in out
    report = validate_chunked_graph(tiny_chunked)
    assert report.ok and report.problems == [] and report.warnings == []
    rows = {(s.kind, s.name): s for s in report.summary}
    assert rows[("node", "paper")].rows == 15 and rows[("edge", "author:writes:paper")].rows == 25
    assert rows[("edge", "paper:cites:paper")].files == 2
    assert rows[("edge", "paper:cites:paper")].nbytes > 0
    report.raise_if_failed()


@pytest.mark.parametrize(("name", "breakage", "expected"), BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_copy_fails_with_named_problem(
    broken: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    breakage: Callable[[Path], None],
    expected: list[str],
) -> None:
    breakage(broken)
    assert main(["validate", "--in-dir", str(broken)]) == 1
    captured = capsys.readouterr()
    output = captured.out + captured.err
    for text in expected:
        assert text in output, f"{name}: {text!r} not in:\n{output}"


def test_every_problem_is_collected(broken: Path) -> None:
    (broken / CITES1).unlink()
    _edit_lines(broken / WRITES0, _set_line(2, "3 15"))
    _edit_lines(broken / WRITES0, _set_line(4, "-1 2"))
    np.save(broken / "node_data/paper/feat-0.npy", np.zeros((8, 2, 2), np.float32))
    np.save(broken / "edge_data/paper:cites:paper/w-1.npy", np.zeros(15, np.float32))
    report = validate_chunked_graph(broken)
    assert not report.ok
    text = "\n".join(report.problems)
    for needle in [
        "paper:cites:paper1.txt",
        "out of range",
        "negative",
        "feat-0.npy",
        "w-1.npy",
    ]:
        assert needle in text
    assert len(report.problems) >= 5
    with pytest.raises(ValidationFailed) as info:
        report.raise_if_failed()
    assert info.value.problems == report.problems


def test_metadata_problems_are_all_reported(broken: Path) -> None:
    def edit(m: dict[str, Any]) -> None:
        m["num_nodes_per_chunk"][1] = [3, 3]
        m["node_data"]["venue"] = {}
        del m["graph_name"]

    _edit_meta(broken, edit)
    report = validate_chunked_graph(broken)
    assert len(report.problems) == 3 and report.summary == []
    where = f"{broken / 'metadata.json'}: "  # every problem names the file, then the key
    assert all(p.startswith(where) for p in report.problems)
    assert [p.removeprefix(where).split(":")[0] for p in report.problems] == [
        "graph_name",
        "num_nodes_per_chunk[1]",
        'node_data["venue"]',
    ]


def test_checks_run_in_one_compute_on_the_current_scheduler(tiny_chunked: Path) -> None:
    counter = CountingScheduler(max_computes=1)
    with dask.config.set(scheduler=counter):
        assert validate_chunked_graph(tiny_chunked).ok
    assert counter.total_computes == 1


def test_undeclared_empty_csv_is_a_warning(tmp_path: Path) -> None:
    from dgl_chunked.testing import GraphTruth, write_graph_from_truth

    truth = GraphTruth(
        graph_name="t",
        num_nodes={"a": 3},
        edges={"a:x:a": (np.array([0, 1]), np.array([1, 2]))},
        node_data={},
        edge_data={},
    )
    write_graph_from_truth(tmp_path, truth, edge_chunks={"a:x:a": [2, 0]}, per_chunk_counts=False)
    report = validate_chunked_graph(tmp_path)
    assert report.ok
    assert len(report.warnings) == 1 and "is empty" in report.warnings[0]
    write_graph_from_truth(tmp_path, truth, edge_chunks={"a:x:a": [2, 0]}, per_chunk_counts=True)
    assert validate_chunked_graph(tmp_path).warnings == []  # declared as 0 rows: fine


def test_summary_table_lists_types_and_features() -> None:
    from dgl_chunked.io.chunked.validate import FeatureSummary, TypeSummary

    report = ValidationReport(
        summary=[
            TypeSummary(kind="node", name="n", rows=3, files=0, nbytes=10, features=(
                FeatureSummary(name="f", files=1, rows=3, row_shape=(2,), dtype="float32", nbytes=10),
            )),
        ]
    )  # fmt: skip
    table = report.summary_table()
    assert "f (3, 2) float32" in table and table.splitlines()[2].startswith("node  n")


def test_validate_on_a_local_cluster(client: Any, broken: Path) -> None:
    assert validate_chunked_graph(broken).ok
    (broken / CITES1).unlink()
    report = validate_chunked_graph(broken)
    assert any("paper:cites:paper1.txt" in p for p in report.problems)
