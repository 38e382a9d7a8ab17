"""Odd small graphs, drawn from a seed, go through ``run`` and load in real DGL 2.1.0
exactly as written; their GraphBolt conversion equals DGL's own converter's.

The hand-written cases are graphs of a usual shape. These draw the shapes they miss:
node types of one or two nodes, edge types with no edge or only self-loops, more
partitions than a type has nodes, one-column and float64 features, int64 edge features
with negative values, CSV or Parquet edges and NumPy or Parquet features in one to three
chunks, with and without original IDs, under every in-memory and out-of-core method.
Drawing them found that METIS printed "too many parts" into the ``partition`` command's
report whenever a graph (or ``lp``'s coarsest level) had fewer nodes than parts.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked import DispatchOptions, convert_to_graphbolt, run, verify_partitions
from dgl_chunked.testing import GraphTruth, write_graph_from_truth

from .harness import assert_real_dgl_loads, assert_same_arrays, graphbolt_pickle, load_graphbolts, run_dgl_json

pytestmark = pytest.mark.realdgl

METHODS = ("random", "range", "metis", "lp")


def _odd_graph(rng: np.random.Generator, name: str) -> GraphTruth:
    """One to three node types of 1-700 nodes, one to three edge types of 0-2000 edges
    (some only self-loops, some with features), features on some node types."""
    ntypes = ["n0", "n1", "n2"][: int(rng.integers(1, 4))]
    num_nodes = {t: int(rng.choice([1, 2, 5, 40, 700])) for t in ntypes}
    edges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    edge_data: dict[str, dict[str, np.ndarray]] = {}
    for i in range(int(rng.integers(1, 4))):
        s, d = str(rng.choice(ntypes)), str(rng.choice(ntypes))
        m = int(rng.choice([0, 1, 3, 60, 2000]))
        src, dst = rng.integers(0, num_nodes[s], m), rng.integers(0, num_nodes[d], m)
        if s == d and rng.random() < 0.2:
            dst = src.copy()  # self-loops only
        etype = f"{s}:r{i}:{d}"
        edges[etype] = (src, dst)
        if rng.random() < 0.5:
            edge_data[etype] = {"w": rng.random(m).astype(np.float32), "ts": rng.integers(-5, 2**40, m)}
    node_data: dict[str, dict[str, np.ndarray]] = {}
    for t in ntypes:
        feats: dict[str, np.ndarray] = {}
        if rng.random() < 0.7:
            dtype = np.float32 if rng.random() < 0.5 else np.float64
            feats["feat"] = rng.random((num_nodes[t], int(rng.choice([1, 3])))).astype(dtype)
        if rng.random() < 0.5:
            feats["label"] = rng.integers(0, 10, num_nodes[t])
        if rng.random() < 0.4:
            feats["train_mask"] = (rng.random(num_nodes[t]) < 0.6).astype(np.uint8)
        if feats:
            node_data[t] = feats
    return GraphTruth(graph_name=name, num_nodes=num_nodes, edges=edges, node_data=node_data, edge_data=edge_data)


def _run_odd(tmp_path: Path, seed: int) -> tuple[Path, int, np.random.Generator]:
    """Draw graph ``seed``, write it, ``run`` it, check it against the input; returns
    the output folder, the partition count and the generator (for further draws)."""
    rng = np.random.default_rng(seed)
    truth = _odd_graph(rng, f"odd{seed}")
    # every method at 2, 3 and 5 parts over the seeds, two in three with original IDs
    method, num_parts, orig = METHODS[seed % 4], (2, 3, 5)[seed % 3], seed % 3 != 2
    chunks = int(rng.integers(1, 4))
    formats: dict[str, Any] = {
        "edge_format": str(rng.choice(["csv", "parquet"])),
        "feature_format": str(rng.choice(["numpy", "parquet"])),
    }
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=chunks, feature_chunks=chunks, **formats)
    options = DispatchOptions(save_orig_nids=orig, save_orig_eids=orig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # partitions without nodes or edges of a type
        run(tmp_path / "g", tmp_path / "out", num_parts=num_parts, method=method, options=options)
    if orig:  # verify reads the original IDs; without them real DGL's load is the check
        report = verify_partitions(tmp_path / "g", tmp_path / "out")
        assert report.ok, (method, num_parts, truth.num_nodes, report.problems[:5])
        assert report.checked.nodes_per_type == dict(truth.num_nodes)
        assert report.checked.edges_per_type == truth.num_edges
    return tmp_path / "out", num_parts, rng


@pytest.mark.parametrize("seed", range(10))
def test_real_dgl_loads_odd_graphs(tmp_path: Path, seed: int) -> None:
    out, _, _ = _run_odd(tmp_path, seed)
    assert_real_dgl_loads(out)


@pytest.mark.parametrize("seed", range(10, 14))
def test_graphbolt_of_odd_graphs_equals_dgl_converter(tmp_path: Path, seed: int) -> None:
    out, num_parts, rng = _run_odd(tmp_path, seed)
    flags = [int(x) for x in rng.integers(0, 2, 3)]  # store_eids, store_inner_node, store_inner_edge
    shutil.copytree(out, tmp_path / "dgl")
    run_dgl_json("to-graphbolt", str(tmp_path / "dgl" / "metadata.json"), *map(str, flags))
    eids, inner_node, inner_edge = map(bool, flags)
    convert_to_graphbolt(
        out,
        store_eids=eids,
        store_inner_node=inner_node,
        store_inner_edge=inner_edge,
        graphbolt_dir=tmp_path / "ours",
        graph_formats=("csc",),  # DGL 2.1's converter: no _dgl2gb_eid / _gb_dst_id
    )
    (ours, ours_info), (theirs, theirs_info) = load_graphbolts(
        tmp_path / "ours" / "metadata.json", tmp_path / "dgl" / "metadata.json"
    )
    assert_same_arrays(ours, theirs)
    for p in range(num_parts):
        assert ours_info[f"p{p}"] == theirs_info[f"p{p}"]
        name = f"part{p}/fused_csc_sampling_graph.pt"
        assert graphbolt_pickle(tmp_path / "ours" / name) == graphbolt_pickle(tmp_path / "dgl" / name)
