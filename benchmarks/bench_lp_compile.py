"""Benchmark: lp's first run after an install (numba compiles its kernels) against the
runs after it (numba loads them from its cache).

Each run is ``dgl-chunked partition --method lp`` in a subprocess with numba's cache in a
fresh directory (``NUMBA_CACHE_DIR``; the package's own cache is not touched): first
empty (cold), then as the cold run left it (warm). Printed per run: wall, the number of
compiled kernels written to the cache (``NUMBA_DEBUG_CACHE``'s "data saved" lines: a
kernel compiled by two worker processes is written twice) and the files in the cache.

Issue #38: on the 2-core VM, at 1M nodes / 10M edges on 2 workers, the first run took
57.6-59.6 s against 38.7 s cached, and the 2 workers wrote 46 compiled kernels where
28 are distinct (each compiled the same kernels beside the other); :mod:`.jit` makes
the processes of one machine compile each kernel once.

Example::

    python benchmarks/bench_lp_compile.py --in-dir GRAPH --workers 2 --balance-ntypes _N
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


def run_lp(args: argparse.Namespace, cache: Path, out: Path) -> tuple[float, int]:
    """One ``partition --method lp`` with numba's cache in ``cache``: (wall s, kernels
    written to the cache)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "dgl_chunked", "partition", "--in-dir", args.in_dir, "--out-dir", str(out)]
    command += ["--num-parts", str(args.parts), "--method", "lp"]
    command += ["--balance-ntypes", args.balance_ntypes] if args.balance_ntypes else []
    command += ["--workers", str(args.workers)] if args.workers else []
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"partition failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, (done.stdout + done.stderr).count("data saved to")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-dir", required=True, help="a chunked graph (metadata.json)")
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--workers", type=int, default=0, help="worker processes (0: the CLI's choice)")
    parser.add_argument("--balance-ntypes", default="")
    parser.add_argument("--warm-runs", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-lp-compile-") as tmp:
        cache, out = Path(tmp) / "numba-cache", Path(tmp) / "assignment"
        print(f"{'run':6} {'wall s':>8} {'kernels written':>16} {'cache files':>12}")
        for run in ["cold"] + ["warm"] * args.warm_runs:
            wall, saved = run_lp(args, cache, out)
            files = sum(1 for _ in cache.rglob("*.nbc"))
            print(f"{run:6} {wall:8.1f} {saved:16d} {files:12d}", flush=True)


if __name__ == "__main__":
    main()
