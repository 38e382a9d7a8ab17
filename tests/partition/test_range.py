"""The ``range`` method: GraphStorm's contiguous, balanced ranges of each type's IDs.

Truth is ``numpy.array_split`` per node type (what graphstorm's ``range_partition.py``
writes); after dispatch every node's per-type new ID must equal its original
``type_nid``, and its ``new_nid`` the partition's start plus its offset in the range.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.cli import cli
from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata
from dgl_chunked.partition import assign_partitions, available_methods, range_bounds, range_parts
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import raise_if_dask_computes
from dgl_chunked.verify import load_partition_output

N_A, N_B = 23, 7


def _truth(num_nodes: int, num_parts: int) -> np.ndarray:
    """Part of every ID, from numpy's array_split (graphstorm's RangePartitionAlgorithm)."""
    pieces = np.array_split(np.arange(num_nodes), num_parts)
    return np.concatenate([np.full(len(p), i, np.int32) for i, p in enumerate(pieces)])


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = SynthSpec(
        node_types={"a": N_A, "b": N_B},
        edge_types={"a:r:b": 60, "b:s:a": 40, "a:t:a": 50},
        num_node_chunks=3,
        num_edge_chunks=2,
        seed=4,
    )
    return Path(write_synthetic_graph(tmp_path_factory.mktemp("range") / "g", spec).base_dir)


def _rechunked(graph: ChunkedGraph, chunks: tuple[int, ...]) -> ChunkedGraph:
    md: ChunkedGraphMetadata = graph.metadata
    per_type = tuple(chunks if t == "a" else (md.num_nodes(t),) for t in md.node_types)
    return ChunkedGraph(dataclasses.replace(md, num_nodes_per_chunk=per_type))


def _computed(graph: ChunkedGraph, num_parts: int, **kwargs: object) -> dict[str, np.ndarray]:
    return {t: a.compute() for t, a in assign_partitions(graph, num_parts, method="range", **kwargs).items()}


def test_registered() -> None:
    assert "range" in available_methods()


@pytest.mark.parametrize("num_nodes", [0, 1, 5, 6, 7, 100, 101])
@pytest.mark.parametrize("num_parts", [1, 2, 3, 6, 7, 8])
def test_kernel_equals_array_split(num_nodes: int, num_parts: int) -> None:
    got = range_parts(np.arange(num_nodes), num_nodes=num_nodes, num_parts=num_parts)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _truth(num_nodes, num_parts))
    bounds = range_bounds(num_nodes, num_parts)
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == num_nodes
    assert sizes.max() - sizes.min() <= 1 and (np.diff(sizes) <= 0).all()  # the larger parts first
    np.testing.assert_array_equal(sizes, np.bincount(got, minlength=num_parts))


def test_any_subset_of_ids_gets_the_parts_of_the_whole() -> None:
    ids = np.random.default_rng(0).integers(0, 1000, 300)
    np.testing.assert_array_equal(range_parts(ids, num_nodes=1000, num_parts=7), _truth(1000, 7)[ids])


def test_every_type_exact_and_balanced(graph_dir: Path) -> None:
    graph = open_chunked_graph(graph_dir)
    for num_parts in (1, 3, 4, 30):
        got = _computed(graph, num_parts)
        assert set(got) == {"a", "b"}
        np.testing.assert_array_equal(got["a"], _truth(N_A, num_parts))
        np.testing.assert_array_equal(got["b"], _truth(N_B, num_parts))


def test_seed_and_balance_options_do_not_change_it(graph_dir: Path) -> None:
    graph = open_chunked_graph(graph_dir)
    ref = _computed(graph, 3)
    for kwargs in ({"seed": 7}, {"seed": 2**64 - 1, "balance_edges": True}, {"balance_ntypes": ["a", "b"]}):
        got = _computed(graph, 3, **kwargs)
        for t in ref:
            np.testing.assert_array_equal(got[t], ref[t])


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[int, ...]:
    cuts = draw(st.sets(st.integers(1, N_A - 1), max_size=N_A - 1))
    bounds = [0, *sorted(cuts), N_A]
    return tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=chunkings(), num_parts=st.integers(1, 9))
def test_any_chunking_gives_identical_files(graph_dir: Path, chunks: tuple[int, ...], num_parts: int) -> None:
    graph = open_chunked_graph(graph_dir)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name, g in (("ref", _rechunked(graph, (N_A,))), ("got", _rechunked(graph, chunks))):
            out = Path(tmp) / name
            write_assignment(
                out, assign_partitions(g, num_parts, method="range"), num_parts=num_parts, algo_name="random"
            )
            files.append({t: (out / f"{t}.txt").read_bytes() for t in ("a", "b")})
    assert files[0] == files[1]
    assert [int(x) for x in files[0]["a"].split()] == _truth(N_A, num_parts).tolist()


def test_lazy_and_chunked_like_the_nodes(graph_dir: Path) -> None:
    graph = _rechunked(open_chunked_graph(graph_dir), (5, 9, 9))
    with raise_if_dask_computes():
        parts = assign_partitions(graph, 4, method="range")
    assert parts["a"].chunks == ((5, 9, 9),) and parts["a"].dtype == np.int32
    assert parts["a"].name.startswith("dglc-assign-range")


def test_cli_partition_writes_the_ranges(graph_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "assign"
    args = ["partition", "--in-dir", str(graph_dir), "--out-dir", str(out), "--num-parts", "3", "--method", "range"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert [int(x) for x in (out / "a.txt").read_text().split()] == _truth(N_A, 3).tolist()
    assert [int(x) for x in (out / "b.txt").read_text().split()] == _truth(N_B, 3).tolist()
    assert '"algo_name": "random"' in (out / "partition_meta.json").read_text()


@pytest.mark.parametrize("num_parts", [1, 3, 4])
def test_run_keeps_per_type_ids(graph_dir: Path, tmp_path: Path, num_parts: int) -> None:
    """After ``run --method range`` a node's per-type new ID is its original type_nid,
    and its new_nid is its partition's start of the type plus its offset in the range."""
    out = tmp_path / "out"
    args = ["run", "--in-dir", str(graph_dir), "--out-dir", str(out), "--num-parts", str(num_parts)]
    result = CliRunner().invoke(cli, [*args, "--method", "range", "--save-orig-nids"])
    assert result.exit_code == 0, result.output
    config, parts = load_partition_output(out)
    for ntype, n in (("a", N_A), ("b", N_B)):
        bounds = range_bounds(n, num_parts)
        ranges = np.asarray(config.node_map[ntype])
        np.testing.assert_array_equal(ranges[:, 1] - ranges[:, 0], np.diff(bounds))
        # per-type new ID = index in the concatenation of every partition's orig_nids (graphstorm's pnid)
        orig = np.concatenate([part.orig_nids[ntype] for part in parts])
        np.testing.assert_array_equal(orig, np.arange(n))
        for p, part in enumerate(parts):
            inner = part.ndata["inner_node"].astype(bool)
            ids = part.ndata["_ID"][inner]
            of_type = (ids >= ranges[p, 0]) & (ids < ranges[p, 1])
            type_nid = part.orig_nids[ntype]
            np.testing.assert_array_equal(ids[of_type], ranges[p, 0] + type_nid - bounds[p])
            np.testing.assert_array_equal(type_nid, np.arange(bounds[p], bounds[p + 1]))
    # The homogeneous new_nid is the input's orig_nid (type offset + type_nid) only with one
    # partition: with more, partition-major numbering interleaves the types.
    offsets = {"a": 0, "b": N_A}
    shifted = [
        np.array_equal(part.ndata["_ID"][part.ndata["inner_node"].astype(bool)], orig)
        for part in parts
        for orig in [np.concatenate([offsets[t] + part.orig_nids[t] for t in ("a", "b")])]
    ]
    assert all(shifted) == (num_parts == 1)
