"""Tests for the lazy views in dgl_chunked.io.chunked.graph, against numpy truth."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import distributed
import fsspec
import numpy as np
import pandas as pd
import pytest
from dask.dataframe.utils import assert_eq as dd_assert_eq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.graph import ChunkedGraph, ChunkRef, open_chunked_graph
from dgl_chunked.io.chunked.metadata import read_metadata
from dgl_chunked.synth import SynthSpec, generate_edge_chunk, generate_feature_chunk
from dgl_chunked.testing import (
    CountingScheduler,
    GraphTruth,
    make_chunked_graph,
    raise_if_dask_computes,
    write_graph_from_truth,
)


def _truth_from_golden(tiny: Path) -> dict[str, Any]:
    """An independent oracle: numpy's own text and npy readers."""
    meta = json.loads((tiny / "metadata.json").read_text())
    edges = {
        e: np.concatenate([np.loadtxt(tiny / p, dtype=np.int64, ndmin=2) for p in spec["data"]])
        for e, spec in meta["edges"].items()
    }
    feats = {
        (t, f): np.concatenate([np.load(tiny / p) for p in spec["data"]])
        for key in ("node_data", "edge_data")
        for t, fs in meta[key].items()
        for f, spec in fs.items()
    }
    return {"edges": edges, "feats": feats}


def test_golden_edges_and_features_equal_numpy(tiny_chunked: Path) -> None:
    truth = _truth_from_golden(tiny_chunked)
    g = open_chunked_graph(tiny_chunked)
    for etype, pairs in truth["edges"].items():
        ddf = g.edges(etype)
        expected = pd.DataFrame(
            {"src": pairs[:, 0], "dst": pairs[:, 1]},
            index=pd.Index(np.arange(len(pairs)), name="type_eid"),
        )
        dd_assert_eq(ddf, expected)
        assert ddf.known_divisions
    for (tname, feat), array in truth["feats"].items():
        kind = "edge" if ":" in tname else "node"
        x = g.node_feature(tname, feat) if kind == "node" else g.edge_feature(tname, feat)
        da.utils.assert_eq(x, array)
        assert x.dtype == array.dtype


def test_building_collections_does_not_compute(tmp_path: Path) -> None:
    meta = make_chunked_graph(tmp_path)
    with raise_if_dask_computes():
        g = open_chunked_graph(meta.base_dir)
        edges = {e: g.edges(e) for e in g.edge_types}
        feats = [g.node_feature(t, f) for t, fs in meta.node_data.items() for f in fs]
        feats += [g.edge_feature(e, f) for e, fs in meta.edge_data.items() for f in fs]
        derived = [edges["paper:cites:paper"].src + 1, feats[0].sum(axis=0)]
        assert all(not np.isnan(c).any() for x in feats for c in x.chunks)
        assert all(d.known_divisions for d in edges.values())
    assert len(derived) == 2
    counter = CountingScheduler(max_computes=1)
    with dask.config.set(scheduler=counter):
        derived[0].compute()
    assert counter.total_computes == 1


def test_synthetic_graph_equals_its_generators(tmp_path: Path) -> None:
    """The synthetic graph's truth is its generator kernels, independent of readers."""
    meta = make_chunked_graph(tmp_path)
    spec = _small_spec()
    g = open_chunked_graph(meta.base_dir)
    for e, count in spec.edge_types.items():
        sizes = meta.num_edges_per_chunk[meta.etype_id(e)]  # type: ignore[index]
        chunks = [generate_edge_chunk(spec, e, k, n) for k, n in enumerate(sizes)]
        assert sum(sizes) == count
        got = g.edges(e).compute()
        np.testing.assert_array_equal(got["src"].to_numpy(), np.concatenate([c[0] for c in chunks]))
        np.testing.assert_array_equal(got["dst"].to_numpy(), np.concatenate([c[1] for c in chunks]))
        np.testing.assert_array_equal(got.index.to_numpy(), np.arange(count))
    refs = g.node_feature_chunks("paper", "feat")
    expected = np.concatenate(
        [generate_feature_chunk(spec, "node", "paper", "feat", k, r.rows) for k, r in enumerate(refs)]
    )
    da.utils.assert_eq(g.node_feature("paper", "feat"), expected)


def _small_spec() -> SynthSpec:
    from dgl_chunked.testing import SMALL_SPEC

    return SMALL_SPEC


