"""GraphStorm's GSProcessing output, as written, through the command line and into real DGL.

The graph is :func:`tests.gsprocessing.write_gsprocessing_graph` (GSProcessing's layout:
Spark part files and side files, ``row_counts``, ``"delimiter": ""``, ``-rev`` types,
scalar and list columns, a NaN label, int8 masks with ``shape`` metadata, both metadata
files). ``validate``, ``plan``, ``run``, ``verify`` and ``dispatch`` take it untouched with
``--metadata-filename``; our dispatch of the golden assignment equals DGL 2.1.0's own
pipeline on the same files (``tests/data/golden/gsprocessing/``, ``scripts/make-golden.py``)
partition by partition, as real DGL's ``load_partition`` reads both: the same nodes,
HALO nodes, edges (endpoints and inner flags) and feature rows, each feature with DGL's
shape and dtype. The order of nodes and edges inside a block is each pipeline's own
(ours ascending original ID), so blocks are compared by original ID. A result of a reverse
edge type on DGL's partitions comes back from ``remap`` under GSProcessing's string IDs.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked import open_chunked_graph
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.io.formats.tensor_rows import read_payload_rows
from dgl_chunked.remap import remap_results
from tests.gsprocessing import GSProcessingGraph, write_gsprocessing_graph

from .harness import assert_real_dgl_loads, assert_same_array, run_dgl, run_dgl_json

pytestmark = pytest.mark.realdgl

UPDATED = "updated_row_counts_metadata.json"


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "dgl_chunked", *map(str, args)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> GSProcessingGraph:
    return write_gsprocessing_graph(tmp_path_factory.mktemp("gsp") / "input")


@pytest.fixture(scope="module")
def golden(golden_dir: Path, graph: GSProcessingGraph) -> Path:
    """DGL's pipeline output of this very graph (its digest is the one make-golden.py recorded)."""
    root = golden_dir / "gsprocessing"
    assert (root / "input.sha256").read_text().strip() == graph.digest(), (
        "tests/gsprocessing.py writes another graph than the golden one: "
        "rerun scripts/make-golden.py --sets gsprocessing"
    )
    return root


