"""Constants of the run forecast (:mod:`.forecast`), measured on the project's VM.

Every constant here comes from ``benchmarks/bench_pipeline.py`` runs (2 worker
processes x 1 thread, random assignment into 2 parts, DGL's reference graph:
uniform random, float32[16] node feature, CSV edges, NPY features) on the
2-core / 24 GiB VM; the conditions of the measurement are in the comment below,
``benchmarks/results/pipeline.json`` and ``docs/scaling.md``. Times are per worker
thread; memory is resident set size. Another machine wants its own numbers: run
the benchmark at ``--scales 1 10`` and fit the same linear terms.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Calibration", "CALIBRATION"]


@dataclass(frozen=True)
class Calibration:
    """Linear cost terms: seconds per unit of work on one worker thread, bytes per unit held."""

    step_overhead_s: float
    """Fixed cost of one compute (scheduling, task submission, gathering results)."""
    edge_overhead_s: float
    """Fixed cost of the edge and feature staging (graph construction, first reads)."""
    write_overhead_s: float
    """Fixed cost of the partition writers (file creation, small tensors, renames)."""
    partition_overhead_s: float
    """Random assignment written as a directory: fixed part (graph setup, files)."""
    partition_s_per_node: float
    """Random assignment written as a directory, per node (the whole step, not per thread)."""
    node_step_s_per_node: float
    """Staging the assignment, or numbering the nodes: per node of a block."""
    edge_s_per_edge: float
    """Edge staging: CSV parse, ID checks, two node-ID lookups, sort by owner, Zarr writes."""
    feature_s_per_byte: float
    """Feature staging: read a chunk, sort its rows by owner, write them."""
    write_s_per_edge: float
    """A partition writer, per owned edge (relabel, HALO lookups, graph.dgl)."""
    write_s_per_node: float
    """A partition writer, per local node (inner and HALO: IDs, types, flags)."""
    write_s_per_byte: float
    """A partition writer, per feature byte copied from staging into ``node_feat.dgl``."""
    worker_base_bytes: int
    """A worker process with dask, numpy, pandas, pyarrow and zarr loaded, between tasks."""
    edge_task_bytes_per_edge: float
    """Peak working set of an edge-staging task, per edge of its chunk (CSV parse included)."""
    writer_bytes_per_segment_edge: float
    """Peak working set of a writer per edge of its largest staged segment (int64 copies)."""
    # The split writers' terms (graph_split; a split feature file costs write_s_per_byte per byte,
    # as its one-task writer): benchmarks/bench_cores.py --plan-threads 16 at 10M / 100M, 2 parts,
    # 1 worker (benchmarks/results/cores.json "runs_plan_threads", load 3.8): HALO tasks 4.21 s,
    # skeletons 0.78 s, ranges 11.16 s for 100M edges and 2 x 10M node IDs; not refitted by
    # fit_calibration.py (its runs split nothing: 2 workers, 6 files).
    split_halo_s_per_edge: float = 4.2e-08
    """A graph file written in row ranges (``graph_split``): a HALO task, per edge it reads."""
    split_skeleton_s_per_id: float = 3.9e-08
    """A split graph file's skeleton task, per node ID of the graph (it joins the HALO bitmaps)."""
    split_rows_s_per_edge: float = 1.12e-07
    """A split graph file's row-range task, per edge it writes."""


CALIBRATION = Calibration(
    # benchmarks/fit_calibration.py on `bench_pipeline.py --scales 1 10 30 --repeat 2 --plan`
    # (2026-11-25 evening: workers with Arrow's system allocator and MALLOC_TRIM_THRESHOLD_ = 1 MiB,
    # cluster.WORKER_ENVIRONMENT; lookups in slices of ids.HEAP_SLICE), fitted on the 1x and 10x
    # runs; the 30x run checks it out of sample (time -15%, peak RSS +6%). The VM ran nothing
    # else but the benchmark.
    step_overhead_s=0.029,
    edge_overhead_s=0.0,
    write_overhead_s=0.044,
    partition_overhead_s=0.08,
    partition_s_per_node=3.02e-08,
    node_step_s_per_node=3.39e-08,
    edge_s_per_edge=1.97e-07,
    feature_s_per_byte=1e-09,
    write_s_per_edge=1.09e-07,
    write_s_per_node=0.0,
    write_s_per_byte=1e-09,
    worker_base_bytes=152 << 20,  # fit_calibration.py --measure-base: 152 MB
    edge_task_bytes_per_edge=33.0,
    writer_bytes_per_segment_edge=48.0,
)
