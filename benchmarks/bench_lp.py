"""Benchmark: the ``lp`` method against in-memory METIS (pymetis) and KaMinPar (and ``random``).

For every graph and number of partitions, each method runs on a fresh
``LocalCluster`` (``--workers`` worker processes, 1 thread each), so each worker's
peak RSS (``VmHWM``, :mod:`peak_memory`) belongs to that run alone. Printed per run:

    cut        edge-cut fraction (every input edge counts, multi-edges too)
    x metis    cut / METIS's cut on the same graph and partition count
    nodes      max/mean nodes per partition (worst node type)
    masks      max/mean of train/val/test_mask per partition (worst; balanced on request)
    owned      max/mean owned (in-)edges per partition
    part s     wall time of computing the assignment (median of --repeat runs)
    +disp s    wall time of ``dispatch(graph, assign_partitions(...), out_dir)``: the
               partitioning plus writing DGL partitions (median; with --dispatch)
    peak MB    per-worker peak RSS while partitioning (max over repeats)

For ``lp``, a line after each run gives its time per phase (the driver's ``lp: phase``
log lines, summed per name over the run): ``stage`` (staging, degrees, tiers),
``streaming`` (placement), ``coarsen``, ``uncoarsen`` (METIS on the coarsest level, the
projection level by level and, beside them, the purified level's rebuild; before
issue #38's session 21 ``initial`` was METIS's own phase and the rebuild ``purify``'s),
``purify`` (METIS on the purified level, its projection; summed over the cluster
weights), ``refine`` (settling and
refining the finalists) and ``fill``; then a line per coarse level (every cluster weight's
coarsening in turn): its nodes and entries, the clustering rounds run, the joins accepted
in them and its seconds; and the driver's lines on the candidates' cut entries (each
initial assignment, the level-by-level and purified ones at the input, the finalists
after their compared refinement passes).

With ``BENCH_LP_LIVE=1`` in the environment each phase is also printed on stderr as it
ends (long runs). Planted-community graphs above 20M edges are drawn in pieces of 10M
edges (same model), so generating 10M nodes / 100M edges peaks at about 2.3 GB.

With ``--as-typed``, each method also runs as a user types it, ``dgl-chunked partition
--method M`` on the CLI's default scheduler (local threads on 2 cores, where the
methods' cluster runs above use worker processes), and a line gives its wall time,
cut and the CLI process's peak RSS (with threads: all the work's).

With ``--dispatch`` and both ``random`` and ``lp``, a line per graph and partition count
gives ``lp +disp / random +disp`` (issue #8 asks for at most 3 on 2 workers).

Graphs: planted-community graphs (``--sbm NODES:EDGES``: 64 communities of
Pareto-distributed sizes, 90% of the edges inside, Parquet edge files, as
``bench_partition_quality.py``'s ``sbm-skewed``), R-MAT power-law synthetic graphs
(``--rmat NODES:EDGES``), both cached in ``--work-dir``, and, with ``--real``, small
real graphs shipped by networkx (Zachary's karate club, Les Miserables, Davis southern
women, Florentine families) when networkx is importable. Every run balances ``train_mask``, ``val_mask``, ``test_mask``
(synthetic graphs) and node counts; METIS runs as the ``metis`` method (pymetis in one
worker task, with its mask-balance repair pass).

Example (2 cores)::

    python benchmarks/bench_lp.py --sbm 1000000:10000000 --parts 8
    python benchmarks/bench_lp.py --rmat 20000:200000 --rmat 1000000:10000000 \\
        --parts 4 --parts 8 --repeat 3 --dispatch --real --methods random,lp,metis
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import dask
import numpy as np
from peak_memory import worker_peaks_mb

from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import assign_partitions, compute_partition_report
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

MASKS = ["train_mask", "val_mask", "test_mask"]


def _cluster(workers: int) -> Any:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return cluster, Client(cluster)


def _rmat(work_dir: str, nodes: int, edges: int, chunks: int) -> ChunkedGraph:
    path = os.path.join(work_dir, f"rmat-{nodes}-{edges}-{chunks}")
    if not os.path.exists(os.path.join(path, "metadata.json")):
        spec = SynthSpec.homogeneous(nodes, edges, distribution="powerlaw", feat_dim=None, num_chunks=chunks, seed=1)
        with dask.config.set(scheduler="threads"):
            write_synthetic_graph(path, spec, overwrite=True)
    return open_chunked_graph(path)


def _sbm_path(work_dir: str, nodes: int, edges: int, chunks: int) -> str:
    """Where :func:`_sbm` caches its graph."""
    return os.path.join(work_dir, f"sbm-skewed-{nodes}-{edges}-{chunks}")


def _sbm(work_dir: str, nodes: int, edges: int, chunks: int) -> ChunkedGraph:
    """The skewed planted-community graph (train/val/test masks 60/20/20), cached."""
    path = _sbm_path(work_dir, nodes, edges, chunks)
    if not os.path.exists(os.path.join(path, "metadata.json")):
        edges_uv = _planted(nodes, edges)
        r = np.random.default_rng(1).random(nodes)
        masks = {"train_mask": r < 0.6, "val_mask": (r >= 0.6) & (r < 0.8), "test_mask": r >= 0.8}
        truth = GraphTruth(
            graph_name="sbm",
            num_nodes={"_N": nodes},
            edges={"_N:_E:_N": edges_uv},
            node_data={"_N": masks},
            edge_data={},
        )
        write_graph_from_truth(path, truth, edge_chunks=chunks, feature_chunks=1, edge_format="parquet")
    return open_chunked_graph(path)


_PIECE_EDGES = 10_000_000


def _planted(nodes: int, edges: int) -> tuple[Any, Any]:
    """The edges of the skewed planted-community graph: ``planted_partition_edges`` up to
    ``2 * _PIECE_EDGES`` edges; above, the same model (its communities, seed 0) drawn in
    pieces of ``_PIECE_EDGES`` (seeds ``(0, piece)``), so that generating 100M edges
    holds the two edge arrays and one piece's temporaries (about 2 GB), not 6 GB."""
    if edges <= 2 * _PIECE_EDGES:
        return planted_partition_edges(nodes, edges, 64, skewed=True)
    rng = np.random.default_rng(0)
    sizes = rng.pareto(1.5, 64) + 1
    sizes = np.maximum(1, sizes / sizes.sum() * nodes).astype(np.int64)
    sizes[-1] += nodes - sizes.sum()
    comm = rng.permutation(np.repeat(np.arange(64), sizes))
    members = np.argsort(comm, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(comm, minlength=64))])
    src, dst = np.empty(edges, np.int64), np.empty(edges, np.int64)
    for piece, lo in enumerate(range(0, edges, _PIECE_EDGES)):
        m = min(_PIECE_EDGES, edges - lo)
        r = np.random.default_rng((0, piece))
        s = r.integers(0, nodes, m)
        c = comm[s]
        inside = members[starts[c] + (r.random(m) * (starts[c + 1] - starts[c])).astype(np.int64)]
        src[lo : lo + m] = s
        dst[lo : lo + m] = np.where(r.random(m) < 0.9, inside, r.integers(0, nodes, m))
    return src, dst


