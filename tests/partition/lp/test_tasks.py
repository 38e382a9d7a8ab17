"""The ``lp`` staging's gathering (:func:`.tasks.restage_task`, through
:func:`.streaming.prepare`): every block's entries in its own files, by falling tier of
their node and then by node (issue #38), none lost or added."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth


def test_a_blocks_entries_are_grouped_by_node_within_falling_tiers(tmp_path: Path) -> None:
    n, block_rows = 5000, 2048
    src, dst = planted_partition_edges(n, 40_000, 10, skewed=True, p_in=0.9, seed=5)
    truth = GraphTruth(graph_name="g", num_nodes={"_N": n}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={})
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=3, feature_chunks=1)
    graph = open_chunked_graph(tmp_path / "g" / "metadata.json")
    config = LPConfig(block_rows=block_rows)
    plan = LPPlan(num_parts=4, seed=0, balance_edges=False, config=config, block_rows=block_rows, masks=())
    root = S.ScratchRoot(str(tmp_path / "scratch"))
    state = D.prepare(graph, plan, root)  # type: ignore[arg-type]
    loops = src == dst
    want = np.concatenate([np.stack([src, dst]), np.stack([dst, src])], axis=1)[:, np.concatenate([~loops, ~loops])]
    got = []
    for b in range(state.num_blocks):
        u = S.read_segments(root, state.segs[b], "u")
        v = S.read_segments(root, state.segs[b], "v")
        local = (u & K.LOCAL_MASK).astype(np.int64)
        tier = S.read_block(root, b, "tier").astype(np.int64)[local]
        assert u.size == int(state.block_counts[b]) > 0
        assert np.all(np.diff(tier) <= 0), "tiers fall"
        same_tier = np.diff(tier) == 0
        assert np.all(np.diff(local)[same_tier] >= 0), "by node within a tier"
        assert np.bincount(tier, minlength=63).tolist() == state.tier_counts[b].tolist()
        got.append(np.stack([local + b * block_rows, v.astype(np.int64)]))
    got_all = np.concatenate(got, axis=1)  # every edge once each way, self-loops left out
    order = np.lexsort(got_all[::-1]), np.lexsort(want[::-1])
    assert np.array_equal(got_all[:, order[0]], want[:, order[1]])
