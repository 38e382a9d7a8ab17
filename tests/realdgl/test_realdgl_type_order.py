"""DGL's readers give the same answers on our output as on DGL's pipeline output,
on graphs whose type IDs are not in the sorted order of their names.

The inputs, assignments and DGL 2.1.0 pipeline outputs are the golden
``tests/data/golden/type-order/<case>/`` (``scripts/make-golden.py``): node types
``user, item, tag``; ``Paper2, author, A_b, zz, B10`` (upper case, digits, five
types, six relations, three partitions); one type in eleven partitions; and, without a
DGL pipeline output, a synthetic graph of twelve node types ``t11, t3, t10, ...`` and
fourteen relations (``t10`` sorts before ``t2``). For each case we write the DGL
format, ``--use-graphbolt`` and ``convert-graphbolt`` outputs,
and one DGL process (about 6 s) converts copies with DGL's own
``dgl_partition_to_graphbolt`` and reads everything with ``load_partition_book``,
``load_partition`` (both formats) and, for the one-partition output, ``DistGraph``.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked import convert_to_graphbolt
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.dgl import read_tensor_dict
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

from .harness import assert_same_array, run_dgl_json

pytestmark = pytest.mark.realdgl

CASES = ("user-item-tag", "mixed-names", "one-type")
ALL = (1, 1, 1)  # store_eids, store_inner_node, store_inner_edge
BASE = DispatchOptions(save_orig_nids=True, save_orig_eids=True)
# compared with DGL 2.1.0's converter: its file, without DGL >= 2.3's _dgl2gb_eid / _gb_dst_id
GRAPHBOLT = replace(
    BASE,
    graphbolt=GraphBoltOptions(store_eids=True, store_inner_node=True, store_inner_edge=True),
    graph_formats=("csc",),
)
MANY_NTYPES = [f"t{i}" for i in (11, 3, 10, 0, 7, 2, 9, 1, 8, 4, 6, 5)]
MANY_ETYPES = [f"{MANY_NTYPES[a]}:r{k}:{MANY_NTYPES[(a * 5 + k) % 12]}" for k, a in enumerate([*range(12), 3, 8])]


def _dispatch(golden: Path, assignment: Any, out: Path, options: DispatchOptions) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave some partitions without nodes of a type
        if isinstance(assignment, str):
            dispatch(golden / "chunked", golden / assignment, out, options=options)
        else:
            dispatch(open_chunked_graph(golden / "chunked"), assignment, out, num_parts=3, options=options)
    return out


def _many_types(root: Path) -> tuple[Path, Any]:
    """The synthetic twelve-type graph and a seeded assignment into three partitions."""
    spec = SynthSpec(
        graph_name="many",
        node_types={t: 10 + i for i, t in enumerate(MANY_NTYPES)},
        edge_types={e: 15 + k for k, e in enumerate(MANY_ETYPES)},
        node_features={MANY_NTYPES[0]: {"x": (2, "float32")}},
        seed=3,
    )
    write_synthetic_graph(root / "chunked", spec)
    return root, assign_partitions(open_chunked_graph(root / "chunked"), 3, seed=4)


@pytest.fixture(scope="module")
def runs(golden_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every output of every case, and what one DGL process read from them."""
    root = tmp_path_factory.mktemp("type-order")
    outs: dict[str, dict[str, Path]] = {}
    convert: list[dict[str, Any]] = []
    for case in (*CASES, "many-types"):
        golden, work = golden_dir / "type-order" / case, root / case
        assignment: Any = "partition_assignment"
        o = outs[case] = {"dgl-pipeline": golden / "pipeline_out"}
        if case == "many-types":  # no DGL pipeline output
            golden, assignment = _many_types(work)
            o = outs[case] = {}
        o["ours"] = _dispatch(golden, assignment, work / "ours", BASE)
        o["ours-gb"] = _dispatch(golden, assignment, work / "ours-gb", GRAPHBOLT)
        o["ours-converted"] = work / "ours-converted"
        shutil.copytree(o["ours"], o["ours-converted"])
        convert_to_graphbolt(
            o["ours-converted"], store_eids=True, store_inner_node=True, store_inner_edge=True, graph_formats=["csc"]
        )
        for name, source in (("dgl-on-ours", o["ours"]), ("dgl-on-pipeline", o.get("dgl-pipeline"))):
            if source is None:
                continue
            o[name] = work / name
            shutil.copytree(source, o[name])
            convert.append({"config": str(o[name] / "metadata.json"), "flags": ALL, "debug": False})
    # DGL_DIST_DEBUG: DGL's converter stores every field whatever the flags; so must we
    golden, work = golden_dir / "type-order" / "user-item-tag", root / "debug"
    debug = outs["debug"] = {}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DGL_DIST_DEBUG", "1")
        debug["ours-gb"] = _dispatch(
            golden,
            "partition_assignment",
            work / "ours-gb",
            replace(GRAPHBOLT, graphbolt=replace(GRAPHBOLT.graphbolt, store_eids=False)),
        )
        debug["ours-converted"] = work / "ours-converted"
        shutil.copytree(outs["user-item-tag"]["ours"], debug["ours-converted"])
        convert_to_graphbolt(debug["ours-converted"], store_eids=False, graph_formats=["csc"])
    debug["dgl-on-ours"] = work / "dgl-on-ours"
    shutil.copytree(outs["user-item-tag"]["ours"], debug["dgl-on-ours"])
    convert.append({"config": str(debug["dgl-on-ours"] / "metadata.json"), "flags": (0, 0, 0), "debug": True})
    # one partition, for DistGraph's standalone mode
    single = {
        "ours": _dispatch(golden, "partition_assignment_1", root / "single", BASE),
        "dgl-pipeline": golden / "pipeline_out_1",
    }

    inspect = [(case, name) for case, o in outs.items() for name in o]
    spec = {
        "convert": convert,
        "inspect": [str(outs[case][name] / "metadata.json") for case, name in inspect],
        "distgraph": [str(single[name] / "metadata.json") for name in ("ours", "dgl-pipeline")],
    }
    (root / "spec.json").write_text(json.dumps(spec))
    arrays, info = run_dgl_json("type-order", str(root / "spec.json"))
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for j, key in enumerate(inspect):
        prefix = f"i{j}/"
        seen[key] = {
            "facts": info["inspect"][j],
            "arrays": {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)},
        }
    dist = [
        {"facts": info["distgraph"][j], "arrays": {k[3:]: v for k, v in arrays.items() if k.startswith(f"d{j}/")}}
        for j in range(2)
    ]
    return {"outs": outs, "seen": seen, "single": single, "distgraph": dist}


