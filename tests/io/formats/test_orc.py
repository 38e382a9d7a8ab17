"""ORC files (dgl_chunked/io/formats/orc.py): chunked input, chunk's raw input, pieces by stripe."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from dgl_chunked.chunk import chunk_graph
from dgl_chunked.errors import ChunkMismatchError, ChunkReadError, DglChunkedError, UnsupportedFormatError
from dgl_chunked.io.chunked.formats import (
    count_edge_rows,
    feature_chunk_info,
    read_edge_chunk,
    read_feature_chunk,
    supported_formats,
    write_edge_chunk,
    write_feature_chunk,
)
from dgl_chunked.io.chunked.validate import validate_chunked_graph
from dgl_chunked.io.formats import Piece, format_of_path, get_format, inspect_file
from dgl_chunked.io.formats.orc import read_orc_piece, stripe_rows
from dgl_chunked.testing import load_truth


def _many_stripes(table: pa.Table) -> bytes:
    """``table`` as ORC bytes with small stripes (pyarrow starts a stripe per 1024-row batch
    once the stripe size is reached)."""
    buf = io.BytesIO()
    orc.write_table(table, buf, stripe_size=1, batch_size=100)
    return buf.getvalue()


def test_orc_is_registered_for_its_roles() -> None:
    assert supported_formats("edges") == ("csv", "parquet", "orc")
    assert supported_formats("features") == ("parquet", "numpy", "orc")
    assert format_of_path("part-0.orc") == "orc"
    assert format_of_path("part-0.ORC", "raw_keys") == "orc"
    assert get_format("orc").kind == "table"


def test_edges_round_trip_and_count(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 2**40, 777), rng.integers(0, 5, 777)
    path = str(tmp_path / "e.orc")
    write_edge_chunk(path, src, dst, fmt="orc")
    got_src, got_dst = read_edge_chunk(path, fmt="orc", options={})
    np.testing.assert_array_equal(got_src, src)
    np.testing.assert_array_equal(got_dst, dst)
    assert got_src.dtype == np.int64
    assert count_edge_rows(path, fmt="orc", options={}) == 777


def test_edges_by_named_columns_int32_and_extra_columns(tmp_path: Path) -> None:
    table = pa.table(
        {
            "w": pa.array([0.5, 1.5, 2.5]),
            "dst_int_id": pa.array([7, 8, 9], pa.int32()),
            "src_int_id": pa.array([1, 2, 3], pa.int32()),
        }
    )
    orc.write_table(table, str(tmp_path / "e.orc"))
    src, dst = read_edge_chunk(str(tmp_path / "e.orc"), fmt="orc", options={"columns": ["src_int_id", "dst_int_id"]})
    assert src.tolist() == [1, 2, 3] and dst.tolist() == [7, 8, 9]
    with pytest.raises(ChunkMismatchError, match=r"e\.orc.*column 'w': expected integer node IDs"):
        read_edge_chunk(str(tmp_path / "e.orc"), fmt="orc", options={})
    with pytest.raises(ChunkMismatchError, match=r"format\.columns names 'nope'"):
        read_edge_chunk(str(tmp_path / "e.orc"), fmt="orc", options={"columns": ["nope", "w"]})


def test_null_edge_and_not_an_orc_file(tmp_path: Path) -> None:
    orc.write_table(pa.table({"s": [1, None], "d": [2, 3]}), str(tmp_path / "n.orc"))
    with pytest.raises(ChunkMismatchError, match=r"n\.orc': row 2, column 's': expected a node ID, found null"):
        read_edge_chunk(str(tmp_path / "n.orc"), fmt="orc", options={})
    (tmp_path / "bad.orc").write_bytes(b"PAR1 this is not ORC at all")
    with pytest.raises(ChunkReadError, match=r"bad\.orc' is not a readable ORC file"):
        read_edge_chunk(str(tmp_path / "bad.orc"), fmt="orc", options={})


@pytest.mark.parametrize("layout", ["columns", "list"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int16", "int32", "int64"])
def test_feature_round_trip_of_2d_arrays(tmp_path: Path, layout: str, dtype: str) -> None:
    array = (np.arange(60).reshape(20, 3) % 7).astype(dtype)
    path = str(tmp_path / f"f-{layout}.orc")
    write_feature_chunk(path, array, fmt="orc", parquet_layout=layout)  # type: ignore[arg-type]
    got = read_feature_chunk(path, fmt="orc", options={})
    assert got.dtype == array.dtype
    np.testing.assert_array_equal(got, array)
    assert feature_chunk_info(path, fmt="orc", options={}) == (20, (3,), array.dtype)


def test_features_read_as_parquet_without_shape_metadata_reads(tmp_path: Path) -> None:
    """The same table as ORC and as Parquet (no b"shape") gives the same array, nulls included."""
    tables = {
        "scalar": pa.table({"a": pa.array([1, None, 3], pa.int64())}),
        "two": pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": pa.array([0.5, None, 2.0])}),
        "vectors": pa.table({"v": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])}),
        "bools": pa.table({"m": pa.array([True, False, True])}),
    }
    for name, table in tables.items():
        orc.write_table(table, str(tmp_path / f"{name}.orc"))
        pq.write_table(table, str(tmp_path / f"{name}.parquet"))
        want = read_feature_chunk(str(tmp_path / f"{name}.parquet"), fmt="parquet", options={})
        got = read_feature_chunk(str(tmp_path / f"{name}.orc"), fmt="orc", options={})
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want)
        info = feature_chunk_info(str(tmp_path / f"{name}.orc"), fmt="orc", options={})
        assert info == (want.shape[0], want.shape[1:], want.dtype), name
    got = read_feature_chunk(str(tmp_path / "two.orc"), fmt="orc", options={"columns": ["b"]})
    assert got.shape == (3, 1) and np.isnan(got[1, 0])


@pytest.mark.parametrize(("dtype", "name"), [("float16", "halffloat"), ("uint8", "uint8"), ("bool", None)])
def test_types_orc_lacks_are_refused_by_the_writer(tmp_path: Path, dtype: str, name: str | None) -> None:
    path = str(tmp_path / "h.orc")
    if name is None:
        write_feature_chunk(path, np.zeros((3, 2), dtype), fmt="orc")
        assert read_feature_chunk(path, fmt="orc", options={}).tolist() == [[False, False]] * 3
        return
    with pytest.raises(UnsupportedFormatError, match=rf"ORC cannot hold the column types \['{name}'\].*no unsigned"):
        write_feature_chunk(path, np.zeros(3, dtype), fmt="orc")


def test_a_1d_array_reads_back_as_one_column(tmp_path: Path) -> None:
    """ORC keeps no b"shape" metadata: one scalar column is (rows, 1), Parquet's rule without it."""
    path = str(tmp_path / "label.orc")
    write_feature_chunk(path, np.arange(5, dtype=np.int64), fmt="orc")
    assert read_feature_chunk(path, fmt="orc", options={}).tolist() == [[0], [1], [2], [3], [4]]


