"""Dispatch of synthetic graphs: every node, edge and feature row checked against the input."""

from __future__ import annotations

from dataclasses import replace

import dask
import dask.array as da
import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.partition import assign_partitions
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import verify_partitions

from .helpers import output_files, rechunk_graph

ORIG = DispatchOptions(save_orig_nids=True, save_orig_eids=True)


def _hetero(tmp_path, **kw):
    spec = SynthSpec.heterogeneous(scale=1)
    return write_synthetic_graph(tmp_path / "chunked", _replace(spec, **kw))


def _replace(spec, **kw):
    from dataclasses import replace

    return replace(spec, **kw)


def _dispatch_and_verify(in_dir, out_dir, num_parts, *, seed=0, options=ORIG, block_rows=None):
    graph = open_chunked_graph(in_dir)
    parts = assign_partitions(graph, num_parts, seed=seed)
    if block_rows:
        from dataclasses import replace

        options = replace(options, block_rows=block_rows)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny types leave some partitions empty on purpose
        result = dispatch(graph, parts, out_dir, num_parts=num_parts, options=options)
    assignment = {t: np.asarray(a.compute()) for t, a in parts.items()}
    report = verify_partitions(graph, out_dir, assignment=assignment)
    assert report.ok, report.problems
    return result, report


@pytest.mark.parametrize("num_parts", [1, 2, 4, 7])
def test_heterogeneous_csv_npy(tmp_path, num_parts):
    _hetero(tmp_path, num_edge_chunks=3, num_node_chunks=2, num_feature_chunks=2)
    result, report = _dispatch_and_verify(tmp_path / "chunked", tmp_path / "out", num_parts, block_rows=64)
    assert result.config.num_parts == num_parts
    assert report.checked.edges == result.config.num_edges > 0


def test_parquet_edges_and_features_chunked_differently(tmp_path):
    _hetero(
        tmp_path,
        edge_format="parquet",
        feature_format="parquet",
        num_edge_chunks=4,
        num_node_chunks=3,
        num_feature_chunks=2,
    )
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "out", 3)


def test_homogeneous(tmp_path):
    spec = SynthSpec.homogeneous(500, 3000, feat_dim=8)
    write_synthetic_graph(tmp_path / "chunked", spec)
    result, _ = _dispatch_and_verify(tmp_path / "chunked", tmp_path / "out", 2)
    assert list(result.config.node_map) == ["_N"]
    assert list(result.config.edge_map) == ["_N:_E:_N"]


@pytest.mark.parametrize("formats", [("csc",), ("coo", "csr", "csc"), ("csr",)])
def test_sparse_formats(tmp_path, formats):
    _hetero(tmp_path)
    from dataclasses import replace

    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "out", 2, options=replace(ORIG, graph_formats=formats))


def test_bytes_identical_for_other_chunkings_and_block_sizes(tmp_path):
    _hetero(tmp_path, num_edge_chunks=2, num_feature_chunks=2)
    other = rechunk_graph(
        tmp_path / "chunked",
        tmp_path / "rechunked",
        edge_chunks=5,
        feature_chunks=3,
        edge_format="parquet",
        feature_format="parquet",
    )
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "a", 3)
    _dispatch_and_verify(other, tmp_path / "b", 3, block_rows=37)
    a, b = output_files(tmp_path / "a"), output_files(tmp_path / "b")
    assert a.keys() == b.keys()
    for name in a:
        assert a[name] == b[name], name


def test_bytes_identical_on_two_workers(tmp_path, client):
    _hetero(tmp_path)
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, 2, seed=3)
    dispatch(graph, parts, tmp_path / "cluster", num_parts=2, options=ORIG, client=client)
    with dask.config.set(scheduler="synchronous"):
        dispatch(graph, parts, tmp_path / "sync", num_parts=2, options=ORIG)
    assert output_files(tmp_path / "cluster") == output_files(tmp_path / "sync")


