"""Where the wall time of ``run`` goes, per step, and what more cores would give (issue 37).

Runs :func:`dgl_chunked.run` (``--method``, ``--num-parts``) on an existing chunked
graph (``--graph``; make one with ``dgl-chunked synth``, outside the bench lock) once per
worker count of ``--workers`` on a fresh LocalCluster (processes x 1 thread, started as
the CLI starts them: :func:`dgl_chunked.cluster.dask_client`), inside Dask's task stream.
Per step of the run it prints

- ``tasks``: tasks the step ran (``DispatchResult.step_tasks``);
- ``work``: the sum of the step's task seconds (``compute`` spans of the task stream);
- ``longest``: its longest task;
- ``idle``: the seconds of the step's window in which no task runs anywhere (the
  client's own work, scheduling gaps).

Tasks that start outside every dispatch step (the partitioner's, before dispatch) are
the step ``(before dispatch)``; ``client`` is the time of the whole run in which no task
runs, so the wall is ``client`` plus the time some task runs; of it, what falls outside
every step's window (the client's work between steps and after the last: layouts,
publishing the partitions, removing the staging) is printed apart.

From the runs at 1 and 2 workers it predicts the wall at ``P`` workers in two ways:
the bound ::

    client + sum over steps of max(work / P, longest)

and the schedule: ``client`` plus, per step, the makespan of the 1-worker run's tasks
(in the order they started) each given to the first of ``P`` workers free, which counts
the tail of a step whose last tasks start late (on 16 cores the bound was 26% under
the measured wall: benchmarks/results/cores.json). ``work``, ``longest`` and the task
seconds come from the run at 1 worker (no two tasks contend for the cores there),
``client`` from the run at 2 (a cluster of several workers); both predictions are
printed beside the measurement for every ``P`` it ran (and for 4, 8, 16 when not run),
with measured / scheduled. The write step splits a file into several tasks only into threads the
cluster leaves idle (:mod:`dgl_chunked.dispatch.write_pieces`), so runs at 1 and 2
workers write one task per file, and their ``longest`` would bound the prediction by a
task graph that ``P`` workers never run: ``--plan-threads P`` plans the write step of
every run for ``P`` threads (as a ``P``-worker cluster would), so the prediction at
``P`` is made from the tasks ``P`` workers get. Cluster start is not in the wall (it is
printed apart: the CLI starts its cluster while it reads the input). As the CLI, the run
removes its staging in the background (``DispatchOptions.background_removal``) and the
benchmark waits for it after closing the cluster: printed apart, the time the cluster
took to close and how much longer the removal ran.

It prints the longest stretches in which no task runs, named by the tasks before and
after them, and (with a run at 1 worker) the projection of :mod:`cores_projection`: the
measured work per kind of task scaled linearly to ``--project-nodes`` /
``--project-edges`` (default 1B / 5B) on ``--project-hosts`` of ``--project-cores``
worker processes with ``--project-bandwidth`` bytes/s per host.

``--modes default threads workers`` also times the CLI as a user types it (``dgl-chunked
run`` with no cluster flag, ``--workers 1 --threads-per-worker <cores>``, and ``--workers
W`` for the largest ``W`` of ``--workers``) in a subprocess: the wall, and the second at
which each of its INFO lines came (where the time before the first step goes).
Each run also records the peak resident size of every worker (``worker_peak_mb``,
:mod:`peak_memory`). ``--profile FILE`` writes a cProfile of the client during the largest ``--workers`` run
(``python -m pstats FILE``), ``--performance-report FILE.html`` Dask's performance
report of it. ``--json`` writes every figure.

Usage::

    python benchmarks/bench_cores.py --graph /tmp/g10m [--workers 1 2] [--num-parts 8]
        [--method random] [--work-dir DIR] [--plan-threads P] [--modes default threads workers] [--profile F]
        [--json F]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

BEFORE = "(before dispatch)"
PREDICTED_AT = (1, 2, 4, 8, 16)
CLI_LINES = ("INFO dgl_chunked", "scheduler:", "cluster:", "wrote ")
CLUSTER_LINES = ("Register worker", "Receive client connection")  # distributed's INFO lines: the cluster's start
STAGE_LINE = re.compile(r"dispatch step: (.+) \((\d+) tasks\)")


class _StageStarts(logging.Handler):
    """Records when each dispatch step starts (its ``dispatch step: X (N tasks)`` log line)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.starts: list[tuple[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = STAGE_LINE.match(record.getMessage())
        if match:
            self.starts.append((match.group(1), record.created))


def _union_seconds(spans: list[tuple[Any, ...]], lo: float, hi: float) -> float:
    """Seconds of ``[lo, hi]`` covered by at least one span ``(start, stop, ...)``."""
    covered, end = 0.0, lo
    for start, stop, *_ in sorted(spans):
        start, stop = max(start, end), min(stop, hi)
        if stop > start:
            covered += stop - start
            end = stop
    return covered


def step_table(
    records: list[dict[str, Any]], windows: list[tuple[str, float, float]], tasks: dict[str, int], t0: float, t1: float
) -> dict[str, Any]:
    """Per step: tasks, work, longest task and idle seconds; and the run's client (no task) seconds."""
    spans: list[tuple[float, float]] = []
    named: list[tuple[float, float, str]] = []
    for rec in records:
        for ss in rec.get("startstops", ()):
            if ss.get("action") == "compute":
                spans.append((float(ss["start"]), float(ss["stop"])))
                named.append((float(ss["start"]), float(ss["stop"]), _key_name(rec.get("key", "?"))))
    steps: dict[str, dict[str, Any]] = {}

    def step_of(start: float) -> str:
        for name, lo, hi in windows:
            if lo <= start <= hi:
                return name
        return BEFORE

    for start, stop, kind in named:
        name = step_of(start)
        row = steps.setdefault(name, {"tasks": 0, "work": 0.0, "longest": 0.0, "spans": [], "kinds": {}})
        row["work"] += stop - start
        row["longest"] = max(row["longest"], stop - start)
        row["spans"].append((start, stop))
        if name == BEFORE:
            row["tasks"] += 1
        k = row["kinds"].setdefault(kind, {"tasks": 0, "work": 0.0, "longest": 0.0})
        k["tasks"] += 1
        k["work"] += stop - start
        k["longest"] = max(k["longest"], stop - start)
    out: dict[str, Any] = {}
    for name, lo, hi in [(BEFORE, t0, windows[0][1] if windows else t1), *windows]:
        row = steps.get(name, {"tasks": 0, "work": 0.0, "longest": 0.0, "spans": [], "kinds": {}})
        out[name] = {
            "tasks": tasks.get(name, row["tasks"]),
            "durations": [round(b - a, 4) for a, b in sorted(row["spans"])],  # in start order
            "seconds": hi - lo,
            "work": row["work"],
            "longest": row["longest"],
            "idle": (hi - lo) - _union_seconds(spans, lo, hi),
            "kinds": row["kinds"],
        }
    client = (t1 - t0) - _union_seconds(spans, t0, t1)
    between = client - sum(row["idle"] for row in out.values())  # the client's work after and between steps
    return {"steps": out, "wall": t1 - t0, "client": client, "between": between}


def _key_name(key: Any) -> str:
    """A task key without its run token and indices: ``dglc-write-edges``."""
    name = str(key[0] if isinstance(key, (tuple, list)) else key).strip("('\"")
    return re.sub(r"-[0-9a-f]{16}.*$", "", name)


def idle_gaps(records: list[dict[str, Any]], t0: float, t1: float, top: int = 8) -> list[dict[str, Any]]:
    """The ``top`` longest stretches of ``[t0, t1]`` in which no task runs, with the tasks around them."""
    spans = sorted(
        (float(ss["start"]), float(ss["stop"]), _key_name(rec.get("key", "?")))
        for rec in records
        for ss in rec.get("startstops", ())
        if ss.get("action") == "compute"
    )
    gaps: list[dict[str, Any]] = []
    end, last = t0, "(start of the run)"
    for start, stop, name in [*spans, (t1, t1, "(end of the run)")]:
        if start > end:
            gaps.append({"at": end - t0, "seconds": start - end, "after": last, "before": name})
        if stop >= end:
            end, last = stop, name
    return sorted(gaps, key=lambda g: -g["seconds"])[:top]


def _run_workers(args: argparse.Namespace, workers: int, profile: str | None, report: str | None) -> dict[str, Any]:
    from distributed import get_task_stream, performance_report
    from peak_memory import worker_peaks_mb

    import dgl_chunked as dglc
    from dgl_chunked.cluster import ClusterOptions, dask_client
    from dgl_chunked.dispatch import wait_for_staging_removal

    out = Path(args.work_dir) / f"out-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    handler = _StageStarts()
    api_log = logging.getLogger("dgl_chunked.dispatch.api")
    api_log.addHandler(handler)
    old_level = api_log.level
    api_log.setLevel(logging.INFO)
    import dgl_chunked.pipeline  # noqa: F401  - imported before the clock, as the CLI imports it at start
    from dgl_chunked.dispatch import api as dispatch_api

    real_threads = dispatch_api.cluster_threads
    if args.plan_threads:  # the write step's tasks as a cluster of that many threads gets them
        dispatch_api.cluster_threads = lambda client=None: args.plan_threads  # type: ignore[assignment]

    started = time.perf_counter()
    try:
        with dask_client(cluster=ClusterOptions(workers=workers, threads_per_worker=1)) as client:
            cluster_s = time.perf_counter() - started
            client.run(lambda: None)  # every worker up and answering
            prof = cProfile.Profile() if profile else None
            with ExitStack() as stack:
                if report:
                    stack.enter_context(performance_report(filename=report))
                stream = stack.enter_context(get_task_stream(client))
                t0 = time.time()
                if prof:
                    prof.enable()
                result = dglc.run(
                    args.graph,
                    out,
                    num_parts=args.num_parts,
                    method=args.method,
                    seed=0,
                    options=dglc.DispatchOptions(overwrite=True, background_removal=True),  # as the CLI
                    client=client,
                )
                if prof:
                    prof.disable()
                t1 = time.time()
            peaks = worker_peaks_mb(client)
            if prof and profile:
                prof.dump_stats(profile)
            records = list(stream.data)
            closing = time.perf_counter()
        closed = time.perf_counter()
        wait_for_staging_removal()  # the CLI waits here too: the staging went while the cluster closed
        waited = time.perf_counter() - closed
    finally:
        dispatch_api.cluster_threads = real_threads  # type: ignore[assignment]
        api_log.removeHandler(handler)
        api_log.setLevel(old_level)
    windows = [(name, start, start + result.step_seconds.get(name, 0.0)) for name, start in handler.starts]
    table = step_table(records, windows, dict(result.step_tasks), t0, t1)
    table["gaps"] = idle_gaps(records, t0, t1)
    table["workers"] = workers
    table["cluster_start"] = cluster_s
    table["worker_peak_mb"] = peaks
    table["cluster_close"] = closed - closing
    table["removal_wait"] = waited
    shutil.rmtree(out, ignore_errors=True)
    return table


def _run_cli(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    """The CLI as typed, in a subprocess: its wall, its scheduler choice, and when each INFO line came."""
    out = Path(args.work_dir) / f"out-{mode}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [  # python -m: runs where the package is on PYTHONPATH only (benchmarks/device_cores.sh)
        sys.executable,
        "-m",
        "dgl_chunked",
        "--log-level",
        "INFO",
        "run",
        "--in-dir",
        args.graph,
        "--out-dir",
        str(out),
        "--num-parts",
        str(args.num_parts),
        "--method",
        args.method,
    ]
    if mode == "threads":
        cmd += ["--workers", "1", "--threads-per-worker", str(os.cpu_count() or 1)]
    elif mode == "workers":  # the largest --workers, as a user would type it
        cmd += ["--workers", str(max(args.workers))]
    start = time.perf_counter()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # progress bars end in \r: keep the log lines, stamped on arrival
            for part in line.split("\r"):
                if part.startswith(CLI_LINES) or any(mark in part for mark in CLUSTER_LINES):
                    lines.append((round(time.perf_counter() - start, 2), part.strip()[:160]))
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"error: {' '.join(cmd)} exited {proc.returncode}")
    shutil.rmtree(out, ignore_errors=True)
    chose = [text for _, text in lines if text.startswith(("scheduler:", "cluster:"))]
    return {"mode": mode, "wall": wall, "chose": chose, "lines": lines}


def _predicted(runs: dict[int, dict[str, Any]], step_seconds: Callable[[dict[str, Any]], float]) -> float | None:
    """The client's time (the run at 2 workers', else at 1) plus ``step_seconds`` of each step
    of the run at 1 worker; None without a run at 1 worker."""
    one = runs.get(1)
    if one is None:
        return None
    client = runs[2]["client"] if 2 in runs else one["client"]
    return float(client + sum(step_seconds(row) for row in one["steps"].values()))


def predict(runs: dict[int, dict[str, Any]], p: int) -> float | None:
    """client + sum over steps of max(work / P, longest), from the runs at 1 and 2 workers."""
    return _predicted(runs, lambda row: max(row["work"] / p, row["longest"]))


def list_schedule(durations: list[float], p: int) -> float:
    """Makespan of ``durations`` run in their order, each task on the first worker free (greedy)."""
    free = [0.0] * max(1, p)
    for d in durations:
        i = free.index(min(free))
        free[i] += d
    return max(free)


def predict_scheduled(runs: dict[int, dict[str, Any]], p: int) -> float | None:
    """client + sum over steps of the greedy schedule of the 1-worker run's tasks on P workers."""
    if 1 in runs and any("durations" not in row for row in runs[1]["steps"].values()):
        return None  # figures from before the task seconds were kept
    return _predicted(runs, lambda row: list_schedule(row["durations"], p))


def _print(runs: dict[int, dict[str, Any]], cli: list[dict[str, Any]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"\n{args.graph}: {args.method}, {args.num_parts} parts; {os.cpu_count()} cores; load {load[0]:.2f}")
    for w, run in sorted(runs.items()):
        print(
            f"\n{w} worker(s): wall {run['wall']:.2f} s (cluster start {run['cluster_start']:.2f} s apart), "
            f"client (no task runs) {run['client']:.2f} s, of it {run['between']:.2f} s between and after steps"
        )
        if "removal_wait" in run:
            print(
                f"  after the run: cluster closed in {run['cluster_close']:.2f} s, then "
                f"{run['removal_wait']:.2f} s more until the staging's background removal ended"
            )
        print(f"  {'step':<28} {'tasks':>6} {'window s':>9} {'work s':>8} {'longest s':>10} {'idle s':>7}")
        for name, row in run["steps"].items():
            print(
                f"  {name:<28} {row['tasks']:>6} {row['seconds']:>9.2f} {row['work']:>8.2f} "
                f"{row['longest']:>10.2f} {row['idle']:>7.2f}"
            )
        print("  longest stretches in which no task runs:")
        for gap in run.get("gaps", []):
            print(f"    at {gap['at']:7.2f} s: {gap['seconds']:.3f} s after {gap['after']}, before {gap['before']}")
    print(
        f"\n  {'workers':>8} {'measured s':>11} {'bound s':>8} {'scheduled s':>12} {'speed-up (sched.)':>18} "
        f"{'meas./sched.':>13}"
    )
    one = predict_scheduled(runs, 1)
    for p in sorted(set(PREDICTED_AT) | set(runs)):
        bound, sched = predict(runs, p), predict_scheduled(runs, p)
        measured = f"{runs[p]['wall']:.2f}" if p in runs else "-"
        ratio = f"{one / sched:.1f}x" if sched and one else "-"
        error = f"{runs[p]['wall'] / sched:.2f}" if sched and p in runs else "-"
        shown = ["-" if v is None else f"{v:.2f}" for v in (bound, sched)]  # no run at 1 worker: no prediction
        print(f"  {p:>8} {measured:>11} {shown[0]:>8} {shown[1]:>12} {ratio:>18} {error:>13}")
    for row in cli:
        print(f"  CLI {row['mode']:<10} wall {row['wall']:.2f} s  {' | '.join(row['chose'])}")
        for at, text in row.get("lines", ()):
            print(f"      {at:7.2f} s  {text}")


def _projections(runs: dict[int, dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The measured work scaled to ``--project-nodes`` / ``--project-edges`` (:mod:`cores_projection`)."""
    from cores_projection import print_projection, project

    import dgl_chunked as dglc
    from dgl_chunked.io.chunked.graph import open_chunked_graph

    meta = open_chunked_graph(args.graph).metadata
    measured = (sum(meta.num_nodes(t) for t in meta.node_types), sum(meta.num_edges(e.name) for e in meta.edge_types))
    rows = []
    for h in args.project_hosts:  # the bytes per step of the measured graph on h hosts of --project-cores processes
        forecast = dglc.forecast_run(
            args.graph,
            Path(args.work_dir) / "out-forecast",
            num_parts=args.num_parts,
            method=args.method,
            workers=args.project_cores,
            hosts=h,
        )
        network = forecast.network.stages if forecast.network else ()
        rows.append(
            project(
                runs[1],
                runs.get(2),
                measured,
                (args.project_nodes, args.project_edges),
                hosts=h,
                cores=args.project_cores,
                bandwidth=args.project_bandwidth,
                step_bytes={s.name: (s.down_bytes, s.up_bytes) for s in network},
            )
        )
    print_projection(rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="chunked graph directory (dgl-chunked synth)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--num-parts", type=int, default=8)
    parser.add_argument("--method", default="random")
    parser.add_argument(
        "--plan-threads", type=int, default=None, help="plan the write step for P threads (predict P workers)"
    )
    parser.add_argument("--modes", nargs="*", default=[], choices=["default", "threads", "workers"])
    parser.add_argument("--work-dir", default=None, help="output parent (default: a temporary folder)")
    parser.add_argument("--profile", default=None, help="cProfile of the client, largest --workers run")
    parser.add_argument("--performance-report", default=None, help="Dask report, largest --workers run")
    parser.add_argument("--json", default=None)
    parser.add_argument("--project-nodes", type=int, default=10**9, help="projection: nodes (default 1B)")
    parser.add_argument("--project-edges", type=int, default=5 * 10**9, help="projection: edges (default 5B)")
    parser.add_argument("--project-hosts", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--project-cores", type=int, default=16, help="projection: worker processes per host")
    parser.add_argument("--project-bandwidth", type=float, default=1.25e9, help="bytes/s per host each way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dglc-bench-cores-") if args.work_dir is None else nullcontext() as tmp:
        if args.work_dir is None:
            args.work_dir = tmp
        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
        runs: dict[int, dict[str, Any]] = {}
        cli: list[dict[str, Any]] = []
        last = max(args.workers)
        for w in args.workers:  # figures saved after every run: a run cut short keeps the ones before
            keep = w == last
            runs[w] = _run_workers(args, w, args.profile if keep else None, args.performance_report if keep else None)
            peaks = ", ".join(f"{mb:.0f}" for mb in runs[w]["worker_peak_mb"])
            print(
                f"{w} worker(s): {runs[w]['wall']:.2f} s, load {os.getloadavg()[0]:.2f}, "
                f"peak RSS per worker {peaks} MiB",
                flush=True,
            )
            _save(args, runs, cli, [])
        for mode in args.modes:
            cli.append(_run_cli(args, mode))
            print(f"CLI {mode}: {cli[-1]['wall']:.2f} s, {' | '.join(cli[-1]['chose'])}", flush=True)
            _save(args, runs, cli, [])
    _print(runs, cli, args)
    _save(args, runs, cli, _projections(runs, args) if 1 in runs else [])


def _save(
    args: argparse.Namespace, runs: dict[int, dict[str, Any]], cli: list[dict[str, Any]], projections: list[Any]
) -> None:
    """Every figure so far to ``--json`` (when given)."""
    if not args.json:
        return
    figures = {
        "graph": args.graph,
        "plan_threads": args.plan_threads,
        "cores": os.cpu_count(),
        "load": os.getloadavg()[0],
        "runs": {str(w): r for w, r in runs.items()},
        "predicted": {str(p): predict(runs, p) for p in sorted(set(PREDICTED_AT) | set(runs))},
        "predicted_scheduled": {str(p): predict_scheduled(runs, p) for p in sorted(set(PREDICTED_AT) | set(runs))},
        "cli": cli,
        "projection": projections,
    }
    Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
