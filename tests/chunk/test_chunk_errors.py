"""Bad spec input: a clear error naming the spec key, file and row; never a complete-looking output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dgl_chunked.chunk import chunk_graph, parse_spec
from dgl_chunked.cli import main
from dgl_chunked.errors import (
    ChunkMismatchError,
    ChunkReadError,
    DglChunkedError,
    MetadataError,
)


def _raw(tmp_path: Path) -> dict:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "edges.npy", rng.integers(0, 10, (2, 30)))
    np.save(tmp_path / "feat.npy", rng.random((10, 3)).astype(np.float32))
    pd.DataFrame({"name": [f"u{i}" for i in range(6)]}).to_csv(tmp_path / "users.csv", index=False)
    pd.DataFrame({"u": ["u1", "u2", "u5", "nobody", "u0"], "v": [0, 1, 2, 3, 4]}).to_csv(
        tmp_path / "likes.csv", index=False
    )
    return {
        "base_dir": str(tmp_path),
        "node_types": {
            "n": {"features": {"feat": {"path": "feat.npy"}}},
            "user": {"key": {"path": "users.csv", "header": True, "column": "name"}},
        },
        "edge_types": {"n:e:n": {"source": "edges.npy"}},
    }


def _fails(tmp_path: Path, spec: dict, error: type[Exception], *patterns: str) -> str:
    out = tmp_path / "out"
    with pytest.raises(error) as info:
        chunk_graph(spec, out, num_chunks=3)
    for pattern in patterns:
        assert pattern in str(info.value), (pattern, str(info.value))
    assert not (out / "metadata.json").exists()
    assert not out.exists() or not any(out.iterdir())  # nothing half-written stays
    return str(info.value)


def test_missing_file_names_spec_key_and_file(tmp_path):
    spec = _raw(tmp_path)
    spec["node_types"]["n"]["features"]["feat"]["path"] = "nope.npy"
    _fails(tmp_path, spec, ChunkReadError, 'node_types["n"].features["feat"]', "nope.npy", "does not exist")
    assert not (tmp_path / "out").exists()  # planning fails before anything is written


def test_wrong_edge_shape(tmp_path):
    spec = _raw(tmp_path)
    np.save(tmp_path / "edges.npy", np.zeros((3, 7), np.int64))
    _fails(
        tmp_path,
        spec,
        ChunkMismatchError,
        'edge_types["n:e:n"].source',
        "edges.npy",
        "expected shape (2, E) or (E, 2), found (3, 7)",
    )


def test_float_edges_are_rejected(tmp_path):
    spec = _raw(tmp_path)
    np.save(tmp_path / "edges.npy", np.zeros((2, 7), np.float32))
    _fails(tmp_path, spec, ChunkMismatchError, "expected integer node IDs, found dtype float32")


def test_unknown_column(tmp_path):
    spec = _raw(tmp_path)
    spec["edge_types"]["user:likes:n"] = {"source": {"path": "likes.csv", "header": True, "columns": ["u", "w"]}}
    _fails(
        tmp_path,
        spec,
        ChunkMismatchError,
        'edge_types["user:likes:n"].source.columns',
        "unknown column 'w'",
        "likes.csv",
        "['u', 'v']",
    )


def test_key_not_found_names_file_row_and_key(tmp_path):
    spec = _raw(tmp_path)
    spec["edge_types"]["user:likes:n"] = {"source": {"path": "likes.csv", "header": True, "columns": ["u", "v"]}}
    (tmp_path / "out").mkdir()
    _fails(
        tmp_path,
        spec,
        ChunkMismatchError,
        'edge_types["user:likes:n"].source',
        "data row 4 (header excluded) of",
        "likes.csv",
        "'nobody' not found",
        'node_types["user"].key',
    )


def test_duplicate_key_names_both_rows(tmp_path):
    spec = _raw(tmp_path)
    pd.DataFrame({"name": ["a", "b", "c", "b"]}).to_csv(tmp_path / "users.csv", index=False)
    _fails(
        tmp_path,
        spec,
        ChunkMismatchError,
        'node_types["user"].key',
        "'b' appears more than once",
        "data row 2 (header excluded)",
        "data row 4 (header excluded)",
    )


@pytest.mark.parametrize("dtype", ["float8", "uint16", "complex64", 3])
def test_bad_cast_dtype_is_a_spec_error(tmp_path, dtype):
    spec = _raw(tmp_path)
    spec["node_types"]["n"]["features"]["feat"]["dtype"] = dtype
    _fails(tmp_path, spec, MetadataError, 'node_types["n"].features["feat"].dtype', "a dtype DGL can load")


def test_source_dtype_dgl_cannot_load_needs_a_cast(tmp_path):
    spec = _raw(tmp_path)
    np.save(tmp_path / "feat.npy", np.zeros((10, 2), np.uint16))
    _fails(
        tmp_path,
        spec,
        ChunkMismatchError,
        'node_types["n"].features["feat"]',
        "dtype uint16 cannot be loaded by DGL",
        "'dtype:'",
    )
    spec["node_types"]["n"]["features"]["feat"]["dtype"] = "int32"
    chunk_graph(spec, tmp_path / "ok", num_chunks=2)


def test_feature_rows_must_match_the_count(tmp_path):
    spec = _raw(tmp_path)
    spec["node_types"]["n"]["count"] = 12
    _fails(tmp_path, spec, ChunkMismatchError, 'node_types["n"].features["feat"]', "expected 12 rows", "found 10")


def test_edge_feature_rows_must_match_the_edges(tmp_path):
    spec = _raw(tmp_path)
    np.save(tmp_path / "w.npy", np.zeros(29))
    spec["edge_types"]["n:e:n"]["features"] = {"w": "w.npy"}
    _fails(tmp_path, spec, ChunkMismatchError, 'edge_types["n:e:n"].features["w"]', "expected 30 rows", "found 29")


def test_out_of_range_ids_name_the_row(tmp_path):
    spec = _raw(tmp_path)
    edges = np.zeros((2, 30), np.int64)
    edges[1, 17] = 10
    np.save(tmp_path / "edges.npy", edges)
    _fails(tmp_path, spec, ChunkMismatchError, "row 18 of", "edges.npy", "destination node ID 10", "[0, 10)")


def test_bad_csv_value_names_the_line(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n2,x\n")
    spec = {"base_dir": str(tmp_path), "node_types": {"n": {"count": 3}}, "edge_types": {"n:e:n": {"source": "e.csv"}}}
    _fails(tmp_path, spec, ChunkMismatchError, "e.csv' line 3", "expected an integer", "'x'")
    (tmp_path / "e.csv").write_text("src,dst\n0,1\n")
    _fails(tmp_path, spec, ChunkMismatchError, "line 1", "set header: true")
    (tmp_path / "e.csv").write_text("0,1\n1,99999999999999999999\n")
    _fails(tmp_path, spec, ChunkMismatchError, "e.csv' line 2, column 1 (0-based): expected an int64, found")


def test_missing_directory_is_a_spec_problem(tmp_path):
    spec = {"base_dir": str(tmp_path), "node_types": {"n": {"count": 3}}, "edge_types": {"n:e:n": {"source": "nodir/"}}}
    _fails(
        tmp_path,
        spec,
        MetadataError,
        'spec edge_types["n:e:n"].source.path: expected a glob or directory matching at least one file',
        "'nodir/'",
    )


def test_unreadable_parquet_input_names_spec_key_and_file(tmp_path):
    (tmp_path / "e.parquet").write_bytes(b"PAR1 but not really")
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"count": 3}},
        "edge_types": {"n:e:n": {"source": "e.parquet"}},
    }
    _fails(tmp_path, spec, ChunkReadError, 'edge_types["n:e:n"].source: ', "e.parquet' is not a readable Parquet file")


def test_spec_problems_are_listed_together_with_json_paths(tmp_path):
    spec = {
        "node_types": {"a": {"count": -1}, "b": {"cuont": 3}},
        "edge_types": {
            "a:x:b": {
                "source": {"path": "e.npy", "format": "xlsx"},
                "dedupe": True,
                "self_loops": "add",
                "reverse": "x/y",
            },
            "a:y": {"source": "e.npy"},
        },
    }
    with pytest.raises(MetadataError) as info:
        parse_spec(spec, base_dir=tmp_path)
    text = str(info.value)
    for where in (
        'node_types["a"].count',
        'node_types["b"].cuont',
        'edge_types["a:x:b"].source.format',
        'edge_types["a:x:b"].dedupe',
        'edge_types["a:x:b"].self_loops',
        'edge_types["a:x:b"].reverse',
        'edge_types["a:y"]',
    ):
        assert where in text, where


def test_reverse_name_collision(tmp_path):
    spec = {
        "node_types": {"a": {"count": 1}},
        "edge_types": {"a:x:a": {"source": "e.npy", "reverse": "y"}, "a:y:a": {"source": "e.npy"}},
    }
    with pytest.raises(MetadataError, match="unique"):
        parse_spec(spec, base_dir=tmp_path)


def test_cli_prints_one_line_and_exits_1(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(
        '{"node_types": {"n": {"count": 2}}, "edge_types": {"n:e:n": {"source": "missing.npy"}}}'
    )
    code = main(["chunk", "--spec", str(tmp_path / "spec.json"), "--out-dir", str(tmp_path / "o"), "--num-chunks", "2"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: ") and "missing.npy" in err and "Traceback" not in err
    assert isinstance(ChunkReadError("x"), DglChunkedError)


def test_counts_known_only_after_reading_csv_are_checked(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n1,0\n1,1\n")
    np.save(tmp_path / "w.npy", np.zeros(4))
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"count": 2}},
        "edge_types": {"n:e:n": {"source": "e.csv", "features": {"w": "w.npy"}}},
    }
    _fails(tmp_path, spec, ChunkMismatchError, 'edge_types["n:e:n"].features["w"]', "expected 3 rows", "found 4")
    spec = _raw(tmp_path)
    spec["node_types"]["user"]["features"] = {"f": "feat.npy"}  # 10 rows, 6 users
    _fails(tmp_path, spec, ChunkMismatchError, 'node_types["user"].features["f"]', "expected 6 rows", "found 10")


@pytest.mark.parametrize(("name", "found"), [("feat.pt", None), ("feat.dgl", None), ("feat.csv", "'csv'")])
def test_a_source_extension_names_a_raw_input_format_or_none(tmp_path, name, found):
    spec = _raw(tmp_path)
    (tmp_path / name).write_bytes(b"x")
    spec["node_types"]["n"]["features"]["feat"]["path"] = name
    with pytest.raises(MetadataError) as info:
        parse_spec(spec, base_dir=tmp_path)
    text = str(info.value)
    assert 'node_types["n"].features["feat"].format' in text
    if found is None:  # remap's result formats (.pt, .dgl) are no raw input: the extension does not tell
        assert f"the extension of {str(tmp_path / name)!r} does not tell; add a format key" in text
    else:
        assert f"['parquet', 'numpy', 'orc'] for features, found {found}" in text
