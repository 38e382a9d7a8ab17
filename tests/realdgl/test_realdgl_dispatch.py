"""Real DGL 2.1.0 loads our partitions, and every row it sees matches the input.

Our own reader's view of each output is first checked against the input
(`verify_partitions`: every node, edge, original ID and feature row); then real
DGL's `load_partition` (with DGL_DIST_DEBUG=1, which runs DGL's own partition
checks) and `load_partition_feats` must see exactly the same arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output, verify_partitions

from .harness import assert_real_dgl_loads, run_dgl_json

pytestmark = pytest.mark.realdgl

ORIG = DispatchOptions(save_orig_nids=True, save_orig_eids=True)

CASES = {
    "homogeneous-2": (SynthSpec.homogeneous(400, 2500, feat_dim=8), 2, ("coo",)),
    "hetero-csv-npy-4": (SynthSpec.heterogeneous(scale=1), 4, ("coo",)),
    "hetero-parquet-csc-3": (
        replace(
            SynthSpec.heterogeneous(scale=1, seed=5),
            edge_format="parquet",
            feature_format="parquet",
            num_edge_chunks=3,
            num_feature_chunks=2,
        ),
        3,
        ("csc",),
    ),
    "hetero-more-parts-than-chunks-1": (SynthSpec.heterogeneous(scale=1, seed=7), 1, ("coo", "csr", "csc")),
    "hetero-9-parts": (
        replace(SynthSpec.heterogeneous(scale=2, seed=9), num_edge_chunks=2, num_node_chunks=3, num_feature_chunks=4),
        9,
        ("coo", "csc"),
    ),
}


def _write(tmp_path: Path, spec: SynthSpec, num_parts: int, formats: tuple[str, ...]) -> Path:
    write_synthetic_graph(tmp_path / "chunked", spec)
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, num_parts, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave partitions without nodes of a type
        dispatch(graph, parts, tmp_path / "out", num_parts=num_parts, options=replace(ORIG, graph_formats=formats))
    assignment = {t: np.asarray(a.compute()) for t, a in parts.items()}
    report = verify_partitions(graph, tmp_path / "out", assignment=assignment)
    assert report.ok, report.problems
    return tmp_path / "out"


@pytest.mark.parametrize("case", list(CASES))
def test_real_dgl_load_partition_sees_our_files(tmp_path, case):
    spec, num_parts, formats = CASES[case]
    out = _write(tmp_path, spec, num_parts, formats)
    config, parts = load_partition_output(out)
    _, info = assert_real_dgl_loads(out)
    for p, part in enumerate(parts):
        facts = info[f"p{p}"]
        assert facts["num_edges"] == facts["num_inner_edges"] == part.src.shape[0]
        assert sorted(facts["formats"]["created"]) == sorted(formats)
        assert config.num_parts == num_parts


def test_real_dgl_distgraph_serves_our_single_partition(tmp_path):
    spec = SynthSpec.heterogeneous(scale=1, seed=3)
    out = _write(tmp_path, spec, 1, ("coo",))
    config, (part,) = load_partition_output(out)
    arrays, info = run_dgl_json("distgraph-server", str(out / "metadata.json"))
    for key, value in part.node_feats.items():
        ntype, name = key.split("/")
        np.testing.assert_array_equal(arrays[f"ndata/{ntype}/{name}"], value)
    for key, value in part.edge_feats.items():
        etype, name = key.split("/")
        np.testing.assert_array_equal(arrays[f"edata/{etype}/{name}"], value)
    # find_edges over the whole graph returns every edge's endpoints as new IDs
    nid = part.ndata["_ID"]
    np.testing.assert_array_equal(arrays["find_edges/src"], nid[part.src])
    np.testing.assert_array_equal(arrays["find_edges/dst"], nid[part.dst])
