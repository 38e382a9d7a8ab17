"""GSProcessing's raw_id_mappings at scale: lookup and remap by string user IDs, peak RSS per worker.

Makes a homogeneous graph of ``N`` nodes (``synth``, a tenth as many edges), writes a
GSProcessing-shaped ``raw_id_mappings/_N/parquet/`` (``orig`` strings ``u-<9 digits>``,
``new`` int64, rows shuffled over ``--files`` Spark-like part files), partitions it into
2 parts with ``run --save-orig-nids`` (which carries the mapping next to the
partitions), and measures on a fresh 2-worker LocalCluster (processes, 1 thread each):

- **lookup**: every user ID, the mapping files themselves as queries (``--column orig``);
- **remap**: a ``float32[dim]`` result in new-ID order to Parquet with the ``nid`` column;
- **in one process**: what GraphStorm's ``IdReverseMap`` does (``pyarrow.parquet.read_table``
  of the whole mapping, then ``argsort`` by ``new``), for its peak RSS beside ours.

Peak RSS per worker is each worker's ``VmHWM`` at the end (``peak_memory.py``). A sample
of rows is checked against the mapping. Usage::

    python benchmarks/bench_id_mappings.py [--nodes 4000000] [--files 16] [--dim 16] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from peak_memory import peak_rss_mb, worker_peaks_mb
from synth_parts import process_client, run_two_parts, synth_homogeneous

IN_ONE_PROCESS = (
    "import sys, numpy as np, pyarrow.parquet as pq\n"
    "t = pq.read_table(sys.argv[1]); ids = t.column('orig').to_numpy(zero_copy_only=False)\n"
    "ids = ids[np.argsort(t.column('new').to_numpy())]\n"
    "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')) / 1024)\n"
)


def _mapping(root: Path, nodes: int, files: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    user = rng.choice(10**9, size=nodes, replace=False)
    order = rng.permutation(nodes)
    out = root / "_N" / "parquet"
    out.mkdir(parents=True)
    for i, rows in enumerate(np.array_split(order, files)):
        orig = pa.array([f"u-{v:09d}" for v in user[rows]], pa.string())
        pq.write_table(
            pa.table({"orig": orig, "new": rows.astype(np.int64)}), out / f"part-{i:05d}-c000.snappy.parquet"
        )
    (out / "_SUCCESS").write_bytes(b"")
    return user


def _graph(work: Path, nodes: int, files: int) -> tuple[Path, np.ndarray]:
    chunked, out = work / "chunked", work / "parts"
    synth_homogeneous(chunked, nodes)
    user = _mapping(chunked / "raw_id_mappings", nodes, files)
    run_two_parts(chunked, out)
    return out, user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    import pandas as pd

    import dgl_chunked as dglc
    from dgl_chunked.remap.result_files import npy_header_bytes

    with tempfile.TemporaryDirectory(dir=args.work_dir, prefix="dglc-bench-idmap-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        parts, user = _graph(work, args.nodes, args.files)
        report: dict[str, Any] = {
            "nodes": args.nodes,
            "files": args.files,
            "graph_s": round(time.perf_counter() - t0, 1),
        }
        queries = str(parts / "raw_id_mappings" / "_N" / "parquet" / "*")
        with process_client(args.workers) as client:
            start = time.perf_counter()
            found = dglc.lookup_ids(parts, queries, work / "seeds", column="orig", client=client)
            report["lookup_s"] = round(time.perf_counter() - start, 2)
            report["lookup_peak_rss_mb"] = [round(v, 1) for v in worker_peaks_mb(client, "VmHWM")]
        assert sum(found.rows) == args.nodes
        src = work / "pred.npy"
        rng = np.random.default_rng(1)
        with open(src, "wb") as f:
            f.write(npy_header_bytes(np.dtype(np.float32), (args.nodes, args.dim)))
            for lo in range(0, args.nodes, 1 << 20):
                f.write(rng.random((min(1 << 20, args.nodes - lo), args.dim), dtype=np.float32).tobytes())
        with process_client(args.workers) as client:
            start = time.perf_counter()
            dglc.remap_results(parts, {"_N": str(src)}, work / "remapped", format="parquet", client=client)
            report["remap_s"] = round(time.perf_counter() - start, 2)
            report["remap_peak_rss_mb"] = [round(v, 1) for v in worker_peaks_mb(client, "VmHWM")]
        sample = pd.read_parquet(work / "remapped" / "nodes" / "_N" / "part-00000.parquet", columns=["nid", "type_nid"])
        want = [f"u-{v:09d}" for v in user[sample["type_nid"].to_numpy()]]
        assert sample["nid"].tolist() == want, "user IDs differ from the mapping"
        report["rows_checked"] = len(sample)
        proc = subprocess.run(
            [sys.executable, "-c", IN_ONE_PROCESS, str(parts / "raw_id_mappings" / "_N")],
            check=True,
            capture_output=True,
            text=True,
        )
        report["whole_mapping_one_process_peak_rss_mb"] = round(float(proc.stdout.strip()), 1)
        report["client_peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
