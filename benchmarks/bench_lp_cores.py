"""Benchmark: how ``lp`` would scale with cores, predicted from Dask's task stream.

Issue #38 asks lp at 16 workers to be at least 5x faster than at 2 on the 10M-node /
100M-edge planted-community graph; without a many-core machine this predicts it from
runs on the cores there are, the way ``bench_cores.py`` does for dispatch (issue #37).

Each run partitions the graph with ``--method lp`` on a fresh ``LocalCluster`` of W
worker processes (1 thread each), recording Dask's task stream and the driver's
``lp: phase`` log lines (with their times). lp's driver is one long task that submits a
small computation per round (:mod:`dgl_chunked.partition.lp.taskgraph`) and waits for
it; so the run splits into

- **serial** seconds: no task but the driver runs (the driver's own work: METIS on the
  coarsest level, the move plans, gathering; plus scheduling latency), which no
  number of workers shortens;
- **layers**: the tasks of one function added one after the other to one computation
  (one task per node block: ``propose_task``, ``contract_task``, ...; each clustering
  round's its own), which run after the layer before.

The wall at P workers is predicted as ``serial + sum over layers of the greedy schedule
of its task durations on P workers`` (each task, in start order, on the first free
worker). A layer of B tasks never runs faster than its longest task, nor than
``ceil(B / P)`` of them; lp has one task per node block (:meth:`LPConfig.rows_per_block`:
4 blocks at 1M nodes, 39 at 10M), so that bound is what limits it.

Printed per run: the wall, the serial seconds, the work (task seconds), then per
phase the same three and the prediction for every ``--predict`` P, and the largest
kinds of stretch in which no task runs (which layers they lie between); finally the
prediction from every run beside every measured wall (the model's check: the 1-worker
run predicts the 2-worker one), and the predicted speedup of the largest P over 2.

Example (2 cores; the 10M graph is cached in ``--work-dir`` as bench_lp.py's)::

    python benchmarks/bench_lp_cores.py --sbm 1000000:10000000 --workers 1 2
    python benchmarks/bench_lp_cores.py --sbm 10000000:100000000 --workers 2 --predict 2 4 8 16
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import time
from typing import Any

import numpy as np
from bench_cores import _union_seconds, list_schedule
from bench_lp import MASKS, _record_phases, add_graph_arguments, graph_path
from peak_memory import worker_peaks_mb

DRIVER = "dglc-assign-lp-driver-"
LP_KEY = re.compile(r"dglc-lp-(?P<func>\w+?)-(?P<graph>[0-9a-f]{12})-(?P<n>\d+)$")
"""The key of a task of lp's task graphs (:mod:`dgl_chunked.partition.lp.taskgraph`)."""


def _phase_times() -> list[tuple[float, str, float]]:
    """In a worker: ``(time, phase, seconds)`` of every phase :func:`bench_lp._record_phases` kept."""
    import logging

    return [e for h in logging.getLogger("dgl_chunked.partition.lp").handlers for e in getattr(h, "ends", [])]


def _spans(records: list[dict[str, Any]]) -> tuple[list[tuple[float, float, str]], tuple[float, float] | None]:
    """``(start, stop, layer)`` of every task but the driver, and the driver's span.

    A layer is ``func@graph#run``: a run of tasks of one function added one after the
    other to one graph (their keys' counters consecutive), so the rounds of one
    computation (the clustering's, :mod:`dgl_chunked.partition.lp.clustering`) are
    layers of their own. Tasks of merged collections, keyed otherwise, are named by
    their key's name."""
    tasks, driver = [], None
    for rec in records:
        key = str(rec.get("key", "?"))
        for ss in rec.get("startstops", ()):
            if ss.get("action") != "compute":
                continue
            start, stop = float(ss["start"]), float(ss["stop"])
            if DRIVER in key:
                driver = (start, stop)
            else:
                tasks.append((start, stop, key))
    runs = _runs([key for _, _, key in tasks])
    return sorted((start, stop, runs[key]) for start, stop, key in tasks), driver


