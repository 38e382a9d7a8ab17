"""remap refuses results that do not fit with one ``error:`` line naming the file; outputs never look finished."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.io.dgl import write_tensor_dict
from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors
from dgl_chunked.remap import RemapError, ResultSource, remap_results

from .conftest import Parts


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *expected: str) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("error: "), (rc, err)
    assert "Traceback" not in err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _remap(parts: Path, out: Path, *args: str) -> list[str]:
    return ["remap", "--partitions", str(parts), "--out-dir", str(out), *args]


@pytest.fixture
def paper(hetero: Parts, tmp_path: Path) -> np.ndarray:
    new = hetero.new_order("node", "paper", "year")
    np.save(tmp_path / "year.npy", new)
    return new


def test_wrong_row_count(hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "short.npy", paper[:-1])
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'short.npy'}"),
        str(tmp_path / "short.npy"),
        f"{len(paper) - 1} rows",
        f"{len(paper)} new IDs",
    )
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_row_ranges_that_do_not_tile(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "a.npy", paper[:100])
    np.save(tmp_path / "b.npy", paper[150:])
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={a}@0,{b}@150"),
        str(b),
        "leaving new IDs [100, 150)",
        "without a row",
    )
    _refused(capsys, _remap(hetero.out, tmp_path / "o", "--result", f"paper={a}@0,{b}@90"), str(b), "overlap")
    _refused(capsys, _remap(hetero.out, tmp_path / "o", "--result", f"paper={a},{b}"), str(b), "must tile")


def test_pair_ids_out_of_range_and_repeated(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    n = len(paper)
    write_torch_tensors(tmp_path / "r0.pt", {"ids": np.array([0, 1, n]), "y": paper[[0, 1, 1]]})
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'r0.pt'}", "--ids", "paper=#ids"),
        f"{tmp_path / 'r0.pt'}['ids']: row 2",
        f"new ID {n} is outside [0, {n})",
    )
    write_torch_tensors(tmp_path / "p-0.pt", {"ids": np.array([5, 3]), "y": paper[[5, 3]]})
    write_torch_tensors(tmp_path / "p-1.pt", {"ids": np.array([7, 5]), "y": paper[[7, 5]]})
    line = _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'p-*.pt'}", "--ids", "paper=#ids"),
        "repeats the new ID",
        "p-1.pt['ids'] row 1",
        "p-0.pt['ids'] row 0",
    )
    assert "node type 'paper'" in line
    assert not (tmp_path / "o" / "remap.json").exists() and not (tmp_path / "o" / "nodes").exists()
    assert not (tmp_path / "o" / "_tmp").exists()
    write_torch_tensors(tmp_path / "p-1.pt", {"ids": np.array([7, 6]), "y": paper[[7, 6]]})  # fixed: rerun works
    assert (
        main(_remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'p-*.pt'}", "--ids", "paper=#ids")) == 0
    )
    assert json.loads((tmp_path / "o" / "remap.json").read_text())["types"]["node/paper"]["present"] == 4


def test_ids_and_rows_of_different_lengths(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "ids.npy", np.arange(5))
    np.save(tmp_path / "rows.npy", paper[:6])
    _refused(
        capsys,
        _remap(
            hetero.out,
            tmp_path / "o",
            "--result",
            f"paper={tmp_path / 'rows.npy'}",
            "--ids",
            f"paper={tmp_path / 'ids.npy'}",
        ),
        "ids.npy: holds 5 IDs",
        "rows.npy holds 6 rows",
    )


def test_a_type_the_graph_does_not_have(hetero: Parts, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"venue={tmp_path / 'year.npy'}"),
        "no node or edge type 'venue'",
        "'paper'",
        "author:writes:paper",
    )


def test_missing_mapping_names_the_flag(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = hetero.without_orig_ids(tmp_path / "bare")
    _refused(
        capsys,
        _remap(bare, tmp_path / "o", "--result", f"paper={tmp_path / 'year.npy'}"),
        "orig_nids.dgl: not found",
        "--save-orig-nids",
        "--partitions-dir",
    )
    eids = json.loads((bare / "metadata.json").read_text())["edge_map"]["paper:cites:paper"]
    np.save(tmp_path / "w.npy", np.zeros(sum(e - s for s, e in eids), np.float32))
    _refused(
        capsys,
        _remap(bare, tmp_path / "o", "--result", f"cites={tmp_path / 'w.npy'}", "--partitions-dir", str(hetero.assign)),
        "orig_eids.dgl: not found",
        "--save-orig-eids",
        "also pass the chunked graph",
    )


def test_an_assignment_of_other_partitions(hetero: Parts, tmp_path: Path, paper: np.ndarray) -> None:
    import dgl_chunked as dglc

    other = tmp_path / "other"
    graph = dglc.open_chunked_graph(hetero.chunked)
    dglc.write_assignment(other, dglc.assign_partitions(graph, 3, seed=99), num_parts=3, algo_name="random")
    bare = hetero.without_orig_ids(tmp_path / "bare")
    with pytest.raises(RemapError, match="does not belong to these partitions|appear"):
        remap_results(bare, {"paper": str(tmp_path / "year.npy")}, tmp_path / "o", graph=graph, assignment=other)


def test_files_that_are_not_results(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tensor_dict(tmp_path / "two.dgl", {"a": paper, "b": paper})
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'two.dgl'}"),
        "two.dgl: holds 2 entries",
        "#KEY",
    )
    (tmp_path / "x.csv").write_text("1\n")
    _refused(
        capsys, _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'x.csv'}"), "x.csv", "extension"
    )
    _refused(
        capsys, _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'none-*.npy'}"), "matches no file"
    )
    np.save(tmp_path / "text.npy", np.array(["a"] * len(paper)))
    _refused(
        capsys,
        _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'text.npy'}"),
        "text.npy",
        "expected numbers",
    )


def test_outputs_are_ours_and_finished_ones_kept(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    _refused(capsys, _remap(hetero.out, foreign, "--result", f"paper={tmp_path / 'year.npy'}"), "notes.txt")
    assert (foreign / "notes.txt").read_text() == "mine"
    args = _remap(hetero.out, tmp_path / "o", "--result", f"paper={tmp_path / 'year.npy'}")
    assert main(args) == 0
    _refused(capsys, args, "earlier remap output", "--overwrite")
    _refused(capsys, [*args, "--overwrite", "--format", "parquet"], "format parquet", "--in-dir")
    assert main([*args, "--overwrite", "--format", "parquet", "--in-dir", str(hetero.chunked)]) == 0
    assert not (tmp_path / "o" / "nodes" / "paper.npy").exists() and (tmp_path / "o" / "nodes" / "paper").is_dir()
    _refused(
        capsys, _remap(hetero.out, hetero.out / "part0", "--result", f"paper={tmp_path / 'year.npy'}"), "partitions"
    )


def test_result_source_validation() -> None:
    with pytest.raises(RemapError, match="2 file"):
        ResultSource.ranges(["a.npy", "b.npy"], starts=[0])


def test_paths_with_commas_and_hashes_and_missing_files(
    hetero: Parts, tmp_path: Path, paper: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    from dgl_chunked.cli.remapping import parse_files
    from dgl_chunked.remap import ResultFile

    assert parse_files(r"a\,b.npy,c\#1.pt#k\@x@5,d\\e.npy") == [
        ResultFile("a,b.npy"),
        ResultFile("c#1.pt", "k@x", 5),
        ResultFile("d\\e.npy"),
    ]
    odd = tmp_path / "run#3,a@1"
    odd.mkdir()
    half = paper.shape[0] // 2
    np.save(odd / "r,0.npy", paper[:half])
    np.save(odd / "r#1.npy", paper[half:])
    escaped = str(odd).replace("#", r"\#").replace(",", r"\,").replace("@", r"\@")
    args = _remap(hetero.out, tmp_path / "o", "--result", f"paper={escaped}/r\\,0.npy,{escaped}/r\\#1.npy")
    assert main(args) == 0, capsys.readouterr().err
    np.testing.assert_array_equal(np.load(tmp_path / "o/nodes/paper.npy"), hetero.original("node", "paper", "year"))
    line = _refused(
        capsys, _remap(hetero.out, tmp_path / "m", "--result", f"paper={tmp_path / 'nope.npy'}"), "nope.npy"
    )
    assert "does not exist" in line and "spec" not in line
