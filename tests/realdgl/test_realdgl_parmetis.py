"""Real DGL 2.1.0 loads partitions dispatched from an imported ParMETIS assignment.

The graph has self loops and duplicate edges: they are left out of the ParMETIS
input but kept in the partitions. ParMETIS is simulated (a deterministic rule,
node lines shuffled and split between two rank files), the output is imported
with ``import_parmetis``, dispatched, verified against the input and the intended
assignment, and read back with DGL's ``load_partition``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.parmetis import export_parmetis, import_parmetis
from dgl_chunked.verify import load_partition_output, verify_partitions

from ..parmetis.test_parmetis import (
    intended_assignment,
    simulate_parmetis,
    truth_with_loops_and_duplicates,
    write_truth,
)
from .harness import assert_real_dgl_loads

pytestmark = pytest.mark.realdgl

NUM_PARTS = 3


def test_real_dgl_loads_partitions_of_an_imported_parmetis_assignment(tmp_path):
    write_truth(truth_with_loops_and_duplicates(tmp_path), tmp_path / "chunked", edge_chunks=2)
    graph = open_chunked_graph(tmp_path / "chunked", node_chunk_rows=8)
    files = export_parmetis(graph, tmp_path / "pm", balance_masks=["train_mask"])
    assert files.self_loops_dropped and files.duplicates_dropped
    simulate_parmetis(files.nodes_path, tmp_path / "pm", "small", NUM_PARTS)
    import_parmetis(tmp_path / "pm", graph, tmp_path / "assign", num_parts=NUM_PARTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave partitions without nodes of a type
        dispatch(
            graph,
            tmp_path / "assign",
            tmp_path / "out",
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    intended = intended_assignment(graph.metadata, NUM_PARTS)
    report = verify_partitions(graph, tmp_path / "out", assignment=intended)
    assert report.ok, report.problems
    assert report.checked.edges == sum(graph.num_edges(e) for e in graph.edge_types)

    config, parts = load_partition_output(tmp_path / "out")
    _, info = assert_real_dgl_loads(tmp_path / "out")
    for p, part in enumerate(parts):
        assert info[f"p{p}"]["num_edges"] == info[f"p{p}"]["num_inner_edges"] == part.src.shape[0]
    # every node's owner as DGL sees it (node_map ranges) is the one ParMETIS chose
    orig = {t: np.concatenate([part.orig_nids[t] for part in parts]) for t in config.ntypes}
    for ntype, ranges in config.node_map.items():
        owner = np.repeat(np.arange(NUM_PARTS), [hi - lo for lo, hi in ranges])
        np.testing.assert_array_equal(intended[ntype][orig[ntype]], owner)
