"""chunk_graph against an eager numpy oracle: transforms, remapping, formats, chunkings."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dgl_chunked as dglc
from dgl_chunked.chunk import chunk_graph, read_orig_keys
from dgl_chunked.io.chunked.validate import validate_chunked_graph

from .helpers import read_output, reference_relation, small_raw, write_spec


def _spec(dedup: bool = True, loops: str = "add") -> dict:
    return {
        "graph_name": "small",
        "base_dir": "raw",
        "node_types": {
            "paper": {"features": {"feat": {"path": "paper_feat.npy", "dtype": "float16"}}},
            "author": {"key": {"path": "authors.csv", "header": True, "column": "name"}},
            "inst": {"count": 4},
        },
        "edge_types": {
            "paper:cites:paper": {
                "source": "cites.npy",
                "reverse": True,
                "dedup": dedup,
                "self_loops": loops,
                "self_loop_fill": 0.5,
                "features": {"w": {"path": "cites_w.npy", "dtype": "float32"}},
            },
            "author:writes:paper": {
                "source": {"path": "writes.tsv", "header": True, "columns": ["author", "paper"]},
                "reverse": "written_by",
                "dedup": True,
            },
            "author:aff:inst": {"source": {"path": "aff.parquet", "columns": ["who", "where"]}},
        },
    }


@pytest.mark.parametrize(("num_chunks", "num_buckets"), [(1, 1), (3, 2), (7, 5)])
@pytest.mark.parametrize("loops", ["keep", "remove", "add"])
def test_transforms_match_the_oracle(tmp_path, num_chunks, num_buckets, loops):
    raw = small_raw(tmp_path / "raw")
    spec = write_spec(tmp_path / "spec.json", _spec(loops=loops))
    meta = chunk_graph(spec, tmp_path / "out", num_chunks=num_chunks, num_buckets=num_buckets)
    got = read_output(tmp_path / "out")
    cites = raw["cites"]
    src, dst, feats = reference_relation(
        cites[0],
        cites[1],
        {"w": raw["weight"].astype(np.float32)},
        num_nodes=30,
        self_loops=loops,
        dedup=True,
        fill=0.5,
    )
    for etype, (s, d) in {"paper:cites:paper": (src, dst), "paper:rev-cites:paper": (dst, src)}.items():
        np.testing.assert_array_equal(got.edges[etype][0], s)
        np.testing.assert_array_equal(got.edges[etype][1], d)
        assert got.edge_data[etype]["w"].dtype == np.float32
        np.testing.assert_array_equal(got.edge_data[etype]["w"], feats["w"])
    w_src, w_dst, _ = reference_relation(raw["writes"][0], raw["writes"][1], {}, dedup=True)
    np.testing.assert_array_equal(got.edges["author:writes:paper"][0], w_src)
    np.testing.assert_array_equal(got.edges["paper:written_by:author"][1], w_src)
    np.testing.assert_array_equal(got.edges["paper:written_by:author"][0], w_dst)
    np.testing.assert_array_equal(got.edges["author:aff:inst"][0], raw["aff"][0])
    np.testing.assert_array_equal(got.edges["author:aff:inst"][1], raw["aff"][1])
    np.testing.assert_array_equal(got.node_data["paper"]["feat"], raw["feat"].astype(np.float16))
    assert meta.edge_type_names == (
        "paper:cites:paper",
        "paper:rev-cites:paper",
        "author:writes:paper",
        "paper:written_by:author",
        "author:aff:inst",
    )
    assert meta.num_nodes_per_type == (30, 12, 4)
    assert meta.num_edges_per_type[0] == len(src)
    np.testing.assert_array_equal(read_orig_keys(tmp_path / "out", "author"), raw["keys"])
    assert not (tmp_path / "out" / "_staging").exists()


def test_output_is_complete_metadata_with_relative_paths(tmp_path):
    small_raw(tmp_path / "raw")
    spec = write_spec(tmp_path / "spec.json", _spec())
    chunk_graph(spec, tmp_path / "out", num_chunks=3)
    doc = json.loads((tmp_path / "out" / "metadata.json").read_text())
    for key in (
        "graph_name",
        "node_type",
        "num_nodes_per_type",
        "num_nodes_per_chunk",
        "edge_type",
        "num_edges_per_type",
        "num_edges_per_chunk",
        "edges",
        "node_data",
        "edge_data",
    ):
        assert key in doc, key
    paths = [p for e in doc["edges"].values() for p in e["data"]]
    assert paths and all(not p.startswith("/") for p in paths)
    assert [sum(c) for c in doc["num_edges_per_chunk"]] == doc["num_edges_per_type"]
    report = validate_chunked_graph(tmp_path / "out")
    assert report.ok, report.problems


def test_output_partitions_and_verifies(tmp_path):
    small_raw(tmp_path / "raw")
    spec = write_spec(tmp_path / "spec.json", _spec())
    chunk_graph(spec, tmp_path / "out", num_chunks=2)
    opts = dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny types leave partitions without nodes
        dglc.run(tmp_path / "out", tmp_path / "parts", num_parts=2, options=opts)
    report = dglc.verify_partitions(tmp_path / "out", tmp_path / "parts")
    assert report.ok, report.problems


def test_integer_keys_from_parquet_and_npy_edges_of_keys(tmp_path):
    rng = np.random.default_rng(3)
    keys = rng.permutation(np.arange(1000, 1000 + 50 * 7, 7))
    pq.write_table(pa.table({"id": keys, "score": rng.random(50)}), tmp_path / "users.parquet", row_group_size=9)
    pairs = keys[rng.integers(0, 50, (40, 2))]
    np.save(tmp_path / "follows.npy", pairs)  # (E, 2) of keys
    spec = {
        "node_types": {
            "user": {
                "key": {"path": "users.parquet", "column": "id"},
                "features": {"score": {"path": "users.parquet", "column": "score"}},
            }
        },
        "edge_types": {"user:follows:user": {"source": "follows.npy"}},
    }
    (tmp_path / "s.json").write_text(json.dumps(spec))
    chunk_graph(tmp_path / "s.json", tmp_path / "out", num_chunks=4, num_buckets=3)
    got = read_output(tmp_path / "out")
    position = {int(k): i for i, k in enumerate(keys)}
    expect = np.vectorize(position.get)(pairs)
    np.testing.assert_array_equal(np.stack(got.edges["user:follows:user"], axis=1), expect)
    np.testing.assert_array_equal(read_orig_keys(tmp_path / "out", "user"), keys)
    np.testing.assert_array_equal(
        got.node_data["user"]["score"], pq.read_table(tmp_path / "users.parquet")["score"].to_numpy()
    )


def test_csv_without_header_over_several_files_and_parquet_list_features(tmp_path):
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 20, (57, 3))
    (tmp_path / "parts").mkdir()
    for i, part in enumerate(np.array_split(edges, 3)):
        pd.DataFrame(part).to_csv(tmp_path / "parts" / f"part-{i}.csv", sep=";", header=False, index=False)
    (tmp_path / "parts" / "_SUCCESS").write_text("")
    vec = rng.random((57, 3)).astype(np.float32)
    pq.write_table(
        pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 3)}),
        tmp_path / "vec.parquet",
        row_group_size=10,
    )
    spec = {
        "node_types": {"n": {"count": 20}},
        "edge_types": {
            "n:e:n": {
                "source": {"path": "parts/", "format": "csv", "delimiter": ";", "columns": [2, 0]},
                "features": {"v": "vec.parquet"},
            }
        },
    }
    for k in (1, 4, 9):
        chunk_graph(spec | {"base_dir": str(tmp_path)}, tmp_path / f"out{k}", num_chunks=k)
        got = read_output(tmp_path / f"out{k}")
        np.testing.assert_array_equal(got.edges["n:e:n"][0], edges[:, 2])
        np.testing.assert_array_equal(got.edges["n:e:n"][1], edges[:, 0])
        np.testing.assert_array_equal(got.edge_data["n:e:n"]["v"], vec)


def test_yaml_spec_and_csv_edge_output(tmp_path):
    np.save(tmp_path / "e.npy", np.array([[0, 1, 2, 2], [1, 2, 0, 0]]))
    (tmp_path / "spec.yaml").write_text(
        "node_types:\n  n: {count: 3}\nedge_types:\n  n:e:n:\n    source: e.npy\n    dedup: true\n"
    )
    meta = chunk_graph(tmp_path / "spec.yaml", tmp_path / "out", num_chunks=2, edge_format="csv")
    assert meta.edges["n:e:n"].format == "csv"
    got = read_output(tmp_path / "out")
    np.testing.assert_array_equal(got.edges["n:e:n"][0], [0, 1, 2])
    np.testing.assert_array_equal(got.edges["n:e:n"][1], [1, 2, 0])


def test_everything_dropped_gives_an_empty_edge_type(tmp_path):
    np.save(tmp_path / "e.npy", np.array([[0, 1, 1], [0, 1, 1]]))
    np.save(tmp_path / "w.npy", np.arange(3.0))
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"count": 2}},
        "edge_types": {"n:e:n": {"source": "e.npy", "self_loops": "remove", "features": {"w": "w.npy"}}},
    }
    meta = chunk_graph(spec, tmp_path / "out", num_chunks=2)
    assert meta.num_edges_per_type == (0,)
    assert meta.edges["n:e:n"].paths == ()
    assert validate_chunked_graph(tmp_path / "out").ok


def test_existing_output_needs_overwrite(tmp_path):
    np.save(tmp_path / "e.npy", np.array([[0], [1]]))
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"count": 2}},
        "edge_types": {"n:e:n": {"source": {"path": "e.npy", "layout": "2xE"}}},
    }
    chunk_graph(spec, tmp_path / "out", num_chunks=1)
    with pytest.raises(dglc.errors.OutputExistsError, match="overwrite"):
        chunk_graph(spec, tmp_path / "out", num_chunks=1)
    chunk_graph(spec, tmp_path / "out", num_chunks=1, overwrite=True)


def test_output_to_an_fsspec_url(tmp_path):
    import fsspec

    np.save(tmp_path / "e.npy", np.array([[0, 1, 1], [1, 0, 0]]))
    np.save(tmp_path / "f.npy", np.arange(4.0).reshape(2, 2))
    spec = {
        "base_dir": str(tmp_path),
        "node_types": {"n": {"features": {"f": "f.npy"}}},
        "edge_types": {"n:e:n": {"source": "e.npy", "dedup": True, "reverse": True}},
    }
    url = "memory://dglc-chunk-test/out"
    try:
        meta = chunk_graph(spec, url, num_chunks=2)
        assert meta.num_edges_per_type == (2, 2)
        got = read_output(url)
        np.testing.assert_array_equal(got.edges["n:rev-e:n"][0], [1, 0])
        np.testing.assert_array_equal(got.node_data["n"]["f"], np.arange(4.0).reshape(2, 2))
        assert not fsspec.filesystem("memory").exists("/dglc-chunk-test/out/_staging")
    finally:
        fsspec.filesystem("memory").rm("/dglc-chunk-test", recursive=True)
