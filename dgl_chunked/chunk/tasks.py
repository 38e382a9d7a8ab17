"""Task functions of ``dgl-chunked chunk``: each call is one Dask task.

Tasks take paths (plus small plans and the small results of earlier tasks) and
return small dicts; bulk data moves through the staging folder only. Memory per
task is bounded by one read task (or one hash bucket) of the largest array involved.

Staging layout (removed after a successful run)::

    STAGING/
      keys/<ntype>/<j>.arrow           bucket file (storage/buckets.py) by key bucket: row, key
      edges/<etype>/<k>/ids.npy        int64 [n, 2]: IDs (-1 where a key awaits the join)
      edges/<etype>/<k>/end<i>.arrow   bucket file by key bucket: row, key
      join/<etype>/end<i>/<b>.npy      int64 [m, 2]: row, ID; sorted by (read task, row)
      edges/<etype>/<k>/resolved.npy   int64 [n, 2] after the join
      dedup/<etype>/map/<k>.npy        int64 [n, 3]: row, src, dst; sorted by bucket
      dedup/<etype>/drop/<b>.npy       int64 [m, 2]: read task, row of every repeat
      mask/<etype>/<k>.npy             bool [n]: rows kept (only when some were dropped)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.chunk import kernels as tf
from dgl_chunked.chunk.probe import SourcePlan
from dgl_chunked.chunk.readers import (
    EdgeEnds,
    RowLocator,
    read_edge_pieces,
    read_feature_rows,
    read_key_pieces,
)
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.formats import Piece
from dgl_chunked.io.formats.files import makedirs_for
from dgl_chunked.io.formats.npy import npy_header, read_npy_rows, write_npy
from dgl_chunked.io.formats.parquet import write_parquet
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.buckets import read_bucket, write_buckets

__all__ = [
    "dedup_map",
    "dedup_reduce",
    "join_bucket",
    "resolve_read_task",
    "stage_edge_pieces",
    "stage_key_pieces",
    "write_edge_feature_chunk",
    "write_edges_chunk",
    "write_fill_chunk",
    "write_loops_chunk",
    "write_node_feature_chunk",
]

EDGE_OPTIONS: Mapping[str, Mapping[str, Any]] = {"parquet": {}, "csv": {"delimiter": " "}}


# --- staging files ----------------------------------------------------------------------


def save_npy(path: str, array: npt.NDArray[Any], so: StorageOptions = None) -> None:
    """Write a staging ``.npy``."""
    makedirs_for(path, so)
    with _fs.open_file(path, "wb", so) as f:
        write_npy(f, np.ascontiguousarray(array))


def load_npy_rows(
    path: str, start: int | None = None, stop: int | None = None, so: StorageOptions = None
) -> npt.NDArray[Any]:
    """Rows ``[start, stop)`` (default: all) of a staging ``.npy``."""
    info = npy_header(path, "staging", so)
    rows = int(info.rows or 0)
    return read_npy_rows(path, info, start or 0, rows if stop is None else stop, so)


# --- step 1: read raw pieces ---------------------------------------------------------


def stage_key_pieces(
    plan: SourcePlan,
    pieces: tuple[Piece, ...],
    *,
    num_buckets: int,
    stage_path: str,
    out_path: str,
    so: StorageOptions = None,
) -> dict[str, Any]:
    """Read one key read task: write its ``orig_key`` output chunk and its bucketed staging."""
    keys, piece_rows = read_key_pieces(plan, pieces, so)
    if len(keys):
        makedirs_for(out_path, so)
        with _fs.open_file(out_path, "wb", so) as f:
            write_parquet(f, pa.table({"orig_key": pa.array(keys, plan.key_type)}))
    rows = np.arange(len(keys), dtype=np.int64)
    write_buckets(stage_path, {"row": rows, "key": keys}, tf.key_buckets(keys, num_buckets), num_buckets, so)
    return {"rows": len(keys), "piece_rows": piece_rows}


def stage_edge_pieces(
    plan: SourcePlan,
    pieces: tuple[Piece, ...],
    ends: EdgeEnds,
    *,
    num_buckets: int,
    ids_path: str,
    end_paths: Sequence[str],
    so: StorageOptions = None,
) -> dict[str, Any]:
    """Read one raw edge read task: IDs to ``ids.npy``, keys to bucketed end files."""
    cols, piece_rows = read_edge_pieces(plan, pieces, ends, so)
    n = len(cols[0])
    ids = np.full((n, 2), -1, np.int64)
    for j in range(2):
        if ends.keyed[j]:
            rows = np.arange(n, dtype=np.int64)
            write_buckets(
                end_paths[j], {"row": rows, "key": cols[j]}, tf.key_buckets(cols[j], num_buckets), num_buckets, so
            )
        else:
            ids[:, j] = cols[j]
    save_npy(ids_path, ids, so)
    return {"rows": n, "piece_rows": piece_rows}


# --- step 2: key join ------------------------------------------------------------------


def join_bucket(
    bucket: int,
    *,
    where: str,
    key_paths: Sequence[str],
    key_starts: Sequence[int],
    key_locator: RowLocator,
    consumers: Sequence[Mapping[str, Any]],
    so: StorageOptions = None,
) -> dict[str, list[int]]:
    """Join one bucket of a node type's keys with every edge end that references it.

    ``consumers`` hold ``id``, ``where``, ``end`` (label), ``paths`` (end files
    per read task), ``starts`` (global row of each read task), ``locator`` and ``out``.
    Returns, per consumer id, the bounds of each read task's rows in its output.
    """
    parts = [read_bucket(p, bucket, so) for p in key_paths]
    keys = np.concatenate([p["key"] for p in parts]) if parts else np.empty(0, np.int64)
    ids = (
        np.concatenate([p["row"] + s for p, s in zip(parts, key_starts[:-1], strict=True)])
        if parts
        else np.empty(0, np.int64)
    )
    dup = tf.first_duplicate_key(keys, ids)
    if dup is not None:
        raise ChunkMismatchError(
            f"{where}: key {dup[0]!r} appears more than once ({key_locator.describe(dup[1])} and "
            f"{key_locator.describe(dup[2])}); keys must be unique per node type"
        )
    out = {}
    for consumer in consumers:
        out[consumer["id"]] = _join_consumer(bucket, keys, ids, consumer, so)
    return out


def _join_consumer(
    bucket: int, keys: npt.NDArray[Any], ids: IdArray, consumer: Mapping[str, Any], so: StorageOptions
) -> list[int]:
    rows, found, bounds = [], [], [0]
    for k, (path, start) in enumerate(zip(consumer["paths"], consumer["starts"][:-1], strict=True)):
        part = read_bucket(path, bucket, so)
        got = tf.lookup_keys(keys, ids, part["key"])
        if (got < 0).any():
            first = int(np.argmax(got < 0))
            where = consumer["locator"].describe(start + int(part["row"][first]))
            raise ChunkMismatchError(
                f"{consumer['where']}: {where}: {consumer['end']} key {part['key'][first]!r} "
                f"not found in {consumer['key_where']} ({int((got < 0).sum())} such row(s) in read "
                f"task {k}); add the node or drop the edge"
            )
        rows.append(part["row"])
        found.append(got)
        bounds.append(bounds[-1] + len(got))
    table = np.stack([np.concatenate(rows), np.concatenate(found)], axis=1) if rows else np.empty((0, 2), np.int64)
    save_npy(consumer["out"], table.astype(np.int64), so)
    return bounds


def resolve_read_task(
    task: int,
    *,
    ids_path: str,
    out_path: str,
    ends: Sequence[tuple[int, str, Sequence[str]]],
    joins: Sequence[Mapping[str, list[int]]],
    so: StorageOptions = None,
) -> int:
    """Fill the keyed ends of one read task from the join outputs; write ``resolved.npy``.

    ``ends`` holds ``(column, consumer id, output path per bucket)``; ``joins``
    are the results of every :func:`join_bucket` task involved.
    """
    ids = load_npy_rows(ids_path, so=so)
    for column, cid, paths in ends:
        bounds = [j[cid] for j in joins if cid in j]
        for path, bound in zip(paths, bounds, strict=True):
            seg = load_npy_rows(path, bound[task], bound[task + 1], so)
            ids[seg[:, 0], column] = seg[:, 1]
    save_npy(out_path, ids, so)
    return len(ids)


# --- step 3: dedup -------------------------------------------------------------------------


def dedup_map(
    *, ids_path: str, drop_loops: bool, num_buckets: int, out_path: str, so: StorageOptions = None
) -> list[int]:
    """Hash-partition one read task's edges by ``(src, dst)``; write them sorted by bucket."""
    ids = load_npy_rows(ids_path, so=so)
    rows = np.arange(len(ids), dtype=np.int64)
    if drop_loops:
        keep = ids[:, 0] != ids[:, 1]
        ids, rows = ids[keep], rows[keep]
    buckets = tf.pair_buckets(ids[:, 0], ids[:, 1], num_buckets)
    order, offsets = tf.bucket_order(buckets, num_buckets)
    save_npy(out_path, np.column_stack([rows, ids])[order], so)
    return [int(o) for o in offsets]


