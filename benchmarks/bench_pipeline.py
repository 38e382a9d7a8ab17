"""Partition + dispatch benchmark against the figures DGL's pipeline gets (issue 6).

Generates uniform random homogeneous graphs with ``dgl-chunked synth`` (float32[16]
node feature, CSV edges, NPY features; Parquet edges with ``--edge-format parquet``) at
1x = 1M nodes / 10M edges in 4 chunks and, with ``--scales 1 10 30``, at 10x = 10M nodes
/ 100M edges in 40 chunks and 30x = 30M nodes / 300M edges in 120 chunks (same chunk
size), then runs ``partition`` (random, 2 parts, written as a DGL assignment directory)
and ``dispatch`` on a fresh 2-worker LocalCluster (processes, 1 thread each) and prints
wall time per step, edges per second, and the peak RSS of every worker process and of
the client, as a table and as JSON.

Usage::

    python benchmarks/bench_pipeline.py [--scales 1 10 30] [--workers 2] [--json out.json]
                                        [--memory-limit 1GiB] [--lookup-cache SIZE] [--work-dir DIR] [--staging-dir DIR]
                                        [--performance-report report.html] [--plot scaling.png]
                                        [--use-graphbolt | --compare-graphbolt] [--plan]
                                        [--edge-format {csv,parquet}]
                                        [--dgl-pipeline DGL_SRC] [--cli] [--cli-workers N ...]

``--memory-limit`` is the LocalCluster's per-worker limit and also dispatch's
``memory_limit`` (it sizes the node-ID cache and HALO tables); the run records
whether any worker was ever seen paused (polled every 0.2 s) or restarted (its
process ID changed). ``--plan`` also prints what :func:`dgl_chunked.forecast_run`
predicted for each graph next to what was measured. ``--plot`` draws time and
peak RSS per worker against edges.

``--use-graphbolt`` dispatches to GraphBolt's ``fused_csc_sampling_graph.pt`` instead
of ``graph.dgl``; ``--compare-graphbolt`` runs both formats alternately on the same
graph and assignment (``--repeat`` times each, fastest kept) and prints the ratio.

Peak RSS per worker is the worker process's ``VmHWM`` read at the end (``peak_memory.py``; each
run uses a fresh cluster, so it is that run's peak).

``--dgl-pipeline DGL_SRC`` also runs DGL's own chunked pipeline on the same graph and
assignment: ``DGL_SRC/tools/distpartitioning/data_proc_pipeline.py`` of a DGL v2.1.0
source checkout, 2 ranks (``--dgl-ranks``) over gloo on the loopback interface, with the
real-DGL interpreter (``--dgl-python``, default ``$DGL_VENV_PYTHON``, else the one
``scripts/setup-real-dgl.sh`` makes). Alternately with it (``--repeat`` times, fastest
kept) it runs the ``dgl-chunked dispatch`` command end to end, as a user types it (no
cluster flag) and with ``--workers N`` for each N of ``--cli-workers`` (default 2), and
prints how many times faster each is, and each against the fastest of them. ``--cli``
times the same commands without DGL's pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from dask.utils import parse_bytes
from peak_memory import peak_rss_mb

from dgl_chunked.dispatch.options import parse_memory_limit

SCALES = {1: (1_000_000, 10_000_000, 4), 10: (10_000_000, 100_000_000, 40), 30: (30_000_000, 300_000_000, 120)}


def _synth(out: Path, scale: int, edge_format: str = "csv") -> float:
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
        "--edge-format",
        edge_format,
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
    lookup_cache: str | None = None,
    num_parts: int = 2,
) -> dict[str, Any]:
    from contextlib import nullcontext

    from distributed import Client, LocalCluster, performance_report

    import dgl_chunked as dglc
    from dgl_chunked.cluster import worker_environment

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
        worker_environment(),  # what the CLI's clusters run with
        LocalCluster(**kwargs) as cluster,
        Client(cluster) as client,
        performance_report(filename=report) if report else nullcontext(),
        _StatusWatch(client) as watch,
    ):
        pids = client.run(os.getpid)
        start = time.perf_counter()
        graph = dglc.open_chunked_graph(chunked)
        parts = dglc.assign_partitions(graph, num_parts, method="random", seed=0)
        dglc.write_assignment(assign, parts, num_parts=num_parts, algo_name="random")
        t_partition = time.perf_counter() - start
        start = time.perf_counter()
        options = dglc.DispatchOptions(
            staging_dir=staging_dir,
            graphbolt=dglc.GraphBoltOptions() if use_graphbolt else None,
            memory_limit=parse_memory_limit(memory_limit),
        )
        if lookup_cache is not None:
            options = replace(options, lookup_cache_bytes=int(parse_bytes(lookup_cache)))
        result = dglc.dispatch(graph, assign, out, client=client, options=options)
        t_dispatch = time.perf_counter() - start
        worker_rss = client.run(peak_rss_mb)
        restarted = len(set(pids.values()) - set(client.run(os.getpid).values()))
    return {
        "nodes": result.config.num_nodes,
        "memory_limit": memory_limit or "default",
        "workers_paused": sorted(watch.paused),
        "workers_restarted": restarted,
        "partition_s": t_partition,
        "dispatch_s": t_dispatch,
        "total_s": t_partition + t_dispatch,
        "dispatch_steps_s": result.step_seconds,
        "edges": result.config.num_edges,
        "edges_per_s": result.config.num_edges / (t_partition + t_dispatch),
        "worker_peak_rss_mb": sorted(worker_rss.values()),
        "client_peak_rss_mb": peak_rss_mb(),
    }


class _StatusWatch:
    """Polls the scheduler for worker status; remembers every worker seen paused."""

    def __init__(self, client: Any) -> None:
        import threading

        self.client, self.paused = client, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            try:
                workers = self.client.scheduler_info()["workers"]
            except Exception:  # the cluster is closing
                return
            self.paused |= {a for a, w in workers.items() if w.get("status") == "paused"}

    def __enter__(self) -> _StatusWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _dgl_python(given: str | None) -> str:
    default = Path.home() / ".cache" / "dgl_chunked" / "dgl210" / "bin" / "python"
    return given or os.environ.get("DGL_VENV_PYTHON") or str(default)


def _dgl_pipeline(src: Path, python: str, chunked: Path, assign: Path, out: Path, ranks: int) -> float:
    """Wall time of DGL's chunked pipeline (``ranks`` processes, gloo on 127.0.0.1)."""
    import socket

    tools = src / "tools"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    meta = json.loads((chunked / "metadata.json").read_text())
    args = [python, str(tools / "distpartitioning" / "data_proc_pipeline.py"), f"--world-size={ranks}"]
    args += ["--process-group-timeout=600", f"--input-dir={chunked}", f"--graph-name={meta['graph_name']}"]
    args += ["--schema=metadata.json", "--num-parts=2", f"--output={out}", f"--partitions-dir={assign}"]
    args += ["--log-level=warning"]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env["PYTHONPATH"] = os.pathsep.join([str(tools / "distpartitioning"), str(tools)])
    start = time.perf_counter()
    procs = [
        subprocess.Popen(args, env={**env, "RANK": str(r)}, cwd=out, stdout=subprocess.DEVNULL) for r in range(ranks)
    ]
    if any(p.wait() for p in procs):
        raise RuntimeError(f"DGL's pipeline failed: {args}")
    seconds = time.perf_counter() - start
    if not (out / "metadata.json").is_file():
        raise RuntimeError(f"DGL's pipeline wrote no {out / 'metadata.json'}")
    return seconds