def add_graph_arguments(ap: argparse.ArgumentParser) -> None:
    """``--graph`` or ``--sbm`` (cached in ``--work-dir``, ``--chunks`` edge files): the one
    graph of ``bench_lp_cores.py`` and ``bench_lp_memory.py``; :func:`graph_path` reads them."""
    ap.add_argument("--graph", help="a chunked graph (homogeneous, with train/val/test masks)")
    ap.add_argument("--sbm", help="NODES:EDGES of bench_lp.py's planted-community graph (cached in --work-dir)")
    ap.add_argument("--chunks", type=int, default=8, help="edge files of a generated graph")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "dglc-bench-lp"))


def graph_path(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The graph that :func:`add_graph_arguments`' options name (generated and cached for ``--sbm``)."""
    if args.sbm:
        os.makedirs(args.work_dir, exist_ok=True)
        nodes, edges = (int(x) for x in args.sbm.split(":"))
        _sbm(args.work_dir, nodes, edges, args.chunks)
        return _sbm_path(args.work_dir, nodes, edges, args.chunks)
    if not args.graph:
        ap.error("give --graph or --sbm")
    return str(args.graph)


def _record_phases() -> None:
    """In a worker: keep the ``lp: phase NAME: S s`` log lines (``multilevel.phase``) in
    a handler of the ``lp`` logger, also with the time each ended (``bench_lp_cores.py``;
    this function travels by value: a module global here would be a copy per function)."""
    import logging
    import os
    import sys
    import time

    class Keep(logging.Handler):
        phases: list[tuple[str, float]]
        ends: list[tuple[float, str, float]]
        levels: list[str]

        def emit(self, record: logging.LogRecord) -> None:
            msg = record.msg if isinstance(record.msg, str) else ""
            level_line = msg.startswith("lp: level ") and "rounds" in msg
            if level_line or msg.startswith(("lp: initial cut entries", "lp: cut entries")):
                self.levels.append(record.getMessage()[4:])  # the per-level line, the candidates' cuts
                if os.environ.get("BENCH_LP_LIVE"):
                    print(f"  {time.strftime('%H:%M:%S')} {record.getMessage()}", file=sys.stderr, flush=True)
            if isinstance(record.msg, str) and record.msg.startswith("lp: phase ") and record.args:
                self.phases.append((str(record.args[0]), float(record.args[1])))  # type: ignore[index]
                self.ends.append((record.created, *self.phases[-1]))
                if os.environ.get("BENCH_LP_LIVE"):  # long runs: each phase on stderr as it ends
                    print(f"  {time.strftime('%H:%M:%S')} {record.getMessage()}", file=sys.stderr, flush=True)

    log = logging.getLogger("dgl_chunked.partition.lp")
    log.setLevel(logging.INFO)
    keep = Keep()
    keep.phases = []
    keep.ends = []
    keep.levels = []
    log.addHandler(keep)


def _phases() -> list[tuple[str, float]]:
    import logging

    return [p for h in logging.getLogger("dgl_chunked.partition.lp").handlers for p in getattr(h, "phases", [])]


def _levels() -> list[str]:
    """In a worker: the kept per-level lines (``lp: level L: N nodes, E entries, ...``)."""
    import logging

    return [p for h in logging.getLogger("dgl_chunked.partition.lp").handlers for p in getattr(h, "levels", [])]


def _real_graphs(work_dir: str) -> dict[str, ChunkedGraph]:
    """Small real graphs from networkx, written as one-chunk homogeneous chunked graphs."""
    try:
        import networkx as nx
    except ImportError:
        print("networkx is not installed: skipping the real graphs")
        return {}
    from dgl_chunked.testing import GraphTruth, write_graph_from_truth

    out = {}
    for name, g in {
        "karate": nx.karate_club_graph(),
        "lesmis": nx.les_miserables_graph(),
        "davis": nx.davis_southern_women_graph(),
        "florentine": nx.florentine_families_graph(),
    }.items():
        index = {v: i for i, v in enumerate(g.nodes)}
        pairs = np.array([(index[a], index[b]) for a, b in g.edges], np.int64).reshape(-1, 2)
        truth = GraphTruth(
            graph_name=name,
            num_nodes={"_N": g.number_of_nodes()},
            edges={"_N:_E:_N": (pairs[:, 0], pairs[:, 1])},
            node_data={},
            edge_data={},
        )
        path = os.path.join(work_dir, f"real-{name}")
        shutil.rmtree(path, ignore_errors=True)
        write_graph_from_truth(path, truth, edge_chunks=1)
        out[f"{name} ({g.number_of_nodes()}n/{g.number_of_edges()}e)"] = open_chunked_graph(path)
    return out


def _balance_kw(graph: ChunkedGraph) -> list[str] | None:
    feats = {f for fs in graph.metadata.node_data.values() for f in fs}
    return [m for m in MASKS if m in feats] or None


def _partition(graph: ChunkedGraph, parts: int, method: str, workers: int) -> dict[str, Any]:
    """One partitioning run on a fresh cluster: time, per-worker peak RSS, quality."""
    import dask.array as da

    cluster, client = _cluster(workers)
    try:
        client.run(_record_phases)
        start = time.perf_counter()
        arrays = assign_partitions(graph, parts, method=method, seed=0, balance_ntypes=_balance_kw(graph))
        computed = dict(zip(arrays, dask.compute(*arrays.values()), strict=True))
        seconds = time.perf_counter() - start
        peaks = [round(p) for p in worker_peaks_mb(client)]
        phases: dict[str, float] = {}
        for lines in client.run(_phases).values():
            for name, s in lines:
                phases[name] = phases.get(name, 0.0) + s
        levels = [line for lines in client.run(_levels).values() for line in lines]
        lazy = {t: da.from_array(a, chunks=(graph.node_chunks(t),)) for t, a in computed.items()}
        report = compute_partition_report(graph, lazy, parts)
    finally:
        client.close()
        cluster.close()
    bal = report.balance()
    masks = [v for k, v in bal.items() if k.startswith("mask/") and v is not None]
    return {
        "cut": report.edge_cut_fraction,
        "seconds": seconds,
        "peaks": peaks,
        "nodes": max(v for k, v in bal.items() if k.startswith("nodes/") and v is not None),
        "masks": max(masks) if masks else None,
        "owned": bal["owned_edges/total"],
        "phases": phases,
        "levels": levels,
    }


def _dispatch(graph: ChunkedGraph, parts: int, method: str, workers: int, work_dir: str) -> float:
    """Seconds of partition + dispatch (the lazy assignment computed inside dispatch)."""
    from dgl_chunked import dispatch

    out = tempfile.mkdtemp(prefix="bench-lp-out-", dir=work_dir)
    shutil.rmtree(out)
    cluster, client = _cluster(workers)
    try:
        start = time.perf_counter()
        arrays = assign_partitions(graph, parts, method=method, seed=0, balance_ntypes=_balance_kw(graph))
        dispatch(graph, arrays, out, num_parts=parts, client=client)
        return time.perf_counter() - start
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(out, ignore_errors=True)


def _as_typed(graph: ChunkedGraph, parts: int, method: str, work_dir: str) -> dict[str, Any]:
    """``dgl-chunked partition`` as a user types it (the CLI's default scheduler, no
    ``--workers``): its wall time and the largest resident size of the one process
    (``wait4``'s ``ru_maxrss``; the CLI runs the default on local threads or starts a
    cluster, whose workers it does not count), and the cut from its ``report.json``."""
    import json
    import subprocess
    import sys

    out = tempfile.mkdtemp(prefix="bench-lp-typed-", dir=work_dir)
    shutil.rmtree(out)
    command = [sys.executable, "-m", "dgl_chunked", "partition", "--in-dir", graph.metadata.base_dir, "--out-dir", out]
    command += ["--num-parts", str(parts), "--method", method]
    balance = _balance_kw(graph)
    if balance:
        command += ["--balance-ntypes", ",".join(["_N", *balance])]
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_as_a_user_has_it())
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        err = proc.stderr.read().decode() if proc.stderr else ""
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{err}")
        with open(os.path.join(out, "report.json")) as f:
            cut = json.load(f)["edge_cut_fraction"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds, "cut": cut, "rss_mb": usage.ru_maxrss / 1024}