def test_stripe_rows_come_from_the_tail_and_pieces_read_only_their_rows(tmp_path: Path) -> None:
    n = 2500
    table = pa.table({"k": pa.array(np.arange(n) * 3), "s": pa.array([f"x{i}" for i in range(n)])})
    path = tmp_path / "many.orc"
    path.write_bytes(_many_stripes(table))
    f = orc.ORCFile(str(path))
    rows = stripe_rows(f, str(path))
    assert len(rows) == f.nstripes > 3
    assert list(rows) == [f.read_stripe(i).num_rows for i in range(f.nstripes)]
    info = inspect_file(str(path), "orc", "test")
    assert info.rows == n and info.names == ("k", "s") and info.row_groups == rows
    for start, stop in [(0, 1), (0, n), (99, 101), (100, 1000), (1234, 2500), (7, 7)]:
        got = read_orc_piece(Piece(path=str(path), start=start, stop=stop), info, ["s", "k"])
        assert got.column_names == ["s", "k"]
        assert got.column("k").to_pylist() == list(range(start * 3, stop * 3, 3))


def test_readers_work_on_fsspec_urls() -> None:
    import fsspec

    n = 3000
    table = pa.table({"s": np.arange(n), "d": np.arange(n)[::-1]})
    with fsspec.open("memory://orc-test/e.orc", "wb") as f:
        f.write(_many_stripes(table))
    src, dst = read_edge_chunk("memory://orc-test/e.orc", fmt="orc", options={})
    assert src.tolist() == list(range(n)) and dst.tolist() == list(range(n - 1, -1, -1))
    info = inspect_file("memory://orc-test/e.orc", "orc", "test")
    assert info.rows == n and len(info.row_groups) > 1
    piece = read_orc_piece(Piece(path="memory://orc-test/e.orc", start=1500, stop=2600), info, ["d"])
    assert piece.column("d").to_pylist() == list(range(n - 1 - 1500, n - 1 - 2600, -1))


def _dgl_golden_as_orc(tiny: Path, out: Path) -> Path:
    """The golden chunked graph with every edge file and 2-D feature as ORC (1-D stays .npy)."""
    shutil.copytree(tiny, out)
    meta = json.loads((out / "metadata.json").read_text())
    for spec in meta["edges"].values():
        for k, rel in enumerate(spec["data"]):
            src, dst = read_edge_chunk(str(out / rel), fmt="csv", options={"delimiter": " "})
            spec["data"][k] = rel.replace(".txt", ".orc")
            write_edge_chunk(str(out / spec["data"][k]), src, dst, fmt="orc")
        spec["format"] = {"name": "orc"}
    for feats in meta["node_data"].values():
        for spec in feats.values():
            arrays = [np.load(out / rel) for rel in spec["data"]]
            if arrays[0].ndim == 2:
                spec["data"] = [rel.replace(".npy", ".orc") for rel in spec["data"]]
                for rel, array in zip(spec["data"], arrays, strict=True):
                    write_feature_chunk(str(out / rel), array, fmt="orc")
                spec["format"] = {"name": "orc"}
    (out / "metadata.json").write_text(json.dumps(meta))
    return out


