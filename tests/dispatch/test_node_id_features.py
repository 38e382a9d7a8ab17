"""Node-ID features (GraphStorm's hard negatives) translated at dispatch.

Truth, computed independently of dispatch: a node's per-type new ID is its index in
the concatenation of every partition's ``orig_nids[ntype]`` (graphstorm's
``load_dist_nid_map`` + ``argsort``); every output row of a named feature must be the
input row of its ``orig_eids`` / ``orig_nids`` with each value ``>= 0`` mapped so, and
every negative value kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dgl_chunked.cli import cli
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import ChunkMismatchError, OptionError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.chunked.node_id_features import parse_node_id_features
from dgl_chunked.partition import assign_partitions
from dgl_chunked.testing import GraphTruth, write_graph_from_truth
from dgl_chunked.verify import load_partition_output, verify_partitions

from .helpers import output_files

NUM = {"user": 53, "item": 37}
CLICKS, FOLLOWS = "user:clicks:item", "user:follows:user"
SPECS = (f"{CLICKS}/hard_neg", f"{CLICKS}/one_neg=item", f"{FOLLOWS}/neg", "user/best_item=item")


def _truth(seed: int = 0) -> GraphTruth:
    rng = np.random.default_rng(seed)
    n_clicks, n_follows = 180, 90

    def ids(n: int, shape: tuple[int, ...], dtype: type, pad: float) -> np.ndarray:
        out = rng.integers(0, n, shape).astype(dtype)
        out[rng.random(shape) < pad] = -1
        return out

    hard_neg = ids(NUM["item"], (n_clicks, 4), np.int64, 0.3)
    hard_neg[0] = -1  # a row of padding only
    return GraphTruth(
        graph_name="gs",
        num_nodes=NUM,
        edges={
            CLICKS: (rng.integers(0, NUM["user"], n_clicks), rng.integers(0, NUM["item"], n_clicks)),
            FOLLOWS: (rng.integers(0, NUM["user"], n_follows), rng.integers(0, NUM["user"], n_follows)),
        },
        node_data={"user": {"best_item": ids(NUM["item"], (NUM["user"],), np.int64, 0.2)}},
        edge_data={
            CLICKS: {
                "hard_neg": hard_neg,
                "one_neg": ids(NUM["item"], (n_clicks,), np.int32, 0.1),
                "plain": rng.integers(0, NUM["item"], n_clicks).astype(np.int64),  # not named: untouched
            },
            FOLLOWS: {"neg": ids(NUM["user"], (n_follows, 3), np.int64, 0.2)},
        },
    )


@pytest.fixture(scope="module")
def truth() -> GraphTruth:
    return _truth()


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory, truth: GraphTruth) -> Path:
    out = tmp_path_factory.mktemp("gs") / "g"
    write_graph_from_truth(out, truth, edge_chunks=3, feature_chunks=4)
    return out


def _dispatch(graph_dir: Path, out: Path, num_parts: int, method: str = "random", **opts: object) -> Path:
    graph = open_chunked_graph(graph_dir)
    parts = assign_partitions(graph, num_parts, method=method, seed=5)
    options = DispatchOptions(save_orig_nids=True, save_orig_eids=True, node_id_features=SPECS, **opts)  # type: ignore[arg-type]
    dispatch(graph, parts, out, num_parts=num_parts, options=options)
    return out


def _expected(values: np.ndarray, orig_to_new: np.ndarray) -> np.ndarray:
    out = values.copy()
    keep = values >= 0
    out[keep] = orig_to_new[values[keep]]
    return out


def check_translated(out: Path, truth: GraphTruth) -> None:
    """Every row of every named feature against numpy truth from the output's orig_nids."""
    config, parts = load_partition_output(out)
    orig_to_new = {}
    for ntype, n in truth.num_nodes.items():
        pnid_to_orig = np.concatenate([part.orig_nids[ntype] for part in parts])
        assert np.array_equal(np.sort(pnid_to_orig), np.arange(n))
        orig_to_new[ntype] = np.argsort(pnid_to_orig)  # graphstorm's get_gnid2pnid_map
    named = {(CLICKS, "hard_neg"): "item", (CLICKS, "one_neg"): "item", (FOLLOWS, "neg"): "user"}
    rows = 0
    for part in parts:
        for (etype, feat), ntype in named.items():
            want = _expected(truth.edge_data[etype][feat][part.orig_eids[etype]], orig_to_new[ntype])
            got = part.edge_feats[f"{etype}/{feat}"]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            rows += got.shape[0]
        plain = part.edge_feats[f"{CLICKS}/plain"]
        np.testing.assert_array_equal(plain, truth.edge_data[CLICKS]["plain"][part.orig_eids[CLICKS]])
        want_nodes = _expected(truth.node_data["user"]["best_item"][part.orig_nids["user"]], orig_to_new["item"])
        np.testing.assert_array_equal(part.node_feats["user/best_item"], want_nodes)
    assert rows == 2 * 180 + 90
    padding = truth.edge_data[CLICKS]["hard_neg"] < 0
    assert padding.any() and (~padding).any()