def _config_text(out: Path) -> str:
    return (out / "metadata.json").read_text()


def _type_order(case: str, golden_dir: Path) -> tuple[list[str], list[str]]:
    if case == "many-types":
        return MANY_NTYPES, MANY_ETYPES
    meta = json.loads((golden_dir / "type-order" / case / "chunked" / "metadata.json").read_text())
    return meta["node_type"], meta["edge_type"]


@pytest.mark.parametrize("case", [*CASES, "many-types"])
def test_dgl_converter_on_our_output_equals_our_graphbolt_outputs(runs, case, golden_dir):
    """dgl_partition_to_graphbolt on our DGL format = --use-graphbolt = convert-graphbolt, field by field."""
    seen = runs["seen"]
    dgl, gb, conv = (seen[case, n] for n in ("dgl-on-ours", "ours-gb", "ours-converted"))
    assert set(gb["arrays"]) == set(dgl["arrays"]) - {k for k in dgl["arrays"] if "/dgl/" in k}
    for ours in (gb, conv):
        for key, value in ours["arrays"].items():
            assert_same_array(value, dgl["arrays"][key], key)
    ntypes, etypes = _type_order(case, golden_dir)
    hetero = len(ntypes) > 1
    for p, part in enumerate(dgl["facts"]["parts"]):
        want = part["gb"]
        assert gb["facts"]["parts"][p]["gb"] == conv["facts"]["parts"][p]["gb"] == want
        assert want["verified"]  # DGL's own check of the GraphBolt partition against its book
        if hetero:  # the type IDs are the input's order, in that order
            assert list(want["node_type_to_id"].items()) == [(t, i) for i, t in enumerate(ntypes)]
            assert list(want["edge_type_to_id"].items()) == [(e, i) for i, e in enumerate(etypes)]
            assert want["type_per_edge"] == "torch.int8"
        else:
            assert want["node_type_to_id"] is None and want["type_per_edge"] is None
        assert want["node_type_offset"] is None
        assert [k for k, _ in want["node_attributes"]] == ["_ID", "inner_node"]
        assert [k for k, _ in want["edge_attributes"]] == ["_ID", "inner_edge"]
    if case == "many-types":
        return
    # the same type maps, in the same order, as DGL's converter gives on DGL's pipeline output
    theirs = seen[case, "dgl-on-pipeline"]["facts"]["parts"]
    for p, part in enumerate(dgl["facts"]["parts"]):
        for key in ("node_type_to_id", "edge_type_to_id", "ntypes", "etypes"):
            assert _ordered(part["gb"][key]) == _ordered(theirs[p]["gb"][key]), key


