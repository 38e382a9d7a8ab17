"""Empty input that DGL's tools write is accepted everywhere, and validate agrees with dispatch.

An edge type with zero edges stored as zero-byte CSV files, empty chunks inside
non-empty edge types (zero-byte CSV, zero-row Parquet) and zero-row feature chunks
(``.npy`` of shape ``(0, d)``, zero-row Parquet) are valid when ``metadata.json``
declares them empty: ``validate``, every partition method, ``dispatch``, ``verify``,
``parmetis-export`` and ``chunk`` accept them, and real DGL loads the result.

The agreement table runs ``validate`` and ``dispatch`` on the same inputs, good and
bad: a graph is valid exactly when dispatch succeeds, and when it is not, both name
the same file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from dgl_chunked import assign_partitions, open_chunked_graph
from dgl_chunked.chunk import chunk_graph
from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import DglChunkedError, EmptyPartitionWarning
from dgl_chunked.io.chunked.validate import validate_chunked_graph
from dgl_chunked.parmetis import export_parmetis
from dgl_chunked.testing import GraphTruth, load_truth, write_graph_from_truth
from dgl_chunked.verify import verify_partitions
from tests.realdgl.harness import assert_real_dgl_loads

# an edge type without edges leaves every partition without rows of its feature: expected here
pytestmark = pytest.mark.filterwarnings("ignore::dgl_chunked.errors.EmptyPartitionWarning")

OPTIONS = DispatchOptions(save_orig_nids=True, save_orig_eids=True, progress=False)
NUM = {"author": 6, "paper": 20}


def _truth() -> GraphTruth:
    rng = np.random.default_rng(0)
    return GraphTruth(
        graph_name="empty",
        num_nodes=dict(NUM),
        edges={
            "author:writes:paper": (rng.integers(0, 6, 30), rng.integers(0, 20, 30)),
            "author:none:paper": (np.empty(0, np.int64), np.empty(0, np.int64)),
            "paper:cites:paper": (rng.integers(0, 20, 25), rng.integers(0, 20, 25)),
        },
        node_data={"paper": {"feat": rng.standard_normal((20, 3)).astype(np.float32)}},
        edge_data={
            "author:none:paper": {"w": np.empty((0, 2), np.float32)},
            "paper:cites:paper": {"w": rng.random(25)},
        },
    )


def _write(
    out: Path,
    edge_format: Literal["csv", "parquet"] = "csv",
    feature_format: Literal["numpy", "parquet"] = "numpy",
    per_chunk_counts: bool = True,
) -> Path:
    """The graph with empty chunks everywhere: files 0-0, 0-2, 1-0, 1-1 and 2-1 hold no edge."""
    write_graph_from_truth(
        out,
        _truth(),
        edge_chunks={"author:writes:paper": [0, 30, 0], "author:none:paper": [0, 0], "paper:cites:paper": [10, 0, 15]},
        feature_chunks={
            ("paper", "feat"): [0, 12, 0, 8],
            ("author:none:paper", "w"): [0, 0],
            ("paper:cites:paper", "w"): [10, 0, 15],
        },
        edge_format=edge_format,
        feature_format=feature_format,
        per_chunk_counts=per_chunk_counts,
    )
    return out


# --- accepted everywhere -------------------------------------------------------------


@pytest.mark.parametrize(("edge_format", "feature_format"), [("csv", "numpy"), ("parquet", "parquet")])
@pytest.mark.parametrize("method", ["random", "metis", "lp"])
def test_empty_chunks_partition_dispatch_and_verify(
    tmp_path: Path, edge_format: Literal["csv", "parquet"], feature_format: Literal["numpy", "parquet"], method: str
) -> None:
    src = _write(tmp_path / "in", edge_format, feature_format)
    if edge_format == "csv":
        assert (src / "edge_index" / "1-0.csv").stat().st_size == 0  # zero-byte files, as chunkers write them
    report = validate_chunked_graph(src)
    assert report.ok and report.warnings == [], report.problems
    graph = open_chunked_graph(src)
    assert graph.num_edges("author:none:paper") == 0
    assignment = assign_partitions(graph, 2, method=method, seed=3)
    dispatch(graph, assignment, tmp_path / "out", num_parts=2, options=OPTIONS)
    checked = verify_partitions(graph, tmp_path / "out", assignment={k: v.compute() for k, v in assignment.items()})
    assert checked.ok, checked.problems
    assert checked.checked.edges == 55
    config = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert config["edge_map"]["author:none:paper"][0][0] == config["edge_map"]["author:none:paper"][0][1]


def test_empty_edge_type_through_the_cli_and_real_dgl(tmp_path: Path) -> None:
    src = _write(tmp_path / "in")
    args = ["--workers", "1"]
    assert main(["validate", "--in-dir", str(src), *args]) == 0
    run = ["run", "--in-dir", str(src), "--out-dir", str(tmp_path / "out"), "--num-parts", "2", "--no-progress"]
    with pytest.warns(EmptyPartitionWarning, match="author:none:paper"):  # its feature has no row anywhere
        assert main([*run, "--save-orig-nids", "--save-orig-eids", *args]) == 0
    assert main(["verify", "--in-dir", str(src), "--out-dir", str(tmp_path / "out"), *args]) == 0
    _, info = assert_real_dgl_loads(tmp_path / "out")
    assert "author:none:paper" in info["p0"]["etypes"]


def test_parmetis_export_counts_no_edge_of_empty_chunks(tmp_path: Path) -> None:
    src = _write(tmp_path / "in")
    export_parmetis(src, tmp_path / "pm")
    edges = np.loadtxt(tmp_path / "pm" / "empty_edges.txt", dtype=np.int64, ndmin=2)[:, :2]
    offsets = {"author": 0, "paper": NUM["author"]}
    pairs = set()
    for etype, (s, d) in _truth().edges.items():
        st, _, dt = etype.split(":")
        pairs |= {(min(a, b), max(a, b)) for a, b in zip(s + offsets[st], d + offsets[dt], strict=True) if a != b}
    assert len(edges) == len(pairs)  # unordered dedup, no self loop
    assert {(min(a, b), max(a, b)) for a, b in edges.tolist()} == pairs


@pytest.mark.parametrize("raw", ["npy", "csv"])
def test_chunk_writes_an_empty_relation_that_dispatches(tmp_path: Path, raw: str) -> None:
    """``chunk`` of a raw relation with no edge (a (2, 0) .npy or a zero-byte CSV)."""
    np.save(tmp_path / "f.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    if raw == "npy":
        np.save(tmp_path / "e.npy", np.zeros((2, 0), np.int64))
        source: Any = "e.npy"
    else:
        (tmp_path / "e.csv").write_bytes(b"")
        source = {"path": "e.csv", "format": "csv", "columns": [0, 1], "header": False}
    np.save(tmp_path / "g.npy", np.array([[0, 1, 2], [1, 2, 0]]))
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"count": 3, "features": {"f": "f.npy"}}},
        "edge_types": {"n:none:n": {"source": source}, "n:e:n": {"source": "g.npy"}},
    }
    meta = chunk_graph(spec, tmp_path / "chunked", num_chunks=2, edge_format="csv")
    assert meta.num_edges_per_type == (0, 3)
    assert validate_chunked_graph(tmp_path / "chunked").ok
    dispatch(tmp_path / "chunked", _assign_all(tmp_path / "chunked"), tmp_path / "out", num_parts=2, options=OPTIONS)
    assert verify_partitions(tmp_path / "chunked", tmp_path / "out").ok


def _assign_all(path: Path) -> dict[str, Any]:
    return assign_partitions(open_chunked_graph(path), 2)


# --- validate and dispatch agree -----------------------------------------------------


def _rows(path: Path, keep: int) -> None:
    rows = np.load(path)[:keep]
    with open(path, "wb") as f:  # np.save(path) would append ".npy" to the name
        np.save(f, rows)


def _edit_meta(src: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((src / "metadata.json").read_text())
    edit(meta)
    (src / "metadata.json").write_text(json.dumps(meta))


def _set_chunk_count(meta: dict[str, Any]) -> None:
    meta["num_edges_per_chunk"][2] = [10, 5, 15]  # 2-1.csv is empty but declared to hold 5


def _node_chunks_like_the_feature(meta: dict[str, Any]) -> None:
    meta["num_nodes_per_chunk"] = [[6], [0, 12, 0, 8]]


def _short_node_feature(src: Path, aligned: bool) -> None:
    if aligned:
        _edit_meta(src, _node_chunks_like_the_feature)
    _rows(src / "node_data/0/0-3.numpy", 7)


Mutation = Callable[[Path], Any]
# (id, mutation, valid?, the file both must name)
AGREEMENT: list[tuple[str, Mutation, bool, str | None]] = [
    ("declared-empty", lambda src: None, True, None),
    ("empty-undeclared", lambda src: None, True, None),  # written without per-chunk counts
    ("empty-but-declared-5", lambda src: _edit_meta(src, _set_chunk_count), False, "2-1.csv"),
    ("text-in-empty-chunk", lambda src: (src / "edge_index/2-1.csv").write_text("x y\n"), False, "2-1.csv"),
    ("node-id-out-of-range", lambda src: (src / "edge_index/2-1.csv").write_text("3 99\n"), False, "2-1.csv"),
    ("missing-edge-file", lambda src: (src / "edge_index/0-2.csv").unlink(), False, "0-2.csv"),
    # with num_nodes_per_chunk matching the files, the short file is named; without, the feature
    ("node-feature-rows", lambda src: _short_node_feature(src, True), False, "node_data/0/0-3.numpy"),
    ("node-feature-rows-unaligned", lambda src: _short_node_feature(src, False), False, 'node_data["paper"]["feat"]'),
    ("edge-feature-rows", lambda src: _rows(src / "edge_data/1/0-2.numpy", 14), False, "edge_data/1/0-2.numpy"),
    (
        "truncated-feature",
        lambda src: (src / "node_data/0/0-1.numpy").write_bytes((src / "node_data/0/0-1.numpy").read_bytes()[:-5]),
        False,
        "node_data/0/0-1.numpy",
    ),
    ("zero-byte-npy", lambda src: (src / "node_data/0/0-0.numpy").write_bytes(b""), False, "node_data/0/0-0.numpy"),
]


@pytest.fixture(scope="module")
def assign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("agree")
    src = _write(base / "in")
    assert main(["partition", "--in-dir", str(src), "--out-dir", str(base / "assign"), "--num-parts", "2"]) == 0
    return base / "assign"


@pytest.mark.parametrize(("mutate", "valid", "culprit"), [c[1:] for c in AGREEMENT], ids=[c[0] for c in AGREEMENT])
def test_validate_and_dispatch_agree(
    tmp_path: Path, assign_dir: Path, request: pytest.FixtureRequest, mutate: Mutation, valid: bool, culprit: str | None
) -> None:
    src = _write(tmp_path / "in", per_chunk_counts="undeclared" not in request.node.callspec.id)
    mutate(src)
    report = validate_chunked_graph(src)
    error: DglChunkedError | None = None
    try:
        dispatch(src, assign_dir, tmp_path / "out", options=OPTIONS)
    except DglChunkedError as err:
        error = err
    assert report.ok == valid == (error is None), (report.problems, error)
    if valid:
        assert verify_partitions(src, tmp_path / "out").ok
        got = load_truth(src)
        assert got.edges["author:none:paper"][0].size == 0
        return
    assert culprit is not None and error is not None
    assert any(culprit in p for p in report.problems), report.problems
    assert culprit in str(error), error
    assert not (tmp_path / "out" / "metadata.json").exists()
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
