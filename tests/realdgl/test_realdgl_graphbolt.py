"""GraphBolt partitions written without torch load in real DGL 2.1.0 exactly as DGL's own.

For every case the same graph and assignment are dispatched twice: to DGL's format
(``graph.dgl``) and with ``use_graphbolt``. Real DGL's ``dgl_partition_to_graphbolt``
converts a copy of the first; ``load_partition(..., use_graphbolt=True)`` of both must
give the same fields, dtypes and values, and the same pickle bytes (type maps
included: our config lists types in type-ID order, as DGL's pipeline does, and DGL's
converter numbers node types by that order). Graphs whose type names sort otherwise
than their IDs: ``test_realdgl_type_order.py``.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.dgl.partition_config import read_partition_config
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.io.graphbolt.graph_file import read_graphbolt_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output

from .harness import assert_same_arrays, graphbolt_pickle, load_graphbolts, run_dgl_json

pytestmark = pytest.mark.realdgl

FLAGS = {"none": (0, 0, 0), "all": (1, 1, 1)}  # each store flag off and on
GRAPHS = {
    "homogeneous-3": (SynthSpec.homogeneous(400, 2500, feat_dim=4), 3),
    "hetero-4": (SynthSpec.heterogeneous(scale=1, seed=2), 4),
}


def _dispatch_both(
    tmp_path: Path, spec: SynthSpec, num_parts: int, flags: tuple[int, int, int], *, dgl21: bool = False
) -> tuple[Path, Path]:
    """DGL's format and GraphBolt; ``dgl21``: the file DGL 2.1's converter writes (no
    ``_dgl2gb_eid`` / ``_gb_dst_id``), else DGL 2.3 / 2.4's (with them)."""
    write_synthetic_graph(tmp_path / "chunked", spec)
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, num_parts, seed=11)
    eids, inner_node, inner_edge = (bool(f) for f in flags)
    base = DispatchOptions(save_orig_nids=True, save_orig_eids=True)
    gb = replace(
        base, graphbolt=GraphBoltOptions(store_eids=eids, store_inner_node=inner_node, store_inner_edge=inner_edge)
    )
    gb = replace(gb, graph_formats=("csc",)) if dgl21 else gb
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave partitions without nodes of a type
        dispatch(graph, parts, tmp_path / "dgl", num_parts=num_parts, options=base)
        dispatch(graph, parts, tmp_path / "gb", num_parts=num_parts, options=gb)
    return tmp_path / "dgl", tmp_path / "gb"


@pytest.mark.parametrize("flags", list(FLAGS))
@pytest.mark.parametrize("case", list(GRAPHS))
def test_load_partition_graphbolt_equals_dgl_converter(tmp_path, case, flags):
    spec, num_parts = GRAPHS[case]
    dgl_out, gb_out = _dispatch_both(tmp_path, spec, num_parts, FLAGS[flags], dgl21=True)
    converted = tmp_path / "converted"
    shutil.copytree(dgl_out, converted)
    _, conv_info = run_dgl_json("to-graphbolt", str(converted / "metadata.json"), *map(str, FLAGS[flags]))
    (ours, ours_info), (theirs, theirs_info) = load_graphbolts(gb_out / "metadata.json", converted / "metadata.json")

    assert_same_arrays(ours, theirs)
    config = read_partition_config(gb_out)
    hetero = len(config.ntypes) > 1 or len(config.etypes) > 1
    for p in range(num_parts):
        mine, dgl = ours_info[f"p{p}"], theirs_info[f"p{p}"]
        assert mine == dgl
        if hetero:
            assert list(mine["node_type_to_id"].items()) == list(config.ntypes.items())
        assert mine.get("verified") == (FLAGS[flags][0] == 1 or None)
        # the same pickle: compare our data.pkl with DGL's
        ours_pt, dgl_pt = (
            gb_out / f"part{p}/fused_csc_sampling_graph.pt",
            converted / f"part{p}/fused_csc_sampling_graph.pt",
        )
        assert graphbolt_pickle(ours_pt) == graphbolt_pickle(dgl_pt)
        mine_g, dgl_g = read_graphbolt_graph(ours_pt), read_graphbolt_graph(dgl_pt)
        np.testing.assert_array_equal(mine_g.indices, dgl_g.indices)

    # the config: part_graph_graphbolt and int64 map dtypes as DGL's converter writes them;
    # like DGL's partition_graph(use_graphbolt=True) we write no graph.dgl
    want = conv_info["config"]
    doc = json.loads((gb_out / "metadata.json").read_text())
    assert doc["node_map_dtype"] == want["node_map_dtype"] == "int64"
    assert doc["edge_map_dtype"] == want["edge_map_dtype"] == "int64"
    for p in range(num_parts):
        assert doc[f"part-{p}"]["part_graph_graphbolt"] == want[f"part-{p}"]["part_graph_graphbolt"]
        assert "part_graph" not in doc[f"part-{p}"] and not (gb_out / f"part{p}/graph.dgl").exists()
        for name in ("node_feat.dgl", "edge_feat.dgl", "orig_nids.dgl", "orig_eids.dgl"):
            assert (gb_out / f"part{p}" / name).read_bytes() == (dgl_out / f"part{p}" / name).read_bytes()


