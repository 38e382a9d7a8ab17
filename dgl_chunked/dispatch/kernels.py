"""The map side of dispatch: per-block kernels that fill the Zarr staging.

Every kernel is a module-level function of plain arguments (paths, numbers,
small arrays) so it pickles onto any worker, writes only its own Zarr arrays or
its own aligned region, and returns at most a small counts vector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from dgl_chunked.dispatch.ids import (
    compact_owner_dtype,
    new_ids_block,
    owner_of,
    sort_by_owner,
    staged_id_dtype,
)
from dgl_chunked.dispatch.new_id_map import NewIdMap, NodeNumbering, build_map, map_bytes
from dgl_chunked.dispatch.node_id_features import NodeIdValues, translate_rows
from dgl_chunked.dispatch.staging import Staging
from dgl_chunked.errors import AssignmentError, ChunkMismatchError
from dgl_chunked.io.chunked.chunks import read_edge_group, read_feature_group
from dgl_chunked.io.chunked.graph import ChunkGroup
from dgl_chunked.io.chunked.model import ChunkedGraphMetadata
from dgl_chunked.storage.zarr_lookup import cached_object
from dgl_chunked.storage.zarr_rows import read_rows

__all__ = [
    "node_array",
    "edge_array",
    "feature_array",
    "stage_part_block",
    "read_part_block",
    "stage_new_nid_block",
    "stage_edge_task",
    "keeps_edge_owners",
    "stage_node_feature_task",
    "stage_node_data_block",
    "stage_edge_feature_task",
    "NodeIds",
]


def node_array(ntype: str, what: str) -> str:
    return f"nodes/{ntype}/{what}"


def edge_array(etype: str, task: int, what: str) -> str:
    return f"edges/{etype}/{task}/{what}"


def feature_array(kind: str, type_name: str, feat: str, task: int) -> str:
    return f"{kind}_feat/{type_name}/{feat}/{task}"


def stage_part_block(
    staging: Staging,
    ntype: str,
    start: int,
    parts: npt.NDArray[Any],
    num_parts: int,
    source: str,
) -> npt.NDArray[np.int64]:
    """Check and store one block of a node type's assignment; return its owner counts."""
    parts = np.asarray(parts)
    bad = np.flatnonzero((parts < 0) | (parts >= num_parts))
    if bad.size:
        row = int(bad[0])
        raise AssignmentError(
            f"{source}: node {start + row} of type {ntype!r} is assigned to partition "
            f"{int(parts[row])}, expected an ID in [0, {num_parts}) (line {start + row + 1})"
        )
    arr = zarr.open_array(store=staging.store(), path=node_array(ntype, "part"), mode="r+", zarr_format=3)
    arr[start : start + parts.shape[0]] = parts.astype(np.int32, copy=False)
    return np.bincount(parts, minlength=num_parts).astype(np.int64)


def read_part_block(staging: Staging, ntype: str, block_info: Any = None) -> npt.NDArray[np.int32]:
    """Dask kernel: one block of a node type's staged assignment (what :func:`stage_part_block` stored)."""
    lo, hi = block_info[None]["array-location"][0]
    arr = zarr.open_array(store=staging.store(), path=node_array(ntype, "part"), mode="r", zarr_format=3)
    return np.asarray(arr[lo:hi], dtype=np.int32)


def stage_new_nid_block(
    staging: Staging, ntype: str, start: int, stop: int, bases: npt.NDArray[np.int64], keep_sorted_ids: bool
) -> None:
    """Number one block's nodes (ascending type_nid inside each partition); with
    ``keep_sorted_ids``, also store their type_nids grouped by owner (only ``orig_nids.dgl``
    reads them)."""
    store = staging.store()
    owner = np.asarray(
        zarr.open_array(store=store, path=node_array(ntype, "part"), mode="r", zarr_format=3)[start:stop]
    )
    new_nid = zarr.open_array(store=store, path=node_array(ntype, "new_nid"), mode="r+", zarr_format=3)
    new_nid[start:stop] = new_ids_block(owner, bases)
    if not keep_sorted_ids:
        return
    order, _ = sort_by_owner(owner, bases.shape[0])
    sorted_ids = zarr.open_array(store=store, path=node_array(ntype, "sorted_type_nid"), mode="r+", zarr_format=3)
    sorted_ids[start:stop] = order.astype(np.int64) + start


