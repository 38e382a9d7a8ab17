"""An output feature file (``node_feat.dgl`` / ``edge_feat.dgl``) read by its headers and byte ranges.

A partition task indexes the file (:func:`index_feature_file`: keys, row counts,
dtypes and row shapes from the headers, and where each payload starts) without
reading a payload; feature-check tasks then read only the rows they compare
(:func:`read_rows`), in coalesced byte ranges of at most 64 MiB.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.storage import fs
from dgl_chunked.verify.plan import Feature, Plan

__all__ = ["FeatureIndex", "Payload", "index_feature_file", "read_rows"]

_RUN_BYTES = 64 << 20  # longest byte range read at once from an output feature file
_GAP_BYTES = 1 << 20  # rows closer than this are read in one range


@dataclass(frozen=True)
class Payload:
    """Where one stored tensor's bytes start, its dtype (numpy ``str``) and shape."""

    offset: int
    dtype: str
    shape: tuple[int, ...]


@dataclass
class FeatureIndex:
    """One partition's feature file: problems, the input features' payloads, the trainer IDs'."""

    problems: list[str] = field(default_factory=list)
    features: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (file, payload offset)
    trainers: dict[str, Payload] = field(default_factory=dict)  # "<type>/trainer_id" -> payload


def index_feature_file(plan: Plan, p: int, kind: str, path: str) -> FeatureIndex:
    """Check a feature file's keys, row counts, dtypes and row shapes from its headers.

    Beyond the input's features the file may hold ``<type>/trainer_id`` (one integer
    per row), as DGL writes with ``num_trainers_per_machine > 1``.
    """
    out = FeatureIndex()
    name = path.rstrip("/").rsplit("/", 1)[-1]
    try:
        stored = index_tensor_dict(path, storage_options=plan.storage_options)  # the headers only
        index = {key: Payload(t.offset, t.dtype.str, t.shape) for key, t in stored.items()}
    except (FileNotFoundError, DglChunkedError) as err:
        out.problems.append(f"part{p}: cannot read {name}: {err}")
        return out
    wanted = [f for f in plan.features if f.kind == kind]
    keys = {f.key for f in wanted}
    trainer_keys = plan.trainer_keys(kind)
    if not keys <= set(index) or set(index) - keys - set(trainer_keys):
        out.problems.append(f"part{p}: {name} keys {sorted(index)} != expected {sorted(keys)}")
    ranges = plan.ranges(kind)
    for feat in wanted:
        got: Payload | None = index.get(feat.key)
        if got is None:
            continue
        rows = int(ranges[p, feat.type_index, 1] - ranges[p, feat.type_index, 0])
        want = ((rows, *feat.row_shape), np.dtype(feat.dtype).str)
        if (tuple(got.shape), got.dtype) != want:
            out.problems.append(
                f"part{p}: {kind} feature {feat.key}: expected shape {want[0]} {want[1]}, "
                f"found {tuple(got.shape)} {got.dtype}"
            )
            continue
        out.features[feat.key] = (path, got.offset)
    for key, t in trainer_keys.items():
        got = index.get(key)
        if got is None:
            continue
        rows = int(ranges[p, t, 1] - ranges[p, t, 0])
        if tuple(got.shape) != (rows,) or np.dtype(got.dtype).kind not in "iu":
            out.problems.append(
                f"part{p}: {kind} data {key}: expected shape ({rows},) of integers, "
                f"found {tuple(got.shape)} {got.dtype}"
            )
            continue
        out.trainers[key] = got
    return out


def _runs(rows: IdArray, row_bytes: int) -> Iterator[tuple[int, int]]:
    """Split sorted distinct ``rows`` into index ranges read as one byte range each."""
    if rows.size == 0:
        return
    gap = max(1, _GAP_BYTES // max(row_bytes, 1))
    longest = max(1, _RUN_BYTES // max(row_bytes, 1))
    first = 0
    for i in range(1, rows.shape[0] + 1):
        if i == rows.shape[0] or rows[i] - rows[i - 1] > gap or rows[i] - rows[first] >= longest:
            yield first, i
            first = i


def read_rows(plan: Plan, path: str, offset: int, feat: Feature, rows: IdArray) -> npt.NDArray[Any]:
    """Rows ``rows`` (sorted, distinct) of one stored feature tensor, by byte ranges."""
    dtype = np.dtype(feat.dtype)
    row_bytes = int(np.prod(feat.row_shape, dtype=np.int64)) * dtype.itemsize
    out = np.empty((rows.shape[0], *feat.row_shape), dtype)
    filesystem, inner = fs.filesystem(path, plan.storage_options)
    for a, b in _runs(rows, row_bytes):
        lo, hi = int(rows[a]), int(rows[b - 1]) + 1
        raw = filesystem.cat_file(inner, start=offset + lo * row_bytes, end=offset + hi * row_bytes)
        span = np.frombuffer(raw, dtype).reshape((hi - lo, *feat.row_shape))
        out[a:b] = span[rows[a:b] - lo]
    return out
