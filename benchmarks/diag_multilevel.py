"""Diagnose the multilevel ``lp`` assignment level by level on a planted-partition graph.

Runs ``lp`` in this process (Dask threads) on an SBM graph (``planted_partition_edges``,
64 groups) and prints, per coarsening level: nodes, entries, the purity of its clusters
with respect to the planted groups (share of level-0 nodes in their cluster's
majority group), and the cut (fraction of level-0 entries) after METIS on the coarsest
level (the uncoarsening is one computation, :func:`dgl_chunked.partition.lp.projection.uncoarsen`:
no hook between its levels); then the final cut and METIS's cut on the same graph, and how the planted groups lie
across the parts (which groups share a part, which are split). A diagnostic, not a
benchmark (no timings are comparable: the hooks read every level's scratch).

Example::

    python benchmarks/diag_multilevel.py --nodes 1000000 --edges 8000000 --skewed --parts 4
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_partition_quality as Q  # noqa: E402

from dgl_chunked.partition.lp import coarsen_tasks as M  # noqa: E402
from dgl_chunked.partition.lp import multilevel as D  # noqa: E402


def planted_groups(n: int, groups: int, *, skewed: bool, seed: int = 0) -> Any:
    """The group of every node, drawn as ``planted_partition_edges`` draws it."""
    rng = np.random.default_rng(seed)
    sizes = rng.pareto(1.5, groups) + 1 if skewed else np.ones(groups)
    sizes = np.maximum(1, sizes / sizes.sum() * n).astype(np.int64)
    sizes[-1] += n - sizes.sum()
    return rng.permutation(np.repeat(np.arange(groups), sizes))


def level_cut(level: M.Level, name: str) -> int:
    """Weight of the entries of ``level`` between parts (files ``name``)."""
    cut = 0
    for b in range(level.num_blocks):
        u, v, w = M.read_entries(level, b)
        p = M.load(level.url(f"{name}-{b}"))
        cut += int(w[p[u] != M.lookup(level, name, v)].sum())
    return cut


class Probe:
    """Hooks around the multilevel driver's steps."""

    def __init__(self, comm: Any, entries: int) -> None:
        self.comm, self.entries = comm, entries
        self.map = np.arange(comm.size)  # level-0 node -> node of the last level
        self.levels: dict[int, M.Level] = {}

    def coarsen(self, orig: Any, level: M.Level, *a: Any) -> Any:
        out = orig(level, *a)
        coarse, nodes, entries, between = out[:4]
        if level.index == 0:  # a new multilevel assignment starts from the input
            self.map = np.arange(self.comm.size)
        cid = np.concatenate([M.load(level.url(f"cid-{b}")) for b in range(level.num_blocks)])
        self.map = np.where(self.map >= 0, cid[np.maximum(self.map, 0)], -1)
        self.levels[coarse.index] = coarse
        pos = self.map >= 0
        key = self.map[pos] * 64 + self.comm[pos]
        counts = np.bincount(key, minlength=nodes * 64).reshape(nodes, 64)
        purity = counts.max(axis=1).sum() / pos.sum()
        print(
            f"level {coarse.index}: {nodes} nodes, {entries} entries, between {between / self.entries:.4f}, "
            f"purity {purity:.4f}, biggest cluster {counts.sum(axis=1).max()}",
            flush=True,
        )
        return out

    def initial(self, orig: Any, level: M.Level, plan: Any, *a: Any) -> Any:
        part = orig(level, plan, *a)
        cut = 0
        for b in range(level.num_blocks):
            u, v, w = M.read_entries(level, b)
            cut += int(w[part[u + level.offsets[b]] != part[v]].sum())
        print(f"coarsest level {level.index}: METIS cut {cut / self.entries:.4f}", flush=True)
        return part


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=8_000_000)
    p.add_argument("--skewed", action="store_true")
    p.add_argument("--parts", type=int, default=4)
    p.add_argument("--metis", action="store_true", help="also run the metis method")
    p.add_argument("--max-memory", type=int, default=None, help="max_memory of the metis method (2M nodes: 8e9)")
    p.add_argument("--config", default="", help="LPConfig overrides, e.g. coarse_nodes=131072,cluster_rounds=6")
    p.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "dglc-ml-diag"))
    args = p.parse_args(argv)
    import dask
    import dask.array as da

    from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, compute_partition_report, register_method

    kw = {k: (float(v) if "." in v else int(v)) for k, v in (i.split("=") for i in args.config.split(",") if i)}
    register_method("lp", LPMethod(LPConfig(**kw)), overwrite=True)
    os.makedirs(args.work_dir, exist_ok=True)
    kind = "skewed" if args.skewed else "uniform"
    name = f"sbm-{kind}-{args.nodes}-{args.edges}"
    draw = functools.partial(Q.planted_partition_edges, args.nodes, args.edges, 64, skewed=args.skewed)
    graph = Q._write(args.work_dir, name, args.nodes, draw, 4)
    comm = planted_groups(args.nodes, 64, skewed=args.skewed)
    print(
        "group sizes (largest 8):",
        sorted(np.bincount(comm).tolist())[::-1][:8],
        "parts share",
        args.nodes // args.parts,
    )
    probe = Probe(comm, 2 * args.edges)
    D._coarsen = functools.partial(probe.coarsen, D._coarsen)
    D._initial = functools.partial(probe.initial, D._initial)
    logging.basicConfig(format="%(asctime)s %(message)s")
    logging.getLogger("dgl_chunked.partition.lp").setLevel(logging.DEBUG)
    methods = ["lp"] + (["metis"] if args.metis else [])
    for method in methods:
        with dask.config.set(scheduler="threads", num_workers=2):
            start = time.perf_counter()
            extra = {"max_memory": args.max_memory} if method == "metis" and args.max_memory else {}
            arrays = assign_partitions(
                graph,
                args.parts,
                method=method,
                seed=0,
                balance_ntypes=["train_mask", "val_mask", "test_mask"],
                **extra,
            )
            computed = dict(zip(arrays, dask.compute(*arrays.values()), strict=True))
            seconds = time.perf_counter() - start
            lazy = {t: da.from_array(a, chunks=(graph.node_chunks(t),)) for t, a in computed.items()}
            report = compute_partition_report(graph, lazy, args.parts)
        print(f"{method}: cut {report.edge_cut_fraction:.4f} in {seconds:.1f} s", flush=True)
        part = np.concatenate(list(computed.values()))
        table = np.bincount(comm * args.parts + part, minlength=64 * args.parts).reshape(64, args.parts)
        split = table.sum(axis=1) - table.max(axis=1)
        print(f"  nodes outside their group's main part: {split.sum()}")
        for q in range(args.parts):  # which communities share a part (packed beside a split large one?)
            main = np.flatnonzero(table.argmax(axis=1) == q)
            print(
                f"  part {q}: {table[:, q].sum()} nodes; groups mainly here: {main.size} "
                f"({table[main].sum()} nodes, {table[main, q].sum()} of them here)"
            )
        print("  groups split > 1%:")
        for g in np.flatnonzero(split > 0.01 * table.sum(axis=1)):
            print(f"    group {g} ({table[g].sum()} nodes): {table[g].tolist()}")


if __name__ == "__main__":
    main()
