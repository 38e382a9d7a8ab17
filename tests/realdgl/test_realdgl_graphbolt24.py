"""GraphBolt as DGL 2.3 / 2.4 write and read it, checked with DGL v2.4.0's own code on DGL 2.1.0.

DGL 2.4.0 is not on PyPI, so ``dgl_side_gb24.py`` runs DGL v2.4.0's converter and
``find_edges`` source (vendored verbatim in ``dgl240_converter.py``) inside the DGL 2.1.0
venv. Checked here:

- our ``dispatch --use-graphbolt`` and ``convert-graphbolt`` equal v2.4.0's
  ``dgl_partition_to_graphbolt`` field by field and pickle byte for byte, under
  GraphStorm's call (``store_eids=True, graph_formats="coo"``), DGL's defaults, DGL
  2.1's flags and debug mode; DGL 2.1.0's ``load_partition(use_graphbolt=True)`` loads
  both and its own partition check passes;
- link prediction: a ``DistEdgeDataLoader`` with negative sampling and
  ``DistGraph.find_edges`` on a real DistGraphServer serving our file (v2.4.0's
  ``find_edges``, which reads ``_dgl2gb_eid`` / ``_gb_dst_id``; DGL 2.1's own refuses
  GraphBolt), every edge against the DGL-format partition; a DGL 2.1-style file without
  the two attributes fails there with v2.4.0's error;
- ``convert-graphbolt --graphbolt-dir``: DGL 2.1.0 loads the new folder's config (its
  paths lead back to the original's files).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked import convert_to_graphbolt
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.dgl.partition_config import read_partition_config
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE, read_graphbolt_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output

from .harness import assert_same_array, assert_same_arrays, graphbolt_pickle, load_graphbolts, run_dgl_json

pytestmark = pytest.mark.realdgl

SIDE = Path(__file__).with_name("dgl_side_gb24.py")
GRAPHS = {
    "homogeneous-3": (SynthSpec.homogeneous(400, 2500, feat_dim=4), 3),
    "hetero-4": (SynthSpec.heterogeneous(scale=1, seed=2), 4),
}
# name: (v2.4.0 converter's graph_formats, store_eids, inner_node, inner_edge, debug)
CALLS = {
    "graphstorm": ("coo", 1, 0, 0, 0),  # GraphStorm's call (gconstruct / dist partition scripts)
    "defaults": ("none", 1, 0, 0, 0),  # dgl_partition_to_graphbolt(config): coo decided by graph.dgl
    "dgl21-flags": ("csc", 0, 0, 0, 0),  # what DGL 2.1 wrote
    "all-debug": ("none", 1, 1, 1, 1),  # DGL_DIST_DEBUG: every field, then the two
}


def _dispatch(tmp_path: Path, spec: SynthSpec, num_parts: int, gb: DispatchOptions | None) -> tuple[Path, Path]:
    write_synthetic_graph(tmp_path / "chunked", spec)
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, num_parts, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave partitions without nodes of a type
        dispatch(graph, parts, tmp_path / "dgl", num_parts=num_parts, options=DispatchOptions())
        if gb is not None:
            dispatch(graph, parts, tmp_path / "gb", num_parts=num_parts, options=gb)
    return tmp_path / "dgl", tmp_path / "gb"


@pytest.mark.parametrize(
    ("case", "call"),
    [
        ("homogeneous-3", "graphstorm"),
        ("homogeneous-3", "dgl21-flags"),
        ("hetero-4", "graphstorm"),
        ("hetero-4", "defaults"),
        ("hetero-4", "all-debug"),
    ],
)
def test_both_routes_equal_dgl_240s_converter(tmp_path, monkeypatch, case, call):
    formats, eids, inner_node, inner_edge, debug = CALLS[call]
    spec, num_parts = GRAPHS[case]
    graph_formats = None if formats == "none" else (formats,)
    gb = DispatchOptions(
        graphbolt=GraphBoltOptions(
            store_eids=bool(eids), store_inner_node=bool(inner_node), store_inner_edge=bool(inner_edge)
        ),
        graph_formats=graph_formats or ("coo",),  # dispatch: graph.dgl would hold COO, as DGL's default
    )
    if debug:
        monkeypatch.setenv("DGL_DIST_DEBUG", "1")
    dgl_out, gb_out = _dispatch(tmp_path, spec, num_parts, gb)
    for copy in ("v24", "ours"):
        shutil.copytree(dgl_out, tmp_path / copy)
    _, conv = run_dgl_json("convert24", str(tmp_path / "v24" / "metadata.json"), formats,
                           *map(str, (eids, inner_node, inner_edge, debug)), script=SIDE)  # fmt: skip
    convert_to_graphbolt(
        tmp_path / "ours",
        store_eids=bool(eids),
        store_inner_node=bool(inner_node),
        store_inner_edge=bool(inner_edge),
        graph_formats=graph_formats,
    )
    monkeypatch.delenv("DGL_DIST_DEBUG", raising=False)
    outs = (tmp_path / "v24", gb_out, tmp_path / "ours")
    (theirs, theirs_info), *loaded = load_graphbolts(*(out / "metadata.json" for out in outs))
    coo = call != "dgl21-flags"
    for out, (ours, ours_info) in zip(outs[1:], loaded, strict=True):
        assert_same_arrays(ours, theirs)
        for p in range(num_parts):
            assert ours_info[f"p{p}"] == theirs_info[f"p{p}"]  # types, maps, dtypes, attribute order
            names = [name for name, _ in ours_info[f"p{p}"]["edge_attributes"]]
            assert (names[-2:] == ["_dgl2gb_eid", "_gb_dst_id"]) is coo
            assert ours_info[f"p{p}"].get("verified") == (eids == 1 or None)  # DGL 2.1's own check
            name = f"part{p}/{GRAPHBOLT_FILE}"
            assert graphbolt_pickle(out / name) == graphbolt_pickle(tmp_path / "v24" / name)
    assert json.loads((tmp_path / "ours" / "metadata.json").read_text()) == conv["config"]


def _truth(dgl_out: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per etype: every edge's (src, dst) as per-type IDs, indexed by per-type edge ID (1 partition)."""
    config, (part,) = load_partition_output(dgl_out)
    nid, eid, etype_of = part.ndata["_ID"], part.edata["_ID"], part.edata["_TYPE"]
    starts = {t: r[0][0] for t, r in config.node_map.items()}
    out = {}
    for etype, r in config.etypes.items():
        s_type, _, d_type = etype.split(":")
        mask = etype_of == r
        order = np.argsort(eid[mask] - config.edge_map[etype][0][0])
        src, dst = nid[part.src[mask]] - starts[s_type], nid[part.dst[mask]] - starts[d_type]
        out[etype] = (src[order], dst[order])
    return out


