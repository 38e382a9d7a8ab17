"""Helpers for dispatch tests: re-chunk a graph, read assignments, compare outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from dgl_chunked.io.chunked import open_chunked_graph
from dgl_chunked.io.formats import read_edge_chunk, read_feature_chunk, write_edge_chunk, write_feature_chunk


def _cuts(n: int, k: int) -> list[tuple[int, int]]:
    bounds = np.linspace(0, n, k + 1).astype(int)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def rechunk_graph(src_dir: Path, out_dir: Path, *, edge_chunks: int, feature_chunks: int,
                  node_chunks: int | None = None, edge_format: str = "csv",
                  feature_format: str = "numpy") -> Path:
    """Write the same graph as ``src_dir`` with another chunking and file formats."""
    graph = open_chunked_graph(src_dir)
    meta = graph.metadata
    out_dir.mkdir(parents=True)
    doc: dict[str, Any] = {"graph_name": meta.graph_name, "node_type": list(meta.node_types),
                           "num_nodes_per_type": list(meta.num_nodes_per_type),
                           "edge_type": [e.name for e in meta.edge_types],
                           "edges": {}, "node_data": {}, "edge_data": {}}
    if node_chunks:
        doc["num_nodes_per_chunk"] = [[b - a for a, b in _cuts(n, node_chunks)]
                                      for n in meta.num_nodes_per_type]
    per_chunk = []
    for spec in meta.edge_types:
        pieces = [read_edge_chunk(r.path, fmt=r.fmt, options=r.options) for r in graph.edge_chunks(spec.name)]
        src = np.concatenate([p[0] for p in pieces])
        dst = np.concatenate([p[1] for p in pieces])
        paths, counts = [], []
        for i, (a, b) in enumerate(_cuts(src.shape[0], edge_chunks)):
            path = out_dir / "edges" / f"{spec.name}-{i}.{'txt' if edge_format == 'csv' else 'parquet'}"
            path.parent.mkdir(exist_ok=True)
            opts = {"delimiter": " "} if edge_format == "csv" else {}
            write_edge_chunk(str(path), src[a:b], dst[a:b], fmt=edge_format, options=opts)
            paths.append(os.path.relpath(path, out_dir))
            counts.append(b - a)
        fmt: dict[str, Any] = {"name": edge_format, **({"delimiter": " "} if edge_format == "csv" else {})}
        doc["edges"][spec.name] = {"format": fmt, "data": paths}
        per_chunk.append(counts)
    doc["num_edges_per_chunk"] = per_chunk
    doc["num_edges_per_type"] = [sum(c) for c in per_chunk]
    for kind, data in (("node", meta.node_data), ("edge", meta.edge_data)):
        for type_name, feats in data.items():
            for feat in feats:
                refs = (graph.node_feature_chunks(type_name, feat) if kind == "node"
                        else graph.edge_feature_chunks(type_name, feat))
                full = np.concatenate([np.asarray(read_feature_chunk(r.path, fmt=r.fmt, options=r.options))
                                       for r in refs])
                paths = []
                for i, (a, b) in enumerate(_cuts(full.shape[0], feature_chunks)):
                    ext = "npy" if feature_format == "numpy" else "parquet"
                    path = out_dir / f"{kind}_data" / type_name / f"{feat}-{i}.{ext}"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_feature_chunk(str(path), full[a:b], fmt=feature_format)
                    paths.append(os.path.relpath(path, out_dir))
                doc[f"{kind}_data"].setdefault(type_name, {})[feat] = {
                    "format": {"name": feature_format}, "data": paths}
    (out_dir / "metadata.json").write_text(json.dumps(doc, indent=4))
    return out_dir


def read_assignment_txt(assign_dir: Path, ntypes: list[str]) -> dict[str, np.ndarray]:
    return {t: np.loadtxt(assign_dir / f"{t}.txt", dtype=np.int64, ndmin=1) for t in ntypes}


def output_files(out_dir: Path) -> dict[str, bytes]:
    """Every file of an output tree (relative path -> bytes), staging excluded."""
    return {str(p.relative_to(out_dir)): p.read_bytes()
            for p in sorted(out_dir.rglob("*")) if p.is_file() and "_staging" not in p.parts}
