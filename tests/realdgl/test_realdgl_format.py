"""Files written by dgl_chunked.io.dgl.binary, loaded by real DGL 2.1.0.

Each module-scoped fixture is one subprocess in the DGL venv (about 4-5 s of
imports), batching many files. Tests skip when the venv is missing, unless
DGLC_REQUIRE_REAL_DGL=1 (see harness.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.io.dgl.binary import (
    BFLOAT16_RAW,
    ArraySpans,
    HomogeneousGraph,
    read_graphs,
    read_tensor_dict,
    write_graph,
    write_tensor_dict,
)
from tests.realdgl.harness import require_dgl, run_dgl_json, split_files

pytestmark = pytest.mark.realdgl

FORMAT_SETS = [("coo",), ("csr",), ("csc",), ("coo", "csr"), ("coo", "csc"), ("csr", "csc"), ("coo", "csr", "csc")]
IDTYPES = [np.int32, np.int64]
TORCH_NAMES = {
    "float16": "torch.float16",
    "float32": "torch.float32",
    "float64": "torch.float64",
    "int8": "torch.int8",
    "int16": "torch.int16",
    "int32": "torch.int32",
    "int64": "torch.int64",
    "uint8": "torch.uint8",
    "bool": "torch.uint8",
}


def _tensor_cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    every: dict[str, Any] = {}
    for dtype in TORCH_NAMES:
        for shape in [(6,), (3, 5), (0,), (0, 3), (4, 0)]:
            every[f"{dtype}/{'x'.join(map(str, shape))}"] = (rng.standard_normal(shape) * 100).astype(dtype)
    every["bf16"] = np.array([0x3F80, 0xC000, 0x0000], dtype=BFLOAT16_RAW)
    big = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    streamed = {
        "blocks": ArraySpans(big.shape, big.dtype, lambda: (big[i : i + 300] for i in range(0, 1000, 300))),
        "paper/feat": big,
    }
    return [every, {}, streamed]


@pytest.fixture(scope="module")
def tensor_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[dict[str, Any]], list[dict[str, np.ndarray]], dict[str, Any]]:
    require_dgl()
    tmp = tmp_path_factory.mktemp("tensors")
    cases = _tensor_cases()
    paths = []
    for j, tensors in enumerate(cases):
        paths.append(tmp / f"t{j}.dgl")
        write_tensor_dict(paths[-1], tensors)
    arrays, info = run_dgl_json("tensors", *map(str, paths))
    return cases, split_files(arrays, len(cases)), info


def test_load_tensors_every_dtype(tensor_run: Any) -> None:
    cases, loaded, info = tensor_run
    every, dgl_side = cases[0], loaded[0]
    assert set(dgl_side) == set(every)
    for key, value in every.items():
        got = dgl_side[key]
        expect = value.astype(np.uint8) if value.dtype == np.bool_ else value
        assert got.shape == expect.shape, key
        assert got.dtype == expect.dtype, key
        assert np.array_equal(got, expect), key
        want = "torch.bfloat16" if key == "bf16" else TORCH_NAMES[key.split("/")[0]]
        assert info["f0"]["dtypes"][key] == want


def test_load_tensors_empty_and_streamed(tensor_run: Any) -> None:
    cases, loaded, info = tensor_run
    assert loaded[1] == {} and info["f1"]["keys"] == []
    big = cases[2]["paper/feat"]
    assert np.array_equal(loaded[2]["blocks"], big) and np.array_equal(loaded[2]["paper/feat"], big)


def _graph_case(formats: tuple[str, ...], idtype: type, seed: int) -> HomogeneousGraph:
    rng = np.random.default_rng(seed)
    n, e = 30, 120  # duplicates, self loops and isolated nodes included
    src, dst = rng.integers(0, n - 3, e), rng.integers(0, n - 3, e)
    return HomogeneousGraph(
        num_nodes=n,
        src=src,
        dst=dst,
        idtype=np.dtype(idtype),
        ndata={"feat": rng.standard_normal((n, 3)).astype(np.float32), "mask": rng.random(n) < 0.3},
        edata={"_ID": np.arange(e) + 1000, "w": rng.standard_normal(e), "inner_edge": np.ones(e, np.uint8)},
    )


@pytest.fixture(scope="module")
def graph_run(
    tmp_path_factory: pytest.TempPathFactory, golden_dir: Path
) -> tuple[list[tuple[HomogeneousGraph, tuple[str, ...]]], list[dict[str, np.ndarray]], dict[str, Any]]:
    """One DGL run over every written graph file, plus the golden heterograph last."""
    require_dgl()
    tmp = tmp_path_factory.mktemp("graphs")
    cases = [(_graph_case(f, t, seed), f) for seed, (f, t) in enumerate((f, t) for f in FORMAT_SETS for t in IDTYPES)]
    empty = np.zeros(0, np.int64)
    cases.append((HomogeneousGraph(num_nodes=0, src=empty, dst=empty), ("coo", "csr", "csc")))
    cases.append((HomogeneousGraph(num_nodes=5, src=empty, dst=empty, ndata={"x": np.arange(5)}), ("csc",)))
    paths = []
    for j, (graph, formats) in enumerate(cases):
        paths.append(tmp / f"g{j}.dgl")
        write_graph(paths[-1], graph, formats=formats)
    paths.append(golden_dir / "tiny-pipeline" / "original_graph.dgl")
    arrays, info = run_dgl_json("graphs", *map(str, paths))
    return cases, split_files(arrays, len(paths)), info


def test_load_graphs_every_format_and_idtype(graph_run: Any) -> None:
    cases, loaded, info = graph_run
    assert len(cases) == 2 * len(FORMAT_SETS) + 2
    for j, (graph, formats) in enumerate(cases):
        (facts,) = info[f"f{j}"]["graphs"]
        got = loaded[j]
        src, dst = np.asarray(graph.src), np.asarray(graph.dst)
        assert facts["ntypes"] == ["_N"] and facts["canonical_etypes"] == [["_N", "_E", "_N"]]
        assert facts["num_nodes"] == {"_N": graph.num_nodes} and facts["num_edges"] == {"_N:_E:_N": len(src)}
        assert facts["idtype"] == f"torch.{graph.idtype.name}"
        assert facts["formats"]["created"] == list(formats), (j, formats)
        assert info[f"f{j}"]["labels"] == {}
        assert got["g0/edges/_N:_E:_N/src"].dtype == graph.idtype
        assert np.array_equal(got["g0/edges/_N:_E:_N/src"], src), (j, formats)
        assert np.array_equal(got["g0/edges/_N:_E:_N/dst"], dst), (j, formats)
        for name, value in graph.ndata.items():
            expect = value.astype(np.uint8) if value.dtype == np.bool_ else value
            assert (
                np.array_equal(got[f"g0/ndata/_N/{name}"], expect) and got[f"g0/ndata/_N/{name}"].dtype == expect.dtype
            )
        for name, value in graph.edata.items():
            assert np.array_equal(got[f"g0/edata/_N:_E:_N/{name}"], value)
            assert got[f"g0/edata/_N:_E:_N/{name}"].dtype == value.dtype


def _copy_partitions(src_dir: Path, dst_dir: Path, config: str) -> Path:
    """Rewrite every .dgl file of a golden partition output through our reader and writer."""
    shutil.copytree(src_dir, dst_dir)
    for path in sorted(dst_dir.rglob("*.dgl")):
        if path.name == "graph.dgl":
            (g,), _ = read_graphs(path)
            etype = g.canonical_etypes[0]
            src, dst = g.edges()
            graph = HomogeneousGraph(
                num_nodes=g.num_nodes["_N"],
                src=src,
                dst=dst,
                ndata=g.ndata["_N"],
                edata=g.edata[etype],
                idtype=g.idtype,
            )
            write_graph(path, graph, formats=g.stored_formats[etype])
        else:
            write_tensor_dict(path, read_tensor_dict(path))
    return dst_dir / config


@pytest.mark.parametrize(
    ("golden", "config"), [("pipeline_out_csc", "metadata.json"), ("partition_graph_out", "tiny.json")]
)
def test_load_partition_of_rewritten_golden(tmp_path: Path, golden_dir: Path, golden: str, config: str) -> None:
    require_dgl()
    original = golden_dir / "tiny-pipeline" / golden
    ours = _copy_partitions(original, tmp_path / golden, config)
    arrays, info = run_dgl_json("partition", str(ours))
    meta = json.loads((original / config).read_text())
    for i in range(meta["num_parts"]):
        (g,), _ = read_graphs(original / f"part{i}" / "graph.dgl")
        src, dst = g.edges()
        assert np.array_equal(arrays[f"p{i}/src"], src) and np.array_equal(arrays[f"p{i}/dst"], dst)
        for name, value in g.ndata["_N"].items():
            assert (
                np.array_equal(arrays[f"p{i}/ndata/{name}"], value)
                and arrays[f"p{i}/ndata/{name}"].dtype == value.dtype
            )
        for name, value in g.edata[g.canonical_etypes[0]].items():
            assert np.array_equal(arrays[f"p{i}/edata/{name}"], value)
        for kind, fname in (("node_feats", "node_feat.dgl"), ("edge_feats", "edge_feat.dgl")):
            for key, value in read_tensor_dict(original / f"part{i}" / fname).items():
                assert (
                    np.array_equal(arrays[f"p{i}/{kind}/{key}"], value)
                    and arrays[f"p{i}/{kind}/{key}"].dtype == value.dtype
                )
                part_kind = "node" if kind == "node_feats" else "edge"
                assert np.array_equal(arrays[f"p{i}/partition_feats/{part_kind}/{key}"], value)
        facts = info[f"p{i}"]
        assert facts["graph_name"] == "tiny" and facts["formats"]["created"] == list(
            g.stored_formats[g.canonical_etypes[0]]
        )
        assert facts["num_inner_nodes"] == int(g.ndata["_N"]["inner_node"].sum())
        assert facts["gpb"]["node_map"] == meta["node_map"] and facts["gpb"]["edge_map"] == meta["edge_map"]


HOMO = {"ntypes": {"_N": 40}, "etypes": {("_N", "_E", "_N"): 150}}
HETERO = {
    "ntypes": {"author": 5, "paper": 11},
    "etypes": {("author", "writes", "paper"): 9, ("paper", "cites", "paper"): 14},
}


def _one_partition(root: Path, layout: dict[str, Any], formats: tuple[str, ...]) -> tuple[Path, dict[str, Any]]:
    """A 1-partition partitioning written from scratch by our writer (``docs/spec/partition-config.md``).

    Node ids are type-major (local id = new id), edges are ordered by etype id.
    Returns the config path and the truth: per-type edges and features, and the
    homogeneous ``src``/``dst`` of every edge.
    """
    rng = np.random.default_rng(3)
    ntypes, etypes = layout["ntypes"], layout["etypes"]
    offset = dict(zip(ntypes, np.cumsum([0, *ntypes.values()]).tolist(), strict=False))
    truth: dict[str, Any] = {"edges": {}, "nfeat": {}, "efeat": {}}
    homo_src, homo_dst, ntype_ids, etype_ids = [], [], [], []
    for t, (nt, n) in enumerate(ntypes.items()):
        truth["nfeat"][f"{nt}/feat"] = rng.standard_normal((n, 4)).astype(np.float32)
        truth["nfeat"][f"{nt}/label"] = rng.integers(0, 9, n)
        ntype_ids.append(np.full(n, t, np.int32))
    for k, ((st, rel, dt), e) in enumerate(etypes.items()):
        src, dst = rng.integers(0, ntypes[st], e), rng.integers(0, ntypes[dt], e)
        truth["edges"][f"{st}:{rel}:{dt}"] = (src, dst)
        truth["efeat"][f"{st}:{rel}:{dt}/w"] = rng.standard_normal((e, 2))
        homo_src.append(src + offset[st])
        homo_dst.append(dst + offset[dt])
        etype_ids.append(np.full(e, k, np.int32))
    truth["src"], truth["dst"] = np.concatenate(homo_src), np.concatenate(homo_dst)
    n, e = sum(ntypes.values()), sum(etypes.values())
    (root / "part0").mkdir(parents=True)
    ones_n, ones_e = np.ones(n, np.uint8), np.ones(e, np.uint8)
    graph = HomogeneousGraph(
        num_nodes=n,
        src=truth["src"],
        dst=truth["dst"],
        ndata={"_ID": np.arange(n), "_TYPE": np.concatenate(ntype_ids), "inner_node": ones_n},
        edata={"_ID": np.arange(e), "_TYPE": np.concatenate(etype_ids), "inner_edge": ones_e},
    )
    write_graph(root / "part0" / "graph.dgl", graph, formats=formats)
    write_tensor_dict(root / "part0" / "node_feat.dgl", truth["nfeat"])
    write_tensor_dict(root / "part0" / "edge_feat.dgl", truth["efeat"])
    emap = dict(zip(truth["edges"], np.cumsum([0, *etypes.values()]).tolist(), strict=False))
    config = {
        "graph_name": "one",
        "part_method": "random",
        "num_parts": 1,
        "halo_hops": 1,
        "node_map": {nt: [[offset[nt], offset[nt] + c]] for nt, c in ntypes.items()},
        "edge_map": {et: [[emap[et], emap[et] + len(truth["edges"][et][0])]] for et in truth["edges"]},
        "ntypes": {nt: t for t, nt in enumerate(ntypes)},
        "etypes": {et: k for k, et in enumerate(truth["edges"])},
        "num_nodes": n,
        "num_edges": e,
        "part-0": {
            "node_feats": "part0/node_feat.dgl",
            "edge_feats": "part0/edge_feat.dgl",
            "part_graph": "part0/graph.dgl",
        },
    }
    (root / "one.json").write_text(json.dumps(config, indent=4))
    return root / "one.json", truth


@pytest.mark.parametrize(
    ("mode", "layout", "formats"),
    [("distgraph", HOMO, ("coo",)), ("distgraph-server", HETERO, ("csc",))],
    ids=["standalone-homogeneous", "server-heterogeneous"],
)
def test_distgraph(tmp_path: Path, mode: str, layout: dict[str, Any], formats: tuple[str, ...]) -> None:
    """DistGraph over a partition we wrote: standalone, and a real DistGraphServer on 127.0.0.1."""
    require_dgl()
    config, truth = _one_partition(tmp_path / "one", layout, formats)
    arrays, info = run_dgl_json(mode, str(config))
    if mode == "distgraph-server":
        assert info["server_exit_status"] == 0
    assert info["ntypes"] == list(layout["ntypes"]) and info["etypes"] == list(truth["edges"])
    for key, value in truth["nfeat"].items():
        assert np.array_equal(arrays[f"ndata/{key}"], value) and arrays[f"ndata/{key}"].dtype == value.dtype
    for key, value in truth["efeat"].items():
        assert np.array_equal(arrays[f"edata/{key}"], value)
    assert np.array_equal(arrays["find_edges/src"], truth["src"])
    assert np.array_equal(arrays["find_edges/dst"], truth["dst"])
    for etype, (src, dst) in truth["edges"].items():
        prefix = "sample" if len(truth["edges"]) == 1 else f"sample/{etype}"
        if len(truth["edges"]) > 1:
            assert np.array_equal(arrays[f"find_edges/{etype}/src"], src)
            assert np.array_equal(arrays[f"find_edges/{etype}/dst"], dst)
        seeds = set(range(min(layout["ntypes"][etype.split(":")[2]], 8)))
        expected = sorted((int(s), int(d), k) for k, (s, d) in enumerate(zip(src, dst, strict=False)) if d in seeds)
        got = zip(
            arrays[f"{prefix}/src"].tolist(),
            arrays[f"{prefix}/dst"].tolist(),
            arrays[f"{prefix}/eid"].tolist(),
            strict=False,
        )
        assert sorted(got) == expected  # fanout -1: every in-edge of every seed, with its edge id


def test_graphdata_matches_dgl_for_hetero_golden(graph_run: Any, golden_dir: Path) -> None:
    """Our reader and DGL agree on a DGL-written heterograph (original_graph.dgl)."""
    cases, loaded, info = graph_run
    j = len(cases)
    (ours,), _ = read_graphs(golden_dir / "tiny-pipeline" / "original_graph.dgl")
    facts, arrays = info[f"f{j}"]["graphs"][0], loaded[j]
    assert facts["ntypes"] == ours.ntypes and [tuple(c) for c in facts["canonical_etypes"]] == ours.canonical_etypes
    assert facts["num_nodes"] == ours.num_nodes and facts["idtype"] == "torch.int64"
    for c in ours.canonical_etypes:
        key = ":".join(c)
        src, dst = ours.edges(c)
        assert np.array_equal(arrays[f"g0/edges/{key}/src"], src) and np.array_equal(arrays[f"g0/edges/{key}/dst"], dst)
        assert sorted(f"{key}/{n}" for n in ours.edata[c]) == sorted(
            k for k in facts["edata"] if k.startswith(key + "/")
        )
        for name, value in ours.edata[c].items():
            assert np.array_equal(arrays[f"g0/edata/{key}/{name}"], value)
    for nt in ours.ntypes:
        for name, value in ours.ndata[nt].items():
            assert np.array_equal(arrays[f"g0/ndata/{nt}/{name}"], value)