def _ordered(value: Any) -> Any:
    """A dict as its list of items (so that order counts), anything else as it is."""
    return list(value.items()) if isinstance(value, dict) else value


@pytest.mark.parametrize("case", [*CASES, "many-types"])
def test_graphbolt_configs_as_dgl_converter_writes_them(runs, case):
    outs = runs["outs"][case]
    dgl_text = _config_text(outs["dgl-on-ours"])
    assert _config_text(outs["ours-converted"]) == dgl_text  # byte for byte
    # --use-graphbolt writes no graph.dgl: DGL's document without part_graph
    want = json.loads(dgl_text)
    for key, value in want.items():
        if key.startswith("part-"):
            del value["part_graph"]
    assert list(json.loads(_config_text(outs["ours-gb"])).items()) == list(want.items())
    if case == "many-types":
        return
    pipeline = json.loads(_config_text(outs["dgl-on-pipeline"]))
    pipeline["part_method"] = want["part_method"]  # DGL's pipeline always writes "metis"
    assert json.dumps(json.loads(dgl_text)) == json.dumps(pipeline)


@pytest.mark.parametrize("case", CASES)
def test_dgl_readers_answer_the_same_on_ours_and_on_dgl_pipeline_output(runs, case):
    """load_partition_book and load_partition (graph.dgl and GraphBolt): same types, maps and books."""
    seen = runs["seen"]
    for ours_name, dgl_name in (("ours", "dgl-pipeline"), ("ours-gb", "dgl-on-pipeline")):
        ours, dgl = seen[case, ours_name], seen[case, dgl_name]
        for p, (mine, theirs) in enumerate(zip(ours["facts"]["parts"], dgl["facts"]["parts"], strict=True)):
            for key in ("book", "graph_name", "ntypes", "etypes"):
                assert mine[key] == theirs[key], (ours_name, p, key)
            for key, value in dgl["arrays"].items():
                if key.startswith(f"p{p}/book/"):
                    assert_same_array(ours["arrays"][key], value, key)
            kind = "gb" if ours_name == "ours-gb" else "dgl"
            for key in ("ntypes", "etypes", *(("node_type_to_id", "edge_type_to_id") if kind == "gb" else ())):
                assert _ordered(mine[kind][key]) == _ordered(theirs[kind][key]), (ours_name, p, key)
            # every owned node and edge has the same type under the same new ID
            for what, ids, types in _typed_ids(kind, p):
                got = _pairs(ours["arrays"], ids, types, what)
                assert got == _pairs(dgl["arrays"], ids, types, what), (ours_name, p, what)