@pytest.mark.parametrize(("case", "store_eids"), [("homogeneous", True), ("heterogeneous", False)])
def test_distgraph_server_samples_in_edges_from_graphbolt(tmp_path, monkeypatch, case, store_eids):
    """DGL 2.1.0 serves and samples our DGL 2.3 / 2.4 file (with _dgl2gb_eid / _gb_dst_id) unchanged."""
    spec = SynthSpec.homogeneous(300, 2000, feat_dim=4) if case == "homogeneous" else SynthSpec.heterogeneous(scale=1)
    dgl_out, gb_out = _dispatch_both(tmp_path, spec, 1, (int(store_eids), 0, 0))
    monkeypatch.setenv("DGLC_USE_GRAPHBOLT", "1")
    arrays, info = run_dgl_json("distgraph-server", str(gb_out / "metadata.json"))
    config, (part,) = load_partition_output(dgl_out)
    nid, eid = part.ndata["_ID"], part.edata["_ID"]
    src, dst = nid[part.src], nid[part.dst]  # every edge's endpoints as new homogeneous IDs
    for key, value in part.node_feats.items():
        ntype, name = key.split("/")
        np.testing.assert_array_equal(arrays[f"ndata/{ntype}/{name}"], value)
    if case == "homogeneous":
        got_eid = arrays.get("sample/eid", np.zeros(len(arrays["sample/src"])))
        got = sorted(zip(arrays["sample/dst"], arrays["sample/src"], got_eid, strict=True))
        want = sorted(zip(dst, src, eid if store_eids else np.zeros(len(src)), strict=True))
        assert got == want  # every node is a seed: exactly every in-edge, once
        assert ("sample/eid" in arrays) == store_eids
        return
    starts = {t: r[0][0] for t, r in config.node_map.items()}
    etype_of = part.edata["_TYPE"]
    for etype, r in config.etypes.items():
        s_type, _, d_type = etype.split(":")
        mask = etype_of == r
        want = sorted(zip(dst[mask] - starts[d_type], src[mask] - starts[s_type], strict=True))
        got_dst, got_src = arrays.get(f"sample/{etype}/dst", []), arrays.get(f"sample/{etype}/src", [])
        assert sorted(zip(got_dst, got_src, strict=True)) == want, etype
        if store_eids and mask.any():
            e_start = config.edge_map[etype][0][0]
            assert sorted(arrays[f"sample/{etype}/eid"]) == sorted(eid[mask] - e_start)


@pytest.mark.parametrize("kind", ["homogeneous", "heterogeneous"])
def test_convert_graphbolt_of_dgl_partition_graph_output_equals_dgl_converter(tmp_path, kind):
    """DGL's own partitions (partition_graph): convert-graphbolt and DGL's converter agree on every field."""
    from dgl_chunked import convert_to_graphbolt

    run_dgl_json("dgl-partition", str(tmp_path / "dgl"), "2", kind)
    shutil.copytree(tmp_path / "dgl", tmp_path / "ours")
    config = tmp_path / "dgl" / "dglgraph.json"
    run_dgl_json("to-graphbolt", str(config), "1", "1", "0")
    original = (tmp_path / "ours" / "dglgraph.json").read_bytes()
    converted = convert_to_graphbolt(  # DGL 2.1's file: its converter knows no graph_formats
        tmp_path / "ours" / "dglgraph.json", store_eids=True, store_inner_node=True, graph_formats=["csc"]
    )
    assert converted == str(tmp_path / "ours" / "dglgraph_graphbolt.json")  # DGL's own config is not altered
    assert (tmp_path / "ours" / "dglgraph.json").read_bytes() == original
    (ours, ours_info), (theirs, theirs_info) = load_graphbolts(converted, config)
    assert ours_info == theirs_info  # DGL's config lists types in ID order
    assert_same_arrays(ours, theirs)
    for p in range(2):
        name = f"part{p}/fused_csc_sampling_graph.pt"
        assert graphbolt_pickle(tmp_path / "ours" / name) == graphbolt_pickle(tmp_path / "dgl" / name)
    assert json.loads(Path(converted).read_text()) == json.loads(config.read_text())


def test_empty_partitions_load_in_real_dgl(tmp_path):
    """Every node in partition 0 of 3: partitions 1 and 2 hold no nodes and no edges."""
    import dask.array as da

    write_synthetic_graph(tmp_path / "chunked", SynthSpec.heterogeneous(scale=1, seed=8))
    graph = open_chunked_graph(tmp_path / "chunked")
    meta = graph.metadata
    zeros = {
        t: da.zeros(n, dtype=np.int32, chunks=(graph.node_chunks(t),))
        for t, n in zip(meta.node_types, meta.num_nodes_per_type, strict=True)
    }
    gb = DispatchOptions(graphbolt=GraphBoltOptions(store_eids=True, store_inner_node=True, store_inner_edge=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(graph, zeros, tmp_path / "gb", num_parts=3, options=gb)
    arrays, info = run_dgl_json("graphbolt", str(tmp_path / "gb" / "metadata.json"))
    assert info["p0"]["verified"]  # DGL's own check (it cannot build an empty heterograph for p1, p2)
    assert info["p1"]["type"] == info["p2"]["type"] == "FusedCSCSamplingGraph"
    for p in (1, 2):
        assert arrays[f"p{p}/gb/csc_indptr"].tolist() == [0] and arrays[f"p{p}/gb/indices"].shape == (0,)
        assert arrays[f"p{p}/gb/type_per_edge"].dtype == np.int8
    assert arrays["p0/gb/indices"].shape[0] == sum(meta.num_edges_per_type)
