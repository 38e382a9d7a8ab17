"""Raw-input builders and an eager reference of the ``chunk`` transforms (the oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dgl_chunked.testing import GraphTruth, load_truth


def reference_relation(
    src: np.ndarray,
    dst: np.ndarray,
    feats: dict[str, np.ndarray],
    *,
    num_nodes: int | None = None,
    self_loops: str = "keep",
    dedup: bool = False,
    fill: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The relation after the transforms, written as plainly as possible (Python loops)."""
    keep = []
    seen: set[tuple[int, int]] = set()
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        if self_loops != "keep" and s == d:
            continue
        if dedup and (s, d) in seen:
            continue
        seen.add((s, d))
        keep.append(i)
    idx = np.asarray(keep, dtype=np.int64)
    out_src, out_dst = src[idx], dst[idx]
    out_feats = {f: a[idx] for f, a in feats.items()}
    if self_loops == "add":
        loops = np.arange(num_nodes or 0, dtype=np.int64)
        out_src, out_dst = np.concatenate([out_src, loops]), np.concatenate([out_dst, loops])
        out_feats = {
            f: np.concatenate([a, np.full((len(loops), *a.shape[1:]), fill).astype(a.dtype)])
            for f, a in out_feats.items()
        }
    return out_src, out_dst, out_feats


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(json.dumps(spec, indent=1))
    return path


def read_output(out_dir: Path) -> GraphTruth:
    """Every edge list and feature of a chunked output, eagerly."""
    return load_truth(out_dir)


def small_raw(raw: Path, *, seed: int = 0) -> dict[str, Any]:
    """A small raw folder: npy (2, E) cites with self loops and repeats, TSV writes with
    string author keys, Parquet affiliations; returns arrays for the oracle."""
    rng = np.random.default_rng(seed)
    raw.mkdir(parents=True, exist_ok=True)
    n_paper, n_author, n_inst = 30, 12, 4
    cites = rng.integers(0, n_paper, (2, 200))
    cites[:, 10:40] = cites[:, 50:80]  # repeats
    cites[1, 5:15] = cites[0, 5:15]  # self loops
    weight = rng.random((200, 2)).astype(np.float64)
    np.save(raw / "cites.npy", cites)
    np.save(raw / "cites_w.npy", weight)
    feat = rng.standard_normal((n_paper, 6)).astype(np.float32)
    np.save(raw / "paper_feat.npy", feat)
    keys = np.array([f"auth-{i * 13 % 97}" for i in range(n_author)])
    pd.DataFrame({"name": keys, "x": np.arange(n_author)}).to_csv(raw / "authors.csv", index=False)
    w_author = rng.integers(0, n_author, 90)
    w_paper = rng.integers(0, n_paper, 90)
    pd.DataFrame({"paper": w_paper, "author": keys[w_author]}).to_csv(raw / "writes.tsv", sep="\t", index=False)
    a_author, a_inst = rng.integers(0, n_author, 25), rng.integers(0, n_inst, 25)
    pd.DataFrame({"who": keys[a_author], "where": a_inst}).to_parquet(raw / "aff.parquet", row_group_size=7)
    return {
        "n": {"paper": n_paper, "author": n_author, "inst": n_inst},
        "cites": cites,
        "weight": weight,
        "feat": feat,
        "keys": keys,
        "writes": (w_author, w_paper),
        "aff": (a_author, a_inst),
    }
