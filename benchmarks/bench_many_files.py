"""Cost against the number of input files: one graph in few files and in many (issue 32).

Spark (and GraphStorm's GSProcessing) writes one ``part-*.parquet`` per task, 200 per
type by default. This writes DGL's reference graph (``dgl-chunked synth``: uniform
edges, a float32[16] node feature, three bool masks and an int64 label) with Parquet
edges and features at 1x = 1M nodes / 10M edges in 4 files per type (and, with
``--scales 1 10``, 10x = 10M / 100M in 40), then a copy holding the same rows re-split
into many files per edge type, per feature and per node chunk list (256 at 1x, 2000
at 10x; ``--many``), as a Spark job would write them. On both copies, alternately,
best of ``--repeat``:

- the command line as a user runs it, ``dgl-chunked dispatch`` and ``dgl-chunked run
  --method random|lp`` (``--methods``), as typed (local threads for inputs up to 4 GiB)
  and with ``--workers 2`` (a LocalCluster of 2 worker processes): wall time of the
  whole command (imports, cluster start and close, every step);
- ``dispatch`` again on a fresh 2-worker LocalCluster passed with ``--scheduler``,
  reading every worker's peak RSS (``VmHWM``) at the end;

then prints the many / few ratio of each (the target is 1.3 at most), checks that the
two copies give byte-identical partitions for every command (the output does not
depend on the input chunking), and prints the machine and its load average.

Usage::

    python benchmarks/bench_many_files.py [--scales 1 10] [--many 256 2000] [--methods random lp]
                                          [--repeat 2] [--work-dir DIR] [--json out.json] [--keep]

The work directory (default: a new temporary one) is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from peak_memory import worker_peaks_mb

SCALES = {1: (1_000_000, 10_000_000, 4), 10: (10_000_000, 100_000_000, 40)}
WORKERS = 2
CLI = str(Path(sys.executable).parent / "dgl-chunked")


def _synth(out: Path, scale: int) -> None:
    nodes, edges, chunks = SCALES[scale]
    if (out / "metadata.json").exists():
        return
    cmd = [CLI, "synth", "--out-dir", str(out), "--num-nodes", str(nodes), "--num-edges", str(edges)]
    cmd += ["--feat-dim", "16", "--num-chunks", str(chunks), "--edge-format", "parquet"]
    cmd += ["--feature-format", "parquet", "--seed", "0", "--workers", str(WORKERS), "--overwrite"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _pieces(rows: int, k: int) -> list[int]:
    return [rows // k + (i < rows % k) for i in range(k)]


def split_copy(src: Path, dst: Path, files: int) -> None:
    """``dst``: ``src``'s rows in ``files`` files per edge type and per feature (each file
    of ``src`` split into equal row ranges), and ``files`` node chunks per node type."""
    import numpy as np

    from dgl_chunked.io.chunked.formats import (
        read_edge_chunk,
        read_feature_chunk,
        write_edge_chunk,
        write_feature_chunk,
    )

    if (dst / "metadata.json").exists():
        return
    meta = json.loads((src / "metadata.json").read_text())
    per_file = files // len(meta["edges"][next(iter(meta["edges"]))]["data"])
    for i, (etype, source) in enumerate(meta["edges"].items()):
        data, counts = [], []
        for path in source["data"]:
            s, d = read_edge_chunk(str(src / path), fmt="parquet", options={})
            bounds = np.cumsum([0, *_pieces(len(s), per_file)])
            for j in range(per_file):
                rel = f"edge_index/{etype}/part-{len(data):05d}.parquet"
                lo, hi = int(bounds[j]), int(bounds[j + 1])
                write_edge_chunk(str(dst / rel), s[lo:hi], d[lo:hi], fmt="parquet")
                data.append(rel)
                counts.append(hi - lo)
        source["data"] = data
        meta["num_edges_per_chunk"][i] = counts
    for ntype, feats in meta["node_data"].items():
        for feat, source in feats.items():
            data = []
            for path in source["data"]:
                array = np.asarray(read_feature_chunk(str(src / path), fmt="parquet", options={}))
                bounds = np.cumsum([0, *_pieces(array.shape[0], per_file)])
                for j in range(per_file):
                    rel = f"node_data/{ntype}/{feat}/part-{len(data):05d}.parquet"
                    write_feature_chunk(str(dst / rel), array[bounds[j] : bounds[j + 1]], fmt="parquet")
                    data.append(rel)
            source["data"] = data
    meta["num_nodes_per_chunk"] = [_pieces(n, files) for n in meta["num_nodes_per_type"]]
    (dst / "metadata.json").write_text(json.dumps(meta, indent=1))


def _digest(out: Path) -> str:
    """Every output file's bytes (not the ownership marker, which names the run)."""
    h = hashlib.sha256()
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != ".dglc-owned.json"):
        h.update(str(path.relative_to(out)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cli(args: list[str], out: Path) -> tuple[float, str]:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([CLI, *args, "--out-dir", str(out), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    digest = _digest(out)
    shutil.rmtree(out, ignore_errors=True)
    return seconds, digest


def _dispatch_rss(graph: Path, assign: Path, out: Path) -> list[float]:
    """Peak RSS of each worker of a fresh 2-worker cluster that ran ``dispatch --scheduler``."""
    from distributed import Client, LocalCluster

    from dgl_chunked.cluster import worker_environment

    shutil.rmtree(out, ignore_errors=True)
    with (
        worker_environment(),
        LocalCluster(n_workers=WORKERS, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        args = [
            "dispatch",
            "--in-dir",
            str(graph),
            "--partitions-dir",
            str(assign),
            "--scheduler",
            cluster.scheduler_address,
        ]
        subprocess.run([CLI, *args, "--out-dir", str(out), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        rss = worker_peaks_mb(client)
    shutil.rmtree(out, ignore_errors=True)
    return rss


MODES = {"as typed": [], "--workers 2": ["--workers", str(WORKERS)]}


def run_scale(work: Path, scale: int, many: int, methods: list[str], repeat: int, modes: list[str]) -> dict[str, Any]:
    few_dir, many_dir = work / f"graph-{scale}x", work / f"graph-{scale}x-{many}"
    _synth(few_dir, scale)
    split_copy(few_dir, many_dir, many)
    copies = {"few": few_dir, "many": many_dir}
    assign = {}
    for name, graph in copies.items():  # the random assignment, written once per copy
        assign[name] = work / f"assign-{scale}x-{name}"
        if not (assign[name] / "partition_meta.json").exists():
            subprocess.run(
                [CLI, "partition", "--in-dir", str(graph), "--out-dir", str(assign[name]), "--num-parts", "2"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
    commands = {"dispatch": lambda g, a: ["dispatch", "--in-dir", str(g), "--partitions-dir", str(a)]}
    for method in methods:
        commands[f"run {method}"] = lambda g, a, m=method: [
            "run",
            "--in-dir",
            str(g),
            "--num-parts",
            "2",
            "--method",
            m,
        ]
    result: dict[str, Any] = {"scale": scale, "files": {"few": SCALES[scale][2], "many": many}, "commands": {}}
    for (command, make), mode in ((c, m) for c in commands.items() for m in modes):
        flags = MODES[mode]
        label = f"{command} {mode}"
        times: dict[str, list[float]] = {"few": [], "many": []}
        digests: dict[str, set[str]] = {"few": set(), "many": set()}
        for _ in range(repeat):
            for name, graph in copies.items():  # alternate: a busy period hurts both copies alike
                seconds, digest = _cli([*make(graph, assign[name]), *flags], work / "out")
                times[name].append(seconds)
                digests[name].add(digest)
        best = {k: min(v) for k, v in times.items()}
        result["commands"][label] = {
            "seconds": best,
            "ratio": best["many"] / best["few"],
            "identical": len(digests["few"] | digests["many"]) == 1,
        }
        print(f"  {scale}x {label}: {best['few']:.2f} s / {best['many']:.2f} s", flush=True)
    result["worker_peak_rss_mb"] = {n: _dispatch_rss(g, assign[n], work / "out") for n, g in copies.items()}
    return result


def _table(results: list[dict[str, Any]]) -> str:
    lines = [f"{'graph':<8}{'command':<30}{'few files':>12}{'many files':>12}{'many/few':>10}  identical output"]
    for r in results:
        few, many = r["files"]["few"], r["files"]["many"]
        for label, c in r["commands"].items():
            lines.append(
                f"{r['scale']}x{'':<6}{label:<30}{c['seconds']['few']:>10.2f} s{c['seconds']['many']:>10.2f} s"
                f"{c['ratio']:>10.2f}  {'yes' if c['identical'] else 'NO'}"
            )
        rss = r["worker_peak_rss_mb"]
        lines.append(
            f"  {r['scale']}x dispatch peak RSS per worker (MB): {few} files "
            + "/".join(f"{m:.0f}" for m in rss["few"])
            + f", {many} files "
            + "/".join(f"{m:.0f}" for m in rss["many"])
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1], choices=sorted(SCALES))
    parser.add_argument("--many", type=int, nargs="+", default=None, help="files per type of the many-files copy")
    parser.add_argument("--methods", nargs="*", default=["random", "lp"], help="partition methods of `run`")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the graphs in the work directory")
    args = parser.parse_args()
    many = args.many or [{1: 256, 10: 2000}[s] for s in args.scales]
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="dglc-many-files-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for scale, files in zip(args.scales, many, strict=True):
            results.append(run_scale(work, scale, files, args.methods, args.repeat, args.modes))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"machine: {os.cpu_count()} CPUs; {WORKERS} workers; load average at the end: {os.getloadavg()}")
    print(_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