@pytest.fixture(scope="module")
def dispatched(graph: GSProcessingGraph, golden: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both metadata files through the commands; our dispatch of the golden assignment of each."""
    before = _snapshot(graph.root)
    work = tmp_path_factory.mktemp("gsp-out")
    outs, stderr = {}, {}
    for name in graph.metadata_files:
        flag = ("--metadata-filename", name)
        found = _cli("validate", "--in-dir", graph.root, *flag)
        assert "is a valid chunked graph" in found.stdout
        stderr[name, "validate"] = found.stderr
        stderr[name, "plan"] = _cli(
            "plan", "--in-dir", graph.root, "--out-dir", work / "planned", "--num-parts", "2", *flag
        ).stderr
        run_out = work / f"run-{name.removesuffix('.json')}"
        stderr[name, "run"] = _cli(
            "run",
            "--in-dir",
            graph.root,
            "--out-dir",
            run_out,
            "--num-parts",
            "2",
            "--save-orig-nids",
            "--save-orig-eids",
            *flag,
        ).stderr
        _cli("verify", "--in-dir", graph.root, "--out-dir", run_out, *flag)
        outs[name] = work / f"dispatch-{name.removesuffix('.json')}"
        stderr[name, "dispatch"] = _cli(
            "dispatch",
            "--in-dir",
            graph.root,
            "--partitions-dir",
            golden / "partition_assignment",
            "--out-dir",
            outs[name],
            "--save-orig-nids",
            "--save-orig-eids",
            *flag,
        ).stderr
        outs[f"run-{name}"] = run_out
    return {"outs": outs, "stderr": stderr, "before": before, "after": _snapshot(graph.root)}


def test_commands_leave_the_input_untouched_and_note_the_ignored_options_once(graph, dispatched):
    assert dispatched["after"] == dispatched["before"]
    for (name, command), text in dispatched["stderr"].items():
        notes = [line for line in text.splitlines() if "note:" in line]
        assert len(notes) == 1, (name, command, text)
        assert f"{name}: ignored the format option(s) ['delimiter']" in notes[0]
        assert "error" not in text.lower(), (name, command, text)


@pytest.mark.parametrize("name", ["metadata.json", UPDATED])
def test_run_output_loads_in_real_dgl(dispatched, name):
    assert_real_dgl_loads(dispatched["outs"][f"run-{name}"])


def _config(out: Path) -> dict[str, Any]:
    return json.loads((out / "metadata.json").read_text())


def _orig_ids(out: Path, num_parts: int) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """orig_nids.dgl and orig_eids.dgl of every partition, as DGL's load_tensors reads them."""
    files = [out / f"part{p}" / f"orig_{k}ids.dgl" for p in range(num_parts) for k in "ne"]
    arrays = run_dgl("tensors", *map(str, files))
    split: list[dict[str, np.ndarray]] = [{} for _ in files]
    for key, value in arrays.items():
        head, _, rest = key.partition("/")
        if head.startswith("f"):
            split[int(head[1:])][rest] = value
    return [(split[2 * p], split[2 * p + 1]) for p in range(num_parts)]


def _canonical(out: Path) -> dict[str, Any]:
    """Every partition as real DGL reads it, keyed by original IDs (order inside a block aside)."""
    config = _config(out)
    arrays, _ = run_dgl_json("partition", str(out / "metadata.json"))
    orig = _orig_ids(out, config["num_parts"])
    ntypes, etypes = list(config["ntypes"]), list(config["etypes"])
    new_to_orig: dict[int, tuple[str, int]] = {}
    eid_to_orig: dict[int, tuple[str, int]] = {}
    for p, (nids, eids) in enumerate(orig):
        for ntype in ntypes:
            lo, hi = config["node_map"][ntype][p]
            new_to_orig |= {lo + k: (ntype, int(i)) for k, i in enumerate(nids[ntype].tolist())}
            assert hi - lo == len(nids[ntype])
        for etype in etypes:
            lo, hi = config["edge_map"][etype][p]
            eid_to_orig |= {lo + k: (etype, int(i)) for k, i in enumerate(eids[etype].tolist())}
    out_parts = []
    for p, (nids, eids) in enumerate(orig):
        pre = f"p{p}/"
        node_new = arrays[pre + "ndata/_ID"]
        inner = arrays[pre + "ndata/inner_node"].astype(bool)
        src = node_new[arrays[pre + "src"]]
        dst = node_new[arrays[pre + "dst"]]
        edges = sorted(
            (eid_to_orig[int(e)], new_to_orig[int(s)], new_to_orig[int(d)], int(i))
            for e, s, d, i in zip(arrays[pre + "edata/_ID"], src, dst, arrays[pre + "edata/inner_edge"], strict=True)
        )
        feats = {}
        for kind, ids in (("node", nids), ("edge", eids)):
            prefix = f"{pre}{kind}_feats/"
            for key in (k for k in arrays if k.startswith(prefix)):
                name = key[len(prefix) :]
                order = np.argsort(ids[name.rsplit("/", 1)[0]], kind="stable")
                feats[f"{kind}/{name}"] = arrays[key][order]
        out_parts.append(
            {
                "inner": sorted(new_to_orig[int(i)] for i in node_new[inner]),
                "halo": sorted(new_to_orig[int(i)] for i in node_new[~inner]),
                "edges": edges,
                "feats": feats,
            }
        )
    return {"config": config, "parts": out_parts}


@pytest.fixture(scope="module")
def dgl_pipeline(golden: Path) -> dict[str, Any]:
    return _canonical(golden / "pipeline_out")


@pytest.mark.parametrize("name", ["metadata.json", UPDATED])
def test_every_partition_equals_dgl_pipeline_on_the_same_files(dispatched, dgl_pipeline, name):
    ours = _canonical(dispatched["outs"][name])
    mine, theirs = dict(ours["config"]), dict(dgl_pipeline["config"])
    assert mine.pop("part_method") == "random" and theirs.pop("part_method") == "metis"  # DGL's pipeline says metis
    assert json.dumps(mine) == json.dumps(theirs)  # the document, key order included
    for p, (a, b) in enumerate(zip(ours["parts"], dgl_pipeline["parts"], strict=True)):
        assert a["inner"] == b["inner"] and a["halo"] == b["halo"], p
        assert a["edges"] == b["edges"] and len(a["edges"]) > 0, p
        assert sorted(a["feats"]) == sorted(b["feats"]), p
        for key, value in b["feats"].items():
            assert_same_array(a["feats"][key], value, f"part{p} {key}")


def test_features_have_the_shapes_and_dtypes_dgl_reads(dgl_pipeline, graph):
    """DGL's pipeline output itself: a scalar column without shape metadata is (N, 1), the
    label and masks with shape metadata (N,), the list column (N, 4), NaN labels kept."""
    feats = dgl_pipeline["parts"][0]["feats"]
    want = {
        "node/user/age": ("float64", 2),
        "node/user/occupation": ("float64", 1),
        "node/user/train_mask": ("int8", 1),
        "node/movie/title": ("float32", 2),
        "node/movie/year": ("int64", 2),
        "edge/user:rates:movie/rate": ("float32", 2),
    }
    for key, (dtype, ndim) in want.items():
        assert (str(feats[key].dtype), feats[key].ndim) == (dtype, ndim), key
        truth = graph.node_features if key.startswith("node/") else graph.edge_features
        _, type_name, feat = key.split("/")
        assert feats[key].shape[1:] == truth[type_name][feat].shape[1:], key
    labels = np.concatenate([part["feats"]["node/user/occupation"] for part in dgl_pipeline["parts"]])
    assert np.isnan(labels).sum() == np.isnan(graph.node_features["user"]["occupation"]).sum() > 0


def test_edge_results_come_back_under_the_string_ids(graph, golden, tmp_path):
    """A result of a reverse edge type on DGL's own partitions of this graph (its orig_eids in DGL's
    order), remapped to CSV with the graph's raw_id_mappings: each row names its edge by the string IDs
    of its endpoints, as GraphStorm's remap_result writes edge predictions (pred, src_nid, dst_nid)."""
    etype, parts = "movie:rates-rev:user", golden / "pipeline_out"
    files = [parts / f"part{p}" / "orig_eids.dgl" for p in range(_config(parts)["num_parts"])]
    payloads = [index_tensor_dict(str(f))[etype] for f in files]
    orig = np.concatenate([read_payload_rows(str(f), p, 0, p.rows) for f, p in zip(files, payloads, strict=True)])
    assert (np.diff(orig) < 0).any()  # DGL's order, not ours
    np.save(tmp_path / "pred.npy", orig.astype(np.float32) / 2)  # row i: the result of new edge ID i
    out = tmp_path / "remapped"
    chunked = open_chunked_graph(graph.root, metadata_filename=UPDATED)
    remap_results(
        parts, {etype: str(tmp_path / "pred.npy")}, out, graph=chunked, format="csv", column_names={"value": "pred"}
    )
    texts = [f.read_text() for f in sorted((out / "edges" / etype).glob("part-*.csv"))]
    assert texts and all(t.startswith("pred,src_nid,dst_nid,type_eid\n") for t in texts)
    rows = [line.split(",") for t in texts for line in t.splitlines()[1:]]
    src, dst = graph.edges[etype]
    want = [
        [str(e / 2), graph.node_ids["movie"][s], graph.node_ids["user"][d], str(e)]
        for e, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True))
    ]
    assert rows == want
