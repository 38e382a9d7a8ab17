"""GSProcessing's output opened as it is written (``tests.gsprocessing``): what DGL's dispatch
ignores is ignored (with one note), ``row_counts`` stand in for the footers, Spark's side
files are skipped, and every array reads as the truth, with DGL's shapes and dtypes.

The comparison with DGL's own pipeline is ``tests/realdgl/test_realdgl_gsprocessing.py``.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dgl_chunked.cli import cli
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, MetadataError
from dgl_chunked.io.chunked import entry_keys
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.chunked.metadata import parse_metadata, read_metadata
from dgl_chunked.io.chunked.validate import validate_chunked_graph
from tests.gsprocessing import GSProcessingGraph, write_assignment_txt, write_gsprocessing_graph
from tests.realdgl.harness import assert_same_array

UPDATED = "updated_row_counts_metadata.json"


@pytest.fixture(scope="module")
def gsp(tmp_path_factory: pytest.TempPathFactory) -> GSProcessingGraph:
    return write_gsprocessing_graph(tmp_path_factory.mktemp("gsp") / "input")


@pytest.fixture
def copy(gsp: GSProcessingGraph, tmp_path: Path) -> Path:
    """A copy of the graph to damage."""
    return Path(shutil.copytree(gsp.root, tmp_path / "input"))


def _doc(root: Path, name: str = UPDATED) -> dict[str, Any]:
    return json.loads((root / name).read_text())


@pytest.mark.parametrize("name", ["metadata.json", UPDATED])
def test_every_array_reads_as_the_truth_with_dgls_shapes(gsp: GSProcessingGraph, name: str) -> None:
    g = open_chunked_graph(gsp.root, metadata_filename=name)
    assert g.node_types == ("genre", "movie", "user")
    assert g.edge_types == (
        "user:rates:movie",
        "movie:rates-rev:user",
        "movie:included_in:genre",
        "genre:included_in-rev:movie",
    )
    for etype, (src, dst) in gsp.edges.items():
        edges = g.edges(etype).compute()
        np.testing.assert_array_equal(edges["src"].to_numpy(), src)
        np.testing.assert_array_equal(edges["dst"].to_numpy(), dst)
    for ntype, feats in gsp.node_features.items():
        assert set(g.metadata.node_data[ntype]) == set(feats)
        for feat, truth in feats.items():
            assert_same_array(np.asarray(g.node_feature(ntype, feat).compute()), truth, f"{ntype}/{feat}")
    for etype, feats in gsp.edge_features.items():
        for feat, truth in feats.items():
            assert_same_array(np.asarray(g.edge_feature(etype, feat).compute()), truth, f"{etype}/{feat}")
    assert gsp.node_features["user"]["age"].shape == (31, 1)  # scalar column, no shape metadata: (N, 1)
    assert gsp.node_features["user"]["train_mask"].shape == (31,)  # shape metadata (rows,)
    assert np.isnan(gsp.node_features["user"]["occupation"]).any()  # NaN labels kept


def test_row_counts_stand_in_for_the_footers(copy: Path) -> None:
    """Edge files are never opened to count them, and a float or list feature opens
    with its first non-empty file's footer alone."""
    doc = _doc(copy)
    kept = {doc["node_data"]["user"]["age"]["data"][0], doc["node_data"]["movie"]["title"]["data"][0]}
    removed = [p for e in doc["edges"].values() for p in e["data"]]
    removed += [p for f in ("age", "occupation") for p in doc["node_data"]["user"][f]["data"]]
    removed += doc["node_data"]["movie"]["title"]["data"]
    for path in set(removed) - kept:
        (copy / path).unlink()
    g = open_chunked_graph(copy, metadata_filename=UPDATED)
    assert [r.rows for r in g.edge_chunks("user:rates:movie")] == [31, 4, 35]
    assert g.num_edges("genre:included_in-rev:movie") == 30
    assert g.feature_info("node", "user", "age") == (np.dtype(np.float64), (1,))
    assert g.feature_info("node", "movie", "title") == (np.dtype(np.float32), (4,))
    # an integer column may hold nulls in any file (float64 then): every footer is read
    (copy / doc["node_data"]["user"]["train_mask"]["data"][2]).unlink()
    with pytest.raises(ChunkReadError, match="user-train_mask.*does not exist"):
        open_chunked_graph(copy, metadata_filename=UPDATED).feature_info("node", "user", "train_mask")


