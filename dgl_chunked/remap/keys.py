"""The original keys of a node type (``node_keys/`` of a chunked graph), read by ID range or joined by key.

``dgl-chunked chunk`` gives a node type with a ``key`` dense IDs in the order of its
key source and keeps the keys in ``node_keys/<ntype>/orig_key-<j>.parquet``
(row ``i`` of the concatenation is the node with ID ``i``), listed in
``node_keys.json``. :class:`KeySource` reads the keys of an ID range (the key
column of remap's Parquet output); :func:`bucket_keys` and :func:`join_keys` are
the two halves of the out-of-core key -> ID join of the inverse lookup (keys and
queries hash-partitioned into the same buckets, one bucket joined per task).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.chunk import NODE_KEYS_FILE
from dgl_chunked.chunk.kernels import bucket_order, first_duplicate_key, key_buckets, keys_to_numpy, lookup_keys
from dgl_chunked.io.formats import Piece, inspect_file
from dgl_chunked.io.formats.parquet import read_parquet_piece
from dgl_chunked.remap.model import RemapError
from dgl_chunked.storage import fs

__all__ = ["KeySource", "bucket_keys", "check_unique_keys", "join_keys", "key_source"]


@dataclass(frozen=True)
class KeySource:
    """The key files of one node type: ``paths[j]`` holds the keys of IDs ``[starts[j], starts[j + 1])``."""

    ntype: str
    paths: tuple[str, ...]
    starts: tuple[int, ...]
    column: str
    is_string: bool
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def total(self) -> int:
        return self.starts[-1]

    @property
    def num_pieces(self) -> int:
        return len(self.paths)

    @property
    def label(self) -> str:
        return "the chunked graph's node_keys"

    def where(self, piece: int, row: int) -> str:
        """File and row of row ``row`` of piece (file) ``piece`` (for messages)."""
        return f"{self.paths[piece]} row {row}"

    def pairs(self, piece: int) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
        """``(keys, IDs)`` of file ``piece``: its keys and the IDs they name."""
        lo, hi = self.starts[piece], self.starts[piece + 1]
        return keys_to_numpy(self.read(lo, hi)), np.arange(lo, hi, dtype=np.int64)

    def read(self, lo: int, hi: int) -> pa.Array:
        """Keys of IDs ``[lo, hi)`` as an Arrow array (int64 or string)."""
        parts = []
        for j, path in enumerate(self.paths):
            a, b = max(lo, self.starts[j]), min(hi, self.starts[j + 1])
            if a < b:
                info = inspect_file(
                    path, "parquet", f"node_keys of {self.ntype!r}", storage_options=self.storage_options
                )
                piece = Piece(path=path, start=a - self.starts[j], stop=b - self.starts[j])
                parts.append(read_parquet_piece(piece, info, [self.column], self.storage_options).column(0))
        kind = pa.string() if self.is_string else pa.int64()
        if not parts:
            return pa.array([], kind)
        return pa.chunked_array(parts).combine_chunks().cast(kind)


def key_source(graph_dir: PathLike, ntype: str, *, storage_options: StorageOptions = None) -> KeySource | None:
    """The keys of ``ntype`` in the chunked graph at ``graph_dir``; None when it has none.

    Raises
    ------
    RemapError
        ``node_keys.json`` is unreadable or its row counts do not add up.
    """
    base = os.fspath(graph_dir)
    path = fs.join(base, NODE_KEYS_FILE)
    try:
        with fs.open_file(path, "rb", storage_options) as f:
            listing = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RemapError(f"{path}: cannot read the key listing ({err})") from None
    entry = listing.get(ntype)
    if entry is None:
        return None
    rows = [int(n) for n in entry.get("num_rows_per_chunk", [])]
    paths = tuple(fs.join(base, rel) for rel in entry.get("data", []))
    if len(rows) != len(paths):
        raise RemapError(f"{path}: {ntype!r} lists {len(paths)} files but {len(rows)} row counts")
    starts = tuple(int(s) for s in np.concatenate([[0], np.cumsum(rows, dtype=np.int64)]))
    return KeySource(
        ntype, paths, starts, entry.get("column", "orig_key"), entry.get("dtype") != "int64", storage_options
    )


def bucket_keys(keys: npt.NDArray[Any], num_buckets: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(order, offsets)``: positions of ``keys`` grouped by hash bucket, and the bucket bounds."""
    return bucket_order(key_buckets(keys_to_numpy(keys), num_buckets), num_buckets)


def join_keys(keys: npt.NDArray[Any], ids: npt.NDArray[np.int64], query: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """ID of every ``query`` key among the unique ``keys`` (``ids`` aligned); -1 where absent.

    Integer queries against string keys are matched as text, as ``chunk`` matches edge ends.
    """
    keys, query = keys_to_numpy(keys), keys_to_numpy(query)
    if keys.dtype == object and query.dtype != object:
        query = query.astype(str).astype(object)
    elif keys.dtype != object and query.dtype == object:
        raise RemapError("the node type has integer keys, but the queries hold text; give integer keys")
    return lookup_keys(keys, ids, query)


def check_unique_keys(source: Any, group: dict[str, npt.NDArray[Any]], label: str) -> None:
    """Raise :class:`RemapError` naming the key and both its places when a key of ``group`` repeats.

    ``group`` holds the staged ``key``, ``type_nid``, ``piece`` and ``row`` columns of
    one hash bucket; ``source`` (a key source) turns a piece and row into a file and row.
    """
    dup = first_duplicate_key(group["key"], group["type_nid"])
    if dup is None:
        return
    key, first, second = dup
    pos = np.flatnonzero(group["key"] == key)
    at = pos[np.argsort(group["type_nid"][pos], kind="stable")][:2].tolist()
    places = [source.where(int(group["piece"][i]), int(group["row"][i])) for i in at]
    raise RemapError(
        f"{places[1]}: user ID {key!r} of {label} is given again (first at {places[0]}, for ID {first}; here for "
        f"ID {second}); {source.label} must name every node once"
    )
