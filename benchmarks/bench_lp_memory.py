"""Benchmark: which ``lp`` task holds a worker's memory, per task function.

Issue #38 asks lp's peak memory per worker to stay flat from the 1M-node / 10M-edge
graph to the 10M / 100M one. A worker's peak (``VmHWM``) says how high, not which task
took it there; this says which. Each worker process (1 thread) samples its own
``/proc/self/status`` every ``--interval`` seconds in a thread, with the task it is
running, and keeps per task function (``module.function``: the ``dglc-lp-<function>-...``
keys of :mod:`dgl_chunked.partition.lp.taskgraph`, the module from the task's spec):

    peak MB    the worker's largest VmRSS seen while such a task ran
    anon/file  that sample's RssAnon and RssFile (shared libraries, mapped files)
    start MB   the largest VmRSS seen at the start of one (what the worker held before)
    tasks      how many ran on the worker

and the sha256 of the assignment (as ``bench_lp_cores.py``'s: a change meant to save memory
must leave it as it was).

With ``--timeline FILE`` each worker also keeps a row whenever its task changes, its
VmRSS moves by 8 MB or 2 s pass: seconds since the start, VmRSS, RssAnon, the task and
the pooled arrays per thread in MB (:func:`dgl_chunked.partition.lp.store.pooled_bytes`),
written as JSON (a list per worker). It showed where a worker's memory stays between
tasks (session 24: a thread's pools hold 145-180 MB at 10M nodes and do not grow).

``(no task)`` is the time no sampled task ran: the lp driver task, which secedes from
its thread while it waits for its computations (METIS on the coarsest level runs
there), and the gaps. Samples miss spikes shorter than the interval; the worker's
``VmHWM`` is printed beside them.

Example (2 cores; the graphs are cached in ``--work-dir`` as bench_lp.py's)::

    python benchmarks/bench_lp_memory.py --sbm 1000000:10000000
    python benchmarks/bench_lp_memory.py --sbm 10000000:100000000
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from typing import Any

from bench_lp import MASKS, add_graph_arguments, graph_path
from bench_lp_cores import LP_KEY, assignment_sha256
from peak_memory import status_mb, statuses_mb

_FIELDS = ["VmRSS", "RssAnon", "RssFile"]


def _module_of(ts: Any) -> str | None:
    """The last part of the module of the lp function a worker task runs (two modules
    have a ``propose_task``): found in the task's spec (a :mod:`taskgraph` ``_Packed``)."""
    stack, looked = [getattr(ts, "run_spec", None)], 0
    while stack and looked < 64:
        x, looked = stack.pop(), looked + 1
        if type(x).__name__ == "_Packed":
            return str(x.func.__module__).rsplit(".", 1)[-1]
        inner = [getattr(x, a, None) for a in ("args", "value")] + (list(x) if isinstance(x, (tuple, list)) else [])
        for y in inner:
            if isinstance(y, (tuple, list)):
                stack.extend(y)
            elif y is not None and not isinstance(y, (str, bytes, int, float)):
                stack.append(y)
    return None


def start_sampling(interval: float, timeline: bool = False, dask_worker: Any = None) -> None:
    """In a worker: sample its memory and running task every ``interval`` seconds (with
    ``timeline``, keep the rows that ``--timeline`` writes, :func:`_timeline_row`)."""
    peak: dict[str, tuple[int, int, int]] = {}
    start: dict[str, int] = {}
    count: Counter[str] = Counter()
    rows: list[list[Any]] = []
    dask_worker.lp_memory = (peak, start, count, rows)
    t0 = time.time()

    def sample() -> None:
        last, named = None, {}  # task key -> its name, looked up once
        while True:
            if len(named) > 10_000:
                named.clear()
            st = statuses_mb(_FIELDS)
            now = (round(st["VmRSS"]), round(st["RssAnon"]), round(st["RssFile"]))
            running = [(str(ts.key), ts) for ts in list(dask_worker.state.executing)]
            for key, ts in running or [(None, None)]:
                if key is not None and key not in named:
                    named[key] = _name(ts)
                name = "(no task)" if key is None else named[key]
                if key is not None and key != last:
                    start[name] = max(start.get(name, 0), now[0])
                    count[name] += 1
                    last = key
                peak[name] = max(peak.get(name, now), now)
                if timeline:
                    _timeline_row(rows, time.time() - t0, now, name)
            time.sleep(interval)

    def _name(ts: Any) -> str:
        m = LP_KEY.match(str(ts.key))
        if not m:
            return "(other task)"
        module = _module_of(ts)
        return f"{module}.{m.group('func')}" if module else m.group("func")

    threading.Thread(target=sample, daemon=True, name="lp-memory-sampler").start()