def _cli_dispatch(chunked: Path, assign: Path, out: Path, extra: list[str]) -> float:
    """Wall time of ``dgl-chunked dispatch`` end to end (imports, cluster, every step)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "dgl-chunked"), "dispatch", "--in-dir", str(chunked)]
    cmd += ["--partitions-dir", str(assign), "--out-dir", str(out), "--no-progress", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _versus_dgl(work: Path, scale: int, chunked: Path, args: argparse.Namespace) -> dict[str, float]:
    """DGL's pipeline and our CLI, alternately, on the same graph and random assignment."""
    import dgl_chunked as dglc

    assign = work / f"dgl-assign-{scale}x"
    if not (assign / "partition_meta.json").exists():
        graph = dglc.open_chunked_graph(chunked)
        dglc.write_assignment(assign, dglc.assign_partitions(graph, 2, seed=0), num_parts=2, algo_name="random")
    variants: dict[str, list[str]] = {
        "ours": [],
        **{f"ours --workers {n}": ["--workers", str(n)] for n in args.cli_workers},
    }
    runs: dict[str, list[float]] = {"dgl": []} if args.dgl_pipeline else {}
    runs.update({name: [] for name in variants})
    for _ in range(args.repeat):
        out = work / f"dgl-out-{scale}x"
        if args.dgl_pipeline:
            runs["dgl"].append(
                _dgl_pipeline(
                    Path(args.dgl_pipeline), _dgl_python(args.dgl_python), chunked, assign, out, args.dgl_ranks
                )
            )
        for name, extra in variants.items():
            runs[name].append(_cli_dispatch(chunked, assign, out, extra))
    shutil.rmtree(work / f"dgl-out-{scale}x", ignore_errors=True)
    return {k: min(v) for k, v in runs.items()}