def test_row_counts_that_disagree_with_a_file_name_it(copy: Path) -> None:
    doc = _doc(copy)
    age = doc["node_data"]["user"]["age"]
    age["row_counts"] = [11, 1, 11, 8]  # the first file holds 12 rows, the second none
    rate = doc["edges"]["user:rates:movie"]
    rate["row_counts"] = [30, 5, 35]
    doc["num_edges_per_type"][0] = 70
    (copy / UPDATED).write_text(json.dumps(doc))
    g = open_chunked_graph(copy, metadata_filename=UPDATED)
    either = "|".join(age["data"][:2])  # tasks run in parallel: either misfit file may be read first
    with pytest.raises(ChunkMismatchError, match=rf"feature file '.*({either})': expected 1?1 rows .*row_counts"):
        g.node_feature("user", "age").compute()
    either = "|".join(rate["data"][:2])
    with pytest.raises(ChunkMismatchError, match=rf"edge file '.*({either})': expected (30|5) rows .*row_counts"):
        g.edges("user:rates:movie").compute()
    report = validate_chunked_graph(copy, metadata_filename=UPDATED)
    for path, want, found in ((age["data"][0], 11, 12), (age["data"][1], 1, 0)):
        assert any(p.endswith(f"{path}': expected {want} rows (row_counts), found {found}") for p in report.problems)
    for path, want, found in ((rate["data"][0], 30, 31), (rate["data"][1], 5, 4)):
        text = f"{path}': expected {want} rows (num_edges_per_chunk or row_counts), found {found}"
        assert any(text in p for p in report.problems), report.problems


def test_bad_row_counts_are_metadata_errors(copy: Path) -> None:
    doc = _doc(copy)
    doc["edges"]["user:rates:movie"]["row_counts"] = [31, 39]
    doc["num_edges_per_chunk"] = [[31, 4, 35], [31, 4, 35], [17, 0, 13], [17, 0, 14]]
    (copy / UPDATED).write_text(json.dumps(doc))
    with pytest.raises(MetadataError) as err:
        read_metadata(copy, metadata_filename=UPDATED)
    problems = err.value.problems  # type: ignore[attr-defined]
    assert any(
        'edges["user:rates:movie"].row_counts: expected a list of 3 non-negative integers' in p for p in problems
    )
    assert any("num_edges_per_chunk[3]: expected the row_counts of" in p for p in problems), problems


def test_ignored_options_noted_once_and_options_that_change_meaning_refused(
    gsp: GSProcessingGraph, caplog: pytest.LogCaptureFixture
) -> None:
    entry_keys._NOTED.clear()
    with caplog.at_level(logging.WARNING, logger="dgl_chunked"):
        for _ in range(3):
            meta = read_metadata(gsp.root, metadata_filename=UPDATED)
    notes = [r.getMessage() for r in caplog.records if "note:" in r.getMessage()]
    assert len(notes) == 1 and "ignored the format option(s) ['delimiter'] of 12 file entries" in notes[0]
    assert len(meta.ignored_options) == 12
    assert all(dict(s.options) == {} for s in meta.edges.values())
    doc = _doc(gsp.root)
    for fmt, match in (
        ({"name": "parquet", "columns": "src"}, "expected list"),
        ({"name": "csv", "quote": "'"}, "'quote'"),
    ):
        bad = json.loads(json.dumps(doc))
        bad["edges"]["user:rates:movie"]["format"] = fmt
        with pytest.raises(MetadataError, match=match):  # the parser's error, listing every problem
            parse_metadata(bad, base_dir=str(gsp.root))


