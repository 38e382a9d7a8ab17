"""Why dispatch shuffles by owner by hand: its Zarr staging against ``dask.dataframe``'s shuffle.

On one synthetic graph (``SynthSpec.homogeneous``: uniform edges, a float32[16] node
feature, three bool masks and an int64 label), written twice with the same rows in
two chunkings (A: ``--chunks``, B: ``--chunks-b`` edge files and 3 feature files),
this runs on a fresh 2-worker LocalCluster (processes, 1 thread each) per measurement:

(a) ``dispatch`` with the random assignment (2 parts): its staging steps (stage
    assignment, number nodes, stage edges and features: the owner shuffle, which
    also relabels every edge to new node IDs) and the partition writers;
(b, c) the same owner shuffle with ``dask.dataframe``: the edge list with
    ``owner = part[dst]`` and all node data as one frame (an N-d feature becomes
    one column per dimension) with ``owner = part[node]``, each
    ``df.shuffle("owner", npartitions=2)`` (b) or ``df.set_index("owner",
    divisions=[0, 1, 1])`` (c, range partitioning) and written with ``to_parquet`` (the
    counterpart of the staging on disk). It does less work than (a)'s staging: no
    new IDs, no counts, no per-task completion records.

It prints wall time, the peak RSS of each worker process (``VmHWM`` at the end,
fresh cluster per run, idle baseline alongside), and what each output looks like:
whether output partition p holds exactly owner p's rows, and whether chunkings A and
B give byte-identical output (``dispatch``: every file; shuffle: each output
partition's rows in order).

Usage::

    python benchmarks/bench_shuffle_choice.py [--nodes 1000000] [--edges 10000000]
                                              [--chunks 4] [--chunks-b 7] [--work-dir DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from peak_memory import worker_peaks_mb

from dgl_chunked.storage.owned import MARKER_NAME

NUM_PARTS = 2
SEED = 0


def _owner(ids: np.ndarray) -> np.ndarray:
    """The random method's owner of per-type node IDs (what ``assign_partitions`` computes)."""
    from dgl_chunked.partition import random_parts

    return np.asarray(random_parts(ids, type_id=0, seed=SEED, num_parts=NUM_PARTS))


def make_graphs(work: Path, nodes: int, edges: int, chunks: int, chunks_b: int) -> tuple[Path, Path]:
    """Graph A (synth, ``chunks`` files) and graph B (the same rows, other chunkings)."""
    from dgl_chunked import SynthSpec, write_synthetic_graph
    from dgl_chunked.testing import load_truth, write_graph_from_truth

    a, b = work / "graph-a", work / "graph-b"
    if not (a / "metadata.json").exists():
        spec = SynthSpec.homogeneous(nodes, edges, feat_dim=16, num_chunks=chunks, edge_format="parquet", seed=SEED)
        write_synthetic_graph(str(a), spec, overwrite=True)
    if not (b / "metadata.json").exists():
        truth = load_truth(a)
        write_graph_from_truth(b, truth, edge_chunks=chunks_b, feature_chunks=3, edge_format="parquet")
    return a, b