def new_ids(
    staging: Staging, numbering: NodeNumbering, ids: npt.NDArray[np.integer[Any]], dtype: np.dtype[Any]
) -> npt.NDArray[Any]:
    """New IDs of nodes of one type: from a :class:`NewIdMap` of their owners kept in this
    process when it fits the lookup budget and is smaller than the ``new_nid`` array,
    else from the staged ``new_nid`` array (cached whole or by ranges)."""
    size = map_bytes(numbering.num_nodes, numbering.block_rows, numbering.bases.shape[1])
    if size < 4 * numbering.num_nodes:
        new_map = cached_object(
            (staging.root, staging.token, "new-id-map", numbering.ntype),
            size + numbering.bases.nbytes,
            staging.lookup_cache_bytes,
            lambda: _build_map(staging, numbering),
        )
        if new_map is not None:
            return new_map.lookup(ids, dtype)
    return staging.lookup(node_array(numbering.ntype, "new_nid"), ids, dtype=dtype)


def _build_map(staging: Staging, numbering: NodeNumbering) -> NewIdMap:
    owner = staging.open(node_array(numbering.ntype, "part"))
    step, n = numbering.block_rows, numbering.num_nodes
    blocks = (np.asarray(owner[lo : min(lo + step, n)]) for lo in range(0, n, step))
    return build_map(n, step, numbering.bases, blocks)


def _check_ids(ids: npt.NDArray[np.int64], limit: int, group: ChunkGroup, column: str, ntype: str) -> None:
    if ids.size == 0 or (ids.min() >= 0 and ids.max() < limit):  # no temporaries when all is well
        return
    bad = np.flatnonzero((ids < 0) | (ids >= limit))
    if bad.size:
        ref, row = group.locate(int(bad[0]))
        raise ChunkMismatchError(
            f"{ref.path}: row {row + 1} has {column} node ID {int(ids[bad[0]])}, outside "
            f"[0, {limit}) of node type {ntype!r}"
        )


def stage_edge_task(
    staging: Staging,
    etype: str,
    task: int,
    group: ChunkGroup,
    src_type: str,
    dst_type: str,
    numbering: Mapping[str, NodeNumbering],
    part_starts: npt.NDArray[np.int64],
    keep_owner: bool,
    *deps: object,
) -> npt.NDArray[np.int64]:
    """Relabel one read task's edges, group them by owner (the destination's partition), store them.

    With ``keep_owner`` the owner of every edge is stored too, in input order: edge
    features and ``orig_eids.dgl`` read it; without them it would be 1 byte per edge of
    staging that nothing reads."""
    src_numbering, dst_numbering = numbering[src_type], numbering[dst_type]
    num_src, num_dst = src_numbering.num_nodes, dst_numbering.num_nodes
    src, dst = read_edge_group(group)
    _check_ids(src, num_src, group, "source", src_type)
    _check_ids(dst, num_dst, group, "destination", dst_type)
    id_dtype = staged_id_dtype(int(part_starts[-1]), wide=staging.wide_ids)
    if src_type == dst_type:  # one pass over the node-ID ranges the cache does not hold, not two
        num_edges, ends = src.shape[0], np.concatenate([src, dst])
        del src, dst
        both = new_ids(staging, src_numbering, ends, id_dtype)
        del ends
        new_src, new_dst = both[:num_edges], both[num_edges:]
    else:
        new_src = new_ids(staging, src_numbering, src, id_dtype)
        new_dst = new_ids(staging, dst_numbering, dst, id_dtype)
        del src, dst
    owner = owner_of(new_dst, part_starts)
    num_parts = part_starts.shape[0] - 1
    order, counts = sort_by_owner(owner, num_parts)
    staging.write_sorted(edge_array(etype, task, "new_src"), new_src[order], counts)
    staging.write_sorted(edge_array(etype, task, "new_dst"), new_dst[order], counts)
    if keep_owner:
        staging.write_sorted(edge_array(etype, task, "owner"), owner.astype(compact_owner_dtype(num_parts)), counts)
    return counts


