"""Raw tables of a planted-community graph, as a user has them: string keys, labels in a table of their own.

``num_nodes`` accounts (keys ``acct-<7 digits>``, in random order) fall into
``classes`` communities; the class is the label. Each node gets about ``degree_in``
edges inside its community and ``degree_out`` to random nodes, both directions
stored (an undirected graph as two directed edges). Features are 16 noisy numbers
whose first ``classes`` entries lean towards the class: alone they predict it
poorly, with the neighbours' they predict it well, so the labels depend on the
structure. Written files:

- ``nodes.parquet``: ``key`` (string), ``feat`` (list of 16 float32);
- ``edges.parquet``: ``src``, ``dst`` (keys);
- ``labels.csv``: ``key``, ``label``, ``is_train`` (1 for 60% of the nodes, else 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["SPEC", "write_planted_tables"]

SPEC = {
    "graph_name": "planted",
    "node_types": {
        "account": {
            "key": {"path": "nodes.parquet", "column": "key"},
            "features": {"feat": {"path": "nodes.parquet", "column": "feat"}},
        }
    },
    "edge_types": {"account:links:account": {"source": {"path": "edges.parquet", "columns": ["src", "dst"]}}},
}
"""The ``dgl-chunked chunk`` spec of the tables (relative paths: put it beside them)."""


def write_planted_tables(
    out: Path,
    *,
    num_nodes: int = 3000,
    classes: int = 6,
    degree_in: int = 6,
    degree_out: int = 2,
    signal: float = 0.7,
    seed: int = 0,
) -> dict[str, Path]:
    """Write the three tables into ``out``; return their paths by name."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    keys = np.array([f"acct-{v:07d}" for v in rng.choice(10_000_000, size=num_nodes, replace=False)])
    label = rng.integers(0, classes, size=num_nodes)
    members = [np.flatnonzero(label == c) for c in range(classes)]
    src_in = np.repeat(np.arange(num_nodes), degree_in)
    dst_in = np.concatenate([rng.choice(members[label[v]], size=degree_in) for v in range(num_nodes)])
    src_out = np.repeat(np.arange(num_nodes), degree_out)
    dst_out = rng.integers(0, num_nodes, size=src_out.shape[0])
    src = np.concatenate([src_in, src_out])
    dst = np.concatenate([dst_in, dst_out])
    keep = src != dst
    src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    feat = rng.normal(size=(num_nodes, 16)).astype(np.float32)
    feat[np.arange(num_nodes), label] += signal
    is_train = (rng.random(num_nodes) < 0.6).astype(np.int64)
    paths = {"nodes": out / "nodes.parquet", "edges": out / "edges.parquet", "labels": out / "labels.csv"}
    pd.DataFrame({"key": keys, "feat": list(feat)}).to_parquet(paths["nodes"], row_group_size=1000)
    pd.DataFrame({"src": keys[src], "dst": keys[dst]}).to_parquet(paths["edges"], row_group_size=20000)
    pd.DataFrame({"key": keys, "label": label, "is_train": is_train}).sample(frac=1.0, random_state=seed).to_csv(
        paths["labels"], index=False
    )
    return paths