def _as_a_user_has_it() -> dict[str, str]:
    """This process's environment without what Dask's nannies left in it: each copies
    its pre-spawn variables (``MALLOC_TRIM_THRESHOLD_=65536``...) into its parent's
    environment, and a CLI started with them would run its local threads with glibc's
    mmap threshold fixed at 128 KiB (lp as typed: 49.4 s against 37 s, 2026-11-27)."""
    dasks = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    return {k: v for k, v in os.environ.items() if not (k in dasks and v == str(dasks[k]))}


def _load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _median_of(repeat: int, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    runs = [run() for _ in range(repeat)]
    best = dict(runs[0])
    best["seconds"] = statistics.median(r["seconds"] for r in runs)
    best["peaks"] = [max(p) for p in zip(*(r["peaks"] for r in runs), strict=True)]
    return best


def _row(label: str, parts: int, method: str, r: dict[str, Any], metis_cut: float | None) -> str:
    ratio = f"{r['cut'] / metis_cut:6.2f}" if metis_cut else "     -"
    masks = f"{r['masks']:.3f}" if r["masks"] is not None else "    -"
    disp = f"{r['dispatch']:8.1f}" if r.get("dispatch") is not None else "       -"
    return (
        f"{label:<28} {parts:>2} {method:<7} {r['cut']:6.4f} {ratio} {r['nodes']:6.3f} {masks:>6} "
        f"{r['owned']:6.2f} {r['seconds']:7.1f} {disp} {'/'.join(str(p) for p in r['peaks']):>11}"
    )


HEADER = (
    f"{'graph':<28} {'P':>2} {'method':<7} {'cut':>6} {'xmetis':>6} {'nodes':>6} {'masks':>6} "
    f"{'owned':>6} {'part s':>7} {'+disp s':>8} {'peak MB':>11}"
)


def _bench_graph(label: str, graph: ChunkedGraph, args: argparse.Namespace) -> list[str]:
    rows = []
    for parts in args.parts:
        results: dict[str, dict[str, Any]] = {}
        for method in args.methods:  # printed as each run ends (metis first in --methods: its ratio)
            repeat = 1 if method in ("metis", "kaminpar") else args.repeat
            r = results[method] = _median_of(repeat, lambda m=method, p=parts: _partition(graph, p, m, args.workers))
            if (
                args.dispatch
                and method not in ("metis", "kaminpar")
                and graph.metadata.node_type_offsets[-1] >= args.dispatch_min
            ):
                r["dispatch"] = statistics.median(
                    _dispatch(graph, parts, method, args.workers, args.work_dir) for _ in range(args.repeat)
                )
            rows.append(_row(label, parts, method, r, results.get("metis", {}).get("cut")) + f"  load {_load()}")
            print(rows[-1], flush=True)
            if r.get("phases"):
                phases = ", ".join(f"{k} {v:.1f}" for k, v in r["phases"].items())
                rows.append(f"{'':<28} {parts:>2} {method} phases (s): {phases}")
                print(rows[-1], flush=True)
            for line in r.get("levels") or []:  # each coarsening's levels, in order
                rows.append(f"{'':<28} {parts:>2} {method} {line}")
                print(rows[-1], flush=True)
        for method in args.methods if args.as_typed else ():
            typed = _as_typed(graph, parts, method, args.work_dir)
            rows.append(
                f"{label:<28} {parts:>2} {method:<7} as typed: {typed['seconds']:.1f} s, cut {typed['cut']:.4f}, "
                f"{typed['rss_mb']:.0f} MB in the CLI's process  load {_load()}"
            )
            print(rows[-1], flush=True)
        if all(results.get(m, {}).get("dispatch") for m in ("random", "lp")):
            ratio = results["lp"]["dispatch"] / results["random"]["dispatch"]
            rows.append(f"{label:<28} {parts:>2} lp +disp / random +disp = {ratio:.2f}")
            print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, run every graph, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rmat", action="append", default=None, metavar="NODES:EDGES")
    parser.add_argument("--sbm", action="append", default=None, metavar="NODES:EDGES")
    parser.add_argument("--parts", action="append", type=int, default=None)
    parser.add_argument("--methods", default="metis,kaminpar,lp")
    parser.add_argument("--chunks", type=int, default=8, help="edge and node files per synthetic graph")
    parser.add_argument(
        "--edges-per-chunk",
        type=int,
        default=None,
        help="instead of --chunks: files of this many edges (equal chunk sizes across graphs)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per measurement (median reported)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dispatch", action="store_true", help="also time partition + dispatch")
    parser.add_argument("--dispatch-min", type=int, default=1_000_000, help="only for graphs with this many nodes")
    parser.add_argument("--real", action="store_true", help="also the small real graphs from networkx")
    parser.add_argument(
        "--as-typed",
        action="store_true",
        help="also run each method as `dgl-chunked partition` on the CLI's default scheduler",
    )
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "dglc-bench-lp"))
    parser.add_argument(
        "--lp",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="an LPConfig field for lp (a Python literal), e.g. --lp cluster_rounds=4",
    )
    args = parser.parse_args(argv)
    if args.lp:
        from dgl_chunked.partition import LPConfig, LPMethod, register_method

        fields = {k: ast.literal_eval(v) for k, v in (item.split("=", 1) for item in args.lp)}
        register_method("lp", LPMethod(LPConfig(**fields)), overwrite=True)
    args.methods = args.methods.split(",")
    args.parts = args.parts or [4, 8]
    os.makedirs(args.work_dir, exist_ok=True)
    graphs: dict[str, ChunkedGraph] = {}
    for item in args.sbm or []:
        nodes, edges = (int(x) for x in item.split(":"))
        chunks = -(-edges // args.edges_per_chunk) if args.edges_per_chunk else args.chunks
        graphs[f"sbm {nodes:,}n/{edges:,}e"] = _sbm(args.work_dir, nodes, edges, chunks)
    for item in args.rmat or ([] if args.sbm else ["20000:200000"]):
        nodes, edges = (int(x) for x in item.split(":"))
        chunks = -(-edges // args.edges_per_chunk) if args.edges_per_chunk else args.chunks
        graphs[f"rmat {nodes:,}n/{edges:,}e"] = _rmat(args.work_dir, nodes, edges, chunks)
    if args.real:
        graphs.update(_real_graphs(args.work_dir))
    print(HEADER, flush=True)
    rows = [row for label, graph in graphs.items() for row in _bench_graph(label, graph, args)]
    print("\n" + HEADER + "\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
