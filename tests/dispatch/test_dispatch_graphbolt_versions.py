"""GraphBolt output per DGL version, both routes, and ``convert-graphbolt --graphbolt-dir``.

- DGL 2.3 / 2.4 defaults (edge ``_ID``, ``_dgl2gb_eid``, ``_gb_dst_id``) from ``run
  --use-graphbolt`` and ``convert-graphbolt`` alike; DGL 2.1's file with ``--no-store-eids
  --graph-formats csc``; ``convert-graphbolt`` decides by the formats ``graph.dgl`` stores;
- ``--graphbolt-dir``: a new folder whose ``part<i>/`` hold only the ``.pt`` (DGL main's
  ``load_partition`` refuses a ``part<i>/`` with both files), a config whose other paths
  lead back to the untouched original.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked import convert_to_graphbolt
from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import OutputExistsError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE, read_graphbolt_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.storage.owned import ForeignDataError, OverlapError
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output

NUM_PARTS = 2


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One heterogeneous graph: DGL format with COO, with CSC only, and GraphBolt (defaults)."""
    tmp = tmp_path_factory.mktemp("gbv")
    write_synthetic_graph(tmp / "chunked", SynthSpec.heterogeneous(scale=1, seed=9))
    graph = open_chunked_graph(tmp / "chunked")
    parts = assign_partitions(graph, NUM_PARTS, seed=3)
    runs = {
        "coo": DispatchOptions(),
        "csc": DispatchOptions(graph_formats=("csc",)),
        "gb": DispatchOptions(graphbolt=GraphBoltOptions()),
        "gb21": DispatchOptions(graphbolt=GraphBoltOptions(store_eids=False), graph_formats=("csc",)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, options in runs.items():
            dispatch(graph, parts, tmp / name, num_parts=NUM_PARTS, options=options)
    return {"chunked": tmp / "chunked", **{name: tmp / name for name in runs}}


def _pt(out: Path, p: int) -> bytes:
    return (out / f"part{p}" / GRAPHBOLT_FILE).read_bytes()


def test_defaults_are_dgl_2_3s_in_both_routes(outputs, tmp_path):
    _, parts = load_partition_output(outputs["coo"])
    shutil.copytree(outputs["coo"], tmp_path / "conv")
    convert_to_graphbolt(tmp_path / "conv")
    for p, part in enumerate(parts):
        assert _pt(tmp_path / "conv", p) == _pt(outputs["gb"], p)  # one implementation, both routes
        g = read_graphbolt_graph(outputs["gb"] / f"part{p}" / GRAPHBOLT_FILE)
        assert list(g.edge_attributes) == ["_ID", "_dgl2gb_eid", "_gb_dst_id"]
        edge_ids = np.argsort(part.dst, kind="stable")  # DGL: local edge IDs in CSC order
        np.testing.assert_array_equal(g.edge_attributes["_dgl2gb_eid"], np.argsort(edge_ids))
        np.testing.assert_array_equal(g.edge_attributes["_gb_dst_id"], part.dst[edge_ids])
        np.testing.assert_array_equal(g.edge_attributes["_ID"], part.edata["_ID"][edge_ids])


def test_dgl_2_1s_file_in_both_routes(outputs, tmp_path):
    shutil.copytree(outputs["coo"], tmp_path / "conv")
    convert_to_graphbolt(tmp_path / "conv", store_eids=False, graph_formats=["csc"])
    for p in range(NUM_PARTS):
        assert _pt(tmp_path / "conv", p) == _pt(outputs["gb21"], p)
        assert read_graphbolt_graph(outputs["gb21"] / f"part{p}" / GRAPHBOLT_FILE).edge_attributes == {}


def test_convert_decides_by_the_formats_graph_dgl_stores(outputs, tmp_path):
    """As DGL 2.3 / 2.4 with graph_formats=None: a graph.dgl without COO gets neither attribute."""
    shutil.copytree(outputs["csc"], tmp_path / "csc")
    convert_to_graphbolt(tmp_path / "csc")
    for p in range(NUM_PARTS):
        assert list(read_graphbolt_graph(tmp_path / "csc" / f"part{p}" / GRAPHBOLT_FILE).edge_attributes) == ["_ID"]
    convert_to_graphbolt(tmp_path / "csc", graph_formats=["coo"], overwrite=True)  # GraphStorm's call
    for p in range(NUM_PARTS):
        assert _pt(tmp_path / "csc", p) == _pt(outputs["gb"], p)


def test_cli_flags_for_each_dgl_version(outputs, tmp_path, capsys):
    base = ["run", "--in-dir", str(outputs["chunked"]), "--num-parts", "2", "--use-graphbolt", "--no-progress"]
    assert main([*base, "--out-dir", str(tmp_path / "a")]) == 0
    assert main([*base, "--out-dir", str(tmp_path / "b"), "--no-store-eids", "--graph-formats", "csc"]) == 0
    g = read_graphbolt_graph(tmp_path / "a" / "part0" / GRAPHBOLT_FILE)
    assert list(g.edge_attributes) == ["_ID", "_dgl2gb_eid", "_gb_dst_id"]
    assert read_graphbolt_graph(tmp_path / "b" / "part0" / GRAPHBOLT_FILE).edge_attributes == {}
    shutil.copytree(outputs["coo"], tmp_path / "c")
    capsys.readouterr()
    assert main(["convert-graphbolt", str(tmp_path / "c"), "--no-store-eids", "--graph-formats", "csc"]) == 0
    assert read_graphbolt_graph(tmp_path / "c" / "part1" / GRAPHBOLT_FILE).edge_attributes == {}
    assert main(["convert-graphbolt", str(tmp_path / "c"), "--graph-formats", "coo,dense", "--overwrite"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "dense" in err[0]
    bad = ["dispatch", "--in-dir", str(outputs["chunked"]), "--partitions-dir", str(tmp_path),
           "--out-dir", str(tmp_path / "x"), "--no-store-eids"]  # fmt: skip
    assert main(bad) != 0
    assert "--no-store-eids only apply with --use-graphbolt" in capsys.readouterr().err


def _listing(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}


@pytest.mark.parametrize("marked", [True, False], ids=["ours", "foreign"])
def test_graphbolt_dir_leaves_the_original_untouched(outputs, tmp_path, marked):
    source = tmp_path / "src"
    shutil.copytree(outputs["coo"], source)
    if not marked:
        (source / ".dglc-owned.json").unlink()  # e.g. DGL's own output
    before = _listing(source)
    target = tmp_path / "gbdir"
    path = convert_to_graphbolt(source, graphbolt_dir=target)
    assert path == str(target / "metadata.json") and _listing(source) == before
    doc = json.loads((target / "metadata.json").read_text())
    original = json.loads((source / "metadata.json").read_text())
    for p in range(NUM_PARTS):
        # only the .pt in part<i>/: what DGL main's load_partition accepts
        assert sorted(f.name for f in (target / f"part{p}").iterdir()) == [GRAPHBOLT_FILE]
        assert _pt(target, p) == _pt(outputs["gb"], p)
        entry = doc[f"part-{p}"]
        assert entry["part_graph_graphbolt"] == f"part{p}/{GRAPHBOLT_FILE}"
        for key, rel in original[f"part-{p}"].items():  # every other path leads to the original file
            assert entry[key] == f"../src/{rel}"
            assert os.path.samefile(target / entry[key], source / rel)
    assert {k: v for k, v in doc.items() if not k.startswith("part-") and not k.endswith("_map_dtype")} == {
        k: v for k, v in original.items() if not k.startswith("part-")
    }
    assert doc["node_map_dtype"] == doc["edge_map_dtype"] == "int64"
    with pytest.raises(OutputExistsError):
        convert_to_graphbolt(source, graphbolt_dir=target)
    convert_to_graphbolt(source, graphbolt_dir=target, store_eids=False, graph_formats=["csc"], overwrite=True)
    assert read_graphbolt_graph(target / "part0" / GRAPHBOLT_FILE).edge_attributes == {}
    assert _listing(source) == before


def test_graphbolt_dir_refuses_foreign_or_overlapping_folders(outputs, tmp_path):
    source = tmp_path / "src"
    shutil.copytree(outputs["coo"], source)
    before = _listing(source)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ForeignDataError):
        convert_to_graphbolt(source, graphbolt_dir=foreign, overwrite=True)
    assert (foreign / "notes.txt").read_text() == "mine"
    with pytest.raises(OverlapError):
        convert_to_graphbolt(source, graphbolt_dir=source / "gb")
    with pytest.raises(OverlapError):
        convert_to_graphbolt(source, graphbolt_dir=source)
    assert _listing(source) == before


def test_graphbolt_dir_from_the_cli(outputs, tmp_path, capsys):
    source = tmp_path / "src"
    shutil.copytree(outputs["coo"], source)
    assert main(["convert-graphbolt", str(source), "--graphbolt-dir", str(tmp_path / "gb")]) == 0
    assert str(tmp_path / "gb" / "metadata.json") in capsys.readouterr().out
    assert not (source / "part0" / GRAPHBOLT_FILE).exists()


def test_verify_follows_and_checks_the_two_attributes(outputs, tmp_path):
    from dgl_chunked.errors import DGLFormatError
    from dgl_chunked.io.graphbolt.graph_file import write_graphbolt_graph
    from dgl_chunked.io.partition_graph import read_partition_graph

    # verify itself on such files: test_graphbolt_dispatch.py (its GraphBolt output has both)
    _, parts = load_partition_output(outputs["coo"])
    for name, change, message in (
        ("dst", lambda a: a["_gb_dst_id"].__setitem__(0, a["_gb_dst_id"][-1] + 1), "_gb_dst_id is not"),
        ("slot", lambda a: a["_dgl2gb_eid"].__setitem__(1, a["_dgl2gb_eid"][0]), "repeats a CSC slot"),
    ):
        bad = tmp_path / name
        shutil.copytree(outputs["gb"], bad)
        path = bad / "part0" / GRAPHBOLT_FILE
        g = read_graphbolt_graph(path)
        attrs = {k: np.array(v) for k, v in g.edge_attributes.items()}
        change(attrs)
        write_graphbolt_graph(
            path,
            indptr=g.indptr,
            indices=g.indices,
            type_per_edge=g.type_per_edge,
            node_type_to_id=g.node_type_to_id,
            edge_type_to_id=g.edge_type_to_id,
            node_attributes=g.node_attributes,
            edge_attributes=attrs,
        )
        with pytest.raises(DGLFormatError, match=message):
            read_partition_graph(str(bad / "part0"))
    # the local order comes from _dgl2gb_eid: the DGL-format partition's edges, row for row
    got = read_partition_graph(str(outputs["gb"] / "part1"))
    np.testing.assert_array_equal(got.src, parts[1].src)
    np.testing.assert_array_equal(got.dst, parts[1].dst)