def dedup_reduce(
    bucket: int,
    *,
    map_paths: Sequence[str],
    map_offsets: Sequence[Sequence[int]],
    out_path: str,
    so: StorageOptions = None,
) -> list[int]:
    """Find the repeats in one bucket (first occurrence kept); return per-read-task bounds."""
    segs = [load_npy_rows(p, o[bucket], o[bucket + 1], so) for p, o in zip(map_paths, map_offsets, strict=True)]
    task = np.concatenate([np.full(len(s), k, np.int64) for k, s in enumerate(segs)])
    data = np.concatenate(segs) if segs else np.empty((0, 3), np.int64)
    drop = tf.duplicate_rows(task, data[:, 0], data[:, 1], data[:, 2])
    save_npy(out_path, np.column_stack([task[drop], data[drop, 0]]).astype(np.int64), so)
    return [int(i) for i in np.searchsorted(task[drop], np.arange(len(segs) + 1))]


# --- step 4: output chunks ---------------------------------------------------------------


def _write_edges(path: str, src: IdArray, dst: IdArray, fmt: str, so: StorageOptions) -> None:
    _formats.write_edge_chunk(path, src, dst, fmt=fmt, options=EDGE_OPTIONS[fmt], storage_options=so)


def write_edges_chunk(
    task: int,
    *,
    ids_path: str,
    drop_loops: bool,
    drops: Sequence[tuple[str, Sequence[int]]],
    out_path: str,
    rev_path: str | None,
    mask_path: str,
    edge_format: str,
    so: StorageOptions = None,
) -> dict[str, Any]:
    """Write one output edge chunk (and its reverse) from a staged read task.

    ``drops`` are ``(drop file, per-read-task bounds)`` of every dedup bucket.
    Returns the kept row count and the mask path (None when every row is kept).
    """
    ids = load_npy_rows(ids_path, so=so)
    keep = np.ones(len(ids), bool)
    if drop_loops:
        keep &= ids[:, 0] != ids[:, 1]
    for path, bounds in drops:
        seg = load_npy_rows(path, bounds[task], bounds[task + 1], so)
        keep[seg[:, 1]] = False
    src, dst = ids[keep, 0], ids[keep, 1]
    if len(src):
        _write_edges(out_path, src, dst, edge_format, so)
        if rev_path is not None:
            _write_edges(rev_path, dst, src, edge_format, so)
    if keep.all():
        return {"rows": len(src), "mask": None}
    save_npy(mask_path, keep, so)
    return {"rows": len(src), "mask": mask_path}


