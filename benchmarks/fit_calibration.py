"""Fit the forecast's constants (``dgl_chunked/dispatch/forecast/calibration.py``) to bench_pipeline runs.

Reads the ``--json`` output of ``benchmarks/bench_pipeline.py`` (2 or more graphs of
one family, e.g. ``--scales 1 10``) and prints a ``Calibration(...)`` to paste into
``calibration.py``, then how well it predicts every run (``forecast_run`` recomputed with
the fitted constants, so a run left out of the fit checks the model out of sample)::

    python benchmarks/fit_calibration.py runs.json --fit 1M/10M 10M/100M [--base-mb 150]

``--base-mb`` is the resident size of an idle worker process with the libraries loaded
(measure it with ``--measure-base``). Each step's time is split as
``overhead + work / threads``; node steps per node, the edge step per edge (feature
bytes at a fixed 1 ns/B), writers per owned edge (their per-node term is folded in,
since the reference graphs keep edges / nodes = 10). Memory: the largest of the edge
task (``base + node-ID cache + k * chunk edges``) and the writer.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from peak_memory import peak_rss_mb

import dgl_chunked as dglc
from dgl_chunked.dispatch.forecast import calibration


def _line(x: list[float], y: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` (a >= 0)."""
    b, a = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    if a < 0:
        b, a = float(np.dot(x, y) / np.dot(x, x)), 0.0
    return float(a), float(b)


def fit(rows: list[dict[str, Any]], work: Path, base_mb: float, threads: int) -> calibration.Calibration:
    cal = calibration.CALIBRATION
    plans = [dglc.forecast_run(work / f"graph-{r['scale']}x", work / "x", num_parts=2, workers=threads) for r in rows]
    nodes = [p.nodes for p in plans]
    edges = [p.edges for p in plans]
    st = [r["dispatch_steps_s"] for r in rows]
    part_a, part_b = _line(nodes, [r["partition_s"] for r in rows])
    node_s = [(s["stage assignment"] + s["number nodes"]) / 2 for s in st]
    over_a, node_b = _line([n / threads for n in nodes], node_s)
    edge_a, edge_b = _line([e / threads for e in edges], [s["stage edges and features"] for s in st])
    write_a, write_b = _line([e / 2 for e in edges], [s["write partitions"] for s in st])
    base = int(base_mb * 2**20)
    cal = replace(
        cal,
        step_overhead_s=round(over_a, 3),
        edge_overhead_s=round(edge_a, 3),
        write_overhead_s=round(write_a, 3),
        partition_overhead_s=round(part_a, 3),
        partition_s_per_node=float(f"{part_b:.3g}"),
        node_step_s_per_node=float(f"{node_b:.3g}"),
        edge_s_per_edge=float(f"{edge_b:.3g}"),
        write_s_per_edge=float(f"{write_b:.3g}"),
        write_s_per_node=0.0,
        worker_base_bytes=base,
    )
    # memory: the smallest graph's peak is the edge task (its node tables are small)
    small = int(np.argmin(nodes))
    chunk = max(
        ref.rows for ref in dglc.open_chunked_graph(work / f"graph-{rows[small]['scale']}x").edge_chunks("_N:_E:_N")
    )
    peak = max(rows[small]["worker_peak_rss_mb"]) * 2**20
    cache = 4 * nodes[small]
    return replace(cal, edge_task_bytes_per_edge=round(max(peak - base - cache, 0) / chunk, 1))


def _measure_base() -> None:
    from distributed import Client, LocalCluster

    def rss_after_imports() -> float:
        import dask.array  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
        import zarr  # noqa: F401

        import dgl_chunked  # noqa: F401

        return peak_rss_mb()

    from dgl_chunked.cluster import worker_environment

    with (
        worker_environment(),
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as c,
        Client(c) as client,
    ):
        print(f"idle worker with the libraries loaded: {list(client.run(rss_after_imports).values())[0]:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="?")
    parser.add_argument("--fit", nargs="+", default=None, help="graph labels to fit on (default: all)")
    parser.add_argument("--work-dir", default="/tmp/dglc-scale-bench", help="bench_pipeline's --work-dir")
    parser.add_argument("--base-mb", type=float, default=calibration.CALIBRATION.worker_base_bytes / 2**20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--measure-base", action="store_true")
    args = parser.parse_args()
    if args.measure_base:
        _measure_base()
        return
    rows = json.loads(Path(args.json).read_text())
    for r in rows:
        r["scale"] = r["edges"] // 10_000_000
    chosen = [r for r in rows if args.fit is None or r["graph"] in args.fit]
    cal = fit(chosen, Path(args.work_dir), args.base_mb, args.threads)
    print(cal)
    for r in rows:
        plan = dglc.forecast_run(
            Path(args.work_dir) / f"graph-{r['scale']}x",
            Path(args.work_dir) / "x",
            num_parts=2,
            workers=args.threads,
            memory_limit=None if r["memory_limit"] == "default" else r["memory_limit"],
            calibration=cal,
        )
        peak = max(r["worker_peak_rss_mb"])
        planned_mb = plan.peak_worker_bytes / 2**20
        print(
            f"{r['graph']:>10} limit {r['memory_limit']:>7}: time {plan.seconds:7.1f} s vs {r['total_s']:7.1f} s "
            f"({plan.seconds / r['total_s'] - 1:+.0%}); peak {planned_mb:5.0f} MB vs {peak:5.0f} MB "
            f"({planned_mb / peak - 1:+.0%}){'' if r in chosen else '  (not in the fit)'}"
        )


if __name__ == "__main__":
    main()
