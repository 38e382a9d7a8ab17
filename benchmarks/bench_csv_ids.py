"""How the parse time of a CSV edge chunk depends on the node IDs it holds.

Writes one chunk of uniform random edges (2.5M rows, ``src dst``, the chunk size of
``bench_pipeline.py``) for each node count, then reads it the way dispatch does
(:func:`dgl_chunked.io.formats.csv.read_csv_edges`) and prints the file size, the
wall and CPU time of the read (best of ``--repeat``) and the CPU time per MB.

The point: the parse cost per byte is not a constant. IDs below 1M, 10M or 100M are
mostly of one length (90% have 6, 7 or 8 digits), IDs below 30M are a third 7-digit and
two thirds 8-digit, and the parser's per-field loop then mispredicts where a field ends.
``bench_pipeline.py``'s 30x graph has 30M nodes, so its edge files cost more CPU per byte
than the 1x graph's (issue 19's time ratio).

Usage::

    python benchmarks/bench_csv_ids.py [--nodes 1000000 10000000 30000000 100000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from dgl_chunked.io.formats.csv import read_csv_edges

ROWS = 2_500_000


def _write_chunk(path: Path, num_nodes: int, seed: int) -> None:
    ids = np.random.default_rng(seed).integers(0, num_nodes, (ROWS, 2))
    np.savetxt(path, ids, fmt="%d", delimiter=" ")


def _best_read(path: Path, repeat: int) -> tuple[float, float]:
    """Fastest (wall, CPU) seconds of reading ``path`` ``repeat`` times."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        read_csv_edges(str(path), {"delimiter": " "}, None, False)
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1_000_000, 10_000_000, 30_000_000, 100_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'nodes':>12} {'file MB':>8} {'wall s':>7} {'CPU s':>7} {'CPU ms/MB':>10}")
    with tempfile.TemporaryDirectory(prefix="dglc-csv-ids-") as tmp:
        for seed, num_nodes in enumerate(args.nodes):
            path = Path(tmp) / f"edges-{num_nodes}.txt"
            _write_chunk(path, num_nodes, seed)
            megabytes = path.stat().st_size / 1e6
            wall, cpu = _best_read(path, args.repeat)
            print(f"{num_nodes:>12} {megabytes:>8.1f} {wall:>7.3f} {cpu:>7.3f} {1000 * cpu / megabytes:>10.2f}")
            path.unlink()


if __name__ == "__main__":
    main()