def test_an_orc_input_validates_and_reads_as_its_csv_and_npy_original(tiny_chunked: Path, tmp_path: Path) -> None:
    converted = _dgl_golden_as_orc(tiny_chunked, tmp_path / "orc")
    assert (
        json.loads((converted / "metadata.json").read_text())["node_data"]["paper"]["feat"]["format"]["name"] == "orc"
    )
    report = validate_chunked_graph(converted)
    assert report.ok, report
    want, got = load_truth(tiny_chunked), load_truth(converted)
    for etype, (src, dst) in want.edges.items():
        np.testing.assert_array_equal(got.edges[etype][0], src)
        np.testing.assert_array_equal(got.edges[etype][1], dst)
    for ntype, feats in want.node_data.items():
        for name, array in feats.items():
            np.testing.assert_array_equal(got.node_data[ntype][name], array)
            assert got.node_data[ntype][name].dtype == array.dtype


def test_dispatch_of_an_orc_input_gives_the_bytes_of_the_original(
    golden_dir: Path, tiny_chunked: Path, tmp_path: Path
) -> None:
    import dask

    from dgl_chunked.dispatch import DispatchOptions, dispatch

    converted = _dgl_golden_as_orc(tiny_chunked, tmp_path / "orc")
    assignment = golden_dir / "tiny-pipeline" / "partition_assignment"
    outs = []
    for name, graph in [("from-csv", tiny_chunked), ("from-orc", converted)]:
        out = tmp_path / name
        with dask.config.set(scheduler="synchronous"):
            dispatch(graph, assignment, out, options=DispatchOptions(save_orig_nids=True, save_orig_eids=True))
        outs.append(out)

    def listing(out: Path) -> list[Path]:  # the ownership mark holds its creation time
        return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and p.name != ".dglc-owned.json")

    files = listing(outs[0])
    assert sum(str(p).endswith("graph.dgl") for p in files) == 2
    assert files == listing(outs[1])
    for rel in files:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel


def test_chunk_reads_orc_sources_as_it_reads_parquet(tmp_path: Path) -> None:
    """chunk's raw input: ORC edges with string keys, an ORC key source and ORC features
    give the output the same tables give as Parquet."""
    rng = np.random.default_rng(3)
    keys = np.array([f"user-{i * 7 % 41}" for i in range(20)])
    users = pa.table({"name": keys, "age": rng.integers(18, 90, 20), "v": rng.random((20, 3)).tolist()})
    follows = pa.table({"a": keys[rng.integers(0, 20, 300)], "b": keys[rng.integers(0, 20, 300)]})
    outputs = []
    for fmt in ["parquet", "orc"]:
        raw = tmp_path / f"raw-{fmt}"
        raw.mkdir()
        for name, table in [("users", users), ("follows", follows)]:
            if fmt == "orc":
                (raw / f"{name}.orc").write_bytes(_many_stripes(table))
            else:
                pq.write_table(table, raw / f"{name}.parquet", row_group_size=37)
        features = {name: {"path": f"users.{fmt}", "column": name} for name in ["age", "v"]}
        spec = {
            "node_types": {"user": {"key": {"path": f"users.{fmt}", "column": "name"}, "features": features}},
            "edge_types": {"user:follows:user": {"source": {"path": f"follows.{fmt}", "columns": ["a", "b"]}}},
        }
        (raw / "spec.json").write_text(json.dumps(spec))
        out = tmp_path / f"out-{fmt}"
        chunk_graph(raw / "spec.json", out, num_chunks=3)
        outputs.append(load_truth(out))
    want, got = outputs
    assert got.num_nodes == want.num_nodes == {"user": 20}
    np.testing.assert_array_equal(got.edges["user:follows:user"][0], want.edges["user:follows:user"][0])
    np.testing.assert_array_equal(got.edges["user:follows:user"][1], want.edges["user:follows:user"][1])
    assert len(got.edges["user:follows:user"][0]) == 300
    for name in ["age", "v"]:
        np.testing.assert_array_equal(got.node_data["user"][name], want.node_data["user"][name])
    assert got.node_data["user"]["v"].shape == (20, 3)


def test_chunk_spec_refuses_column_indices_for_orc(tmp_path: Path) -> None:
    orc.write_table(pa.table({"a": [0, 1], "b": [1, 0]}), str(tmp_path / "e.orc"))
    spec = {
        "node_types": {"n": {"count": 2}},
        "edge_types": {"n:r:n": {"source": {"path": "e.orc", "columns": [0, 1]}}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    with pytest.raises(DglChunkedError, match=r"columns.*ORC column names"):
        chunk_graph(tmp_path / "spec.json", tmp_path / "out", num_chunks=1)