def test_a_reopened_graph_reads_files_replaced_while_the_cluster_holds_the_old(client: Any, tmp_path: Path) -> None:
    """Read keys belong to one open handle: what an earlier open left on the cluster
    (persisted, as a notebook or another job would) never answers a new open."""
    meta = make_chunked_graph(tmp_path, num_edge_chunks=1, num_feature_chunks=1)
    etype = "author:writes:paper"
    first = open_chunked_graph(meta.base_dir)
    held = [client.persist(c, optimize_graph=False) for c in (first.edges(etype), first.node_feature("paper", "feat"))]
    distributed.wait(held)
    edge_file = Path(first.edge_chunks(etype)[0].path)
    feat_file = Path(first.node_feature_chunks("paper", "feat")[0].path)
    old_edges, old_feat = np.loadtxt(edge_file, dtype=np.int64, ndmin=2), np.load(feat_file)
    new_edges, new_feat = old_edges[::-1], old_feat + 1
    np.savetxt(tmp_path / "e.txt", new_edges, fmt="%d")
    np.save(tmp_path / "f.npy", new_feat)
    (tmp_path / "e.txt").replace(edge_file)  # new files, not rewrites of the old (memory-mapped) ones
    (tmp_path / "f.npy").replace(feat_file)
    second = open_chunked_graph(meta.base_dir)
    got_edges = second.edges(etype).compute(optimize_graph=False)
    got_feat = second.node_feature("paper", "feat").compute(optimize_graph=False)
    np.testing.assert_array_equal(got_edges[["src", "dst"]].to_numpy(), new_edges)
    np.testing.assert_array_equal(got_feat, new_feat)
    held_edges, held_feat = (c.compute(optimize_graph=False) for c in held)
    np.testing.assert_array_equal(held_edges[["src", "dst"]].to_numpy(), old_edges)
    np.testing.assert_array_equal(held_feat, old_feat)


def test_chunks_divisions_and_refs(tmp_path: Path) -> None:
    meta = make_chunked_graph(tmp_path, num_edge_chunks=3, num_feature_chunks=2)
    g = open_chunked_graph(meta.base_dir)
    refs = g.edge_chunks("author:writes:paper")
    assert [(r.start, r.stop) for r in refs] == [(0, 14), (14, 27), (27, 40)]
    assert all(isinstance(r, ChunkRef) and r.fmt == "csv" and r.options == {"delimiter": " "} for r in refs)
    ddf = g.edges("author:writes:paper")
    assert ddf.divisions == (0, 14, 27, 39)
    assert ddf.npartitions == 3
    assert ddf.index.name == "type_eid"
    assert dict(ddf.dtypes) == {"src": np.int64, "dst": np.int64}
    assert any(str(k[0]).startswith("dglc-read-edges-") for k in ddf.__dask_graph__())
    feat = g.edge_feature("author:writes:paper", "order")  # 2 feature files vs 3 edge files
    assert feat.chunks == ((20, 20),)
    assert feat.name.startswith("dglc-read-edge-feature-")
    nfeat = g.node_feature("paper", "feat")
    assert nfeat.chunks == ((10, 10), (4,)) and nfeat.dtype == np.float32
    assert g.feature_info("node", "paper", "feat") == (np.dtype(np.float32), (4,))
    assert g.feature_info("edge", "paper:cites:paper", "w") == (
        np.dtype(np.float32),
        (2,),
    )
    assert [(r.start, r.stop) for r in g.node_feature_chunks("author", "emb")] == [
        (0, 6),
        (6, 12),
    ]
    assert g.num_edges("paper:cites:paper") == 30
    np.testing.assert_array_equal(g.edge_type_offsets, [0, 40, 55, 85, 97])


def test_node_chunks(tmp_path: Path) -> None:
    meta = make_chunked_graph(
        tmp_path,
        node_types={"author": 12, "institution": 0, "paper": 20},
        edge_types={"author:writes:paper": 5, "author:affiliated_with:institution": 0},
        edge_features={},
    )
    g = open_chunked_graph(meta.base_dir)
    assert g.node_chunks("paper") == (10, 10)
    assert g.node_chunks("institution") == (0,)
    data = json.loads(Path(meta.base_dir, "metadata.json").read_text())
    del data["num_nodes_per_chunk"]
    Path(meta.base_dir, "metadata.json").write_text(json.dumps(data))
    g = open_chunked_graph(meta.base_dir, node_chunk_rows=7)
    assert g.node_chunks("paper") == (7, 7, 6)
    assert g.node_chunks("author") == (6, 6)
    assert g.node_chunks("institution") == (0,)
    assert sum(open_chunked_graph(meta.base_dir).node_chunks("paper")) == 20