def write_edge_feature_chunk(
    plan: SourcePlan, start: int, stop: int, edges: Mapping[str, Any], *, out_path: str, so: StorageOptions = None
) -> int:
    """Rows ``[start, stop)`` of an edge feature, masked like the edge chunk, cast, written."""
    if not edges["rows"]:
        return 0
    rows = read_feature_rows(plan, start, stop, so)
    if edges["mask"] is not None:
        rows = rows[load_npy_rows(edges["mask"], so=so)]
    _formats.write_feature_chunk(out_path, tf.cast_rows(rows, plan.out_dtype), fmt="numpy", storage_options=so)
    return len(rows)


def write_node_feature_chunk(
    plan: SourcePlan, start: int, stop: int, *, out_path: str, so: StorageOptions = None
) -> int:
    """Rows ``[start, stop)`` of a node feature, cast and written as ``.npy``."""
    rows = tf.cast_rows(read_feature_rows(plan, start, stop, so), plan.out_dtype)
    _formats.write_feature_chunk(out_path, rows, fmt="numpy", storage_options=so)
    return len(rows)


def write_loops_chunk(
    start: int, stop: int, *, out_path: str, rev_path: str | None, edge_format: str, so: StorageOptions = None
) -> int:
    """Self loops ``(i, i)`` for nodes ``[start, stop)`` (and the same for the reverse)."""
    src, dst = tf.self_loop_edges(start, stop)
    _write_edges(out_path, src, dst, edge_format, so)
    if rev_path is not None:
        _write_edges(rev_path, dst, src, edge_format, so)
    return len(src)


def write_fill_chunk(rows: int, plan: SourcePlan, fill: float, *, out_path: str, so: StorageOptions = None) -> int:
    """The feature rows of added self loops: ``fill`` in the feature's output dtype."""
    dtype = plan.out_dtype if plan.out_dtype is not None else np.dtype("float32")
    _formats.write_feature_chunk(
        out_path, tf.fill_rows(rows, plan.row_shape, dtype, fill), fmt="numpy", storage_options=so
    )
    return rows
