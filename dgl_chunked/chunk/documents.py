"""The JSON documents a ``dgl-chunked chunk`` run writes last: ``metadata.json`` and ``node_keys.json``.

Both are built from the run's plan and the row counts its write tasks returned;
chunks that came out empty are left out. :func:`~dgl_chunked.chunk.api.chunk_graph`
writes them atomically once every chunk file is in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dgl_chunked.chunk import tasks
from dgl_chunked.chunk.kernels import split_counts
from dgl_chunked.chunk.plan import RelationPlan
from dgl_chunked.chunk.writer import Run

__all__ = ["metadata_document", "node_keys_document"]


def metadata_document(run: Run, done: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metadata.json`` document (relative paths; empty chunks left out).

    ``done`` is what :meth:`Run.write` returned.
    """
    nodes = list(run.plan.nodes.values())
    meta: dict[str, Any] = {
        "graph_name": run.plan.spec.graph_name,
        "node_type": [n.spec.name for n in nodes],
        "num_nodes_per_type": [n.count or 0 for n in nodes],
        "num_nodes_per_chunk": [split_counts(n.count or 0, n.num_chunks) for n in nodes],
        "edge_type": [],
        "num_edges_per_type": [],
        "num_edges_per_chunk": [],
        "edges": {},
        "node_data": {},
        "edge_data": {},
    }
    numpy_fmt = {"name": "numpy"}
    for t, feats in done["nodes"].items():
        n = run.plan.nodes[t].num_chunks
        for f, rows in feats.items():
            data = [f"node_data/{t}/{f}-{c}.npy" for c in range(n)][: len(rows)]
            meta["node_data"].setdefault(t, {})[f] = {"format": numpy_fmt, "data": data}
    edge_fmt = {"name": run.fmt, **tasks.EDGE_OPTIONS[run.fmt]}
    for e, rel in run.plan.relations.items():
        chunks, feats = done["edges"][e]
        rows = [r["rows"] if isinstance(r, dict) else int(r) for r in chunks]
        keep = [i for i, n in enumerate(rows) if n]
        paths = run.edge_paths(e, rel)
        names = [(e, 0)] + ([(rel.spec.reverse_name, 1)] if rel.spec.reverse_name else [])
        feat_paths = {f: _edge_feature_paths(run, e, rel, f, keep) for f in feats}
        for name, side in names:
            meta["edge_type"].append(name)
            meta["num_edges_per_type"].append(sum(rows))
            meta["num_edges_per_chunk"].append([rows[i] for i in keep])
            meta["edges"][name] = {"format": edge_fmt, "data": [paths[i][side] for i in keep]}
            if feat_paths:
                meta["edge_data"][name] = {f: {"format": numpy_fmt, "data": d} for f, d in feat_paths.items()}
    return meta


def _edge_feature_paths(run: Run, e: str, rel: RelationPlan, feat: str, keep: list[int]) -> list[str]:
    tags = run.tags(rel)
    return [f"edge_data/{e}/{feat}-{tags[i]}.npy" for i in keep]


def node_keys_document(run: Run, keys: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The ``node_keys.json`` sidecar listing every ``orig_key`` chunk (``keys``: step 1 results)."""
    out = {}
    for t, res in keys.items():
        rows = [r["rows"] for r in res]
        key_type = run.plan.nodes[t].key.key_type  # type: ignore[union-attr]
        out[t] = {
            "format": {"name": "parquet"},
            "column": "orig_key",
            "dtype": "int64" if str(key_type) == "int64" else "string",
            "data": [f"node_keys/{t}/orig_key-{j}.parquet" for j, n in enumerate(rows) if n],
            "num_rows_per_chunk": [n for n in rows if n],
        }
    return out