@pytest.mark.parametrize("edge_format", ["csv", "parquet"])
def test_edge_counts_from_files_when_metadata_has_none(tmp_path: Path, edge_format: str) -> None:
    rng = np.random.default_rng(0)
    truth = GraphTruth(
        graph_name="t",
        num_nodes={"a": 10, "b": 4},
        edges={
            "a:x:b": (rng.integers(0, 10, 23), rng.integers(0, 4, 23)),
            "b:y:b": (np.array([1]), np.array([2])),
        },
        node_data={},
        edge_data={"a:x:b": {"w": rng.random(23)}},
    )
    meta = write_graph_from_truth(
        tmp_path,
        truth,
        edge_chunks=3,
        feature_chunks=5,
        edge_format=edge_format,
        per_chunk_counts=False,
    )  # type: ignore[arg-type]
    assert meta.num_edges_per_type is None
    g = open_chunked_graph(tmp_path)
    assert [r.rows for r in g.edge_chunks("a:x:b")] == [8, 8, 7]
    assert g.num_edges("b:y:b") == 1
    got = g.edges("a:x:b").compute()
    np.testing.assert_array_equal(got["src"], truth.edges["a:x:b"][0])
    da.utils.assert_eq(g.edge_feature("a:x:b", "w"), truth.edge_data["a:x:b"]["w"])


def test_empty_edge_type_and_empty_chunk_files(tmp_path: Path) -> None:
    truth = GraphTruth(
        graph_name="t",
        num_nodes={"a": 3},
        edges={
            "a:x:a": (np.array([0, 1, 2]), np.array([2, 1, 0])),
            "a:none:a": (np.empty(0, np.int64), np.empty(0, np.int64)),
        },
        node_data={"a": {"f": np.arange(3.0)}},
        edge_data={"a:none:a": {"w": np.empty((0, 2), np.float32)}},
    )
    write_graph_from_truth(
        tmp_path,
        truth,
        edge_chunks={"a:x:a": [0, 2, 0, 1], "a:none:a": []},
        feature_chunks=1,
    )
    g = open_chunked_graph(tmp_path)
    ddf = g.edges("a:x:a")
    assert ddf.npartitions == 2 and ddf.divisions == (0, 2, 2)
    np.testing.assert_array_equal(ddf.compute()["dst"], [2, 1, 0])
    empty = g.edges("a:none:a")
    assert len(empty.compute()) == 0 and empty.known_divisions
    w = g.edge_feature("a:none:a", "w")
    assert w.shape == (0, 2) and w.compute().shape == (0, 2)


