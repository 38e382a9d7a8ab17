"""The >2**31 paths (int64 staging, int64 node-ID cache, int64 CSC order) on small graphs.

``DispatchOptions.wide_ids`` forces the dtypes a graph beyond 2**31 nodes or edges
gets; the output must be byte-identical to the narrow run's.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
import zarr

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.dgl.binary import ArraySpans
from dgl_chunked.io.graphbolt import GraphBoltOptions
from dgl_chunked.io.graphbolt.csc import CscSorter
from dgl_chunked.partition import assign_partitions
from dgl_chunked.storage.zarr_lookup import cached_bytes, cached_lookup, clear_lookup_cache
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

from .helpers import output_files

VARIANTS = {
    "coo+orig": DispatchOptions(save_orig_nids=True, save_orig_eids=True),
    "csc+csr": DispatchOptions(graph_formats=("csc", "csr")),
    "halo2": DispatchOptions(halo_hops=2),
    "graphbolt": DispatchOptions(graphbolt=GraphBoltOptions(store_eids=True, store_inner_edge=True)),
    "graphbolt-multipass": DispatchOptions(graphbolt=GraphBoltOptions(store_eids=True, sort_bytes=1 << 16)),
}


@pytest.fixture(scope="module")
def graph_and_parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("wide")
    spec = replace(SynthSpec.heterogeneous(scale=1), num_edge_chunks=3, num_node_chunks=2, num_feature_chunks=2)
    write_synthetic_graph(root / "chunked", spec)
    graph = open_chunked_graph(root / "chunked")
    return graph, assign_partitions(graph, 3, seed=1), root


def _run(graph, parts, out, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types may leave a partition empty
        return dispatch(graph, parts, out, num_parts=3, options=replace(options, block_rows=64, keep_staging=True))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_wide_ids_give_byte_identical_output(graph_and_parts, variant):
    graph, parts, root = graph_and_parts
    narrow, wide = root / f"{variant}-narrow", root / f"{variant}-wide"
    _run(graph, parts, narrow, VARIANTS[variant])
    _run(graph, parts, wide, replace(VARIANTS[variant], wide_ids=True))
    ours, theirs = output_files(narrow), output_files(wide)
    assert sorted(ours) == sorted(theirs) and len(ours) >= 3 * 3
    assert [k for k in ours if ours[k] != theirs[k]] == []
    # and the wide run really staged int64 endpoints (the narrow one int32)
    etype = graph.metadata.edge_types[0].name
    for out, dtype in ((narrow, np.int32), (wide, np.int64)):
        staged = zarr.open_array(store=zarr.storage.LocalStore(out / "_staging"), path=f"edges/{etype}/0/new_src")
        assert staged.dtype == dtype


def test_node_id_cache_keeps_int64_when_not_compact(tmp_path):
    values = np.arange(1000, dtype=np.int64) * 3
    arr = zarr.create_array(store=zarr.storage.LocalStore(tmp_path), name="a", shape=(1000,), chunks=(100,), dtype="i8")
    arr[:] = values
    ids = np.array([999, 0, 5, 5, 512])
    clear_lookup_cache()
    try:
        narrow = cached_lookup(arr, ids, key="narrow", budget_bytes=1 << 20)
        held = [cached_bytes()]
        wide = cached_lookup(arr, ids, key="wide", budget_bytes=1 << 20, compact=False)
        held.append(cached_bytes())
    finally:
        clear_lookup_cache()
    assert narrow.tolist() == wide.tolist() == values[ids].tolist()
    assert held == [4000, 4000 + 8000]  # int32 copy, then an int64 one


def test_node_id_cache_keeps_the_ranges_that_fit_and_reads_the_others(tmp_path):
    values = np.arange(1000, dtype=np.int64) * 7
    arr = zarr.create_array(store=zarr.storage.LocalStore(tmp_path), name="a", shape=(1000,), chunks=(100,), dtype="i8")
    arr[:] = values
    queries = np.random.default_rng(0).integers(0, 1000, (3, 500))
    clear_lookup_cache()
    try:
        got = [cached_lookup(arr, ids, key="k", budget_bytes=1000) for ids in queries]
        held = cached_bytes()
    finally:
        clear_lookup_cache()
    assert [g.tolist() for g in got] == [values[q].tolist() for q in queries]
    assert held == 2 * 100 * 4  # two 100-row int32 ranges fit 1000 bytes; the whole (4000) does not


@pytest.mark.parametrize("sort_bytes", [1 << 20, 64])
def test_csc_sorter_wide_order_is_the_same_order(sort_bytes):
    rng = np.random.default_rng(0)
    dst = rng.integers(0, 50, 700).astype(np.int64)
    stream = ArraySpans((700,), np.dtype(np.int64), lambda: iter(np.array_split(dst, 3)))
    eids = ArraySpans((700,), np.dtype(np.int64), lambda: iter(np.array_split(np.arange(700), 4)))
    narrow, wide = CscSorter(50, stream, sort_bytes), CscSorter(50, stream, sort_bytes, wide=True)
    assert (narrow.index_dtype, wide.index_dtype) == (np.dtype(np.int32), np.dtype(np.int64))
    got = [np.concatenate(list(s.column(eids, np.int64).spans())) for s in (narrow, wide)]
    assert got[0].tolist() == got[1].tolist() == np.argsort(dst, kind="stable").tolist()