def keeps_edge_owners(metadata: ChunkedGraphMetadata, etype: str, save_orig_eids: bool) -> bool:
    """Whether dispatch stages the owner of every edge of ``etype`` (``keep_owner`` of
    :func:`stage_edge_task`): edge features and ``orig_eids.dgl`` find their rows'
    partitions there."""
    return save_orig_eids or bool(metadata.edge_data.get(etype))


def _stage_feature_rows(
    staging: Staging,
    name: str,
    rows: npt.NDArray[Any],
    owner: npt.NDArray[np.integer[Any]],
    num_parts: int,
) -> npt.NDArray[np.int64]:
    order, counts = sort_by_owner(owner, num_parts)
    staging.write_sorted(name, np.ascontiguousarray(rows[order]), counts)
    return counts


NodeIds = tuple[NodeIdValues, NodeNumbering] | None
"""How to translate a node-ID feature's values (see :mod:`.node_id_features`), or None."""


def _read_feature_rows(staging: Staging, group: ChunkGroup, key: str, node_ids: NodeIds) -> npt.NDArray[Any]:
    """A read task's feature rows; a node-ID feature's values translated to per-type new IDs."""
    rows = read_feature_group(group)
    if node_ids is None:
        return rows
    values, numbering = node_ids
    return translate_rows(
        rows,
        values,
        numbering.num_nodes,
        lambda ids: new_ids(staging, numbering, ids, np.dtype(np.int64)),
        group,
        key,
    )


def stage_node_feature_task(
    staging: Staging,
    ntype: str,
    feat: str,
    task: int,
    group: ChunkGroup,
    num_parts: int,
    node_ids: NodeIds,
    *deps: object,
) -> npt.NDArray[np.int64]:
    """Group one read task's node-feature rows by owner and store them (``node_ids``:
    translate the values of a node-ID feature first)."""
    rows = _read_feature_rows(staging, group, f"{ntype}/{feat}", node_ids)
    owner = zarr.open_array(store=staging.store(), path=node_array(ntype, "part"), mode="r", zarr_format=3)
    return _stage_feature_rows(
        staging, feature_array("node", ntype, feat, task), rows, read_rows(owner, group.start, group.stop), num_parts
    )


def stage_node_data_block(
    staging: Staging,
    ntype: str,
    name: str,
    block: int,
    start: int,
    rows: npt.NDArray[Any],
    num_parts: int,
) -> npt.NDArray[np.int64]:
    """Group one block of computed node data (rows ``start...``) by owner and store it."""
    rows = np.asarray(rows)
    owner = zarr.open_array(store=staging.store(), path=node_array(ntype, "part"), mode="r", zarr_format=3)
    return _stage_feature_rows(
        staging,
        feature_array("node", ntype, name, block),
        rows,
        read_rows(owner, start, start + rows.shape[0]),
        num_parts,
    )


def edge_owner_range(
    staging: Staging, etype: str, edge_task_starts: Sequence[int], start: int, stop: int
) -> npt.NDArray[np.integer[Any]]:
    """Owners of edges ``[start, stop)`` of one etype, from the staged owners of the read tasks covering them."""
    bounds = np.asarray(edge_task_starts, dtype=np.int64)
    pieces = []
    first = int(np.searchsorted(bounds, start, side="right")) - 1
    for c in range(max(first, 0), bounds.shape[0] - 1):
        lo, hi = int(bounds[c]), int(bounds[c + 1])
        if lo >= stop:
            break
        if hi <= start or hi == lo:
            continue
        arr = staging.open(edge_array(etype, c, "owner"))
        pieces.append(read_rows(arr, max(start, lo) - lo, min(stop, hi) - lo))
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int32)


def stage_edge_feature_task(
    staging: Staging,
    etype: str,
    feat: str,
    task: int,
    group: ChunkGroup,
    num_parts: int,
    edge_task_starts: Sequence[int],
    node_ids: NodeIds,
    *deps: object,
) -> npt.NDArray[np.int64]:
    """Group one read task's edge-feature rows by owner (the edge tasks' bounds may
    differ: ``edge_task_starts``) and store them (``node_ids``: translate the values
    of a node-ID feature first)."""
    rows = _read_feature_rows(staging, group, f"{etype}/{feat}", node_ids)
    owner = edge_owner_range(staging, etype, edge_task_starts, group.start, group.stop)
    return _stage_feature_rows(staging, feature_array("edge", etype, feat, task), rows, owner, num_parts)