def _timeline_row(rows: list[list[Any]], t: float, now: tuple[int, int, int], name: str) -> None:
    """Append ``[s, VmRSS, RssAnon, task, {thread: pooled MB}]`` when the task changed,
    VmRSS moved by 8 MB or 2 s passed since the last row."""
    from dgl_chunked.partition.lp.store import pooled_bytes

    if rows and rows[-1][3] == name and abs(now[0] - rows[-1][1]) < 8 and t - rows[-1][0] < 2:
        return
    pools = {str(thread): round(n / 2**20) for thread, n in pooled_bytes().items()}
    rows.append([round(t, 2), now[0], now[1], name, pools])


def sampled(dask_worker: Any = None) -> dict[str, Any]:
    """In a worker: what :func:`start_sampling` kept."""
    peak, start, count, rows = dask_worker.lp_memory
    tasks = {name: {"peak": p, "start": start.get(name), "tasks": count[name]} for name, p in peak.items()}
    return {"tasks": tasks, "timeline": rows}


def run(
    path: str, parts: int, workers: int, interval: float, block_rows: int | None, timeline: bool = False
) -> dict[str, Any]:
    """lp on a fresh cluster of ``workers`` processes x 1 thread, sampled."""
    import bench_lp_memory  # by name, so the workers import it rather than unpickle __main__'s
    import dask
    from distributed import Client, LocalCluster

    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.partition import LPConfig, assign_partitions

    graph = open_chunked_graph(path)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        client.run(bench_lp_memory.start_sampling, interval, timeline)
        t0 = time.time()
        arrays = assign_partitions(
            graph,
            parts,
            method="lp",
            seed=0,
            balance_ntypes=["_N", *MASKS],
            method_config=LPConfig(block_rows=block_rows),
        )
        parts_of = dask.compute(*arrays.values())
        wall = time.time() - t0
        hwm = client.run(status_mb, "VmHWM")
        per_worker = client.run(bench_lp_memory.sampled)
    finally:
        client.close()
        cluster.close()
    return {
        "wall_s": round(wall, 1),
        "peaks_mb": [round(p) for p in sorted(hwm.values())],
        "sha256": assignment_sha256(parts_of),
        "workers": [{"vmhwm_mb": round(hwm[w]), **per_worker[w]} for w in sorted(hwm, key=hwm.get)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_graph_arguments(ap)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--interval", type=float, default=0.01, help="seconds between samples")
    ap.add_argument("--block-rows", type=int, help="lp's nodes per block (default: LPConfig's rule)")
    ap.add_argument("--top", type=int, default=12, help="task functions printed per worker")
    ap.add_argument("--save", help="write the figures as JSON here")
    ap.add_argument("--timeline", help="write each worker's memory over time as JSON here")
    args = ap.parse_args()
    args.graph = graph_path(ap, args)
    r = run(args.graph, args.parts, args.workers, args.interval, args.block_rows, timeline=bool(args.timeline))
    timelines = [w.pop("timeline") for w in r["workers"]]
    if args.timeline:
        with open(args.timeline, "w") as f:
            json.dump(timelines, f)
    print(f"lp, {args.parts} parts, {args.graph}: {r['wall_s']} s, assignment sha256 {r['sha256']}")
    print(f"worker peaks (VmHWM): {r['peaks_mb']} MB")
    for i, w in enumerate(r["workers"]):
        print(f"worker {i} (VmHWM {w['vmhwm_mb']} MB)              peak MB  anon  file  start MB  tasks")
        top = sorted(w["tasks"].items(), key=lambda kv: -kv[1]["peak"][0])[: args.top]
        for name, t in top:
            rss, anon, file = t["peak"]
            print(f"  {name:36s} {rss:7d} {anon:5d} {file:5d} {t['start'] or '':>9} {t['tasks']:6d}")
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"graph": args.graph, "parts": args.parts, **r}, f, indent=1)


if __name__ == "__main__":
    main()
