"""Partition + dispatch benchmark against the figures DGL's pipeline gets (issue 6).

Generates uniform random homogeneous graphs with ``dgl-chunked synth`` (float32[16]
node feature, CSV edges, NPY features) at 1x = 1M nodes / 10M edges in 4 chunks and,
with ``--scales 1 10``, at 10x = 10M nodes / 100M edges in 40 chunks (same chunk
size), then runs ``partition`` (random, 2 parts, written as a DGL assignment
directory) and ``dispatch`` on a fresh 2-worker LocalCluster (processes, 1 thread
each) and prints wall time per stage, edges per second, and the peak RSS of every
worker process and of the client, as a table and as JSON.

Usage::

    python benchmarks/bench_pipeline.py [--scales 1 10] [--workers 2] [--json out.json]
                                        [--memory-limit 1GiB] [--work-dir DIR] [--staging-dir DIR]
                                        [--performance-report report.html]
                                        [--use-graphbolt | --compare-graphbolt]

``--use-graphbolt`` dispatches to GraphBolt's ``fused_csc_sampling_graph.pt`` instead
of ``graph.dgl``; ``--compare-graphbolt`` runs both formats alternately on the same
graph and assignment (``--repeat`` times each, fastest kept) and prints the ratio.

Peak RSS per worker is the worker process's ``ru_maxrss`` read at the end (each
run uses a fresh cluster, so it is that run's peak).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCALES = {1: (1_000_000, 10_000_000, 4), 10: (10_000_000, 100_000_000, 40)}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _synth(out: Path, scale: int) -> float:
    nodes, edges, chunks = SCALES[scale]
    if (out / "metadata.json").exists():
        return 0.0
    cmd = [
        str(Path(sys.executable).parent / "dgl-chunked"),
        "synth",
        "--out-dir",
        str(out),
        "--preset",
        "homogeneous",
        "--num-nodes",
        str(nodes),
        "--num-edges",
        str(edges),
        "--feat-dim",
        "16",
        "--num-chunks",
        str(chunks),
        "--seed",
        "0",
        "--overwrite",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _run_once(
    chunked: Path,
    work: Path,
    workers: int,
    memory_limit: str | None,
    staging_dir: str | None,
    report: str | None,
    use_graphbolt: bool = False,
) -> dict[str, Any]:
    from contextlib import nullcontext

    from distributed import Client, LocalCluster, performance_report

    import dgl_chunked as dglc

    assign, out = work / "assign", work / "out"
    for path in (assign, out):
        shutil.rmtree(path, ignore_errors=True)
    kwargs: dict[str, Any] = {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
    }
    if memory_limit:
        kwargs["memory_limit"] = memory_limit
    with (
        LocalCluster(**kwargs) as cluster,
        Client(cluster) as client,
        performance_report(filename=report) if report else nullcontext(),
    ):
        start = time.perf_counter()
        graph = dglc.open_chunked_graph(chunked)
        parts = dglc.assign_partitions(graph, 2, method="random", seed=0)
        dglc.write_assignment(assign, parts, num_parts=2, algo_name="random")
        t_partition = time.perf_counter() - start
        start = time.perf_counter()
        options = dglc.DispatchOptions(staging_dir=staging_dir, use_graphbolt=use_graphbolt)
        result = dglc.dispatch(graph, assign, out, client=client, options=options)
        t_dispatch = time.perf_counter() - start
        worker_rss = client.run(_peak_rss_mb)
    return {
        "partition_s": t_partition,
        "dispatch_s": t_dispatch,
        "total_s": t_partition + t_dispatch,
        "dispatch_stages_s": result.stage_seconds,
        "edges": result.config.num_edges,
        "edges_per_s": result.config.num_edges / (t_partition + t_dispatch),
        "worker_peak_rss_mb": sorted(worker_rss.values()),
        "client_peak_rss_mb": _peak_rss_mb(),
    }


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'graph':<14}{'partition s':>12}{'dispatch s':>12}{'total s':>10}{'Medges/s':>10}"
        f"{'worker peak RSS MB':>22}{'client MB':>11}"
    ]
    for r in rows:
        workers = "/".join(f"{m:.0f}" for m in r["worker_peak_rss_mb"])
        lines.append(
            f"{r['graph']:<14}{r['partition_s']:>12.2f}{r['dispatch_s']:>12.2f}"
            f"{r['total_s']:>10.2f}{r['edges_per_s'] / 1e6:>10.2f}{workers:>22}"
            f"{r['client_peak_rss_mb']:>11.0f}"
        )
    for r in rows:
        stages = ", ".join(f"{k} {v:.2f}" for k, v in r["dispatch_stages_s"].items())
        lines.append(f"  {r['graph']} dispatch stages (s): {stages}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1], choices=sorted(SCALES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs per graph; the fastest is kept")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--staging-dir", default=None, help="dispatch staging (default OUT/_staging)")
    parser.add_argument(
        "--performance-report",
        default=None,
        metavar="HTML",
        help="write Dask's performance report of the last run here",
    )
    parser.add_argument("--json", default=None)
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--use-graphbolt", action="store_true", help="write GraphBolt .pt partitions")
    fmt.add_argument("--compare-graphbolt", action="store_true", help="run DGL format and GraphBolt alternately")
    args = parser.parse_args()
    formats = [False, True] if args.compare_graphbolt else [args.use_graphbolt]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="dglc-bench-"))
    rows = []
    for scale in args.scales:
        nodes, edges, chunks = SCALES[scale]
        chunked = work / f"graph-{scale}x"
        synth_s = _synth(chunked, scale)
        runs: dict[bool, list[dict[str, Any]]] = {f: [] for f in formats}
        for _ in range(args.repeat):
            for use_graphbolt in formats:  # alternate, so a busy period hurts both formats alike
                runs[use_graphbolt].append(
                    _run_once(
                        chunked,
                        work / f"run-{scale}x",
                        args.workers,
                        args.memory_limit,
                        args.staging_dir,
                        args.performance_report,
                        use_graphbolt,
                    )
                )
        for use_graphbolt in formats:
            best = min(runs[use_graphbolt], key=lambda r: r["total_s"])
            label = f"{nodes // 10**6}M/{edges // 10**6}M" + (" gb" if use_graphbolt else "")
            rows.append({"graph": label, "synth_s": synth_s, "chunks": chunks, "graphbolt": use_graphbolt, **best})
    print(
        f"machine: {os.cpu_count()} CPUs; workers: {args.workers} x 1 thread; "
        f"memory limit per worker: {args.memory_limit or 'default'}"
    )
    print(_table(rows))
    for gb_row in (r for r in rows if r["graphbolt"] and args.compare_graphbolt):
        dgl_row = next(r for r in rows if not r["graphbolt"] and r["graph"] == gb_row["graph"][:-3])
        ratio = gb_row["dispatch_s"] / dgl_row["dispatch_s"]
        print(f"{dgl_row['graph']}: GraphBolt dispatch / DGL-format dispatch = {ratio:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
