"""dispatch --use-graphbolt and convert-graphbolt without torch: same bytes both ways, verify, CLI.

Real DGL's view of these files is checked in tests/realdgl/test_realdgl_graphbolt.py.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

from dgl_chunked import convert_to_graphbolt
from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE, read_graphbolt_graph, write_graphbolt_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output, verify_partitions

ORIG = DispatchOptions(save_orig_nids=True, save_orig_eids=True)
GB = replace(ORIG, graphbolt=GraphBoltOptions(store_eids=True, store_inner_node=True, store_inner_edge=True))


@pytest.fixture(scope="module")
def hetero(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A heterogeneous graph dispatched to DGL's format and to GraphBolt (all flags)."""
    tmp = tmp_path_factory.mktemp("gb")
    write_synthetic_graph(tmp / "chunked", SynthSpec.heterogeneous(scale=1, seed=4))
    graph = open_chunked_graph(tmp / "chunked")
    parts = assign_partitions(graph, 3, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(graph, parts, tmp / "dgl", num_parts=3, options=ORIG)
        dispatch(graph, parts, tmp / "gb", num_parts=3, options=GB)
    return tmp / "chunked", tmp / "dgl", tmp / "gb"


def test_graphbolt_output_layout_and_config(hetero):
    _, dgl_out, gb_out = hetero
    doc = json.loads((gb_out / "metadata.json").read_text())
    assert doc["node_map_dtype"] == doc["edge_map_dtype"] == "int64"
    for p in range(3):
        assert doc[f"part-{p}"] == {
            "node_feats": f"part{p}/node_feat.dgl",
            "edge_feats": f"part{p}/edge_feat.dgl",
            "part_graph_graphbolt": f"part{p}/{GRAPHBOLT_FILE}",
        }
        assert sorted(f.name for f in (gb_out / f"part{p}").iterdir()) == sorted(
            ["edge_feat.dgl", "node_feat.dgl", "orig_eids.dgl", "orig_nids.dgl", GRAPHBOLT_FILE]
        )


def test_graphbolt_fields_equal_the_dgl_format_partition(hetero):
    _, dgl_out, gb_out = hetero
    _, parts = load_partition_output(dgl_out)
    for p, part in enumerate(parts):
        g = read_graphbolt_graph(gb_out / f"part{p}" / GRAPHBOLT_FILE)
        order = np.argsort(part.dst, kind="stable")  # CSC: by destination, edge ID order inside
        np.testing.assert_array_equal(g.indices, part.src[order])
        np.testing.assert_array_equal(np.diff(g.indptr), np.bincount(part.dst, minlength=g.total_num_nodes))
        np.testing.assert_array_equal(g.type_per_edge, part.edata["_TYPE"][order])
        np.testing.assert_array_equal(g.edge_attributes["_ID"], part.edata["_ID"][order])
        np.testing.assert_array_equal(g.edge_attributes["inner_edge"], part.edata["inner_edge"][order])
        np.testing.assert_array_equal(g.node_attributes["_ID"], part.ndata["_ID"])
        np.testing.assert_array_equal(g.node_attributes["inner_node"], part.ndata["inner_node"])
        assert g.indices.dtype == np.int32 and g.type_per_edge.dtype == np.int8


def test_convert_graphbolt_equals_direct_dispatch_bytes(hetero, tmp_path):
    _, dgl_out, gb_out = hetero
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dgl_out, copy)
    before = json.loads((copy / "metadata.json").read_text())
    convert_to_graphbolt(copy, store_eids=True, store_inner_node=True, store_inner_edge=True)
    after = json.loads((copy / "metadata.json").read_text())
    for p in range(3):
        assert (copy / f"part{p}" / GRAPHBOLT_FILE).read_bytes() == (gb_out / f"part{p}" / GRAPHBOLT_FILE).read_bytes()
        assert after[f"part-{p}"] == {**before[f"part-{p}"], "part_graph_graphbolt": f"part{p}/{GRAPHBOLT_FILE}"}
        assert not list((copy / f"part{p}").glob("*.tmp"))
    assert {k: v for k, v in after.items() if not k.startswith("part-") and not k.endswith("map_dtype")} == {
        k: v for k, v in before.items() if not k.startswith("part-")
    }
    from dgl_chunked.errors import OutputExistsError

    with pytest.raises(OutputExistsError, match="fused_csc_sampling_graph.pt already exists"):
        convert_to_graphbolt(copy)  # never replaces a GraphBolt file unasked
    convert_to_graphbolt(copy, overwrite=True)  # DGL 2.3 / 2.4's defaults
    assert list(read_graphbolt_graph(copy / "part0" / GRAPHBOLT_FILE).edge_attributes) == [
        "_ID",
        "_dgl2gb_eid",
        "_gb_dst_id",
    ]
    convert_to_graphbolt(copy, store_eids=False, graph_formats=["csc"], overwrite=True)  # DGL 2.1's
    assert read_graphbolt_graph(copy / "part0" / GRAPHBOLT_FILE).edge_attributes == {}


