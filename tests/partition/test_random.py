"""The ``random`` method: seeded, chunk- and scheduler-invariant hashing."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata
from dgl_chunked.partition import assign_partitions, random_parts, splitmix64
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import raise_if_dask_computes

N_SMALL = 12


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    spec = SynthSpec(node_types={"a": N_SMALL, "b": 7}, edge_types={"a:r:b": 20}, num_node_chunks=2)
    return open_chunked_graph(write_synthetic_graph(tmp_path_factory.mktemp("small") / "g", spec).base_dir)


@pytest.fixture(scope="module")
def large_graph(tmp_path_factory: pytest.TempPathFactory) -> ChunkedGraph:
    spec = SynthSpec.homogeneous(200_000, 10, feat_dim=None, num_classes=0, num_chunks=7)
    return open_chunked_graph(write_synthetic_graph(tmp_path_factory.mktemp("large") / "g", spec).base_dir)


def _rechunked(graph: ChunkedGraph, chunks: tuple[int, ...]) -> ChunkedGraph:
    md: ChunkedGraphMetadata = graph.metadata
    per_type = tuple(chunks if t == "a" else (md.num_nodes(t),) for t in md.node_types)
    return ChunkedGraph(dataclasses.replace(md, num_nodes_per_chunk=per_type))


def _files(graph: ChunkedGraph, out: Path, *, seed: int, num_parts: int = 3) -> dict[str, bytes]:
    parts = assign_partitions(graph, num_parts, seed=seed)
    write_assignment(out, parts, num_parts=num_parts, algo_name="random", overwrite=True)
    return {t: (out / f"{t}.txt").read_bytes() for t in graph.node_types}


def test_splitmix64_reference_values() -> None:
    # SplitMix64 from state 0: the first outputs of Vigna's reference generator
    got = splitmix64(np.array([0, 1], np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    assert got.tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


def test_kernel_depends_only_on_seed_type_and_id() -> None:
    ids = np.arange(1000, dtype=np.int64)
    full = random_parts(ids, type_id=2, seed=5, num_parts=7)
    assert full.dtype == np.int32 and full.min() >= 0 and full.max() < 7
    np.testing.assert_array_equal(random_parts(ids[::-1], type_id=2, seed=5, num_parts=7), full[::-1])
    np.testing.assert_array_equal(random_parts(ids[300:301], type_id=2, seed=5, num_parts=7), full[300:301])
    assert random_parts(ids[:0], type_id=2, seed=5, num_parts=7).shape == (0,)
    assert not np.array_equal(random_parts(ids, type_id=3, seed=5, num_parts=7), full)
    assert (random_parts(ids, type_id=2, seed=5, num_parts=1) == 0).all()


def test_chunkings_345_and_66_give_identical_files(small_graph: ChunkedGraph, tmp_path: Path) -> None:
    a = _files(_rechunked(small_graph, (3, 4, 5)), tmp_path / "a", seed=11)
    b = _files(_rechunked(small_graph, (6, 6)), tmp_path / "b", seed=11)
    assert a == b
    assert len(a["a"].splitlines()) == N_SMALL


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[int, ...]:
    cuts = draw(st.sets(st.integers(1, N_SMALL - 1), max_size=N_SMALL - 1))
    bounds = [0, *sorted(cuts), N_SMALL]
    return tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=chunkings(), seed=st.integers(0, 2**64 - 1))
def test_any_chunking_gives_identical_files(small_graph: ChunkedGraph, chunks: tuple[int, ...], seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ref = _files(_rechunked(small_graph, (N_SMALL,)), Path(tmp) / "ref", seed=seed)
        got = _files(_rechunked(small_graph, chunks), Path(tmp) / "got", seed=seed)
    assert got == ref


def test_sync_and_two_worker_cluster_give_identical_files(
    large_graph: ChunkedGraph, tmp_path: Path, client: object
) -> None:
    on_cluster = _files(large_graph, tmp_path / "cluster", seed=3, num_parts=16)
    with dask.config.set(scheduler="synchronous"):
        on_sync = _files(large_graph, tmp_path / "sync", seed=3, num_parts=16)
    assert on_cluster == on_sync
    assert len(large_graph.node_chunks("_N")) == 7


def test_seeds_differ_and_repeat(small_graph: ChunkedGraph) -> None:
    def run(seed: int) -> np.ndarray:
        return np.concatenate([a.compute() for a in assign_partitions(small_graph, 4, seed=seed).values()])

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))


@pytest.mark.parametrize("seed", [0, 1, 2**63 + 5])
def test_distribution_is_uniform(large_graph: ChunkedGraph, seed: int) -> None:
    num_parts = 8
    parts = assign_partitions(large_graph, num_parts, seed=seed)["_N"].compute()
    counts = np.bincount(parts, minlength=num_parts)
    expected = parts.size / num_parts
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 24.3  # the 99.9% quantile of chi-square with 7 degrees of freedom
    pairs = np.bincount(parts[:-1] * num_parts + parts[1:], minlength=num_parts**2)  # no serial correlation
    assert abs(pairs / (parts.size - 1) - 1 / num_parts**2).max() < 0.002


def test_assignment_is_lazy_and_labelled(large_graph: ChunkedGraph) -> None:
    with raise_if_dask_computes():
        parts = assign_partitions(large_graph, 4, seed=1)
    arr = parts["_N"]
    assert arr.dtype == np.int32 and arr.chunks == (large_graph.node_chunks("_N"),)
    assert arr.name.startswith("dglc-assign-random")


@pytest.mark.distributed
def test_write_and_report_on_process_cluster(small_graph: ChunkedGraph, tmp_path: Path, process_client: object) -> None:
    """Kernels and arguments pickle: the same files and report as on the synchronous scheduler."""
    from dgl_chunked.partition import compute_partition_report

    on_cluster = _files(small_graph, tmp_path / "cluster", seed=8, num_parts=5)
    report = compute_partition_report(small_graph, assign_partitions(small_graph, 5, seed=8), 5)
    with dask.config.set(scheduler="synchronous"):
        assert _files(small_graph, tmp_path / "sync", seed=8, num_parts=5) == on_cluster
        assert compute_partition_report(small_graph, assign_partitions(small_graph, 5, seed=8), 5) == report