def test_directory_entries_skip_sparks_side_files(copy: Path, gsp: GSProcessingGraph) -> None:
    """``data`` naming the ``parquet/`` folders: _SUCCESS, _committed_*, _started_*, .crc skipped."""
    doc = _doc(copy, "metadata.json")
    entries = [*doc["edges"].values(), *(f for feats in doc["node_data"].values() for f in feats.values())]
    for entry in entries:
        folder = str(Path(entry["data"][0]).parent) + "/"
        assert {p.name for p in (copy / folder).iterdir()} >= {Path(p).name for p in entry["data"]}
        (copy / folder / "part-99999.snappy.parquet.crc").write_bytes(b"not parquet")
        entry["data"] = folder
    (copy / "metadata.json").write_text(json.dumps(doc))
    g = open_chunked_graph(copy)
    assert all("_SUCCESS" not in p and not p.endswith(".crc") for s in g.metadata.edges.values() for p in s.paths)
    for etype, (src, _) in gsp.edges.items():
        np.testing.assert_array_equal(g.edges(etype).compute()["src"].to_numpy(), src)
    for feat, truth in gsp.node_features["user"].items():
        assert_same_array(np.asarray(g.node_feature("user", feat).compute()), truth, feat)


def test_lookup_and_remap_open_the_graph_with_metadata_filename(copy: Path, tmp_path: Path) -> None:
    """The only metadata file is GraphStorm's: every command that opens the graph takes the flag."""
    (copy / "metadata.json").unlink()
    graph = open_chunked_graph(copy, metadata_filename=UPDATED)
    assign, out = tmp_path / "assign", tmp_path / "out"
    write_assignment_txt(
        GSProcessingGraph(
            root=copy,
            graph_name="movielens",
            node_ids={t: np.zeros(graph.num_nodes(t)) for t in graph.node_types},
            edges={},
        ),
        assign,
    )
    flag = ["--metadata-filename", UPDATED]
    runner = CliRunner()
    result = runner.invoke(
        cli, ["dispatch", "--in-dir", str(copy), "--partitions-dir", str(assign), "--out-dir", str(out), *flag]
    )
    assert result.exit_code == 0, result.output
    (tmp_path / "q.csv").write_text("id\n3\n0\n30\n")
    lookup = ["lookup", "--partitions", str(out), "--queries", str(tmp_path / "q.csv"), "--type", "user", "--by", "id"]
    lookup += ["--in-dir", str(copy), "--partitions-dir", str(assign)]
    missing = runner.invoke(cli, [*lookup, "--out-dir", str(tmp_path / "s0")])
    assert missing.exit_code == 1 and "metadata.json: expected a metadata file" in missing.output
    found = runner.invoke(cli, [*lookup, "--out-dir", str(tmp_path / "s1"), *flag])
    assert found.exit_code == 0, found.output
    assert sum(int(line.split()[1]) for line in found.output.splitlines() if line.startswith("part")) == 3
    np.save(tmp_path / "r.npy", np.arange(31, dtype=np.float32))
    remap = ["remap", "--partitions", str(out), "--result", f"user={tmp_path / 'r.npy'}", "--in-dir", str(copy)]
    remap += ["--partitions-dir", str(assign), "--out-dir", str(tmp_path / "r")]
    assert runner.invoke(cli, remap).exit_code == 1
    done = runner.invoke(cli, [*remap, *flag])
    assert done.exit_code == 0, done.output


def test_a_nullable_integer_label_with_nulls_in_some_files_is_float64(copy: Path) -> None:
    """GSProcessing's custom-split labels: Spark writes a nullable long; DGL reads a file with a
    null as float64 (NaN) and concatenates the others (int64) into it."""
    doc = _doc(copy)
    entry = doc["node_data"]["user"]["occupation"]
    values = [[0, 3, None, 1] + [2] * 8, [], [4] * 11, [None, 1, 2, 3, 4, 0, 1, 2]]
    for path, chunk in zip(entry["data"], values, strict=True):
        pq.write_table(pa.table({"occupation": pa.array(chunk, pa.int64())}), copy / path)
    (copy / UPDATED).write_text(json.dumps(doc))
    want = np.array([v if v is not None else np.nan for chunk in values for v in chunk], np.float64).reshape(-1, 1)
    g = open_chunked_graph(copy, metadata_filename=UPDATED)
    assert g.feature_info("node", "user", "occupation") == (np.dtype(np.float64), (1,))
    assert_same_array(np.asarray(g.node_feature("user", "occupation").compute()), want, "occupation")
    report = validate_chunked_graph(copy, metadata_filename=UPDATED)
    assert report.ok, report.problems
    (user,) = [t for t in report.summary if t.name == "user"]
    assert {f.name: f.dtype for f in user.features}["occupation"] == "float64"