def _typed_ids(kind: str, p: int) -> list[tuple[str, str, str | None]]:
    if kind == "dgl":
        return [
            ("inner_node", f"p{p}/dgl/ndata/_ID", f"p{p}/dgl/ndata/_TYPE"),
            ("inner_edge", f"p{p}/dgl/edata/_ID", f"p{p}/dgl/edata/_TYPE"),
        ]
    return [
        ("inner_node", f"p{p}/gb/node_attributes/_ID", None),
        ("inner_edge", f"p{p}/gb/edge_attributes/_ID", f"p{p}/gb/type_per_edge"),
    ]


def _pairs(arrays: dict[str, np.ndarray], ids: str, types: str | None, flag: str) -> list[tuple[int, int]]:
    """Sorted (new ID, type) of the owned rows (``inner_node`` / ``inner_edge`` = 1)."""
    base = ids.rsplit("/", 1)[0]
    mask = arrays[f"{base}/{flag}"].astype(bool)
    typ = arrays[types][mask] if types in arrays else np.zeros(int(mask.sum()), np.int64)
    return sorted(zip(arrays[ids][mask].tolist(), typ.tolist(), strict=True))


def test_distgraph_on_ours_equals_distgraph_on_dgl_pipeline_output(runs):
    """Standalone DistGraph: types, IDs, partition book; features and edges through the original IDs."""
    (ours, dgl), single = runs["distgraph"], runs["single"]
    assert ours["facts"] == dgl["facts"]
    assert ours["facts"]["ntypes"] == ["user", "item", "tag"]
    assert ours["facts"]["ntype_ids"] == {"user": 0, "item": 1, "tag": 2}
    orig = {name: _orig_ids(single[name] / "part0") for name in single}
    for key, value in dgl["arrays"].items():
        if key.startswith("book/"):
            assert_same_array(ours["arrays"][key], value, key)
        elif key.startswith("ndata/"):  # row k is the node whose original ID is orig_nids[k]
            ntype = key.split("/")[1]
            mine, theirs = (
                out["arrays"][key][np.argsort(orig[name][0][ntype])]
                for out, name in ((ours, "ours"), (dgl, "dgl-pipeline"))
            )
            assert_same_array(mine, theirs, key)
    for etype in ours["facts"]["etypes"]:
        src_t, _, dst_t = etype.split(":")
        edges = []
        for out, name in ((ours, "ours"), (dgl, "dgl-pipeline")):
            nids, eids = orig[name]
            src, dst = out["arrays"][f"find_edges/{etype}/src"], out["arrays"][f"find_edges/{etype}/dst"]
            edges.append(
                sorted(zip(eids[etype].tolist(), nids[src_t][src].tolist(), nids[dst_t][dst].tolist(), strict=True))
            )
        assert edges[0] == edges[1] and len(edges[0]) > 0, etype


def _orig_ids(part: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    return read_tensor_dict(part / "orig_nids.dgl"), read_tensor_dict(part / "orig_eids.dgl")


def test_debug_mode_stores_every_field_as_dgl_converter_does(runs):
    """DGL_DIST_DEBUG: _TYPE, inner_node, inner_edge and _ID always, cast as DGL casts them."""
    seen = runs["seen"]
    dgl, gb, conv = (seen["debug", n] for n in ("dgl-on-ours", "ours-gb", "ours-converted"))
    for ours in (gb, conv):
        assert {k for k in ours["arrays"] if "/dgl/" not in k} == {k for k in dgl["arrays"] if "/dgl/" not in k}
        for key, value in ours["arrays"].items():
            assert_same_array(value, dgl["arrays"][key], key)
    for p, part in enumerate(dgl["facts"]["parts"]):
        want = part["gb"]
        assert gb["facts"]["parts"][p]["gb"] == conv["facts"]["parts"][p]["gb"] == want
        assert want["node_attributes"] == [
            ["_ID", "torch.int64"],
            ["_TYPE", "torch.int8"],
            ["inner_node", "torch.uint8"],
        ]
        assert want["edge_attributes"] == [
            ["_ID", "torch.int64"],
            ["_TYPE", "torch.int8"],
            ["inner_edge", "torch.uint8"],
        ]
        assert want["verified"]