def _plot(rows: list[dict[str, Any]], path: str) -> None:
    """Time and peak RSS per worker against edges, one line per memory-limit setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 3.8))
    for limit in sorted({r["memory_limit"] for r in rows}):
        runs = sorted((r for r in rows if r["memory_limit"] == limit), key=lambda r: r["edges"])
        edges = [r["edges"] for r in runs]
        ax_t.loglog(edges, [r["total_s"] for r in runs], "o-", label=f"total, limit {limit}")
        ax_m.plot(edges, [max(r["worker_peak_rss_mb"]) for r in runs], "o-", label=f"limit {limit}")
        if limit == "default":
            ax_t.loglog(edges, [runs[0]["total_s"] * e / edges[0] for e in edges], "k:", label="linear in edges")
    ax_t.set(title="wall time (partition + dispatch)", xlabel="edges", ylabel="seconds")
    ax_m.set(title="peak RSS per worker (max of workers)", xlabel="edges", ylabel="MB", xscale="log", ylim=(0, 1200))
    ax_m.axhline(1000, color="grey", ls="--", label="1 GB target")
    for ax in (ax_t, ax_m):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


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
        steps = ", ".join(f"{k} {v:.2f}" for k, v in r["dispatch_steps_s"].items())
        lines.append(f"  {r['graph']} dispatch steps (s): {steps}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1], choices=sorted(SCALES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default=None)
    parser.add_argument("--lookup-cache", default=None, metavar="SIZE", help="dispatch's node-ID cache per worker")
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
    parser.add_argument("--plot", default=None, metavar="PNG", help="time and peak RSS against edges")
    parser.add_argument("--plan", action="store_true", help="also print forecast_run's prediction per graph")
    parser.add_argument(
        "--edge-format",
        choices=["csv", "parquet"],
        default="csv",
        help="how the synthetic graphs store edges (Parquet graphs go to graph-<scale>x-parquet)",
    )
    parser.add_argument("--dgl-pipeline", default=None, metavar="DGL_SRC", help="DGL v2.1.0 source checkout")
    parser.add_argument("--dgl-python", default=None, help="interpreter with DGL 2.1.0 and torch")
    parser.add_argument("--dgl-ranks", type=int, default=2)
    parser.add_argument(
        "--cli", action="store_true", help="time `dgl-chunked dispatch` as typed and with --cli-workers, without DGL"
    )
    parser.add_argument(
        "--cli-workers",
        type=int,
        nargs="*",
        default=[2],
        metavar="N",
        help="with --dgl-pipeline or --cli: also time `dgl-chunked dispatch --workers N` for each N (default 2)",
    )
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--use-graphbolt", action="store_true", help="write GraphBolt .pt partitions")
    fmt.add_argument("--compare-graphbolt", action="store_true", help="run DGL format and GraphBolt alternately")
    args = parser.parse_args()
    formats = [False, True] if args.compare_graphbolt else [args.use_graphbolt]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="dglc-bench-"))
    rows = []
    for scale in args.scales:
        nodes, edges, chunks = SCALES[scale]
        suffix = "" if args.edge_format == "csv" else f"-{args.edge_format}"
        chunked = work / f"graph-{scale}x{suffix}"
        synth_s = _synth(chunked, scale, args.edge_format)
        predicted = _predict(chunked, work / f"run-{scale}x", args) if args.plan else None
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
                        args.lookup_cache,
                    )
                )
        for use_graphbolt in formats:
            best = min(runs[use_graphbolt], key=lambda r: r["total_s"])
            label = f"{nodes // 10**6}M/{edges // 10**6}M" + (" gb" if use_graphbolt else "")
            rows.append(
                {
                    "graph": label,
                    "edge_format": args.edge_format,
                    "synth_s": synth_s,
                    "chunks": chunks,
                    "graphbolt": use_graphbolt,
                    **best,
                }
            )
            if predicted is not None:
                rows[-1]["plan"] = predicted
                print(_versus(rows[-1]))
    print(
        f"machine: {os.cpu_count()} CPUs; workers: {args.workers} x 1 thread; "
        f"memory limit per worker: {args.memory_limit or 'default'}"
    )
    print(_table(rows))
    for gb_row in (r for r in rows if r["graphbolt"] and args.compare_graphbolt):
        dgl_row = next(r for r in rows if not r["graphbolt"] and r["graph"] == gb_row["graph"][:-3])
        ratio = gb_row["dispatch_s"] / dgl_row["dispatch_s"]
        print(f"{dgl_row['graph']}: GraphBolt dispatch / DGL-format dispatch = {ratio:.2f}x")
    for r in rows:
        print(f"  {r['graph']}: workers seen paused: {len(r['workers_paused'])}, restarted: {r['workers_restarted']}")
    for scale in args.scales if args.dgl_pipeline or args.cli else []:
        suffix = "" if args.edge_format == "csv" else f"-{args.edge_format}"
        versus = _versus_dgl(work, scale, work / f"graph-{scale}x{suffix}", args)
        row = next(r for r in rows if r["graph"].startswith(f"{SCALES[scale][0] // 10**6}M/"))
        row["versus_dgl_s"] = versus
        best = min(v for k, v in versus.items() if k != "dgl")
        print(
            f"{row['graph']}: "
            + (f"DGL's pipeline ({args.dgl_ranks} ranks) {versus['dgl']:.2f} s; " if "dgl" in versus else "")
            + "`dgl-chunked dispatch` "
            + ", ".join(
                f"{k.removeprefix('ours').strip() or 'as typed'} {v:.2f} s ("
                + (f"{versus['dgl'] / v:.1f}x faster than DGL, " if "dgl" in versus else "")
                + f"{v / best:.2f}x the best)"
                for k, v in versus.items()
                if k != "dgl"
            )
            + f"; load average {os.getloadavg()[0]:.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    if args.plot:
        _plot(rows, args.plot)


def _predict(chunked: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """What forecast_run says about this graph (2 random parts, the benchmark's workers)."""
    import dgl_chunked as dglc

    plan = dglc.forecast_run(
        chunked,
        work / "out",
        num_parts=2,
        method="random",
        workers=args.workers,
        memory_limit=args.memory_limit,
        options=dglc.DispatchOptions(
            staging_dir=args.staging_dir, graphbolt=dglc.GraphBoltOptions() if args.use_graphbolt else None
        ),
    )
    return {
        "seconds": plan.seconds,
        "peak_worker_mb": plan.peak_worker_bytes / 2**20,
        "staging_gb": plan.staging_bytes / 1e9,
        "output_gb": plan.output_bytes / 1e9,
        "tasks": {s.name: s.tasks for s in plan.stages},
    }


def _versus(row: dict[str, Any]) -> str:
    p = row["plan"]
    peak = max(row["worker_peak_rss_mb"])
    return (
        f"  {row['graph']} plan vs measured: time {p['seconds']:.1f} s vs {row['total_s']:.1f} s "
        f"({p['seconds'] / row['total_s'] - 1:+.0%}), peak RSS/worker {p['peak_worker_mb']:.0f} MB vs "
        f"{peak:.0f} MB ({p['peak_worker_mb'] / peak - 1:+.0%})"
    )


if __name__ == "__main__":
    main()