@pytest.mark.parametrize("num_parts", [1, 3, 7])
def test_translated_rows_equal_numpy_truth(graph_dir: Path, truth: GraphTruth, tmp_path: Path, num_parts: int) -> None:
    check_translated(_dispatch(graph_dir, tmp_path / "out", num_parts), truth)


def test_verify_expects_the_translation_it_is_told_of(graph_dir: Path, tmp_path: Path) -> None:
    out = _dispatch(graph_dir, tmp_path / "out", 3)
    report = verify_partitions(graph_dir, out, node_id_features=SPECS, scratch_dir=tmp_path)
    assert report.ok, report.problems
    assert report.checked.edge_feature_rows[f"{CLICKS}/hard_neg"] == 180
    told_less = verify_partitions(graph_dir, out, node_id_features=SPECS[1:], scratch_dir=tmp_path)
    assert not told_less.ok
    assert told_less.problems and all(f"{CLICKS}/hard_neg" in p for p in told_less.problems)


def test_owner_map_and_array_ranges_give_the_same_bytes(graph_dir: Path, truth: GraphTruth, tmp_path: Path) -> None:
    """The per-worker map of the owners and the staged new_nid ranges (no cache) agree."""
    cached = _dispatch(graph_dir, tmp_path / "map", 5)
    uncached = _dispatch(graph_dir, tmp_path / "ranges", 5, lookup_cache_bytes=0, wide_ids=True)
    check_translated(uncached, truth)
    assert output_files(cached) == output_files(uncached)


def test_feature_chunking_does_not_change_the_output(truth: GraphTruth, tmp_path: Path) -> None:
    outs = []
    for name, chunks in (("one", 1), ("seven", 7)):
        write_graph_from_truth(tmp_path / name, truth, edge_chunks=chunks, feature_chunks=chunks)
        outs.append(output_files(_dispatch(tmp_path / name, tmp_path / f"out-{name}", 4)))
    assert outs[0] == outs[1]


def test_range_assignment_keeps_the_values(graph_dir: Path, truth: GraphTruth, tmp_path: Path) -> None:
    """With range partitions per-type new IDs are the input IDs: translation is the identity."""
    out = _dispatch(graph_dir, tmp_path / "out", 4, method="range")
    check_translated(out, truth)
    _, parts = load_partition_output(out)
    for part in parts:
        np.testing.assert_array_equal(
            part.edge_feats[f"{CLICKS}/hard_neg"], truth.edge_data[CLICKS]["hard_neg"][part.orig_eids[CLICKS]]
        )


def test_cli_run_and_dispatch(graph_dir: Path, truth: GraphTruth, tmp_path: Path) -> None:
    flags = ["--node-id-features", f"{CLICKS}/hard_neg,{CLICKS}/one_neg=item", "--node-id-features", SPECS[2]]
    flags += ["--node-id-features", SPECS[3], "--save-orig-nids", "--save-orig-eids"]
    run = ["run", "--in-dir", str(graph_dir), "--num-parts", "3", "--partitions-dir", str(tmp_path / "assign")]
    result = CliRunner().invoke(cli, [*run, "--out-dir", str(tmp_path / "run"), *flags])
    assert result.exit_code == 0, result.output
    check_translated(tmp_path / "run", truth)
    args = ["dispatch", "--in-dir", str(graph_dir), "--partitions-dir", str(tmp_path / "assign")]
    result = CliRunner().invoke(cli, [*args, "--out-dir", str(tmp_path / "dispatch"), *flags])
    assert result.exit_code == 0, result.output
    assert output_files(tmp_path / "run") == output_files(tmp_path / "dispatch")
    verify = ["verify", "--in-dir", str(graph_dir), "--out-dir", str(tmp_path / "run"), "--scratch-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, [*verify, "--node-id-features", ",".join(SPECS)])
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(cli, verify).exit_code != 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (f"{CLICKS}/nope", "has no feature 'nope'"),
        ("paper/x", "does not start with a node or edge type"),
        (f"{CLICKS}/hard_neg=paper", "names node type 'paper'"),
    ],
)
def test_bad_specs_are_refused_before_anything_runs(graph_dir: Path, tmp_path: Path, spec: str, message: str) -> None:
    graph = open_chunked_graph(graph_dir)
    with pytest.raises(OptionError, match=message):
        dispatch(
            graph,
            assign_partitions(graph, 2),
            tmp_path / "out",
            num_parts=2,
            options=DispatchOptions(node_id_features=(spec,)),
        )
    assert not (tmp_path / "out" / "metadata.json").exists()


