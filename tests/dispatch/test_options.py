"""``DispatchOptions``: the GraphBolt options nested, the deprecated flat keywords, and
``graphbolt_for_run``, the one place that completes them for a run."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from dgl_chunked.dispatch import DispatchOptions, GraphBoltOptions, dispatch
from dgl_chunked.dispatch.options import graphbolt_for_run
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from tests.dispatch.helpers import output_files


def test_the_graphbolt_options_are_nested_as_given():
    gb = GraphBoltOptions(store_eids=False, store_inner_node=True, sort_bytes=1 << 20)
    assert DispatchOptions(graphbolt=gb).graphbolt is gb
    assert DispatchOptions().graphbolt is None  # DGL's graph.dgl


def test_the_flat_keywords_warn_and_name_the_nested_form():
    with pytest.warns(DeprecationWarning) as caught:
        old = DispatchOptions(use_graphbolt=True, store_eids=False, store_inner_edge=True, graphbolt_sort_bytes=4096)
    message = str(caught[0].message)
    assert "graphbolt=GraphBoltOptions(store_eids=False, store_inner_edge=True, sort_bytes=4096)" in message
    assert caught[0].filename == __file__  # points at the caller
    assert old == DispatchOptions(graphbolt=GraphBoltOptions(store_eids=False, store_inner_edge=True, sort_bytes=4096))


def test_the_flat_keywords_keep_their_old_meaning():
    with pytest.warns(DeprecationWarning):
        assert DispatchOptions(use_graphbolt=True).graphbolt == GraphBoltOptions()
        assert DispatchOptions(store_inner_node=True).graphbolt is None  # only with use_graphbolt, as before
        gb = DispatchOptions(graphbolt=GraphBoltOptions(store_inner_node=True))
        assert replace(gb, store_eids=False).graphbolt == GraphBoltOptions(store_eids=False, store_inner_node=True)
        assert replace(gb, use_graphbolt=False).graphbolt is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert replace(gb, halo_hops=2).graphbolt == gb.graphbolt  # replace() alone does not warn


def test_dispatch_takes_the_graphbolt_formats_from_graph_formats():
    with pytest.raises(OptionError, match=r"graphbolt.graph_formats=\('csc',\).*DispatchOptions.graph_formats"):
        DispatchOptions(graphbolt=GraphBoltOptions(graph_formats=("csc",)))


def test_a_run_completes_the_users_options(monkeypatch):
    monkeypatch.delenv("DGL_DIST_DEBUG", raising=False)
    assert graphbolt_for_run(DispatchOptions()) is None
    given = GraphBoltOptions(store_eids=False, sort_bytes=123)
    opts = DispatchOptions(graphbolt=given, graph_formats=("csc", "coo"), wide_ids=True)
    assert graphbolt_for_run(opts) == replace(given, wide_index=True, graph_formats=("csc", "coo"))
    assert graphbolt_for_run(replace(opts, wide_ids=False)) == replace(given, graph_formats=("csc", "coo"))
    monkeypatch.setenv("DGL_DIST_DEBUG", "")  # set to anything, as DGL reads it
    assert graphbolt_for_run(opts).store_all_fields  # type: ignore[union-attr]
    monkeypatch.delenv("DGL_DIST_DEBUG")
    user = replace(opts, graphbolt=replace(given, store_all_fields=True))
    assert graphbolt_for_run(user).store_all_fields  # type: ignore[union-attr]


def test_the_flat_keywords_write_the_same_bytes_as_the_nested_form(tmp_path: Path):
    write_synthetic_graph(tmp_path / "chunked", SynthSpec.homogeneous(300, 2000, feat_dim=4, seed=5))
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, 2, seed=1)
    nested = DispatchOptions(graphbolt=GraphBoltOptions(store_inner_edge=True, sort_bytes=1 << 12))
    with pytest.warns(DeprecationWarning):
        flat = DispatchOptions(use_graphbolt=True, store_inner_edge=True, graphbolt_sort_bytes=1 << 12)
    for name, options in (("nested", nested), ("flat", flat)):
        dispatch(graph, parts, tmp_path / name, num_parts=2, options=options)
    files = output_files(tmp_path / "nested")
    assert "part0/fused_csc_sampling_graph.pt" in files and "part0/graph.dgl" not in files
    assert output_files(tmp_path / "flat") == files