def test_assignment_out_of_range_names_type_and_node(tmp_path):
    from dgl_chunked.errors import AssignmentError

    meta = _hetero(tmp_path)
    parts = {t: da.zeros(meta.num_nodes(t), dtype=np.int32, chunks=50) for t in meta.node_types}
    t0 = meta.node_types[0]
    bad = np.zeros(meta.num_nodes(t0), np.int32)
    bad[7] = 5
    parts[t0] = da.from_array(bad, chunks=50)
    with pytest.raises(AssignmentError, match=rf"node 7 of type '{t0}'.*partition 5"):
        dispatch(tmp_path / "chunked", parts, tmp_path / "out", num_parts=2)
    assert not (tmp_path / "out" / "metadata.json").exists()


def test_empty_partition_of_a_featured_type_warns(tmp_path):
    from dgl_chunked.errors import EmptyPartitionWarning

    meta = _hetero(tmp_path)
    parts = {t: da.zeros(meta.num_nodes(t), dtype=np.int32, chunks=50) for t in meta.node_types}
    with pytest.warns(EmptyPartitionWarning) as record:
        dispatch(tmp_path / "chunked", parts, tmp_path / "out", num_parts=2)
    messages = [str(w.message) for w in record]
    featured_ntypes = [t for t in meta.node_types if meta.node_data.get(t)]
    for ntype in featured_ntypes:
        assert any(f"partition(s) [1] own no node of type {ntype!r}" in m for m in messages), ntype
    assert any("own no edge of type 'paper:cites:paper'" in m for m in messages)


def test_bytes_identical_without_the_in_memory_fast_paths(tmp_path, monkeypatch):
    """The fast paths (node-ID cache, dense HALO flags, int32 staging) change no byte."""
    from dataclasses import replace

    _hetero(tmp_path, num_edge_chunks=3)
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "fast", 3, block_rows=64)
    slow = replace(ORIG, lookup_cache_bytes=0, halo_table_bytes=5 * 40, wide_ids=True)
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "slow", 3, block_rows=64, options=slow)
    assert output_files(tmp_path / "fast") == output_files(tmp_path / "slow")


@pytest.mark.parametrize(
    "options",
    [ORIG, replace(ORIG, graph_formats=("csc", "csr")), replace(ORIG, graphbolt=GraphBoltOptions(store_eids=True))],
    ids=["coo+orig", "csc+csr", "graphbolt"],
)
def test_bytes_identical_with_a_memory_limit_smaller_than_the_node_tables(tmp_path, monkeypatch, options):
    """A memory limit too small for the node-ID arrays and the HALO tables: the
    range-partitioned cache (some ranges in memory, the others read from Zarr) and
    the HALO bitmaps built range by range give the same bytes."""
    import os
    from dataclasses import replace

    from dgl_chunked.dispatch.halo import ranges as halo_ranges

    _hetero(tmp_path, num_edge_chunks=3)
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "fast", 3, block_rows=64, options=options)
    # 600 bytes for the cache: two 64-row int32 ranges of a node type; 24 for a HALO bitmap: 128 IDs a range
    tight = replace(options, memory_limit=8 * 600, halo_table_bytes=24)
    assert (tight.lookup_budget(), tight.halo_budget(), halo_ranges.range_width(24)) == (600, 24, 128)
    built = []
    real = halo_ranges.build_ranged_halo
    monkeypatch.setattr(halo_ranges, "build_ranged_halo", lambda *a: built.append(real(*a)) or built[-1])
    _dispatch_and_verify(tmp_path / "chunked", tmp_path / "tight", 3, block_rows=64, options=tight)
    assert output_files(tmp_path / "fast") == output_files(tmp_path / "tight")
    assert len(built) == 3 and sum(b.num_halo for b in built) > 0  # every writer took the ranged path
    assert not any(os.path.exists(b.workdir) for b in built)  # and removed its temporary files


def test_workers_hold_no_cached_node_ids_after_dispatch(tmp_path, client):
    from dgl_chunked.storage import zarr_lookup

    _hetero(tmp_path)
    graph = open_chunked_graph(tmp_path / "chunked")
    dispatch(graph, assign_partitions(graph, 2, seed=1), tmp_path / "out", num_parts=2, client=client)
    held = client.run(zarr_lookup.cached_bytes)
    assert set(held.values()) == {0}