def test_float_feature_and_out_of_range_value(tmp_path: Path) -> None:
    truth = _truth(1)
    truth.edge_data[FOLLOWS]["weight"] = np.ones(90, np.float32)  # type: ignore[index]
    bad = truth.edge_data[CLICKS]["hard_neg"]
    bad[100, 2] = NUM["item"]  # one past the last item
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=2, feature_chunks=2)
    graph = open_chunked_graph(tmp_path / "g")
    parts = assign_partitions(graph, 2)
    with pytest.raises(OptionError, match="holds float32, not integers"):
        dispatch(
            graph, parts, tmp_path / "a", num_parts=2, options=DispatchOptions(node_id_features=f"{FOLLOWS}/weight")
        )
    with pytest.raises(ChunkMismatchError, match=r"row 11 of feature 'user:clicks:item/hard_neg' holds node ID 37"):
        dispatch(graph, parts, tmp_path / "b", num_parts=2, options=DispatchOptions(node_id_features={SPECS[0]: None}))
    assert not (tmp_path / "b" / "metadata.json").exists()


def test_cli_errors_are_one_line(graph_dir: Path, tmp_path: Path) -> None:
    run = ["run", "--in-dir", str(graph_dir), "--num-parts", "2", "--out-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*run, "--node-id-features", f"{CLICKS}/nope"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: node_id_features: edge type 'user:clicks:item' has no feature 'nope'")
    assert "Traceback" not in result.output
    plan = CliRunner().invoke(cli, ["plan", *run[1:], "--node-id-features", f"{CLICKS}/nope"])
    assert plan.exit_code == 1 and "has no feature 'nope'" in plan.output.strip().splitlines()[-1]


def _gsprocessing_config(edges: list[tuple[str, str, str, str | None]]) -> dict[str, object]:
    """A GSProcessing config as graphstorm's tests/unit-tests/gpartition/config/
    gsprocessing_hard_negative_config.json lays it out: (src, rel, dst, hard-negative feature)."""
    out = []
    for src, rel, dst, feat in edges:
        entry: dict[str, object] = {
            "data": {"format": "parquet", "files": [f"./edges/{src}_{rel}_{dst}.parquet"]},
            "source": {"column": "source_id", "type": src},
            "dest": {"column": "dest_id", "type": dst},
            "relation": {"type": rel},
        }
        if feat is not None:
            transformation = {"name": "edge_dst_hard_negative", "kwargs": {"separator": ";"}}
            entry["features"] = [
                {"column": "plain", "name": "plain", "transformation": {"name": "no-op"}},
                {"column": feat, "name": feat, "transformation": transformation},
            ]
        out.append(entry)
    return {"graph": {"nodes": [], "edges": out}, "version": "gsprocessing-v1.0"}


def test_gsprocessing_spec_reads_the_hard_negatives_from_its_config(truth: GraphTruth, tmp_path: Path) -> None:
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=2, feature_chunks=3)
    (tmp_path / "g" / "launch_arguments.json").write_text(json.dumps({"config_filename": "gsp-config.json"}))
    config = _gsprocessing_config([("user", "clicks", "item", "hard_neg"), ("user", "follows", "user", "neg")])
    (tmp_path / "g" / "gsp-config_with_transformations.json").write_text(json.dumps(config))
    graph = open_chunked_graph(tmp_path / "g")
    assert [f.key for f in parse_node_id_features(graph, ["gsprocessing"])] == [f"{CLICKS}/hard_neg", f"{FOLLOWS}/neg"]
    assert parse_node_id_features(graph, ["GSProcessing", f"{CLICKS}/hard_neg"]) == parse_node_id_features(
        graph, [f"{CLICKS}/hard_neg=item", f"{FOLLOWS}/neg=user"]
    )
    flags = ["--save-orig-nids", "--save-orig-eids", "--node-id-features", "gsprocessing,user/best_item=item"]
    flags += ["--node-id-features", f"{CLICKS}/one_neg=item"]
    run = ["run", "--in-dir", str(tmp_path / "g"), "--num-parts", "3", "--out-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*run, *flags])
    assert result.exit_code == 0, result.output
    check_translated(tmp_path / "out", truth)


def test_gsprocessing_spec_without_its_files_is_one_error(graph_dir: Path, tmp_path: Path) -> None:
    run = ["run", "--in-dir", str(graph_dir), "--num-parts", "2", "--out-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*run, "--node-id-features", "gsprocessing"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith("error: node_id_features: 'gsprocessing' reads ")
    assert "launch_arguments.json" in result.output and "Traceback" not in result.output
