"""Features whose values are node IDs (GraphStorm's hard negatives), translated at dispatch.

GraphStorm stores a link-prediction edge type's hard negatives as an integer edge
feature: per edge, the per-type IDs of destination nodes, padded with ``-1``
(GSProcessing's ``edge_dst_hard_negative`` transformation). Its sampler reads them
as per-type node IDs of the partitioned graph (``GSHardEdgeDstNegativeSampler``,
graphstorm ``python/graphstorm/dataloading/sampler.py``), so after DGL's dispatch
GraphStorm rewrites every ``part<i>/edge_feat.dgl`` (``shuffle_hard_negative_nids``,
graphstorm ``python/graphstorm/gpartition/post_hard_negative.py``, and
``shuffle_hard_nids`` in ``gconstruct/utils.py``): every value ``> -1`` becomes its
node's index in the concatenation of every partition's ``orig_nids[ntype]``, the
node's *per-type new ID* (DGL's ``map_to_per_ntype`` of its ``new_nid``); values
``<= -1`` stay as they are.

Named with ``node_id_features`` (``--node-id-features``), dispatch does that rewrite
while it stages the feature's rows: the new IDs come from the staged owners (the
same per-worker :class:`~dgl_chunked.dispatch.new_id_map.NewIdMap` or ``new_nid``
ranges the edge staging uses, within ``lookup_cache_bytes``), so memory stays bounded
by the read task, and no second pass over the partitions is needed. Do not also run
GraphStorm's rewrite on the output: it would translate the IDs twice.

Which features, and the node type their values name, are parsed by
:func:`dgl_chunked.io.chunked.node_id_features.parse_node_id_features`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.dispatch.ids import IdLayout, owner_of
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.graph import ChunkGroup

__all__ = ["NodeIdValues", "TRANSLATE_SLICE", "translate_rows", "per_type_new_ids"]

TRANSLATE_SLICE = 1 << 16
"""Values translated at a time: the lookup's temporaries stay a few hundred KiB whatever
the read task's size (the values' copy is the only read-task-sized array)."""


@dataclass(frozen=True)
class NodeIdValues:
    """What a feature task needs to translate values naming nodes of one type.

    Attributes
    ----------
    ntype, type_index
        The node type the values name, and its type ID.
    ranges
        int64 ``(P, 2)``: the type's ``[start, end)`` of ``new_nid`` per partition.
    """

    ntype: str
    type_index: int
    ranges: npt.NDArray[np.int64]

    @classmethod
    def of(cls, layout: IdLayout, ntype: str, type_index: int) -> NodeIdValues:
        return cls(ntype, type_index, np.ascontiguousarray(layout.ranges[:, type_index, :], dtype=np.int64))


def per_type_new_ids(new_nids: npt.NDArray[np.int64], ranges: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per-type new IDs of ``new_nid`` s of one type (DGL's ``map_to_per_ntype``): the
    sizes of the type's blocks in earlier partitions plus the offset in its own."""
    sizes = ranges[:, 1] - ranges[:, 0]
    before = np.cumsum(sizes) - sizes
    starts = np.append(ranges[:, 0], ranges[-1, 1]).astype(np.int64)
    part = owner_of(new_nids, starts)
    out: npt.NDArray[np.int64] = new_nids - ranges[part, 0] + before[part]
    return out


def translate_rows(
    rows: npt.NDArray[Any],
    values: NodeIdValues,
    num_nodes: int,
    lookup: Any,
    group: ChunkGroup,
    key: str,
) -> npt.NDArray[Any]:
    """``rows`` with every value ``>= 0`` replaced by its node's per-type new ID.

    ``lookup(ids)`` gives the int64 ``new_nid`` of per-type input IDs of ``values.ntype``.
    Negative values (``-1`` padding) are kept. The result has the dtype and shape of ``rows``.

    Raises
    ------
    ChunkMismatchError
        A value is ``>= num_nodes``: the file and row are named.
    """
    flat = np.asarray(rows).reshape(-1)
    if flat.size and flat.max() >= num_nodes:
        high = np.flatnonzero(flat >= num_nodes)
        width = max(1, flat.shape[0] // max(1, rows.shape[0]))
        ref, row = group.locate(int(high[0]) // width)
        raise ChunkMismatchError(
            f"{ref.path}: row {row + 1} of feature {key!r} holds node ID {int(flat[high[0]])}, outside "
            f"[0, {num_nodes}) of node type {values.ntype!r} (node-ID features keep -1 as padding; "
            "other values must be IDs of that type)"
        )
    out = flat.copy()
    for lo in range(0, flat.shape[0], TRANSLATE_SLICE):  # temporaries of one slice, not of the read task
        seg = out[lo : lo + TRANSLATE_SLICE]
        keep = seg >= 0
        seg[keep] = per_type_new_ids(lookup(seg[keep].astype(np.int64)), values.ranges)
    return out.reshape(rows.shape)