def _on_fresh_cluster(job: Callable[[Any], dict[str, Any]], workers: int) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    from dgl_chunked.cluster import worker_environment

    kwargs = {"n_workers": workers, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    with worker_environment(), LocalCluster(**kwargs) as cluster, Client(cluster) as client:
        idle = worker_peaks_mb(client)
        start = time.perf_counter()
        result = job(client)
        result["seconds"] = time.perf_counter() - start
        result["worker_peak_rss_mb"] = worker_peaks_mb(client)
        result["worker_idle_rss_mb"] = idle
    return result


def _tree_digest(root: Path) -> str:
    """Digest of every file the output holds, but the ownership marker (run ID, times)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != MARKER_NAME):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_dispatch(graph_dir: Path, out: Path, workers: int) -> dict[str, Any]:
    """(a): the whole ``dispatch``; staging and writer seconds from its step timings."""
    import dgl_chunked as dglc

    def job(client: Any) -> dict[str, Any]:
        shutil.rmtree(out, ignore_errors=True)
        graph = dglc.open_chunked_graph(graph_dir)
        parts = dglc.assign_partitions(graph, NUM_PARTS, method="random", seed=SEED)
        options = dglc.DispatchOptions(progress=False)
        result = dglc.dispatch(graph, parts, out, num_parts=NUM_PARTS, options=options, client=client)
        steps = dict(result.step_seconds)
        write = steps.pop("write partitions", 0.0)
        return {"staging_s": sum(steps.values()), "write_s": write, "steps_s": result.step_seconds}

    result = _on_fresh_cluster(job, workers)
    result["digest"] = _tree_digest(out)
    result["owner_p_in_partition_p"] = True  # by construction: part<p>/ is written from owner p's segments
    return result


def _with_owner(frame: pd.DataFrame, column: str | None) -> pd.DataFrame:
    ids = frame[column].to_numpy() if column else frame.index.to_numpy()
    return frame.assign(owner=_owner(ids))


def _shuffled(frame: Any, how: str) -> Any:
    if how == "shuffle":
        return frame.shuffle("owner", npartitions=NUM_PARTS)
    # range partitioning: owner p -> output partition p (divisions 0, 1, ..., P-1, P-1)
    divisions = [*range(NUM_PARTS), NUM_PARTS - 1]
    return frame.set_index("owner", divisions=divisions).reset_index()


def run_dataframe_shuffle(graph_dir: Path, out: Path, workers: int, how: str) -> dict[str, Any]:
    """(b) ``df.shuffle("owner")`` or (c) ``df.set_index("owner")`` of the edge list and of
    the node data, to Parquet."""
    import dask.dataframe as dd

    import dgl_chunked as dglc

    def job(client: Any) -> dict[str, Any]:
        shutil.rmtree(out, ignore_errors=True)
        graph = dglc.open_chunked_graph(graph_dir)
        node_frames, rows = [], None
        for feat in graph.metadata.node_data["_N"]:  # one frame, one column per dimension
            array = graph.node_feature("_N", feat)
            array = array.reshape(array.shape[0], -1) if array.ndim > 1 else array[:, None]
            rows = rows or array.chunks[0]
            columns = [f"{feat}{i}" for i in range(array.shape[1])]
            node_frames.append(dd.from_dask_array(array.rechunk({0: rows}), columns=columns))
        frames = {
            "edges": graph.edges(graph.edge_types[0]).map_partitions(_with_owner, "dst"),
            "node_data": dd.concat(node_frames, axis=1).map_partitions(_with_owner, None),
        }
        for name, frame in frames.items():
            _shuffled(frame, how).to_parquet(str(out / name), write_index=False)
        return {}

    result = _on_fresh_cluster(job, workers)
    owners_ok, digest, layout = True, hashlib.sha256(), []
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        for p, path in enumerate(sorted(folder.glob("*.parquet"), key=lambda f: int(f.stem.split(".")[-1]))):
            table = pd.read_parquet(path)
            owners = sorted(np.unique(table["owner"]).tolist())
            owners_ok &= owners == [p]
            layout.append(f"{folder.name}/{p}:" + ("+".join(map(str, owners)) or "-"))
            for column in table.columns:  # column by column: a mixed-dtype to_numpy() is object
                digest.update(np.ascontiguousarray(table[column].to_numpy()).tobytes())
    result["digest"] = digest.hexdigest()[:16]
    result["owner_p_in_partition_p"] = owners_ok
    result["owners_per_output_partition"] = " ".join(layout)
    return result


def _table(rows: list[dict[str, Any]]) -> str:
    head = f"{'approach':<28}{'chunking':>9}{'total s':>9}{'staging s':>11}{'worker peak RSS MB':>20}"
    head += f"{'idle MB':>10}{'owner p in part p':>19}{'digest':>18}"
    lines = [head]
    for r in rows:
        staging = f"{r['staging_s']:.2f}" if "staging_s" in r else "-"
        lines.append(
            f"{r['approach']:<28}{r['chunking']:>9}{r['seconds']:>9.2f}{staging:>11}"
            f"{'/'.join(f'{m:.0f}' for m in r['worker_peak_rss_mb']):>20}"
            f"{'/'.join(f'{m:.0f}' for m in r['worker_idle_rss_mb']):>10}"
            f"{'yes' if r['owner_p_in_partition_p'] else 'no':>19}{r['digest']:>18}"
        )
    for approach in dict.fromkeys(r["approach"] for r in rows):
        digests = {r["digest"] for r in rows if r["approach"] == approach}
        lines.append(f"{approach}: chunkings A and B give {'identical' if len(digests) == 1 else 'different'} output")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--chunks", type=int, default=4, help="edge and feature files of graph A")
    parser.add_argument("--chunks-b", type=int, default=7, help="edge files of graph B (3 feature files)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)  # p2p shuffles log each start at WARNING
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="dglc-bench-shuffle-"))
    start = time.perf_counter()
    graphs = dict(zip("AB", make_graphs(work, args.nodes, args.edges, args.chunks, args.chunks_b), strict=True))
    print(f"graphs written in {time.perf_counter() - start:.1f} s under {work}")
    rows = []
    for label, graph_dir in graphs.items():  # alternate, so a busy period hurts both alike
        rows.append({"approach": "dispatch (Zarr staging)", "chunking": label,
                     **run_dispatch(graph_dir, work / f"dispatch-{label}", args.workers)})  # fmt: skip
        for how in ("shuffle", "set_index"):
            rows.append({"approach": f"dask.dataframe {how}", "chunking": label,
                         **run_dataframe_shuffle(graph_dir, work / f"{how}-{label}", args.workers, how)})  # fmt: skip
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; "
        f"graph: {args.nodes} nodes, {args.edges} edges, float32[16] feature + 3 masks + label; "
        f"{args.workers} workers x 1 thread, {NUM_PARTS} partitions"
    )
    print(_table(rows))
    for r in rows:
        if "owners_per_output_partition" in r:
            print(f"  {r['approach']} {r['chunking']}: owners in each output partition: "
                  f"{r['owners_per_output_partition']}")  # fmt: skip
        if "steps_s" in r:
            steps = ", ".join(f"{k} {v:.2f}" for k, v in r["steps_s"].items())
            print(f"  dispatch {r['chunking']} steps (s): {steps}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