def test_convert_graphbolt_never_alters_an_output_it_did_not_write(hetero, tmp_path):
    """Without our marker (e.g. DGL's output) the config stays byte for byte and a
    <name>_graphbolt.json goes beside it; an existing .pt is not replaced, even with overwrite."""
    import shutil

    from dgl_chunked.errors import OutputExistsError

    _, dgl_out, gb_out = hetero
    copy = tmp_path / "foreign"
    shutil.copytree(dgl_out, copy)
    (copy / ".dglc-owned.json").unlink()
    original = (copy / "metadata.json").read_bytes()
    path = convert_to_graphbolt(copy, store_eids=True, store_inner_node=True, store_inner_edge=True)
    assert path == str(copy / "metadata_graphbolt.json")
    assert (copy / "metadata.json").read_bytes() == original
    doc = json.loads((copy / "metadata_graphbolt.json").read_text())
    assert doc["part-0"]["part_graph_graphbolt"] == f"part0/{GRAPHBOLT_FILE}"
    for p in range(3):
        assert (copy / f"part{p}" / GRAPHBOLT_FILE).read_bytes() == (gb_out / f"part{p}" / GRAPHBOLT_FILE).read_bytes()
    pt = (copy / "part0" / GRAPHBOLT_FILE).read_bytes()
    with pytest.raises(OutputExistsError, match="dgl_chunked did not write it"):
        convert_to_graphbolt(copy, overwrite=True)
    assert (copy / "part0" / GRAPHBOLT_FILE).read_bytes() == pt and (copy / "metadata.json").read_bytes() == original


