"""Dask wiring of ``dgl-chunked chunk``: plan, four steps, metadata last.

1. **read**: one task per key read task (writes the ``orig_key`` chunk and the key
   staging, bucketed by key hash) and per raw edge read task (writes IDs, and keys
   bucketed by hash). Row counts of CSV inputs become known here.
2. **join** (only with keys): one task per (node type, bucket) joins the keys
   with every edge end referencing the type; then one task per edge read task
   scatters the IDs back into source order.
3. **dedup** (only where asked): one map task per edge read task hash-partitions
   ``(src, dst)``; one reduce task per bucket finds the repeats (first occurrence
   by original edge ID kept).
4. **write**: one task per output chunk (edges and their reverse, edge features
   masked like their edges, added self loops and their filled features, node
   features), each casting dtypes on the way.

Each step is one computation on the current scheduler
(:func:`~dgl_chunked.compute.compute_settled`: a failed step returns once none of its
tasks runs). ``metadata.json`` (built by :mod:`.documents`) is written last and
atomically, so a failed run never looks complete; the staging folder is removed in
any case.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from dask.delayed import delayed

from dgl_chunked._dask import run_token
from dgl_chunked.chunk import tasks
from dgl_chunked.chunk.kernels import split_counts, starts
from dgl_chunked.chunk.plan import GraphPlan, RelationPlan, with_counts
from dgl_chunked.chunk.readers import EdgeEnds, RowLocator
from dgl_chunked.compute import compute_settled
from dgl_chunked.storage import fs as _fs

__all__ = ["EDGE_EXTENSIONS", "NODE_KEYS_FILE", "Run"]

logger = logging.getLogger(__name__)

NODE_KEYS_FILE = "node_keys.json"
EDGE_EXTENSIONS = {"parquet": "parquet", "csv": "txt"}


class Run:
    """One run of :func:`~dgl_chunked.chunk.api.chunk_graph`: paths, task naming, step results."""

    def __init__(self, plan: GraphPlan, out: str, staging_dir: str, edge_format: str) -> None:
        self.plan, self.out, self.staging_dir, self.fmt = plan, out, staging_dir, edge_format
        self.so = plan.storage_options
        self.token = run_token(out, staging_dir)
        self.B = plan.num_buckets
        self.edge_starts: dict[str, list[int]] = {}
        self.locators: dict[str, RowLocator] = {}
        self.joined: set[str] = set()
        self.drops: dict[str, list[tuple[str, list[int]]]] = {}

    def task(self, func: Any, *args: Any, name: str, **kwargs: Any) -> Any:
        """A Dask task calling ``func``, labelled ``dglc-chunk-<name>-<run token>``."""
        return delayed(func, pure=False)(*args, **kwargs, dask_key_name=f"dglc-chunk-{name}-{self.token}")

    def staged(self, *parts: object) -> str:
        """A path in the staging folder."""
        return _fs.join(self.staging_dir, "/".join(map(str, parts)))

    def ids_path(self, etype: str, k: int) -> str:
        """The staged int64 ``[n, 2]`` IDs of read task ``k`` (after the join, if any)."""
        return self.staged("edges", etype, k, "resolved.npy" if etype in self.joined else "ids.npy")

    # --- step 1 --------------------------------------------------------------------
    def read(self) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
        """Step 1: one task per key read task and per raw edge read task; returns their results."""
        keys, edges = {}, {}
        for t, node in self.plan.nodes.items():
            if node.key is not None:
                keys[t] = [
                    self.task(
                        tasks.stage_key_pieces,
                        node.key,
                        pieces,
                        num_buckets=self.B,
                        stage_path=self.staged("keys", t, f"{j}.arrow"),
                        out_path=_fs.join(self.out, f"node_keys/{t}/orig_key-{j}.parquet"),
                        so=self.so,
                        name=f"read-keys-{t}-{j}",
                    )
                    for j, pieces in enumerate(node.key_read_tasks)
                ]
        for e, rel in self.plan.relations.items():
            nodes = (self.plan.nodes[rel.spec.src_type], self.plan.nodes[rel.spec.dst_type])
            ends = EdgeEnds(
                types=rel.end_types,
                keyed=rel.keyed,
                names=("source", "destination"),
                counts=(nodes[0].count, nodes[1].count),
            )
            edges[e] = [
                self.task(
                    tasks.stage_edge_pieces,
                    rel.source,
                    pieces,
                    ends,
                    num_buckets=self.B,
                    ids_path=self.staged("edges", e, k, "ids.npy"),
                    end_paths=[self.staged("edges", e, k, f"end{j}.arrow") for j in (0, 1)],
                    so=self.so,
                    name=f"read-edges-{e}-{k}",
                )
                for k, pieces in enumerate(rel.read_tasks)
            ]
        done_keys, done_edges = compute_settled(keys, edges)
        return done_keys, done_edges

    def after_read(self, keys: Mapping[str, list[dict[str, Any]]], edges: Mapping[str, list[dict[str, Any]]]) -> None:
        """Record row counts and locators from step 1; recheck the counts it revealed."""
        self.key_starts = {t: starts([r["rows"] for r in res]) for t, res in keys.items()}
        self.key_locators = {
            t: RowLocator.build(
                self.plan.nodes[t].key_read_tasks,
                [r["piece_rows"] for r in res],
                header=self.plan.nodes[t].key.spec.header,  # type: ignore[union-attr]
            )
            for t, res in keys.items()
        }
        for e, res in edges.items():
            self.edge_starts[e] = starts([r["rows"] for r in res])
            rel = self.plan.relations[e]
            self.locators[e] = RowLocator.build(
                rel.read_tasks, [r["piece_rows"] for r in res], header=rel.source.spec.header
            )
        self.plan = with_counts(
            self.plan, {t: s[-1] for t, s in self.key_starts.items()}, {e: s[-1] for e, s in self.edge_starts.items()}
        )

    # --- step 2 --------------------------------------------------------------------
    def _consumers(self, ntype: str, bucket: int) -> list[dict[str, Any]]:
        out = []
        for e, rel in self.plan.relations.items():
            for j, end_type in enumerate((rel.spec.src_type, rel.spec.dst_type)):
                if end_type == ntype and rel.keyed[j]:
                    out.append(
                        {
                            "id": f"{e}|{j}",
                            "where": rel.source.where,
                            "end": ("source", "destination")[j],
                            "key_where": self.plan.nodes[ntype].spec.key.where,  # type: ignore[union-attr]
                            "paths": [self.staged("edges", e, k, f"end{j}.arrow") for k in range(len(rel.read_tasks))],
                            "starts": self.edge_starts[e],
                            "locator": self.locators[e],
                            "out": self.staged("join", e, f"end{j}", f"{bucket}.npy"),
                        }
                    )
        return out

    def join(self) -> None:
        """Step 2: join every key bucket, then scatter the IDs back into every keyed read task."""
        joins: dict[str, list[Any]] = {}
        for t in self.key_starts:
            node = self.plan.nodes[t]
            joins[t] = [
                self.task(
                    tasks.join_bucket,
                    b,
                    where=node.spec.key.where,  # type: ignore[union-attr]
                    key_paths=[self.staged("keys", t, f"{j}.arrow") for j in range(len(node.key_read_tasks))],
                    key_starts=self.key_starts[t],
                    key_locator=self.key_locators[t],
                    consumers=self._consumers(t, b),
                    so=self.so,
                    name=f"join-{t}-{b}",
                )
                for b in range(self.B)
            ]
        resolves = [self._resolve(e, rel, joins) for e, rel in self.plan.relations.items() if any(rel.keyed)]
        compute_settled(joins, resolves)
        self.joined = {e for e, rel in self.plan.relations.items() if any(rel.keyed)}

    def _resolve(self, e: str, rel: RelationPlan, joins: Mapping[str, list[Any]]) -> list[Any]:
        ends = [
            (j, f"{e}|{j}", [self.staged("join", e, f"end{j}", f"{b}.npy") for b in range(self.B)])
            for j in (0, 1)
            if rel.keyed[j]
        ]
        types = {t for j, t in enumerate((rel.spec.src_type, rel.spec.dst_type)) if rel.keyed[j]}
        deps = [r for t in sorted(types) for r in joins[t]]
        return [
            self.task(
                tasks.resolve_read_task,
                k,
                ids_path=self.staged("edges", e, k, "ids.npy"),
                out_path=self.staged("edges", e, k, "resolved.npy"),
                ends=ends,
                joins=deps,
                so=self.so,
                name=f"resolve-{e}-{k}",
            )
            for k in range(len(rel.read_tasks))
        ]

    # --- step 3 --------------------------------------------------------------------
    def dedup(self) -> None:
        """Step 3: hash-partition ``(src, dst)`` per read task, find repeats per bucket."""
        reduces: dict[str, list[Any]] = {}
        for e, rel in self.plan.relations.items():
            if not rel.spec.dedup:
                continue
            maps = [
                self.task(
                    tasks.dedup_map,
                    ids_path=self.ids_path(e, k),
                    drop_loops=rel.spec.self_loops != "keep",
                    num_buckets=self.B,
                    out_path=self.staged("dedup", e, "map", f"{k}.npy"),
                    so=self.so,
                    name=f"dedup-map-{e}-{k}",
                )
                for k in range(len(rel.read_tasks))
            ]
            map_paths = [self.staged("dedup", e, "map", f"{k}.npy") for k in range(len(rel.read_tasks))]
            reduces[e] = [
                self.task(
                    tasks.dedup_reduce,
                    b,
                    map_paths=map_paths,
                    map_offsets=maps,
                    out_path=self.staged("dedup", e, "drop", f"{b}.npy"),
                    so=self.so,
                    name=f"dedup-reduce-{e}-{b}",
                )
                for b in range(self.B)
            ]
        (done,) = compute_settled(reduces)
        self.drops = {
            e: [(self.staged("dedup", e, "drop", f"{b}.npy"), bounds) for b, bounds in enumerate(res)]
            for e, res in done.items()
        }

    # --- step 4 --------------------------------------------------------------------
    def tags(self, rel: RelationPlan) -> list[str]:
        """File tags of every output edge chunk: read tasks, then added self loops."""
        tags = [str(k) for k in range(len(rel.read_tasks))]
        if rel.spec.self_loops == "add":
            count = self.plan.nodes[rel.spec.src_type].count or 0
            tags += [f"loops-{c}" for c in range(len(split_counts(count, rel.num_chunks))) if count]
        return tags

    def edge_paths(self, e: str, rel: RelationPlan) -> list[tuple[str, str | None]]:
        """``(forward, reverse)`` relative paths of every output edge chunk."""
        ext, rev = EDGE_EXTENSIONS[self.fmt], rel.spec.reverse_name
        return [(f"edge_index/{e}-{t}.{ext}", f"edge_index/{rev}-{t}.{ext}" if rev else None) for t in self.tags(rel)]

    def _edge_tasks(self, e: str, rel: RelationPlan) -> tuple[list[Any], dict[str, list[Any]]]:
        paths, starts = self.edge_paths(e, rel), self.edge_starts[e]
        chunks: list[Any] = []
        feats: dict[str, list[Any]] = {f: [] for f in rel.features}
        for k in range(len(rel.read_tasks)):
            fwd, rev = paths[k]
            res = self.task(
                tasks.write_edges_chunk,
                k,
                ids_path=self.ids_path(e, k),
                drop_loops=rel.spec.self_loops != "keep",
                drops=self.drops.get(e, []),
                out_path=_fs.join(self.out, fwd),
                mask_path=self.staged("mask", e, f"{k}.npy"),
                rev_path=_fs.join(self.out, rev) if rev else None,
                edge_format=self.fmt,
                so=self.so,
                name=f"write-edges-{e}-{k}",
            )
            chunks.append(res)
            for f, plan in rel.features.items():
                feats[f].append(
                    self.task(
                        tasks.write_edge_feature_chunk,
                        plan,
                        starts[k],
                        starts[k + 1],
                        res,
                        out_path=_fs.join(self.out, f"edge_data/{e}/{f}-{k}.npy"),
                        so=self.so,
                        name=f"write-edge-feature-{e}-{f}-{k}",
                    )
                )
        if rel.spec.self_loops == "add":
            self._loop_tasks(e, rel, paths[len(rel.read_tasks) :], chunks, feats)
        return chunks, feats

    def _loop_tasks(
        self,
        e: str,
        rel: RelationPlan,
        paths: list[tuple[str, str | None]],
        chunks: list[Any],
        feats: dict[str, list[Any]],
    ) -> None:
        sizes = split_counts(self.plan.nodes[rel.spec.src_type].count or 0, rel.num_chunks)
        bounds = starts(sizes)
        for c, (fwd, rev) in enumerate(paths):
            chunks.append(
                self.task(
                    tasks.write_loops_chunk,
                    bounds[c],
                    bounds[c + 1],
                    out_path=_fs.join(self.out, fwd),
                    edge_format=self.fmt,
                    rev_path=_fs.join(self.out, rev) if rev else None,
                    so=self.so,
                    name=f"write-loops-{e}-{c}",
                )
            )
            for f, plan in rel.features.items():
                feats[f].append(
                    self.task(
                        tasks.write_fill_chunk,
                        sizes[c],
                        plan,
                        rel.spec.self_loop_fill,
                        out_path=_fs.join(self.out, f"edge_data/{e}/{f}-loops-{c}.npy"),
                        so=self.so,
                        name=f"write-loop-feature-{e}-{f}-{c}",
                    )
                )

    def _node_tasks(self) -> dict[str, dict[str, list[Any]]]:
        out: dict[str, dict[str, list[Any]]] = {}
        for t, node in self.plan.nodes.items():
            bounds = starts(split_counts(node.count or 0, node.num_chunks))
            for f, plan in node.features.items():
                out.setdefault(t, {})[f] = [
                    self.task(
                        tasks.write_node_feature_chunk,
                        plan,
                        bounds[c],
                        bounds[c + 1],
                        out_path=_fs.join(self.out, f"node_data/{t}/{f}-{c}.npy"),
                        so=self.so,
                        name=f"write-node-feature-{t}-{f}-{c}",
                    )
                    for c in range(len(bounds) - 1)
                    if bounds[c + 1] > bounds[c]
                ]
        return out

    def write(self) -> dict[str, Any]:
        """Step 4: every output chunk; returns the row counts (and masks) per task."""
        edges = {e: self._edge_tasks(e, rel) for e, rel in self.plan.relations.items()}
        (done,) = compute_settled({"edges": edges, "nodes": self._node_tasks()})
        return done  # type: ignore[no-any-return]