@st.composite
def _chunkings(draw: st.DrawFn, total: int) -> list[int]:
    cuts = sorted(draw(st.lists(st.integers(0, total), max_size=4)))
    bounds = [0, *cuts, total]
    return [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_chunkings_and_formats_give_the_truth(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    n_a, n_b, m = 17, 9, 31
    truth = GraphTruth(
        graph_name="h",
        num_nodes={"a": n_a, "b": n_b},
        edges={"a:r:b": (rng.integers(0, n_a, m), rng.integers(0, n_b, m))},
        node_data={
            "a": {
                "x": rng.random((n_a, 3)).astype(np.float32),
                "m": rng.random(n_a) < 0.5,
            }
        },
        edge_data={"a:r:b": {"w": rng.integers(0, 9, (m, 2)).astype(np.int16)}},
    )
    chunks = {"a:r:b": data.draw(_chunkings(m))}
    fchunks = {
        ("a", "x"): data.draw(_chunkings(n_a)),
        ("a", "m"): data.draw(_chunkings(n_a)),
        ("a:r:b", "w"): data.draw(_chunkings(m)),
    }
    out = tmp_path_factory.mktemp("g")
    write_graph_from_truth(
        out,
        truth,
        edge_chunks=chunks,
        feature_chunks=fchunks,
        edge_format=data.draw(st.sampled_from(["csv", "parquet"])),
        feature_format=data.draw(st.sampled_from(["numpy", "parquet"])),
        csv_delimiter=data.draw(st.sampled_from([" ", ",", "\t"])),
        parquet_layout=data.draw(st.sampled_from(["columns", "list"])),
        per_chunk_counts=data.draw(st.booleans()),
    )
    g = open_chunked_graph(out)
    got = g.edges("a:r:b").compute()
    np.testing.assert_array_equal(got["src"].to_numpy(), truth.edges["a:r:b"][0])
    np.testing.assert_array_equal(got["dst"].to_numpy(), truth.edges["a:r:b"][1])
    np.testing.assert_array_equal(got.index.to_numpy(), np.arange(m))
    x = g.node_feature("a", "x")
    # one read task per non-empty file at the suite's task size; an empty file joins the next task
    assert x.chunks[0] == tuple(c for c in fchunks[("a", "x")] if c)
    da.utils.assert_eq(x, truth.node_data["a"]["x"])
    da.utils.assert_eq(g.node_feature("a", "m"), truth.node_data["a"]["m"])
    da.utils.assert_eq(g.edge_feature("a:r:b", "w"), truth.edge_data["a:r:b"]["w"])


# --- errors inside tasks and at build time -----------------------------------------


def _copy_golden(tiny: Path, tmp_path: Path) -> Path:
    out = tmp_path / "chunked"
    shutil.copytree(tiny, out)
    return out


def test_row_count_mismatch_raises_in_task_naming_file(tiny_chunked: Path, tmp_path: Path) -> None:
    d = _copy_golden(tiny_chunked, tmp_path)
    path = d / "edge_index" / "paper:cites:paper1.txt"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    ddf = open_chunked_graph(d).edges("paper:cites:paper")  # lazy: no error yet
    with pytest.raises(
        ChunkMismatchError,
        match=r"paper:cites:paper1.txt.*expected 15 rows .* found 14",
    ):
        ddf.compute()


def test_out_of_range_id_raises_in_task_naming_row(tiny_chunked: Path, tmp_path: Path) -> None:
    d = _copy_golden(tiny_chunked, tmp_path)
    path = d / "edge_index" / "author:writes:paper0.txt"
    lines = path.read_text().splitlines()
    lines[3] = "12 0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ChunkMismatchError,
        match=r"author:writes:paper0.txt.*row 4: src ID 12 is out of range \[0, 12\)",
    ):
        open_chunked_graph(d).edges("author:writes:paper").compute()


def test_feature_problems_raise_at_build_time(tiny_chunked: Path, tmp_path: Path) -> None:
    d = _copy_golden(tiny_chunked, tmp_path)
    np.save(d / "node_data" / "paper" / "label-1.npy", np.arange(6))
    g = open_chunked_graph(d)
    with pytest.raises(
        ChunkMismatchError,
        match=r'node_data\["paper"\]\["label"\]: expected 15 rows in total.*found 14',
    ):
        g.node_feature("paper", "label")
    np.save(d / "node_data" / "paper" / "feat-1.npy", np.zeros((7, 4), np.float64))
    with pytest.raises(ChunkMismatchError, match="one dtype and row shape"):
        ChunkedGraph(read_metadata(d)).node_feature("paper", "feat")
    with pytest.raises(KeyError, match="no node feature 'nope'"):
        g.node_feature("paper", "nope")


def test_fsspec_url_input(tiny_chunked: Path) -> None:
    fs = fsspec.filesystem("memory")
    for path in tiny_chunked.rglob("*"):
        if path.is_file():
            fs.pipe(f"/golden-url/{path.relative_to(tiny_chunked)}", path.read_bytes())
    g = open_chunked_graph("memory://golden-url")
    truth = _truth_from_golden(tiny_chunked)
    got = g.edges("author:writes:paper").compute()
    np.testing.assert_array_equal(got["dst"], truth["edges"]["author:writes:paper"][:, 1])
    da.utils.assert_eq(g.node_feature("paper", "feat"), truth["feats"][("paper", "feat")])
    fs.rm("/golden-url", recursive=True)


def test_on_a_local_cluster(client: Any, tmp_path: Path) -> None:
    meta = make_chunked_graph(tmp_path, edge_format="parquet", feature_format="parquet")
    from dgl_chunked.testing import load_truth

    truth = load_truth(meta)
    g = open_chunked_graph(meta.base_dir)
    for etype, (src, dst) in truth.edges.items():
        got = g.edges(etype).compute(scheduler=client)
        np.testing.assert_array_equal(got["src"], src)
        np.testing.assert_array_equal(got["dst"], dst)
    sums = client.compute(g.node_feature("paper", "feat").sum(axis=0)).result()
    np.testing.assert_allclose(sums, truth.node_data["paper"]["feat"].sum(axis=0), rtol=1e-5)


def test_counted_edges_must_match_declared_per_type(tiny_chunked: Path, tmp_path: Path) -> None:
    d = _copy_golden(tiny_chunked, tmp_path)
    meta = json.loads((d / "metadata.json").read_text())
    del meta["num_edges_per_chunk"]
    meta["num_edges_per_type"][2] = 31
    (d / "metadata.json").write_text(json.dumps(meta))
    g = open_chunked_graph(d)
    assert [r.rows for r in g.edge_chunks("author:writes:paper")] == [13, 12]  # counted
    with pytest.raises(ChunkMismatchError, match=r"num_edges_per_type\[2\]: expected 31 .* found 30"):
        g.edge_chunks("paper:cites:paper")
