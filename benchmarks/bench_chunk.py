"""Benchmark: ``chunk_graph`` on a MAG240M-shaped raw folder, with per-worker peak memory.

Phases (seconds each, printed as a table):

    raw          write the raw folder (skipped when cached in --work-dir): a float16
                 paper feature (memmap, written chunk-wise), (2, E) edge_index.npy files,
                 a Parquet relation whose institution ends are string keys
    plain        chunk_graph with no transform but the key join
    transforms   chunk_graph with reverse edges on every relation, self-loop removal
                 and dedup on cites (dedup = one hash shuffle of the edges)

Each chunk phase reports the peak RSS (VmHWM) of every worker, which must stay
under ``--memory-limit`` even when the feature is larger. Run on a LocalCluster
(processes, 1 thread each)::

    python benchmarks/bench_chunk.py --papers 1000000 --dim 768 --edges 20000000 \\
        --num-chunks 64 --memory-limit 1GiB
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pandas as pd
from peak_memory import worker_peaks_mb

from dgl_chunked.chunk import chunk_graph

SPEC = """
graph_name: bench
node_types:
  paper:
    features:
      feat: {{path: paper/node_feat.npy}}
      year: {{path: paper/node_year.npy, dtype: int16}}
  author: {{count: {authors}}}
  institution:
    key: {{path: institution/keys.parquet, column: name}}
edge_types:
  paper:cites:paper:
    source: cites/edge_index.npy
    reverse: {reverse}
    self_loops: {loops}
    dedup: {dedup}
  author:writes:paper:
    source: writes/edge_index.npy
    reverse: {reverse}
  author:affiliated_with:institution:
    source: {{path: affiliated_with/edges.parquet, columns: [author, inst]}}
    reverse: {reverse}
"""


def _write_raw(raw: str, args: argparse.Namespace) -> str:
    rng = np.random.default_rng(0)
    for sub in ("paper", "institution", "cites", "writes", "affiliated_with"):
        os.makedirs(os.path.join(raw, sub), exist_ok=True)
    feat = np.lib.format.open_memmap(
        os.path.join(raw, "paper/node_feat.npy"), mode="w+", dtype=np.float16, shape=(args.papers, args.dim)
    )
    tile = rng.standard_normal((4099, args.dim)).astype(np.float16)
    for start in range(0, args.papers, 65_536):
        rows = np.arange(start, min(start + 65_536, args.papers))
        feat[rows[0] : rows[-1] + 1] = tile[rows % len(tile)]
    feat.flush()
    del feat
    np.save(os.path.join(raw, "paper/node_year.npy"), rng.integers(1990, 2022, args.papers))
    authors, insts = args.papers // 2, max(args.papers // 1000, 10)
    np.save(os.path.join(raw, "cites/edge_index.npy"), rng.integers(0, args.papers, (2, args.edges)))
    np.save(
        os.path.join(raw, "writes/edge_index.npy"),
        np.stack([rng.integers(0, authors, args.edges // 2), rng.integers(0, args.papers, args.edges // 2)]),
    )
    keys = np.array([f"inst-{i:08d}" for i in rng.permutation(insts)])
    pd.DataFrame({"name": keys}).to_parquet(os.path.join(raw, "institution/keys.parquet"))
    n_aff = args.edges // 10
    pd.DataFrame({"author": rng.integers(0, authors, n_aff), "inst": keys[rng.integers(0, insts, n_aff)]}).to_parquet(
        os.path.join(raw, "affiliated_with/edges.parquet"), row_group_size=1 << 20
    )
    return str(authors)


def _phase(
    phases: list[tuple[str, float, str]], name: str, raw: str, out: str, args: argparse.Namespace, transforms: bool
) -> None:
    from distributed import Client, LocalCluster

    from dgl_chunked.cluster import worker_environment

    with open(os.path.join(raw, "authors.txt")) as f:
        authors = f.read()
    spec = SPEC.format(
        authors=authors,
        reverse=str(transforms).lower(),
        loops="remove" if transforms else "keep",
        dedup=str(transforms).lower(),
    )
    path = os.path.join(raw, f"spec-{name}.yaml")
    with open(path, "w") as f:
        f.write(spec)
    with (
        worker_environment(),
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory_limit,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        meta = chunk_graph(path, out, num_chunks=args.num_chunks, overwrite=True)
        seconds = time.perf_counter() - start
        peaks = worker_peaks_mb(client)
    note = (
        f"{sum(meta.num_edges_per_type or ()):,} edges out; peak RSS per worker "
        f"{', '.join(f'{p:.0f}' for p in peaks)} MiB (limit {args.memory_limit})"
    )
    phases.append((name, seconds, note))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=400_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--edges", type=int, default=4_000_000)
    parser.add_argument("--num-chunks", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="500MiB")
    parser.add_argument("--work-dir", default=None, help="keeps the raw folder between runs")
    args = parser.parse_args()
    temp = args.work_dir is None
    work = args.work_dir or tempfile.mkdtemp(prefix="dglc-bench-chunk-")
    raw = os.path.join(work, f"raw-{args.papers}-{args.dim}-{args.edges}")
    phases: list[tuple[str, float, str]] = []
    try:
        if not os.path.exists(os.path.join(raw, "authors.txt")):
            start = time.perf_counter()
            authors = _write_raw(raw, args)
            with open(os.path.join(raw, "authors.txt"), "w") as f:
                f.write(authors)
            size = os.path.getsize(os.path.join(raw, "paper/node_feat.npy"))
            phases.append(("raw", time.perf_counter() - start, f"node_feat.npy {size / 2**20:.0f} MiB"))
        _phase(phases, "plain", raw, os.path.join(work, "out-plain"), args, transforms=False)
        _phase(phases, "transforms", raw, os.path.join(work, "out-transforms"), args, transforms=True)
    finally:
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"chunk_graph, {args.num_chunks} chunks, {args.workers}-worker LocalCluster "
        f"(processes, 1 thread each), numpy {np.__version__}"
    )
    print(f"{'phase':<10}  {'seconds':>8}  notes\n{'-' * 10}  {'-' * 8}  {'-' * 40}")
    for name, seconds, note in phases:
        print(f"{name:<10}  {seconds:>8.2f}  {note}")


if __name__ == "__main__":
    main()
