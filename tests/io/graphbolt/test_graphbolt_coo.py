"""DGL >= 2.3's edge attributes ``_dgl2gb_eid`` / ``_gb_dst_id`` and defaults, against numpy truth.

DGL 2.3 / 2.4's ``gb_convert_single_dgl_partition`` (``dgl/distributed/partition.py``)
stores, when ``save_coo``, ``_dgl2gb_eid = torch.argsort(edge_ids)`` with ``edge_ids``
the local edge IDs in CSC order (so: each local DGL edge's slot in CSC order) and
``_gb_dst_id = gb.expand_indptr(indptr)`` (each CSC slot's local destination), cast by
``_cast_to_minimum_dtype`` with the config's ``num_edges`` / ``num_nodes`` as bounds:
int32 when the bound is below 2^31 - 1 (strictly), else int64. Real DGL's view:
``tests/realdgl/test_realdgl_graphbolt_coo.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgl_chunked.io.dgl.binary import ArraySpans, HomogeneousGraph
from dgl_chunked.io.graphbolt.csc import GraphBoltOptions, saves_coo, write_graphbolt_partition
from dgl_chunked.io.graphbolt.graph_file import read_graphbolt_graph

NTYPES, ETYPES = {"a": 0, "b": 1}, {"a:x:b": 0, "b:y:a": 1, "a:z:a": 2}


def _graph(n: int, e: int, seed: int, span: int | None = None) -> HomogeneousGraph:
    rng = np.random.default_rng(seed)
    dst = rng.integers(0, n, e)
    dst[: e // 4] = dst[0]  # a hub: one destination with many in-edges, spread over spans
    src = rng.integers(0, n, e)

    def spans(a: np.ndarray) -> object:
        if span is None:
            return a
        return ArraySpans(a.shape, a.dtype, lambda: (a[i : i + span] for i in range(0, a.shape[0], span)))

    return HomogeneousGraph(
        num_nodes=n,
        src=spans(src),
        dst=spans(dst),
        ndata={"_ID": np.arange(n, dtype=np.int64)},
        edata={
            "_ID": np.arange(5000, 5000 + e, dtype=np.int64),
            "_TYPE": (np.arange(e) % 3).astype(np.int32),
            "inner_edge": np.ones(e, np.uint8),
        },
    )


def _write(tmp_path, graph, options=None, **kw):
    options = GraphBoltOptions() if options is None else options
    path = tmp_path / "fused_csc_sampling_graph.pt"
    write_graphbolt_partition(path, graph, ntypes=NTYPES, etypes=ETYPES, options=options, **kw)
    return read_graphbolt_graph(path)


def _endpoints(graph: HomogeneousGraph) -> tuple[np.ndarray, np.ndarray]:
    def full(a: object) -> np.ndarray:
        return a if isinstance(a, np.ndarray) else np.concatenate(list(a.spans()))  # type: ignore[attr-defined]

    return full(graph.src), full(graph.dst)


@pytest.mark.parametrize(
    ("sort_bytes", "span"),
    [(1 << 30, None), (1 << 30, 7), (64, None), (64, 13)],  # one sort / destination ranges; streamed spans
)
def test_coo_attributes_are_csc_slot_and_expanded_indptr(tmp_path, sort_bytes, span):
    n, e = 40, 600
    graph = _graph(n, e, seed=7, span=span)
    src, dst = _endpoints(graph)
    opts = GraphBoltOptions(store_inner_edge=True, sort_bytes=sort_bytes)
    g = _write(tmp_path, graph, opts, totals=(1000, 5000 + e))
    # DGL's definitions, in numpy: edge_ids = local edge IDs in CSC order (stable by destination)
    edge_ids = np.argsort(dst, kind="stable")
    np.testing.assert_array_equal(g.edge_attributes["_dgl2gb_eid"], np.argsort(edge_ids))
    np.testing.assert_array_equal(g.edge_attributes["_gb_dst_id"], np.repeat(np.arange(n), np.diff(g.indptr)))
    # what DGL >= 2.3's find_edges does with them: local edge e -> its slot -> (src, dst)
    slot = g.edge_attributes["_dgl2gb_eid"]
    np.testing.assert_array_equal(g.indices[slot], src)
    np.testing.assert_array_equal(g.edge_attributes["_gb_dst_id"][slot], dst)
    np.testing.assert_array_equal(g.edge_attributes["_ID"][slot], 5000 + np.arange(e))
    # DGL's order: the flags' attributes first, then the two (dict insertion order)
    assert list(g.edge_attributes) == ["_ID", "inner_edge", "_dgl2gb_eid", "_gb_dst_id"]
    assert g.edge_attributes["_dgl2gb_eid"].dtype == g.edge_attributes["_gb_dst_id"].dtype == np.int32


@pytest.mark.parametrize(
    ("totals", "want"),
    [
        ((2**31 - 2, 2**31 - 2), (np.int32, np.int32)),
        ((2**31 - 1, 2**31 - 2), (np.int64, np.int32)),  # "bound < int32 max" is strict, as DGL's
        ((2**31 - 2, 2**31 - 1), (np.int32, np.int64)),
        ((2**40, 2**40), (np.int64, np.int64)),
    ],
)
def test_coo_attribute_dtypes_follow_the_whole_graph_counts(tmp_path, totals, want):
    """The bounds are the config's num_nodes / num_edges (the whole graph), not the partition's."""
    g = _write(tmp_path, _graph(10, 50, seed=1), totals=totals)
    assert g.edge_attributes["_gb_dst_id"].dtype == want[0]  # bound: num_nodes
    assert g.edge_attributes["_dgl2gb_eid"].dtype == want[1]  # bound: num_edges
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int32  # partition counts, as before
    np.testing.assert_array_equal(g.edge_attributes["_gb_dst_id"], np.repeat(np.arange(10), np.diff(g.indptr)))


def test_defaults_are_dgl_2_3s_and_dgl_2_1s_file_is_two_options_away(tmp_path):
    graph = _graph(12, 80, seed=2)
    assert GraphBoltOptions().store_eids is True and GraphBoltOptions().graph_formats is None
    g = _write(tmp_path, graph)  # graph.dgl-less default: as if COO were stored (ours and DGL's default)
    assert list(g.edge_attributes) == ["_ID", "_dgl2gb_eid", "_gb_dst_id"]
    g21 = _write(tmp_path, graph, GraphBoltOptions(store_eids=False, graph_formats=("csc",)))
    assert g21.edge_attributes == {}
    np.testing.assert_array_equal(g21.indices, g.indices)


@pytest.mark.parametrize(
    ("graph_formats", "stored", "want"),
    [
        (None, ("coo",), True),
        (None, ("coo", "csc"), True),
        (None, ("csc",), False),  # graph.dgl without COO: DGL stores neither
        (None, ("csr", "csc"), False),
        (("coo",), ("csc",), True),  # graph_formats given: it decides alone
        (("csc",), ("coo",), False),
        (("csc", "coo"), ("csr",), True),
    ],
)
def test_save_coo_rule_as_dgl_decides(tmp_path, graph_formats, stored, want):
    assert saves_coo(graph_formats, stored) is want
    g = _write(tmp_path, _graph(8, 30, seed=3), GraphBoltOptions(graph_formats=graph_formats), stored_formats=stored)
    assert ("_dgl2gb_eid" in g.edge_attributes) is want and ("_gb_dst_id" in g.edge_attributes) is want


def test_coo_attributes_of_an_empty_partition(tmp_path):
    graph = HomogeneousGraph(
        num_nodes=3,
        src=np.zeros(0, np.int64),
        dst=np.zeros(0, np.int64),
        ndata={"_ID": np.arange(3, dtype=np.int64)},
        edata={"_ID": np.zeros(0, np.int64), "_TYPE": np.zeros(0, np.int32)},
    )
    g = _write(tmp_path, graph, totals=(10, 10))
    for name in ("_dgl2gb_eid", "_gb_dst_id"):
        assert g.edge_attributes[name].shape == (0,) and g.edge_attributes[name].dtype == np.int32