def _runs(keys: list[str]) -> dict[str, str]:
    """The layer of every key (see :func:`_spans`)."""
    parsed, out = [], {}
    for key in set(keys):
        m = LP_KEY.search(key)
        if m:
            parsed.append((m["graph"], int(m["n"]), m["func"], key))
        else:
            out[key] = re.sub(r"[-_][0-9a-f]{8,}.*$", "", key)
    run, last = 0, None
    for graph, _, func, key in sorted(parsed):
        if func == "barrier":  # a layer's barrier (taskgraph.TaskGraph): a layer of its own
            out[key] = f"{func}@{graph}#{key}"
            continue
        if (graph, func) != last:
            run, last = run + 1, (graph, func)
        out[key] = f"{func}@{graph}#{run}"
    return out


def _gaps(
    spans: list[tuple[float, float, str]], lo: float, hi: float, pairs: dict[str, list[float]] | None = None
) -> dict[str, float]:
    """Seconds of ``[lo, hi)`` in which no task runs, by what the stretch lies between:
    two computations (``between``: the driver's own work, sending the next one), two
    layers of one computation (``barrier``: the scheduler starting the next layer), or
    two tasks of one layer (``in_layer``: every worker waiting for its next task at once).
    With ``pairs``, each stretch is also counted under ``kind: func before -> func after``."""
    out = {"between": 0.0, "barrier": 0.0, "in_layer": 0.0}
    end, last = lo, None
    for start, stop, layer in spans:
        if stop <= lo or start >= hi:
            continue
        if start > end and last is not None:
            same_graph = layer.split("@")[-1].split("#")[0] == last.split("@")[-1].split("#")[0]
            kind = "in_layer" if layer == last else "barrier" if same_graph else "between"
            out[kind] += start - end
            if pairs is not None:
                name = f"{kind}: {last.split('@')[0]} -> {layer.split('@')[0]}"
                pairs.setdefault(name, []).append(start - end)
        if stop > end:
            end, last = stop, layer
    return out


def analyse(
    records: list[dict[str, Any]],
    ends: list[tuple[float, str, float]],
    t0: float,
    t1: float,
    predict: list[int],
    workers: int,
) -> dict[str, Any]:
    """Per lp phase (from its end-of-phase log times) and over the run: wall, serial
    seconds (no task but the driver), work, tasks, and the predicted wall per P."""
    spans, driver = _spans(records)
    lp_start = t0 if driver is None else driver[0]  # before: the graph built, the tasks sent
    bounds = [(lp_start, ""), *((created, name) for created, name, _ in sorted(ends)), (t1, "(after lp)")]
    phases: list[dict[str, Any]] = []
    for (lo, _), (hi, name) in zip(bounds, bounds[1:], strict=False):  # a phase ends at its log line
        inside = [s for s in spans if lo <= s[0] < hi]
        layers: dict[str, list[float]] = {}
        for begin, stop, layer in inside:
            layers.setdefault(layer, []).append(stop - begin)
        serial = (hi - lo) - _union_seconds(spans, lo, hi)
        gaps = _gaps(spans, lo, hi)
        fixed = serial - gaps["in_layer"]  # at P workers: the in-layer waits scale as the work does
        phases.append(
            {
                "phase": name,
                "wall": hi - lo,
                "serial": serial,
                "work": sum(stop - begin for begin, stop, _ in inside),
                "tasks": len(inside),
                "layers": len(layers),
                "gaps": gaps,
                "predicted": {p: serial + sum(list_schedule(d, p) for d in layers.values()) for p in predict},
                "predicted_scaled": {
                    p: fixed + gaps["in_layer"] * workers / p + sum(list_schedule(d, p) for d in layers.values())
                    for p in predict
                },
            }
        )
    head = lp_start - t0
    pairs: dict[str, list[float]] = {}
    _gaps(spans, lp_start, t1, pairs)
    return {
        "wall": t1 - t0,
        "head": head,
        "gap_pairs": {k: [len(v), sum(v)] for k, v in sorted(pairs.items(), key=lambda kv: -sum(kv[1]))},
        "serial": head + sum(ph["serial"] for ph in phases),
        "work": sum(ph["work"] for ph in phases),
        "phases": phases,
        "predicted": {p: head + sum(ph["predicted"][p] for ph in phases) for p in predict},
        "predicted_scaled": {p: head + sum(ph["predicted_scaled"][p] for ph in phases) for p in predict},
    }


