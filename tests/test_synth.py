"""Tests for dgl_chunked.synth: determinism, validity, distributions, presets, CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import dask
import fsspec
import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.errors import MetadataError, OutputExistsError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.chunked.validate import validate_chunked_graph
from dgl_chunked.storage.owned import ForeignDataError
from dgl_chunked.synth import MASK_NAMES, SynthSpec, write_synthetic_graph
from dgl_chunked.testing import load_truth, make_chunked_graph


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".dglc-owned.json"  # the marker records the run, not the data
    }


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    spec = SynthSpec.heterogeneous(distribution="powerlaw", num_feature_chunks=3)
    write_synthetic_graph(tmp_path / "a", spec)
    write_synthetic_graph(tmp_path / "b", spec)
    a, b = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert a == b and len(a) > 30
    write_synthetic_graph(
        tmp_path / "c",
        SynthSpec.heterogeneous(distribution="powerlaw", num_feature_chunks=3, seed=1),
    )
    c = _digests(tmp_path / "c")
    assert c["metadata.json"] == a["metadata.json"]
    assert sum(a[k] != c[k] for k in a) >= len(a) - 2


@pytest.mark.parametrize(
    ("edge_format", "feature_format", "layout"),
    [
        ("csv", "numpy", "columns"),
        ("parquet", "parquet", "columns"),
        ("csv", "parquet", "list"),
        ("parquet", "numpy", "columns"),
    ],
)
def test_every_format_validates_and_reads_back(
    tmp_path: Path, edge_format: str, feature_format: str, layout: str
) -> None:
    spec = SynthSpec.heterogeneous(
        edge_format=edge_format,
        feature_format=feature_format,
        parquet_layout=layout,
        csv_delimiter=",",
    )  # type: ignore[arg-type]
    meta = write_synthetic_graph(tmp_path, spec, overwrite=True)
    report = validate_chunked_graph(tmp_path)
    assert report.ok, report.problems
    truth = load_truth(meta)
    for etype, count in spec.edge_types.items():
        src, dst = truth.edges[etype]
        s, _, d = etype.split(":")
        assert len(src) == count
        assert src.min() >= 0 and src.max() < spec.node_types[s] and dst.max() < spec.node_types[d]
    for ntype, feats in spec.all_node_features().items():
        for feat, (dim, dtype) in feats.items():
            array = truth.node_data[ntype][feat]
            assert array.dtype == np.dtype(dtype)
            assert array.shape == ((spec.node_types[ntype], dim) if dim else (spec.node_types[ntype],))
    assert truth.edge_data["author:reviews:paper"]["score"].shape == (600, 3)


def test_metadata_has_counts_and_relative_paths(tmp_path: Path) -> None:
    meta = write_synthetic_graph(tmp_path, SynthSpec.homogeneous(100, 1000, num_chunks=3, num_feature_chunks=4))
    raw = json.loads((tmp_path / "metadata.json").read_text())
    for key in (
        "num_nodes_per_type",
        "num_nodes_per_chunk",
        "num_edges_per_type",
        "num_edges_per_chunk",
    ):
        assert key in raw
    assert raw["num_nodes_per_chunk"] == [[34, 33, 33]] and raw["num_edges_per_chunk"] == [[334, 333, 333]]
    assert raw["edges"]["_N:_E:_N"]["data"][0] == "edge_index/_N:_E:_N0.txt"
    assert raw["edges"]["_N:_E:_N"]["format"] == {"name": "csv", "delimiter": " "}
    assert len(raw["node_data"]["_N"]["feat"]["data"]) == 4
    assert not any(p.name.endswith(".tmp-dglc") for p in tmp_path.rglob("*"))
    assert meta == open_chunked_graph(tmp_path).metadata


def test_homogeneous_preset_uses_dgl_names(tmp_path: Path) -> None:
    spec = SynthSpec.homogeneous(50, 200, feat_dim=8, edge_feat_dim=0)
    meta = write_synthetic_graph(tmp_path, spec)
    assert meta.node_types == ("_N",) and meta.edge_type_names == ("_N:_E:_N",)
    assert sorted(meta.node_data["_N"]) == ["feat", "label", *sorted(MASK_NAMES)]
    g = open_chunked_graph(tmp_path)
    assert g.feature_info("node", "_N", "feat") == (np.dtype(np.float32), (8,))
    assert g.feature_info("edge", "_N:_E:_N", "weight") == (np.dtype(np.float32), ())
    labels = g.node_feature("_N", "label").compute()
    assert labels.min() >= 0 and labels.max() < 10


def test_heterogeneous_preset_shape() -> None:
    spec = SynthSpec.heterogeneous()
    assert len(spec.node_types) >= 3 and len(spec.edge_types) >= 4
    triples = [e.split(":") for e in spec.edge_types]
    assert any(s == d for s, _, d in triples), "needs a self relation"
    pairs = [(s, d) for s, _, d in triples]
    assert any(pairs.count(p) >= 2 for p in pairs), "needs two relations between one pair"
    node_dtypes = {dt for f in spec.node_features.values() for _, dt in f.values()}
    edge_dtypes = {dt for f in spec.edge_features.values() for _, dt in f.values()}
    assert len(node_dtypes) >= 4 and len(edge_dtypes) >= 3 and "bool" in edge_dtypes
    dims = {d for f in [*spec.node_features.values(), *spec.edge_features.values()] for d, _ in f.values()}
    assert 0 in dims and len(dims) >= 3
    assert spec.masks and spec.labels
    big = SynthSpec.heterogeneous(scale=3)
    assert big.node_types["paper"] == 3 * spec.node_types["paper"]


def test_masks_are_a_disjoint_60_20_20_split(tmp_path: Path) -> None:
    meta = write_synthetic_graph(tmp_path, SynthSpec.homogeneous(20_000, 10, num_chunks=3))
    truth = load_truth(meta)
    masks = np.stack([truth.node_data["_N"][m] for m in MASK_NAMES])
    assert masks.dtype == np.bool_
    np.testing.assert_array_equal(masks.sum(axis=0), 1)
    np.testing.assert_allclose(masks.mean(axis=1), [0.6, 0.2, 0.2], atol=0.02)


def _in_degree(tmp_path: Path, distribution: str) -> np.ndarray:
    spec = SynthSpec.homogeneous(4096, 100_000, feat_dim=None, distribution=distribution)  # type: ignore[arg-type]
    meta = write_synthetic_graph(tmp_path / distribution, spec)
    _, dst = load_truth(meta).edges["_N:_E:_N"]
    return np.bincount(dst, minlength=4096)


def test_powerlaw_degrees_are_skewed(tmp_path: Path) -> None:
    uniform, powerlaw = (
        _in_degree(tmp_path, "uniform"),
        _in_degree(tmp_path, "powerlaw"),
    )
    top = 41  # the top 1% of nodes
    share = {name: np.sort(d)[::-1][:top].sum() / d.sum() for name, d in (("u", uniform), ("p", powerlaw))}
    assert share["u"] < 0.02 and share["p"] > 0.15
    assert powerlaw.max() > 10 * uniform.max()
    assert (powerlaw == 0).mean() > 0.2 and (uniform == 0).mean() < 0.01


def test_rectangular_powerlaw_ids_stay_in_range(tmp_path: Path) -> None:
    spec = SynthSpec(
        node_types={"a": 1, "b": 1000, "c": 3},
        edge_types={"a:x:b": 500, "b:y:c": 700, "c:z:c": 50},
        distribution="powerlaw",
    )
    truth = load_truth(write_synthetic_graph(tmp_path, spec))
    src, dst = truth.edges["a:x:b"]
    assert (src == 0).all() and dst.max() < 1000
    assert truth.edges["b:y:c"][1].max() < 3


def test_empty_types_and_unaligned_feature_chunks(tmp_path: Path) -> None:
    meta = make_chunked_graph(
        tmp_path,
        node_types={"author": 12, "institution": 0, "paper": 20},
        edge_types={
            "author:writes:paper": 40,
            "author:affiliated_with:institution": 0,
            "paper:cites:paper": 30,
        },
        edge_features={
            "paper:cites:paper": {"w": (2, "float32")},
            "author:affiliated_with:institution": {"since": (0, "int16")},
        },
        num_edge_chunks=2,
        num_feature_chunks=3,
    )
    assert validate_chunked_graph(meta.base_dir).ok
    g = open_chunked_graph(meta.base_dir)
    assert g.num_edges("author:affiliated_with:institution") == 0
    assert g.edges("author:affiliated_with:institution").compute().shape == (0, 2)
    assert [r.rows for r in g.edge_chunks("paper:cites:paper")] == [15, 15]
    assert [r.rows for r in g.edge_feature_chunks("paper:cites:paper", "w")] == [
        10,
        10,
        10,
    ]
    assert g.edge_feature("author:affiliated_with:institution", "since").shape == (0,)


def test_overwrite_rules(tmp_path: Path) -> None:
    spec = SynthSpec.homogeneous(10, 20)
    write_synthetic_graph(tmp_path, spec)
    first = _digests(tmp_path)
    with pytest.raises(OutputExistsError, match="overwrite"):
        write_synthetic_graph(tmp_path, spec)
    (tmp_path / "stale.txt").write_text("x")  # not ours: --overwrite refuses, touches nothing
    with pytest.raises(ForeignDataError, match=r"stale\.txt"):
        write_synthetic_graph(tmp_path, spec, overwrite=True)
    assert (tmp_path / "stale.txt").read_text() == "x"
    (tmp_path / "stale.txt").unlink()
    assert _digests(tmp_path) == first
    write_synthetic_graph(tmp_path, spec, overwrite=True)
    assert _digests(tmp_path) == first


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"node_types": {"a:b": 3}, "edge_types": {}}, "node_types"),
        ({"node_types": {"a": 3}, "edge_types": {"a:x": 3}}, "edge_types"),
        ({"node_types": {"a": 0}, "edge_types": {"a:x:a": 3}}, "edge_types"),
        (
            {
                "node_types": {"a": 3},
                "edge_types": {},
                "node_features": {"a": {"f": (2, "complex64")}},
            },
            "node_features",
        ),
        (
            {
                "node_types": {"a": 3},
                "edge_types": {},
                "node_features": {"b": {"f": (2, "float32")}},
            },
            "node_features",
        ),
        (
            {"node_types": {"a": 3}, "edge_types": {}, "num_edge_chunks": 0},
            "chunk counts",
        ),
        ({"node_types": {"a": 3}, "edge_types": {}, "edge_format": "numpy"}, "formats"),
        (
            {"node_types": {"a": 3}, "edge_types": {}, "csv_delimiter": "::"},
            "csv_delimiter",
        ),
    ],
)
def test_invalid_specs(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        SynthSpec(**kwargs)


def test_fsspec_url_output(tmp_path: Path) -> None:
    meta = write_synthetic_graph("memory://synth-out", SynthSpec.homogeneous(30, 90, edge_format="parquet"))
    assert meta.base_dir == "memory://synth-out"
    assert validate_chunked_graph("memory://synth-out").ok
    assert len(open_chunked_graph("memory://synth-out").edges("_N:_E:_N").compute()) == 90
    fsspec.filesystem("memory").rm("/synth-out", recursive=True)


def test_cli_synth_then_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "g")
    args = [
        "synth",
        "--out-dir",
        out,
        "--num-nodes",
        "500",
        "--num-edges",
        "3000",
        "--feat-dim",
        "4",
    ]
    args += [
        "--distribution",
        "powerlaw",
        "--num-chunks",
        "3",
        "--edge-format",
        "parquet",
        "--seed",
        "7",
    ]
    assert main(args) == 0
    assert "500 nodes, 3000 edges" in capsys.readouterr().out
    assert main(args) == 1
    assert "--overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert main(["validate", "--in-dir", out]) == 0
    assert "feat (500, 4) float32" in capsys.readouterr().out
    het = str(tmp_path / "h")
    assert (
        main(
            [
                "synth",
                "--out-dir",
                het,
                "--preset",
                "heterogeneous",
                "--feature-format",
                "parquet",
            ]
        )
        == 0
    )
    assert main(["validate", "--in-dir", het]) == 0


def test_synth_on_a_local_cluster(client: Any, tmp_path: Path) -> None:
    spec = SynthSpec.heterogeneous(feature_format="parquet")
    write_synthetic_graph(tmp_path / "cluster", spec)
    with dask.config.set(scheduler="synchronous"):
        write_synthetic_graph(tmp_path / "local", spec)
    assert _digests(tmp_path / "cluster") == _digests(tmp_path / "local")
    assert validate_chunked_graph(tmp_path / "cluster").ok


def test_deprecated_block_names_warn_and_give_the_chunk_generators_rows() -> None:
    """``generate_edges_block``/``generate_feature_block`` are the old names of the per-chunk generators."""
    from dgl_chunked import synth

    spec = SynthSpec.homogeneous(60, 300, seed=3)
    etype = next(iter(spec.edge_types))
    with pytest.deprecated_call(match="generate_edge_chunk"):
        old_src, old_dst = synth.generate_edges_block(spec, etype, 1, 40)
    new_src, new_dst = synth.generate_edge_chunk(spec, etype, 1, 40)
    np.testing.assert_array_equal(old_src, new_src)
    np.testing.assert_array_equal(old_dst, new_dst)
    ntype, feats = next(iter(spec.all_node_features().items()))
    feat = next(iter(feats))
    with pytest.deprecated_call(match="generate_feature_chunk"):
        old = synth.generate_feature_block(spec, "node", ntype, feat, 2, 25)
    np.testing.assert_array_equal(old, synth.generate_feature_chunk(spec, "node", ntype, feat, 2, 25))
    assert "generate_edges_block" not in synth.__all__ and "generate_feature_block" not in synth.__all__
