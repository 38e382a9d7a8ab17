"""The edges file of a ParMETIS export: self loops and duplicate edges left out.

ParMETIS crashes on self loops and duplicate edges (dgl#3443), so edges are read per
edge file, hashed by their endpoint pair (:func:`edge_keys_partition`) and shuffled
into ``ceil(E / bucket_rows)`` buckets (``dask.dataframe`` shuffle; set
``dataframe.shuffle.method`` to choose how). Each bucket drops self loops and keeps
one edge per pair, the one with the smallest ``orig_eid`` (:func:`dedup_edges_block`),
and writes its lines sorted by ``orig_eid``: the bytes depend on the graph and
``bucket_rows`` only, never on the input chunking or the workers. Memory per task: one
edge file, or one bucket (32 bytes per edge shuffled, about 100 while sorting).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dgl_chunked._dask import run_token
from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.parmetis import format as _pm
from dgl_chunked.partition.random import splitmix64
from dgl_chunked.storage import fs as _fs

if TYPE_CHECKING:
    import dask.dataframe as dd
    from dask.delayed import Delayed

__all__ = ["DEFAULT_BUCKET_ROWS", "dedup_edges_block", "edge_keys_partition", "edge_tasks"]

DEFAULT_BUCKET_ROWS = 1 << 21


def edge_keys_partition(
    df: pd.DataFrame, *, src_offset: int, dst_offset: int, eid_offset: int, unordered: bool
) -> pd.DataFrame:
    """One edge file -> ``u``, ``v`` (orig_nid), ``orig_eid`` and ``key`` (a hash of the pair)."""
    u = df["src"].to_numpy(np.int64) + src_offset
    v = df["dst"].to_numpy(np.int64) + dst_offset
    lo, hi = (np.minimum(u, v), np.maximum(u, v)) if unordered else (u, v)
    key = splitmix64(splitmix64(lo.astype(np.uint64)) ^ hi.astype(np.uint64)).view(np.int64)
    eid = df.index.to_numpy(np.int64) + eid_offset
    return pd.DataFrame({"u": u, "v": v, "orig_eid": eid, "key": key})


def dedup_edges_block(u: IdArray, v: IdArray, orig_eid: IdArray, *, unordered: bool) -> tuple[IdArray, int, int]:
    """Rows to keep (sorted by ``orig_eid``): no self loops, one row per pair (the
    smallest ``orig_eid``). Returns ``(rows, self_loops, duplicates)``."""
    rows = np.flatnonzero(u != v)
    loops = len(u) - len(rows)
    a, b = u[rows], v[rows]
    lo, hi = (np.minimum(a, b), np.maximum(a, b)) if unordered else (a, b)
    order = np.lexsort((orig_eid[rows], hi, lo))
    lo, hi = lo[order], hi[order]
    first = np.ones(len(order), bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    kept = rows[order[first]]
    kept = kept[np.argsort(orig_eid[kept], kind="stable")]
    return kept, loops, len(rows) - len(kept)


def _write_edge_piece(
    df: pd.DataFrame, *, path: str, unordered: bool, etype_offsets: IdArray, storage_options: StorageOptions
) -> tuple[int, int, int]:
    u, v, eid = (df[c].to_numpy(np.int64) for c in ("u", "v", "orig_eid"))
    kept, loops, dups = dedup_edges_block(u, v, eid, unordered=unordered)
    eid = eid[kept]
    etype_id = np.searchsorted(etype_offsets, eid, side="right").astype(np.int64) - 1
    data = _pm.encode_edge_lines(u[kept], v[kept], eid - etype_offsets[etype_id], etype_id)
    with _fs.open_file(path, "wb", storage_options) as f:
        f.write(data)
    return len(kept), loops, dups


def _edge_frame(graph: ChunkedGraph, unordered: bool) -> dd.DataFrame | None:
    import dask.dataframe as dd

    md = graph.metadata
    offsets, eoffsets = md.node_type_offsets, graph.edge_type_offsets
    empty = np.empty(0, np.int64)
    meta = pd.DataFrame({"u": empty, "v": empty, "orig_eid": empty, "key": empty})
    frames = []
    for i, spec in enumerate(md.edge_types):
        if not graph.num_edges(spec.name):
            continue
        frames.append(
            graph.edges(spec.name).map_partitions(
                edge_keys_partition,
                src_offset=int(offsets[md.ntype_id(spec.src_type)]),
                dst_offset=int(offsets[md.ntype_id(spec.dst_type)]),
                eid_offset=int(eoffsets[i]),
                unordered=unordered,
                meta=meta,
                clear_divisions=True,
                token="dglc-parmetis-edge-keys",
            )
        )
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else dd.concat(frames)  # type: ignore[no-any-return]


def edge_tasks(
    graph: ChunkedGraph, unordered: bool, bucket_rows: int, tmp: str, storage_options: StorageOptions
) -> tuple[list[Delayed], list[str]]:
    from dask.delayed import delayed

    frame = _edge_frame(graph, unordered)
    if frame is None:
        return [], []
    total = int(graph.edge_type_offsets[-1])
    buckets = max(1, -(-total // bucket_rows))
    parts = frame.shuffle(on="key", npartitions=buckets).to_delayed()
    write = delayed(_write_edge_piece, pure=False)
    run = run_token(tmp, unordered)
    pieces = [f"{tmp}/edges-{b:07d}.txt" for b in range(len(parts))]
    tasks = [
        write(
            part,
            path=path,
            unordered=unordered,
            etype_offsets=graph.edge_type_offsets,
            storage_options=storage_options,
            dask_key_name=(f"dglc-parmetis-edges-{run}", b),
        )
        for b, (part, path) in enumerate(zip(parts, pieces, strict=True))
    ]
    return tasks, pieces