def assignment_sha256(parts: Any) -> str:
    """The first 16 hex digits of the sha256 of an assignment's arrays (as int64, in
    order): a change meant for speed or memory must leave it as it was."""
    return hashlib.sha256(b"".join(np.asarray(a, np.int64).tobytes() for a in parts)).hexdigest()[:16]


def run_once(path: str, parts: int, workers: int, predict: list[int], block_rows: int | None = None) -> dict[str, Any]:
    """lp on a fresh cluster of ``workers`` processes; the analysis of its task stream."""
    import dask
    from distributed import Client, LocalCluster, get_task_stream

    from dgl_chunked.io.chunked.graph import open_chunked_graph
    from dgl_chunked.partition import LPConfig, assign_partitions

    graph = open_chunked_graph(path)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        client.run(_record_phases)
        with get_task_stream(client) as stream:
            t0 = time.time()
            config = LPConfig(block_rows=block_rows)
            arrays = assign_partitions(
                graph, parts, method="lp", seed=0, balance_ntypes=["_N", *MASKS], method_config=config
            )
            parts_of = dask.compute(*arrays.values())
            t1 = time.time()
        ends = [e for got in client.run(_phase_times).values() for e in got]
        out = analyse(stream.data, ends, t0, t1, predict, workers)
        out["peaks_mb"] = [round(p) for p in worker_peaks_mb(client)]
        out["sha256"] = assignment_sha256(parts_of)
    finally:
        client.close()
        cluster.close()
    return out


def _print_run(workers: int, r: dict[str, Any], predict: list[int]) -> None:
    head = "".join(f"  P={p:<4}" for p in predict)
    print(
        f"\n{workers} worker(s): wall {r['wall']:.1f} s, serial {r['serial']:.1f} s, work {r['work']:.1f} s, "
        f"peak {r['peaks_mb']} MB, assignment sha256 {r['sha256']}"
    )
    cols = f"{'wall':>7} {'serial':>7} {'betw.':>6} {'barr.':>6} {'layer':>6} {'work':>7} {'tasks':>6}"
    print(f"  {'phase':<12} {cols} {head}")
    for ph in r["phases"]:
        pred = "".join(f"  {ph['predicted'][p]:7.1f}" for p in predict)
        g = ph["gaps"]
        print(
            f"  {ph['phase']:<12} {ph['wall']:7.2f} {ph['serial']:7.2f} {g['between']:6.2f} {g['barrier']:6.2f} "
            f"{g['in_layer']:6.2f} {ph['work']:7.2f} {ph['tasks']:6d} {pred}"
        )
    print("  where no task runs, the largest (count, seconds): what ran before -> after")
    for name, (count, seconds) in list(r["gap_pairs"].items())[:8]:
        print(f"    {seconds:6.2f} s {count:5d}x  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_graph_arguments(ap)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--predict", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--block-rows", type=int, help="lp's nodes per block (default: LPConfig's rule)")
    ap.add_argument("--save", help="write the figures as JSON here")
    args = ap.parse_args()
    args.graph = graph_path(ap, args)
    runs = {w: run_once(args.graph, args.parts, w, args.predict, args.block_rows) for w in args.workers}
    print(f"lp, {args.parts} parts, {args.graph} ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    for w, r in runs.items():
        _print_run(w, r, args.predict)
    print("\npredicted wall (s) from each run, beside the measured ones:")
    measured = {w: r["wall"] for w, r in runs.items()}
    for w, r in runs.items():
        cells = ", ".join(
            f"P={p}: {r['predicted'][p]:.1f}" + (f" (measured {measured[p]:.1f})" if p in measured else "")
            for p in args.predict
        )
        print(f"  from {w} worker(s): {cells}")
        scaled = ", ".join(f"P={p}: {r['predicted_scaled'][p]:.1f}" for p in args.predict)
        print(f"    with the in-layer waits scaled as the work: {scaled}")
        if 2 in r["predicted"]:
            top = max(args.predict)
            print(
                f"    predicted speedup at {top} workers over 2: {r['predicted'][2] / r['predicted'][top]:.2f}x "
                f"(in-layer waits scaled: {r['predicted_scaled'][2] / r['predicted_scaled'][top]:.2f}x)"
            )
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"graph": args.graph, "parts": args.parts, "runs": runs}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
