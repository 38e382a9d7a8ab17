"""Layer 3: every output feature row equals the input row of its original ID, byte for byte.

One task per read task of input feature files (consecutive files of about the task
size): it maps the rows' type IDs to new IDs through the node or edge map staged by
layer 2, and compares its rows with the output rows of the same IDs, read from each
partition's feature file by byte ranges. It holds one read task's rows plus one read
run (at most 64 MiB).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.io.chunked.chunks import read_feature_group
from dgl_chunked.io.chunked.graph import ChunkGroup
from dgl_chunked.verify.feature_files import read_rows
from dgl_chunked.verify.id_checks import TaskResult
from dgl_chunked.verify.plan import Feature, Plan, orig2new, staged_rows

__all__ = ["feature_chunk_task"]


def _new_ids(plan: Plan, feat: Feature, start: int, stop: int) -> IdArray:
    """New IDs of type IDs ``[start, stop)`` from the staged maps (-1 where missing)."""
    if feat.kind == "node":
        return orig2new(plan, feat.type_index, np.arange(start, stop, dtype=np.int64))
    bounds = plan.edge_bounds[feat.type_index]
    pieces = []
    for c in range(len(bounds) - 1):
        lo, hi = max(start, bounds[c]), min(stop, bounds[c + 1])
        if lo < hi:
            pieces.append(staged_rows(plan, f"eorig2new-{feat.type_index}-{c}", 0, lo - bounds[c], hi - bounds[c]))
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)


def feature_chunk_task(
    plan: Plan, feat: Feature, ref: ChunkGroup, files: Mapping[int, tuple[str, int]], *deps: Any
) -> TaskResult:
    """One input feature file against the output rows of the same original IDs.

    ``files`` maps each partition to its feature file and the payload offset of
    ``feat``; ``deps`` are the layer-2 tasks that staged the map (only waited on).
    """
    want = read_feature_group(ref, feat.row_shape, np.dtype(feat.dtype))
    want = np.ascontiguousarray(want)
    if feat.id_ntype >= 0:
        want = _as_per_type_new_ids(plan, feat.id_ntype, want)
    new = _new_ids(plan, feat, ref.start, ref.stop)
    ranges = plan.ranges(feat.kind)[:, feat.type_index, :]
    part = np.searchsorted(ranges[:, 0], new, side="right") - 1
    problems = []
    label = "type_nid" if feat.kind == "node" else "type_eid"
    for p in np.unique(part[new >= 0]).tolist():
        if p not in files:
            continue  # its feature file was already reported
        sel = np.flatnonzero((part == p) & (new >= 0))
        local = new[sel] - ranges[p, 0]
        order = np.argsort(local)
        got = read_rows(plan, *files[p], feat, local[order])
        bad = _differing_rows(got, want[sel[order]])
        if bad.size:
            i = int(bad[0])
            problems.append(
                f"part{p}: {bad.size} row(s) of {feat.kind} feature {feat.key} differ from the input "
                f"(e.g. {label} {ref.start + sel[order][i]} at local row {local[order][i]})"
            )
    return TaskResult(problems, ref.rows)


def _as_per_type_new_ids(plan: Plan, t: int, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A node-ID feature's input values as dispatch writes them: each value in
    ``[0, num_nodes)`` of type ``t`` becomes its per-type new ID (the sizes of the type's
    blocks in earlier partitions plus its offset in its own); others are kept."""
    flat = values.reshape(-1).copy()
    keep = np.flatnonzero((flat >= 0) & (flat < plan.num_nodes[t]))
    new = orig2new(plan, t, flat[keep].astype(np.int64))
    ranges = plan.node_ranges[:, t, :]
    sizes = ranges[:, 1] - ranges[:, 0]
    part = np.searchsorted(ranges[:, 0], new, side="right") - 1
    flat[keep] = new - ranges[part, 0] + (np.cumsum(sizes) - sizes)[part]
    return flat.reshape(values.shape)


def _differing_rows(got: npt.NDArray[Any], want: npt.NDArray[Any]) -> IdArray:
    """Indices of rows whose bytes differ (NaN equals NaN, as a copy should)."""
    n = got.shape[0]
    width = got.nbytes // n if n else 0
    if width == 0:
        return np.zeros(0, np.int64)
    a = np.ascontiguousarray(got).view(np.uint8).reshape(n, width)
    b = np.ascontiguousarray(want).view(np.uint8).reshape(n, width)
    return np.flatnonzero((a != b).any(axis=1))
