"""remap and lookup at scale: time against a numpy floor, peak RSS per worker (issue 30).

For each scale ``s`` (1x = 1M nodes) it makes a homogeneous graph of ``s``M nodes
(``synth``, a tenth as many edges, no features), partitions it into 2 parts with
``run --save-orig-nids --partitions-dir``, writes a result array of ``float32[dim]``
rows in DGL's new-ID order (what a trainer's inference writes), and measures:

- **floor**: reading and writing those bytes once with numpy in one fresh process
  (``np.save(out, np.load(in))``), before and after the remap;
- **remap**: :func:`dgl_chunked.remap_results` (mapping from ``orig_nids.dgl``, npy
  output) on a fresh 2-worker LocalCluster (processes, 1 thread each, the CLI's worker
  environment); peak RSS per worker is each worker's ``VmHWM`` at the end (``peak_memory.py``), next
  to its RSS when idle; a sample of 200k rows is checked against the input.

With ``--lookup-nodes N --lookup-keys K`` it also chunks a keyed graph of ``N``
nodes (string keys ``acct-<n>``, ``N/10`` edges between keys) and times
:func:`dgl_chunked.lookup_ids` of ``K`` random keys with an int64 label column, on
a fresh cluster, with the same peak-RSS measurement.

With ``--shuffled`` each scale is also remapped with every partition's
``orig_nids.dgl`` in random order (as DGL's pipeline writes them), which takes the
shuffle route (``remap/shuffled.py``).

Usage::

    python benchmarks/bench_remap.py [--scales 1 30] [--dim 16] [--workers 2] [--shuffled]
                                     [--lookup-nodes 30000000 --lookup-keys 10000000]
                                     [--work-dir DIR] [--json out.json] [--keep]
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
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from peak_memory import worker_peaks_mb
from synth_parts import process_client, run_two_parts, synth_homogeneous

FLOOR = "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1]))"


def _status(client: Any, field: str) -> list[float]:
    """``field`` (``VmHWM``: peak resident size; ``VmRSS``: now) of every worker process, in MB."""
    return [round(v, 1) for v in worker_peaks_mb(client, field)]


def _graph(work: Path, nodes: int) -> Path:
    chunked, out = work / "chunked", work / "parts"
    if (out / "metadata.json").exists():  # kept by an earlier --keep run
        return out
    synth_homogeneous(chunked, nodes)
    run_two_parts(chunked, out)
    return out


def _results(path: Path, rows: int, dim: int) -> int:
    """A ``float32[dim]`` result array of ``rows`` rows, written a slice at a time (no memmap held)."""
    from dgl_chunked.remap.result_files import npy_header_bytes

    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        f.write(npy_header_bytes(np.dtype(np.float32), (rows, dim)))
        for lo in range(0, rows, 1 << 20):
            f.write(rng.random((min(1 << 20, rows - lo), dim), dtype=np.float32).tobytes())
    return path.stat().st_size


def _floor(src: Path, dst: Path) -> float:
    os.sync()  # no earlier write-back left to slow this one down
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(src), str(dst)], check=True)
    seconds = time.perf_counter() - start
    dst.unlink()
    return round(seconds, 2)


def _check(parts: Path, src: Path, out: Path) -> int:
    """Rows of a 200k sample of original IDs equal the input rows of their new IDs."""
    from dgl_chunked.io.formats.dgl import index_tensor_dict
    from dgl_chunked.io.formats.tensor_rows import read_payload_rows

    got, given = np.load(out, mmap_mode="r"), np.load(src, mmap_mode="r")
    orig = []
    for p in range(2):
        path = parts / f"part{p}" / "orig_nids.dgl"
        payload = index_tensor_dict(path)["_N"]
        orig.append(read_payload_rows(path, payload, 0, payload.rows))
    new_of = np.empty(got.shape[0], np.int64)
    start = 0
    for ids in orig:
        new_of[ids] = np.arange(start, start + ids.shape[0])
        start += ids.shape[0]
    sample = np.sort(np.random.default_rng(1).choice(got.shape[0], size=min(200_000, got.shape[0]), replace=False))
    assert np.array_equal(got[sample], given[new_of[sample]]), "remapped rows differ from the input"
    return int(sample.shape[0])


def _shuffled(parts: Path, where: Path) -> Path:
    """A copy of ``parts`` whose ``orig_nids.dgl`` lists each partition's IDs in random order
    (as DGL's pipeline does): remap then takes the shuffle route."""
    from dgl_chunked.io.dgl import write_tensor_dict
    from dgl_chunked.io.formats.dgl import index_tensor_dict
    from dgl_chunked.io.formats.tensor_rows import read_payload_rows

    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(parts, where)
    rng = np.random.default_rng(5)
    for path in sorted(where.glob("part*/orig_nids.dgl")):
        entries = {n: read_payload_rows(path, e, 0, e.rows) for n, e in index_tensor_dict(path).items()}
        write_tensor_dict(path, {n: rng.permutation(ids) for n, ids in entries.items()})
    return where


def bench_remap(work: Path, scale: int, dim: int, workers: int, shuffled: bool = False) -> dict[str, Any]:
    import dgl_chunked as dglc

    nodes = scale * 1_000_000
    t0 = time.perf_counter()
    parts = _graph(work, nodes)
    if shuffled:
        parts = _shuffled(parts, work / "parts-shuffled")
    graph_s = time.perf_counter() - t0
    src = work / "pred.npy"
    nbytes = _results(src, nodes, dim)
    before = _floor(src, work / "floor.npy")
    with process_client(workers) as client:
        idle = _status(client, "VmRSS")
        os.sync()
        start = time.perf_counter()
        result = dglc.remap_results(parts, {"_N": str(src)}, work / "remapped", client=client, overwrite=True)
        seconds = time.perf_counter() - start
        peak = _status(client, "VmHWM")
    after = _floor(src, work / "floor.npy")
    checked = _check(parts, src, work / "remapped" / "nodes" / "_N.npy")
    assert result.types["node/_N"].present == nodes
    shutil.rmtree(work / "remapped")
    floor = min(before, after)
    return {
        "scale": scale,
        "orig_order": "shuffled" if shuffled else "ascending",
        "nodes": nodes,
        "bytes": nbytes,
        "graph_s": round(graph_s, 1),
        "floor_s": [before, after],
        "remap_s": round(seconds, 2),
        "x_floor": round(seconds / floor, 2),
        "idle_rss_mb": idle,
        "peak_rss_mb": peak,
        "rows_checked": checked,
    }


def _keyed(work: Path, nodes: int) -> tuple[Path, Path, np.ndarray]:
    import dask
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dgl_chunked as dglc
    from dgl_chunked.chunk import chunk_graph

    if (work / "parts" / "metadata.json").exists():  # kept by an earlier --keep run
        ids = np.random.default_rng(2).permutation(nodes)
        return work / "chunked", work / "parts", ids
    raw = work / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    ids = rng.permutation(nodes)
    with pq.ParquetWriter(raw / "keys.parquet", pa.schema([("key", pa.string())])) as writer:
        for lo in range(0, nodes, 1 << 21):
            keys = pa.array([f"acct-{v:09d}" for v in ids[lo : lo + (1 << 21)]], pa.string())
            writer.write_table(pa.table({"key": keys}))
    ends = rng.integers(0, nodes, size=(nodes // 10, 2))
    edges = pa.table({"src": [f"acct-{v:09d}" for v in ends[:, 0]], "dst": [f"acct-{v:09d}" for v in ends[:, 1]]})
    pq.write_table(edges, raw / "edges.parquet")
    spec = {
        "graph_name": "keyed",
        "node_types": {"account": {"key": {"path": "keys.parquet", "column": "key"}}},
        "edge_types": {"account:links:account": {"source": {"path": "edges.parquet", "columns": ["src", "dst"]}}},
    }
    (raw / "spec.json").write_text(json.dumps(spec))
    with process_client(2):
        chunk_graph(raw / "spec.json", work / "chunked", num_chunks=max(1, nodes // 2_500_000))
    with warnings.catch_warnings(), process_client(2) as client, dask.config.set(scheduler="threads"):
        warnings.simplefilter("ignore")
        dglc.run(work / "chunked", work / "parts", num_parts=2, client=client,
                 options=dglc.DispatchOptions(save_orig_nids=True))  # fmt: skip
    return work / "chunked", work / "parts", ids


def bench_lookup(work: Path, nodes: int, keys: int, workers: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dgl_chunked as dglc

    t0 = time.perf_counter()
    chunked, parts, ids = _keyed(work, nodes)
    prep = time.perf_counter() - t0
    chosen = np.random.default_rng(3).choice(nodes, size=keys, replace=False)
    with pq.ParquetWriter(work / "queries.parquet", pa.schema([("key", pa.string()), ("label", pa.int64())])) as w:
        for lo in range(0, keys, 1 << 21):
            part = chosen[lo : lo + (1 << 21)]
            w.write_table(pa.table({"key": [f"acct-{v:09d}" for v in part], "label": part % 47}))
    with process_client(workers) as client:
        idle = _status(client, "VmRSS")
        start = time.perf_counter()
        result = dglc.lookup_ids(parts, work / "queries.parquet", work / "seeds", graph=chunked, column="key",
                                 labels=["label"], client=client, overwrite=True)  # fmt: skip
        seconds = time.perf_counter() - start
        peak = _status(client, "VmHWM")
    assert sum(result.rows) == keys
    return {
        "nodes": nodes,
        "keys": keys,
        "prep_s": round(prep, 1),
        "lookup_s": round(seconds, 2),
        "idle_rss_mb": idle,
        "peak_rss_mb": peak,
    }


def _loadavg() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="*", default=[1, 30])
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lookup-nodes", type=int, default=0)
    parser.add_argument("--lookup-keys", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the generated data.")
    parser.add_argument(
        "--shuffled", action="store_true", help="Also remap with orig_nids.dgl in random order (the shuffle route)."
    )
    args = parser.parse_args()
    if args.keep and args.work_dir is not None:  # a fixed place: a later run reuses the graphs
        base = args.work_dir / "dglc-bench-remap"
        base.mkdir(parents=True, exist_ok=True)
    else:
        base = Path(tempfile.mkdtemp(prefix="dglc-bench-remap-", dir=args.work_dir))
    rows: dict[str, Any] = {"loadavg_start": _loadavg(), "remap": [], "lookup": None}
    try:
        for scale in args.scales:
            row = bench_remap(base / f"remap-{scale}x", scale, args.dim, args.workers)
            if args.shuffled:
                rows["remap"].append(row)
                print(json.dumps(row), flush=True)
                row = bench_remap(base / f"remap-{scale}x", scale, args.dim, args.workers, shuffled=True)
            rows["remap"].append(row)
            print(json.dumps(row), flush=True)
            if not args.keep:
                shutil.rmtree(base / f"remap-{scale}x")
            else:
                (base / f"remap-{scale}x" / "pred.npy").unlink()
        if args.lookup_nodes and args.lookup_keys:
            rows["lookup"] = bench_lookup(base / "lookup", args.lookup_nodes, args.lookup_keys, args.workers)
            print(json.dumps(rows["lookup"]), flush=True)
    finally:
        rows["loadavg_end"] = _loadavg()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    first = rows["remap"][0] if rows["remap"] else None
    for row in rows["remap"]:
        ratio = max(row["peak_rss_mb"]) / max(first["peak_rss_mb"]) if first else 1.0
        print(
            f"{row['scale']:>3}x {row['nodes']:>11,} nodes {row['bytes'] / 2**30:6.2f} GiB, {row['orig_order']}: "
            f"remap {row['remap_s']:7.2f} s, floor {min(row['floor_s']):6.2f} s ({row['x_floor']:.2f}x), "
            f"peak RSS/worker {row['peak_rss_mb']} MB (idle {row['idle_rss_mb']}; {ratio:.2f}x the first scale)"
        )
    if rows["lookup"]:
        lk = rows["lookup"]
        print(
            f"lookup {lk['keys']:,} keys / {lk['nodes']:,} nodes: {lk['lookup_s']} s, "
            f"peak RSS/worker {lk['peak_rss_mb']} MB"
        )
    print(f"load average: start {rows['loadavg_start']}, end {rows['loadavg_end']}; host {os.uname().nodename}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
