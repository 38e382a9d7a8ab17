"""Where local threads beat a LocalCluster of processes: ``dgl-chunked dispatch`` / ``run`` both ways.

Without ``--scheduler`` / ``--workers``, ``dispatch`` and ``run`` run on local threads
where ``cluster.choose_scheduler`` picks threads (at most ``cluster.THREADS_MAX_CORES``
cores, input files of at most ``cluster.IN_PROCESS_BYTES``), else on a LocalCluster.
This measures both for every graph given
(synthetic ones are written with ``--synth NODES:EDGES:FILES``, Parquet edges and
features, like ``bench_many_files.py``): the whole command's wall time, the peak RSS of
the command's largest process (the threaded run is one process; with processes, the
largest worker), best of ``--repeat``, alternating. The threshold belongs where the
processes' time drops below the threads'. ``--serial`` also runs the threaded command on
one thread: the share of the work that holds the GIL (and so limits threads on more
cores) is ``2 * T(2 threads) / T(1 thread) - 1`` on a 2-CPU machine.

Usage::

    python benchmarks/bench_local_threads.py --synth 1000000:10000000:4 3000000:30000000:12 \\
        10000000:100000000:40 [--command dispatch|run-random|run-lp] [--repeat 2] [--work-dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).parent / "dgl-chunked")
# the CLI with the threshold moved out of the way: local threads whatever the input size
THREADED = (
    "import os, sys, dgl_chunked.cluster as c; c.IN_PROCESS_BYTES = 1 << 62; c.THREADS_MAX_CORES = 1 << 20; "
    "n = int(sys.argv.pop(1)); "
    "os.cpu_count = lambda: n; from dgl_chunked.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _synth(out: Path, nodes: int, edges: int, files: int) -> None:
    if (out / "metadata.json").exists():
        return
    cmd = [CLI, "synth", "--out-dir", str(out), "--num-nodes", str(nodes), "--num-edges", str(edges)]
    cmd += ["--feat-dim", "16", "--num-chunks", str(files), "--edge-format", "parquet", "--feature-format", "parquet"]
    subprocess.run([*cmd, "--workers", "2", "--seed", "0"], check=True, stdout=subprocess.DEVNULL)


def _input_mb(graph: Path) -> float:
    return sum(p.stat().st_size for p in graph.rglob("*") if p.is_file()) / 1e6


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds, and the peak RSS (MB) of the command's process or of the largest
    worker process it waited for (``wait4``'s ``ru_maxrss``: the one case that cannot
    read ``VmHWM`` (``peak_memory.py``), as the process is gone; it carries this
    benchmark's own peak across fork and exec, which stays small here)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--synth", nargs="+", default=["1000000:10000000:4"], metavar="NODES:EDGES:FILES")
    parser.add_argument("--command", choices=["dispatch", "run-random", "run-lp"], default="dispatch")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--serial", action="store_true", help="also run on one local thread")
    args = parser.parse_args()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="dglc-threads-"))
    rows = []
    try:
        for spec in args.synth:
            nodes, edges, files = (int(x) for x in spec.split(":"))
            graph = work / f"graph-{nodes}-{edges}-{files}"
            _synth(graph, nodes, edges, files)
            assign = work / f"assign-{graph.name}"
            if not (assign / "partition_meta.json").exists():
                subprocess.run(
                    [CLI, "partition", "--in-dir", str(graph), "--out-dir", str(assign), "--num-parts", "2"],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            if args.command == "dispatch":
                base = ["dispatch", "--in-dir", str(graph), "--partitions-dir", str(assign)]
            else:
                base = ["run", "--in-dir", str(graph), "--num-parts", "2", "--method", args.command[4:]]
            base += ["--out-dir", str(work / "out"), "--overwrite", "--no-progress"]
            best: dict[str, tuple[float, float]] = {}
            for _ in range(args.repeat):
                modes = [
                    ("threads", [sys.executable, "-c", THREADED, str(args.workers), *base]),
                    ("processes", [CLI, *base, "--workers", str(args.workers)]),
                ]
                modes += [("1 thread", [sys.executable, "-c", THREADED, "1", *base])] if args.serial else []
                for mode, argv in modes:
                    shutil.rmtree(work / "out", ignore_errors=True)
                    got = _timed(argv)
                    if mode not in best or got[0] < best[mode][0]:
                        best[mode] = got
            rows.append((spec, _input_mb(graph), best))
            print(f"  {spec}: threads {best['threads'][0]:.2f} s, processes {best['processes'][0]:.2f} s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"machine: {os.cpu_count()} CPUs; load average at the end: {os.getloadavg()}; command: {args.command}")
    head = f"{'nodes:edges:files':<26}{'input MB':>10}{'threads s':>11}{'processes s':>13}{'threads/proc':>14}"
    print(head + f"{'peak MB thr/proc':>18}")
    for spec, mb, best in rows:
        (t, rt), (p, rp) = best["threads"], best["processes"]
        print(f"{spec:<26}{mb:>10.0f}{t:>11.2f}{p:>13.2f}{t / p:>14.2f}{rt:>10.0f} / {rp:.0f}")
        if "1 thread" in best:
            one = best["1 thread"][0]
            print(f"  1 thread {one:.2f} s: GIL-bound share about {max(0.0, 2 * t / one - 1):.2f} (2-CPU estimate)")


if __name__ == "__main__":
    main()
