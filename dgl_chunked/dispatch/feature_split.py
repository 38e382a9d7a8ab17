"""One partition's ``node_feat.dgl`` / ``edge_feat.dgl`` written by several tasks, by feature
and row range, as :mod:`~dgl_chunked.dispatch.graph_split` writes ``graph.dgl``.

A skeleton task writes the tensor dict with every payload left as a hole
(:func:`~dgl_chunked.io.dgl.binary.write_tensor_dict_skeleton`) and returns the offsets;
the file's payloads, feature after feature, are cut into pieces of about equal bytes (at
most one per :data:`FEATURE_TASK_BYTES`, and only as many as
:mod:`~dgl_chunked.dispatch.write_pieces` gives the file), and one task per piece copies
the partition's staged rows of its features into their holes (``os.pwrite``); a last
task renames ``<kind>.dgl.parts-dglc`` to ``<kind>.dgl`` and records it in the staging
as the one-task writer does. The bytes are the one-task writer's. It applies to files of
more than :data:`FEATURE_TASK_BYTES` on a local or shared file system whose features are
plain numbers (integers, floats, bool stored as uint8, as the one-task writer stores
them), where the step has idle threads for them; other files keep one task.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.finalize import tmp_dir_name
from dgl_chunked.dispatch.plan import PartitionPlan, StagedFeature
from dgl_chunked.dispatch.staging import MISSING, segment_bounds
from dgl_chunked.io.dgl.binary import Reserved, write_tensor_dict_skeleton
from dgl_chunked.storage import fs
from dgl_chunked.storage.zarr_rows import read_rows

__all__ = [
    "FEATURE_TASK_BYTES",
    "FeatureSkeleton",
    "Piece",
    "feature_bytes",
    "feature_pieces",
    "feature_ranges",
    "features_splittable",
    "finish_features",
    "most_feature_pieces",
    "split_feature_tasks",
    "write_feature_rows",
    "write_feature_skeleton",
]

FEATURE_TASK_BYTES = 32 << 20
"""Bytes per task of a feature file split as far as it goes (about the read task size); a
file split into fewer pieces has larger ones, a file of at most this many bytes has one task."""

_BLOCK_BYTES = 8 << 20

FeatureSkeleton = tuple[str, dict[str, int], bool]
"""The partial file's path, each feature's payload offset, and whether the file was already finished."""

Piece = tuple[tuple[int, int, int], ...]
"""What one row-range task copies: ``(feature index, first row, end row)`` of each feature it covers."""


def _features(plan: PartitionPlan, kind: str) -> tuple[tuple[StagedFeature, ...], Any]:
    if kind == "node_feat":
        return plan.node_features, plan.node_layout
    return plan.edge_features, plan.edge_layout


def _rows(plan: PartitionPlan, kind: str, part: int, feat: StagedFeature) -> int:
    return int(_features(plan, kind)[1].sizes()[part][feat.type_index])


def _row_bytes(feat: StagedFeature) -> int:
    return int(np.prod(feat.row_shape, dtype=np.int64)) * np.dtype(feat.dtype).itemsize


def _plain(dtype: np.dtype[Any]) -> bool:
    """Stored as staged (bool as uint8): not bfloat16, nor unsigned integers wider than 8 bits
    (which the one-task writer refuses with its error)."""
    return dtype.kind in "ifb" or (dtype.kind == "u" and dtype.itemsize == 1)


def feature_bytes(plan: PartitionPlan, kind: str, part: int) -> int:
    """The payload bytes of file ``kind`` (``node_feat`` / ``edge_feat``) of partition ``part``."""
    if kind not in ("node_feat", "edge_feat"):
        return 0
    return sum(_rows(plan, kind, part, f) * _row_bytes(f) for f in _features(plan, kind)[0])


def feature_pieces(plan: PartitionPlan, kind: str, part: int) -> int:
    """The most pieces file ``kind`` of partition ``part`` may be cut into: one per
    :data:`FEATURE_TASK_BYTES`, rounded up; 1 for a file that is never split (see the module)."""
    if kind not in ("node_feat", "edge_feat"):
        return 1
    dtypes = [np.dtype(f.dtype) for f in _features(plan, kind)[0]]
    return most_feature_pieces(feature_bytes(plan, kind, part), features_splittable(dtypes, plan.out_dir))


def features_splittable(dtypes: Sequence[np.dtype[Any]], out_dir: str) -> bool:
    """Whether a feature file of features of these ``dtypes`` may be split at all: some features,
    all plain numbers, a local or shared output (the run's plan and the forecast ask the same)."""
    return bool(dtypes) and all(_plain(d) for d in dtypes) and not fs.is_url(out_dir)


def most_feature_pieces(nbytes: int, splittable: bool) -> int:
    """Pieces at most of a feature file of ``nbytes`` payload bytes: one per :data:`FEATURE_TASK_BYTES`."""
    return max(1, -(-nbytes // FEATURE_TASK_BYTES)) if splittable else 1


def split_feature_tasks(pieces: int) -> int:
    """Tasks of a feature file written in ``pieces`` pieces: the skeleton, a task per piece and
    the rename; 1 when not split."""
    return 1 if pieces <= 1 else pieces + 2


def feature_ranges(plan: PartitionPlan, kind: str, part: int, pieces: int) -> list[Piece]:
    """The file's payloads, feature after feature, cut at row boundaries into at most ``pieces``
    pieces of about equal bytes (a feature with no bytes goes with the first piece)."""
    sizes = [(_rows(plan, kind, part, f), _row_bytes(f)) for f in _features(plan, kind)[0]]
    total = sum(rows * size for rows, size in sizes)
    k = max(1, pieces)
    cuts = [total * i // k for i in range(k + 1)]
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(k)]
    offset = 0
    for i, (rows, size) in enumerate(sizes):
        if rows and not size:
            out[0].append((i, 0, rows))
            continue
        at = [min(rows, max(0, -(-(cut - offset) // size))) for cut in cuts]  # first row at or after each cut
        for j in range(k):
            if at[j] < at[j + 1]:
                out[j].append((i, at[j], at[j + 1]))
        offset += rows * size
    return [tuple(piece) for piece in out if piece]


def _path(plan: PartitionPlan, kind: str, part: int) -> str:
    _, tmp = fs.filesystem(fs.join(plan.out_dir, tmp_dir_name(part)), plan.storage_options)
    return os.path.join(tmp, f"{kind}.dgl.parts-dglc")


def _disk(feat: StagedFeature) -> np.dtype[Any]:
    dtype = np.dtype(feat.dtype)
    return np.dtype(np.uint8) if dtype.kind == "b" else dtype.newbyteorder("<")


def write_feature_skeleton(plan: PartitionPlan, kind: str, part: int, stamp: str) -> FeatureSkeleton:
    """Write the tensor dict's records with a hole per feature; return where each payload begins."""
    path = _path(plan, kind, part)
    if plan.staging.done_value(f"write/{part}/{kind}", stamp) is not MISSING:
        return path, {}, True
    holes = {f.key: Reserved((_rows(plan, kind, part, f), *f.row_shape), _disk(f)) for f in _features(plan, kind)[0]}
    write_tensor_dict_skeleton(path, holes)
    return path, {key: int(h.offset) for key, h in holes.items() if h.offset is not None}, False


def _feature_blocks(plan: PartitionPlan, part: int, feat: StagedFeature, a: int, b: int) -> Iterator[npt.NDArray[Any]]:
    """Partition ``part``'s rows ``[a, b)`` of a staged feature, a few MB at a time."""
    step = max(1, _BLOCK_BYTES // max(1, _row_bytes(feat)))
    pos = 0
    for name, counts in zip(feat.arrays, feat.counts, strict=True):
        n = int(counts[part])
        x0, x1 = max(a, pos), min(b, pos + n)
        if x0 < x1:
            seg_lo, _ = segment_bounds(counts, part)
            array = plan.staging.open(name)
            for x in range(x0, x1, step):
                y = min(x1, x + step)
                yield read_rows(array, seg_lo + x - pos, seg_lo + y - pos)
        pos += n
        if pos >= b:
            return


def write_feature_rows(plan: PartitionPlan, kind: str, part: int, skeleton: FeatureSkeleton, piece: Piece) -> int:
    """Copy each ``(feature index, first row, end row)`` of ``piece`` into its hole; return the rows."""
    path, offsets, done = skeleton
    if done:
        return sum(b - a for _, a, b in piece)
    fd = os.open(path, os.O_WRONLY)
    try:
        for index, a, b in piece:
            feat = _features(plan, kind)[0][index]
            disk, row_bytes = _disk(feat), _row_bytes(feat)
            row = a
            for block in _feature_blocks(plan, part, feat, a, b):
                data = np.ascontiguousarray(block, dtype=disk)
                os.pwrite(fd, data.reshape(-1).view(np.uint8).data, offsets[feat.key] + row * row_bytes)
                row += block.shape[0]
            if row != b:  # pragma: no cover - the staged counts are the layout's sizes
                raise RuntimeError(f"{path}: {feat.key}: wrote rows [{a}, {row}) of [{a}, {b})")
    finally:
        os.close(fd)
    return sum(b - a for _, a, b in piece)


def finish_features(
    plan: PartitionPlan, kind: str, part: int, stamp: str, skeleton: FeatureSkeleton, *rows: int
) -> None:
    """Rename the partial file to ``<kind>.dgl`` once every range is written, and record it."""
    path, _, _ = skeleton
    key = f"write/{part}/{kind}"
    if plan.staging.done_value(key, stamp) is not MISSING:
        return
    os.replace(path, os.path.join(os.path.dirname(path), f"{kind}.dgl"))
    plan.staging.mark_done(key, {}, stamp)  # as the one-task writer records a feature file
