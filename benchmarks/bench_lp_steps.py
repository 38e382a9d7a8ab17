"""Benchmark: lp's numpy steps that session 24 replaced, against what they replaced.

Issue #38 asks lp's wall at 1M nodes / 10M edges to be at most METIS's. On the 2-core VM
one whole run's CPU time varies by 10% or more from run to run, more than these steps
save together, so each step is timed here on its own, on arrays of the sizes it meets
on that graph (4 blocks of 262144 nodes, about 5M staged entries per block; 39 blocks
at 10M nodes), and checked to give the same result:

    staging order     the staged entries grouped by block: numpy's stable radix argsort
                      and a gather per array, against one compiled counting sort
                      (``kernels.group_by_key``)
    weighted rows     the rows of a [262144, 4] weight block that are not all zero:
                      ``any(axis=1)``, against a pass per column (``weighted_rows``)
    split order       the stable order of 2.6M proposals by destination block: int64
                      keys (merge sort), against keys narrowed to 8 bits (radix sort)
    weight sum check  a coarse block's int32 weights summed to see if they reach 2**31
                      (max, then the sum), against nothing when the level's weight is
                      known to be below (``Level.weight``)

Example::

    python benchmarks/bench_lp_steps.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dgl_chunked.partition.lp.coarsen_kernels import weighted_rows
from dgl_chunked.partition.lp.kernels import group_by_key, stable_order


def best_ms(fn: Callable[[], Any], repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn`` (after one warm-up call), in ms."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def staging_order(entries: int, blocks: int, repeat: int) -> tuple[float, float]:
    rng = np.random.default_rng(blocks)
    block = rng.integers(0, blocks, entries).astype(np.uint16)
    u = rng.integers(0, 2**31, entries).astype(np.uint32)
    v = rng.integers(0, 2**31, entries).astype(np.int32)

    def before() -> list[Any]:
        order = np.argsort(block.astype(np.uint8 if blocks <= 256 else np.uint16), kind="stable")
        return [u[order], v[order]]

    got, want = group_by_key(block, blocks, [u, v]), before()
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    return best_ms(before, repeat), best_ms(lambda: group_by_key(block, blocks, [u, v]), repeat)


def rows_with_weight(rows: int, columns: int, repeat: int) -> tuple[float, float]:
    rng = np.random.default_rng(rows)
    w = rng.integers(0, 3, (rows, columns)) * (rng.random((rows, 1)) < 0.5)
    assert np.array_equal(weighted_rows(w), w.any(axis=1))
    return best_ms(lambda: w.any(axis=1), repeat), best_ms(lambda: weighted_rows(w), repeat)


def split_order(rows: int, blocks: int, repeat: int) -> tuple[float, float]:
    block = np.random.default_rng(rows).integers(0, blocks, rows)
    assert np.array_equal(stable_order(block, blocks), np.argsort(block, kind="stable"))
    before = best_ms(lambda: np.argsort(block, kind="stable"), repeat)
    return before, best_ms(lambda: stable_order(block, blocks), repeat)


def weight_sum_check(entries: int, repeat: int) -> tuple[float, float | None]:
    w = np.random.default_rng(entries).integers(1, 600, entries).astype(np.int32).view(np.uint32)

    def before() -> bool:
        return w.size * int(w.max()) >= 2**31 and int(w.sum(dtype=np.int64)) >= 2**31

    return best_ms(before, repeat), None  # not run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=5_000_000, help="staged entries of a block")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n, r = args.entries, args.repeat
    rows: list[tuple[str, tuple[float, float | None]]] = [
        (f"staging order, {n} entries, 4 blocks", staging_order(n, 4, r)),
        (f"staging order, {n} entries, 39 blocks", staging_order(n, 39, r)),
        ("weighted rows, 262144 x 4", rows_with_weight(262144, 4, r)),
        (f"split order, {n // 2} rows, 4 blocks", split_order(n // 2, 4, r)),
        (f"weight sum check, {n} weights", weight_sum_check(n, r)),
    ]
    print(f"{'step':48s} {'before ms':>10s} {'now ms':>10s}")
    for name, (before, now) in rows:
        print(f"{name:48s} {before:10.2f} {'not run' if now is None else f'{now:.2f}':>10s}")


if __name__ == "__main__":
    main()
