"""Benchmark: random assignment of a synthetic graph, written as a DGL assignment directory.

Phases (seconds each, printed as a table):

    synth        write the synthetic chunked graph (skipped when cached in --work-dir)
    assign       assign_partitions(method="random"): builds the lazy graph only
    write        write_assignment: hash + format + <ntype>.txt + Zarr sidecar (one compute)
    read-text    open_assignment from the text files (sidecar ignored) + compute
    read-zarr    open_assignment through the fresh Zarr sidecar + compute
    report       compute_partition_report (edge cut, balance, HALO) unless --no-report

Run on a 2-worker LocalCluster (processes, 1 thread each)::

    python benchmarks/bench_partition.py --num-nodes 1000000 --num-edges 10000000
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dgl_chunked.io.assignment import SIDECAR_NAME, open_assignment, write_assignment
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions, compute_partition_report
from dgl_chunked.synth import SynthSpec, write_synthetic_graph


def _timed(phases: list[tuple[str, float, str]], name: str, func: Callable[[], Any], note: str = "") -> Any:
    start = time.perf_counter()
    result = func()
    phases.append((name, time.perf_counter() - start, note))
    return result


def _compute_all(parts: dict[str, Any]) -> int:
    import dask

    return int(sum(a.size for a in dask.compute(*parts.values())))


def run(args: argparse.Namespace) -> list[tuple[str, float, str]]:
    """Run every phase on the current Dask scheduler; return ``(phase, seconds, note)`` rows."""
    phases: list[tuple[str, float, str]] = []
    graph_dir = os.path.join(args.work_dir, f"graph-{args.num_nodes}-{args.num_edges}")
    if not os.path.exists(os.path.join(graph_dir, "metadata.json")):
        spec = SynthSpec.homogeneous(
            args.num_nodes, args.num_edges, feat_dim=None, num_chunks=args.num_chunks, distribution="powerlaw"
        )
        _timed(
            phases,
            "synth",
            lambda: write_synthetic_graph(graph_dir, spec, overwrite=True),
            f"{args.num_nodes:,} nodes, {args.num_edges:,} edges, {args.num_chunks} chunks",
        )
    graph = open_chunked_graph(graph_dir)
    parts = _timed(phases, "assign", lambda: assign_partitions(graph, args.num_parts, seed=0), "lazy, no compute")
    out = os.path.join(args.work_dir, "assignment")
    _timed(
        phases,
        "write",
        lambda: write_assignment(out, parts, num_parts=args.num_parts, algo_name="random", overwrite=True),
    )
    size = os.path.getsize(os.path.join(out, "_N.txt"))
    phases[-1] = (phases[-1][0], phases[-1][1], f"_N.txt {size / 1e6:.1f} MB")
    sidecar = os.path.join(out, SIDECAR_NAME)
    shutil.move(sidecar, sidecar + ".off")  # force the text path
    chunks = {t: graph.node_chunks(t) for t in graph.node_types}
    n = _timed(
        phases,
        "read-text",
        lambda: _compute_all(open_assignment(out, graph.metadata, chunks=chunks)[1]),
        "streamed line count + parse",
    )
    shutil.move(sidecar + ".off", sidecar)
    _timed(
        phases,
        "read-zarr",
        lambda: _compute_all(open_assignment(out, graph.metadata, chunks=chunks)[1]),
        f"{n:,} IDs via the Zarr sidecar",
    )
    if not args.no_report:
        report = _timed(phases, "report", lambda: compute_partition_report(graph, parts, args.num_parts))
        phases[-1] = (
            phases[-1][0],
            phases[-1][1],
            f"cut {report.edge_cut_fraction:.3f}, node balance {report.balance()['nodes/total']:.4f}",
        )
    return phases


def _table(phases: list[tuple[str, float, str]]) -> str:
    lines = [f"{'phase':<10}  {'seconds':>8}  notes", f"{'-' * 10}  {'-' * 8}  {'-' * 40}"]
    lines += [f"{name:<10}  {sec:>8.2f}  {note}" for name, sec, note in phases]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-nodes", type=int, default=1_000_000)
    parser.add_argument("--num-edges", type=int, default=10_000_000)
    parser.add_argument("--num-chunks", type=int, default=8)
    parser.add_argument("--num-parts", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", default=None, help="keeps the synthetic graph between runs")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    temp = args.work_dir is None
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="dglc-bench-")
    from distributed import Client, LocalCluster

    from dgl_chunked.cluster import worker_environment

    try:
        with (
            worker_environment(),
            LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            Client(cluster),
        ):
            phases = run(args)
    finally:
        if temp:
            shutil.rmtree(args.work_dir, ignore_errors=True)
    print(
        f"random assignment, {args.num_parts} parts, {args.workers}-worker LocalCluster "
        f"(processes, 1 thread each), numpy {np.__version__}"
    )
    print(_table(phases))


if __name__ == "__main__":
    main()