def test_multi_pass_sort_gives_the_same_bytes(hetero, tmp_path):
    chunked, _, gb_out = hetero
    graph = open_chunked_graph(chunked)
    parts = assign_partitions(graph, 3, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(
            graph,
            parts,
            tmp_path / "small",
            num_parts=3,
            options=replace(GB, graphbolt=replace(GB.graphbolt, sort_bytes=32 * 500)),
        )
    for p in range(3):
        got = (tmp_path / "small" / f"part{p}" / GRAPHBOLT_FILE).read_bytes()
        assert got == (gb_out / f"part{p}" / GRAPHBOLT_FILE).read_bytes()


def test_verify_reads_graphbolt_partitions_and_catches_a_wrong_edge(hetero, tmp_path):
    chunked, _, gb_out = hetero
    graph = open_chunked_graph(chunked)
    assert verify_partitions(graph, gb_out).ok
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(gb_out, bad)
    path = bad / "part1" / GRAPHBOLT_FILE
    g = read_graphbolt_graph(path)
    g.indices[5] = (g.indices[5] + 1) % g.total_num_nodes  # one edge now comes from another node
    write_graphbolt_graph(
        path,
        indptr=g.indptr,
        indices=g.indices,
        type_per_edge=g.type_per_edge,
        node_type_to_id=g.node_type_to_id,
        edge_type_to_id=g.edge_type_to_id,
        node_attributes=g.node_attributes,
        edge_attributes=g.edge_attributes,
    )
    report = verify_partitions(graph, bad)
    assert not report.ok and any("part1" in p or "edge" in p for p in report.problems), report.problems


def test_empty_partitions_and_types(tmp_path):
    write_synthetic_graph(tmp_path / "chunked", SynthSpec.heterogeneous(scale=1, seed=6))
    graph = open_chunked_graph(tmp_path / "chunked")
    meta = graph.metadata
    zeros = {
        t: da.zeros(n, dtype=np.int32, chunks=(graph.node_chunks(t),))
        for t, n in zip(meta.node_types, meta.num_nodes_per_type, strict=True)
    }  # every node in part 0: parts 1 and 2 are empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(graph, zeros, tmp_path / "out", num_parts=3, options=GB)
    for p in (1, 2):
        g = read_graphbolt_graph(tmp_path / "out" / f"part{p}" / GRAPHBOLT_FILE)
        assert g.total_num_nodes == 0 and g.total_num_edges == 0 and g.indptr.tolist() == [0]
        assert g.type_per_edge.shape == (0,) and g.edge_attributes["_ID"].shape == (0,)
    assert verify_partitions(graph, tmp_path / "out").ok


def test_cli_run_inspect_verify_convert(tmp_path, capsys):
    chunked = tmp_path / "chunked"
    assert main(["synth", "--out-dir", str(chunked), "--preset", "homogeneous", "--num-nodes", "300",
                 "--num-edges", "2000"]) == 0  # fmt: skip
    out = tmp_path / "out"
    args = [
        "run",
        "--in-dir",
        str(chunked),
        "--out-dir",
        str(out),
        "--num-parts",
        "2",
        "--use-graphbolt",
        "--store-eids",
        "--save-orig-nids",
        "--save-orig-eids",
        "--workers",
        "1",
        "--no-progress",
        "--graphbolt-sort-memory",
        "16KiB",
    ]  # fmt: skip  (several sort passes per partition)
    assert main(args) == 0
    capsys.readouterr()
    assert main(["inspect", str(out / "part0" / GRAPHBOLT_FILE), "--values", "2"]) == 0
    text = capsys.readouterr().out
    assert "GraphBolt FusedCSCSamplingGraph" in text and "edge_type_to_id: None" in text
    assert main(["verify", "--in-dir", str(chunked), "--out-dir", str(out)]) == 0
    (tmp_path / "trunc.pt").write_bytes((out / "part0" / GRAPHBOLT_FILE).read_bytes()[:-100])
    capsys.readouterr()
    assert main(["inspect", str(tmp_path / "trunc.pt")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "trunc.pt" in err[0]
    assert main(["convert-graphbolt", str(out)]) == 1  # no graph.dgl to convert: one clear error
    assert "part_graph" in capsys.readouterr().err
    bad = ["dispatch", "--in-dir", str(chunked), "--partitions-dir", str(tmp_path), "--out-dir", str(tmp_path / "x"),
           "--store-eids"]  # fmt: skip
    assert main(bad) != 0
    assert "only apply with --use-graphbolt" in capsys.readouterr().err


def test_convert_takes_type_ids_from_the_values_of_an_older_config(golden_dir, tmp_path):
    """An output of ours from before the pipeline's layout (every key sorted): the IDs are
    the config's values, not the sorted names, and the rewritten config lists types in ID order."""
    case = golden_dir / "type-order" / "user-item-tag"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(case / "chunked", case / "partition_assignment", tmp_path / "new", options=ORIG)
    shutil.copytree(tmp_path / "new", tmp_path / "old")
    config = tmp_path / "old" / "metadata.json"
    config.write_text(json.dumps(json.loads(config.read_text()), indent=4, sort_keys=True) + "\n")
    assert list(json.loads(config.read_text())["ntypes"]) == ["item", "tag", "user"]
    for out in ("new", "old"):
        convert_to_graphbolt(tmp_path / out, store_eids=True)
    old_doc, new_doc = (json.loads((tmp_path / o / "metadata.json").read_text()) for o in ("old", "new"))
    assert old_doc == new_doc
    for key in ("ntypes", "etypes", "node_map", "edge_map"):
        assert list(old_doc[key]) == list(new_doc[key]), key
    assert list(old_doc["ntypes"]) == ["user", "item", "tag"]
    for p in range(2):
        old, new = (read_graphbolt_graph(tmp_path / o / f"part{p}" / GRAPHBOLT_FILE) for o in ("old", "new"))
        assert list(old.node_type_to_id.items()) == [("user", 0), ("item", 1), ("tag", 2)]
        assert list(old.edge_type_to_id.items()) == list(json.loads(config.read_text())["etypes"].items())
        assert old.node_type_to_id == new.node_type_to_id and old.edge_type_to_id == new.edge_type_to_id
        np.testing.assert_array_equal(old.type_per_edge, new.type_per_edge)


@pytest.mark.parametrize("value", ["1", "0", ""])
def test_dgl_dist_debug_stores_every_field(hetero, tmp_path, monkeypatch, value):
    """DGL tests ``"DGL_DIST_DEBUG" in os.environ``: any value, even 0 or empty, is debug mode."""
    _, dgl_out, _ = hetero
    shutil.copytree(dgl_out, tmp_path / "out")
    monkeypatch.setenv("DGL_DIST_DEBUG", value)
    convert_to_graphbolt(tmp_path / "out")
    config, parts = load_partition_output(dgl_out)
    for p, part in enumerate(parts):
        g = read_graphbolt_graph(tmp_path / "out" / f"part{p}" / GRAPHBOLT_FILE)
        assert {k: v.dtype for k, v in g.node_attributes.items()} == {
            "_ID": np.int64,
            "_TYPE": np.int8,
            "inner_node": np.uint8,
        }
        assert {k: v.dtype for k, v in g.edge_attributes.items()} == {
            "_ID": np.int64,
            "_TYPE": np.int8,
            "inner_edge": np.uint8,
            "_dgl2gb_eid": np.int32,  # DGL >= 2.3 adds them after the debug mode's fields
            "_gb_dst_id": np.int32,
        }
        np.testing.assert_array_equal(g.node_attributes["_TYPE"], part.ndata["_TYPE"])
        order = np.argsort(part.dst, kind="stable")  # CSC: by destination, edge-ID order within
        np.testing.assert_array_equal(g.edge_attributes["_ID"], part.edata["_ID"][order])
        np.testing.assert_array_equal(g.edge_attributes["_TYPE"], part.edata["_TYPE"][order])
        np.testing.assert_array_equal(g.type_per_edge, part.edata["_TYPE"][order])
