"""What translating a node-ID feature (GraphStorm's hard negatives) costs in ``run``.

Generates a uniform homogeneous graph with ``dgl-chunked synth`` (no node feature) plus
an int64 edge feature ``hard_neg`` of ``--width`` node IDs per edge (a quarter of them
``-1`` padding) in the edge chunking, then runs ``dgl-chunked run --method M`` on it
alternately without and with ``--node-id-features _N:_E:_N/hard_neg`` (``--repeat``
times each, each in its own process on local threads), and prints the wall time and
the peak RSS (``ru_maxrss`` of that process) of each, the fastest run of each kept.

Usage::

    python benchmarks/bench_node_id_features.py [--nodes 1000000] [--edges 4000000]
        [--width 4] [--chunks 4] [--parts 4] [--method random] [--repeat 2] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dgl_chunked.synth import SynthSpec, write_synthetic_graph

ETYPE = "_N:_E:_N"


def make_graph(root: Path, nodes: int, edges: int, width: int, chunks: int) -> Path:
    spec = SynthSpec.homogeneous(nodes, edges, feat_dim=None, num_classes=0, num_chunks=chunks, seed=1)
    base = Path(write_synthetic_graph(root / "g", spec).base_dir)
    meta = json.loads((base / "metadata.json").read_text())
    per_chunk = meta["edges"][ETYPE].get("num_edges_per_chunk") or [
        len(p) for p in np.array_split(np.arange(edges), chunks)
    ]
    rng = np.random.default_rng(7)
    files = []
    (base / "edge_data").mkdir(exist_ok=True)
    for k, rows in enumerate(per_chunk):
        values = rng.integers(0, nodes, (int(rows), width), dtype=np.int64)
        values[rng.random(values.shape) < 0.25] = -1
        name = f"edge_data/hard_neg-{k}.npy"
        np.save(base / name, values)
        files.append(name)
    meta.setdefault("edge_data", {})[ETYPE] = {"hard_neg": {"format": {"name": "numpy"}, "data": files}}
    (base / "metadata.json").write_text(json.dumps(meta))
    return base


def run_once(graph: Path, out: Path, parts: int, method: str, translate: bool) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "dgl_chunked", "run", "--in-dir", str(graph), "--out-dir", str(out)]
    cmd += ["--num-parts", str(parts), "--method", method, "--overwrite", "--no-progress"]
    if translate:
        cmd += ["--node-id-features", f"{ETYPE}/hard_neg"]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        seconds = time.perf_counter() - start
        if status != 0:
            err.seek(0)
            raise SystemExit(f"run failed ({status}): {err.read().decode(errors='replace')[-3000:]}")
    return seconds, int(usage.ru_maxrss) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=4_000_000)
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--method", default="random")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="dglc-bench-nidf-", dir=args.work_dir))
    try:
        graph = make_graph(root, args.nodes, args.edges, args.width, args.chunks)
        best: dict[bool, tuple[float, int]] = {}
        for _ in range(args.repeat):
            for translate in (False, True):
                got = run_once(graph, root / "out", args.parts, args.method, translate)
                best[translate] = min(best.get(translate, got), got)
        print(f"graph: {args.nodes} nodes, {args.edges} edges, hard_neg int64[{args.width}], {args.chunks} chunks")
        print(f"run --method {args.method} --num-parts {args.parts}, fastest of {args.repeat}; load {os.getloadavg()}")
        for translate, (seconds, rss) in best.items():
            label = "with --node-id-features" if translate else "without"
            print(f"  {label:<24} {seconds:7.2f} s   peak RSS {rss / 2**20:7.1f} MiB")
        print(f"  ratio {best[True][0] / best[False][0]:.2f}x time, {best[True][1] / best[False][1]:.2f}x RSS")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