@pytest.mark.parametrize("case", ["homogeneous", "heterogeneous"])
def test_link_prediction_on_our_graphbolt_partition(tmp_path, case):
    spec = SynthSpec.homogeneous(300, 2000, feat_dim=4) if case == "homogeneous" else SynthSpec.heterogeneous(scale=1)
    dgl_out, gb_out = _dispatch(tmp_path, spec, 1, DispatchOptions(graphbolt=GraphBoltOptions()))
    arrays, info = run_dgl_json("linkpred", str(gb_out / "metadata.json"), script=SIDE)
    assert info["dgl21_find_edges"] == "AttributeError"  # DGL 2.1 alone has no find_edges on GraphBolt
    assert info["server_exit_status"] == 0 and info["batches"] > 0 and info["block_edges"] > 0
    config = read_partition_config(dgl_out)
    for etype, (src, dst) in _truth(dgl_out).items():
        if src.size == 0:
            continue
        np.testing.assert_array_equal(arrays[f"find/{etype}/src"], src)
        np.testing.assert_array_equal(arrays[f"find/{etype}/dst"], dst)
        eid = arrays[f"lp/{etype}/eid"]
        np.testing.assert_array_equal(np.sort(eid), np.arange(src.size))  # every edge once
        np.testing.assert_array_equal(arrays[f"lp/{etype}/src"], src[eid])
        np.testing.assert_array_equal(arrays[f"lp/{etype}/dst"], dst[eid])
        # Uniform(2): each positive source twice, destinations drawn from the destination type
        np.testing.assert_array_equal(np.sort(arrays[f"lp/{etype}/neg_src"]), np.sort(np.repeat(src[eid], 2)))
        d_type = etype.split(":")[2]
        neg_dst = arrays[f"lp/{etype}/neg_dst"]
        assert neg_dst.min() >= 0 and neg_dst.max() < np.diff(config.node_map[d_type][0])[0]


def test_link_prediction_needs_the_two_attributes(tmp_path):
    """Without _dgl2gb_eid / _gb_dst_id (graph formats without COO, as DGL 2.1 wrote): DGL
    v2.4.0's find_edges refuses the file (edge _ID kept: the server's partition check needs it)."""
    dgl21 = DispatchOptions(graphbolt=GraphBoltOptions(), graph_formats=("csc",))
    _, gb_out = _dispatch(tmp_path, SynthSpec.homogeneous(200, 900, feat_dim=2), 1, dgl21)
    with pytest.raises(AssertionError, match="DGL2GB_EID and GB_DST_ID are not found"):
        run_dgl_json("linkpred", str(gb_out / "metadata.json"), script=SIDE)


def test_graphbolt_dir_loads_in_real_dgl(tmp_path):
    dgl_out, _ = _dispatch(tmp_path, SynthSpec.heterogeneous(scale=1, seed=3), 2, None)
    config = convert_to_graphbolt(dgl_out, graphbolt_dir=tmp_path / "gbdir")
    shutil.copytree(dgl_out, tmp_path / "beside")
    convert_to_graphbolt(tmp_path / "beside")
    (theirs, theirs_info), (ours, ours_info) = load_graphbolts(tmp_path / "beside" / "metadata.json", config)
    assert ours_info["p0"] == theirs_info["p0"] and ours_info["p0"]["verified"]
    for key in theirs:
        assert_same_array(ours[key], theirs[key], key)
    # DGL 2.1's load_partition of the DGL format through the redirected paths: graph and features
    arrays, info = run_dgl_json("partition", config)
    want, _ = run_dgl_json("partition", str(dgl_out / "metadata.json"))
    assert_same_arrays(arrays, want)
    assert not (tmp_path / "gbdir" / "part0" / "graph.dgl").exists()
    assert read_graphbolt_graph(tmp_path / "gbdir" / "part1" / GRAPHBOLT_FILE).edge_attributes is not None
