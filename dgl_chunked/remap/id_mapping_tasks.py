"""remap's user-ID column from GSProcessing's ``raw_id_mappings``, grouped by block of original IDs.

``raw_id_mappings`` rows come in no promised order (:mod:`~dgl_chunked.remap.id_mappings`),
while remap writes one block of original IDs per task. So, before the block tasks, a
sort-based shuffle through Arrow IPC files under ``OUT/_tmp/keys/``:

1. :func:`stage_mapping`, one task per piece of the mapping: ``(orig, new)`` grouped by
   block of ``new`` and, in a second file, by hash bucket of ``orig``;
2. :func:`check_bucket`, one task per bucket: no user ID names two nodes (the message
   names the ID and both files and rows);
3. :meth:`StagedKeys.read`, inside each block task: the block's group, ordered by
   ``new``, checked to name every ID of the block exactly once.

Memory per task: one piece, one bucket or one block of the mapping.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from dask.delayed import Delayed, delayed

from dgl_chunked.chunk.kernels import key_buckets
from dgl_chunked.remap.id_mappings import IdMappingSource
from dgl_chunked.remap.keys import check_unique_keys
from dgl_chunked.remap.model import RemapError
from dgl_chunked.storage import fs
from dgl_chunked.storage.buckets import read_bucket, write_buckets

__all__ = ["StagedKeys", "check_bucket", "mapping_tasks", "stage_mapping"]

KEYS_PER_BUCKET = 1 << 20


@dataclass(frozen=True)
class StagedKeys:
    """A node type's ``raw_id_mappings`` staged under ``scratch``, read back one block of original IDs at a time."""

    source: IdMappingSource
    bounds: tuple[int, ...]
    scratch: str
    type_label: str

    @property
    def total(self) -> int:
        return self.source.total

    @property
    def is_string(self) -> bool:
        return self.source.is_string

    @property
    def num_buckets(self) -> int:
        return max(1, math.ceil(self.total / KEYS_PER_BUCKET))

    def block_paths(self) -> list[str]:
        return [fs.join(self.scratch, f"b/{i:06d}.arrow") for i in range(self.source.num_pieces)]

    def bucket_paths(self) -> list[str]:
        return [fs.join(self.scratch, f"h/{i:06d}.arrow") for i in range(self.source.num_pieces)]

    def read(self, lo: int, hi: int) -> pa.Array:
        """User IDs of original IDs ``[lo, hi)`` (one block), in ID order.

        Raises
        ------
        RemapError
            An ID of the block given twice, or one with no row (the message names it).
        """
        if not self.source.num_pieces:
            return pa.array([], pa.string() if self.is_string else pa.int64())
        k = bisect.bisect_left(self.bounds, lo)
        assert self.bounds[k] == lo and self.bounds[k + 1] == hi, (lo, hi)
        group = read_bucket(self.block_paths(), k, self.source.storage_options)
        ids = group["type_nid"]
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        again = np.flatnonzero(ids[1:] == ids[:-1])
        if again.size:
            i = int(again[0])
            first, second = (
                self.source.where(int(group["piece"][order[j]]), int(group["row"][order[j]])) for j in (i, i + 1)
            )
            raise RemapError(
                f"{second}: {self.source.id_column} {int(ids[i])} of {self.type_label} is given again (first at "
                f"{first}); {self.source.label} must give every node one user ID"
            )
        if ids.shape[0] != hi - lo:
            missing = lo + int(np.argmax(np.append(ids != np.arange(lo, lo + ids.shape[0]), True)))
            raise RemapError(
                f"{self.source.label}: no row has {self.source.id_column} {missing}, so node {missing} of "
                f"{self.type_label} has no user ID; the mapping must give every node one"
            )
        keys = group["key"][order]
        return pa.array(keys, pa.string() if self.is_string else pa.int64())


def stage_mapping(staged: StagedKeys, piece: int) -> None:
    """Stage one piece of the mapping twice: by block of original IDs and by hash bucket of user IDs."""
    keys, ids = staged.source.pairs(piece)
    so = staged.source.storage_options
    columns = {
        "key": keys,
        "type_nid": ids,
        "piece": np.full(keys.shape[0], piece, np.int64),
        "row": np.arange(keys.shape[0], dtype=np.int64),
    }
    edges = np.asarray(staged.bounds, dtype=np.int64)
    block = (np.searchsorted(edges, ids, side="right") - 1).astype(np.int64)
    write_buckets(staged.block_paths()[piece], columns, block, len(staged.bounds) - 1, so)
    buckets = staged.num_buckets
    write_buckets(staged.bucket_paths()[piece], columns, key_buckets(keys, buckets), buckets, so)


def check_bucket(staged: StagedKeys, bucket: int) -> None:
    """No user ID of bucket ``bucket`` names two nodes."""
    if not staged.source.num_pieces:
        return
    group = read_bucket(staged.bucket_paths(), bucket, staged.source.storage_options)
    check_unique_keys(staged.source, group, staged.type_label)


def user_ids_label(keys: Any) -> str | None:
    """What a table's user IDs come from (its summary's ``user_ids``); None without user IDs."""
    if isinstance(keys, StagedKeys):
        return keys.source.label
    return None if keys is None else str(keys.label)


def mapping_tasks(staged: StagedKeys, token: str, tag: str) -> tuple[list[Delayed], list[Delayed]]:
    """``(staging tasks, check tasks)``: compute the first, then the second, before the block tasks."""
    stage_tasks: list[Any] = [
        delayed(stage_mapping, pure=False)(staged, i, dask_key_name=f"dglc-remap-keys-{tag}-{token}-{i}")
        for i in range(staged.source.num_pieces)
    ]
    check: list[Any] = [
        delayed(check_bucket, pure=False)(staged, h, dask_key_name=f"dglc-remap-keycheck-{tag}-{token}-{h}")
        for h in range(staged.num_buckets)
    ]
    return stage_tasks, check
