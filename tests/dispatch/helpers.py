"""Helpers for dispatch tests: re-chunk a graph, read assignments, compare outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dgl_chunked.io.chunked.metadata import read_metadata
from dgl_chunked.testing import load_truth, write_graph_from_truth


def rechunk_graph(
    src_dir: Path,
    out_dir: Path,
    *,
    edge_chunks: int,
    feature_chunks: int,
    edge_format: str = "csv",
    feature_format: str = "numpy",
) -> Path:
    """Write the same graph as ``src_dir`` with another chunking and other file formats."""
    truth = load_truth(read_metadata(src_dir))
    write_graph_from_truth(
        out_dir,
        truth,
        edge_chunks=edge_chunks,
        feature_chunks=feature_chunks,
        edge_format=edge_format,
        feature_format=feature_format,
    )  # type: ignore[arg-type]
    return out_dir


def read_assignment_txt(assign_dir: Path, ntypes: list[str]) -> dict[str, np.ndarray]:
    return {t: np.loadtxt(assign_dir / f"{t}.txt", dtype=np.int64, ndmin=1) for t in ntypes}


def output_files(out_dir: Path) -> dict[str, bytes]:
    """Every file of an output tree (relative path -> bytes), staging and the ownership
    marker (it records the run: host, pid, times) excluded."""
    return {
        str(p.relative_to(out_dir)): p.read_bytes()
        for p in sorted(out_dir.rglob("*"))
        if p.is_file() and "_staging" not in p.parts and p.name != ".dglc-owned.json"
    }
