"""Task kernels of ``lookup``: queries -> (partition, new ID), as a chain of sort-based shuffles.

Every step writes bucket files (:mod:`~dgl_chunked.storage.buckets`; a bucket is a
hash bucket of keys, or a block of original IDs) and the next step reads one bucket
from all of them, so no task holds more than one piece, bucket or block:

1. :func:`stage_queries`: a piece of the queries -> bucketed by key (keys) or
   by block of original IDs (IDs, range-checked);
2. :func:`stage_keys`: a ``node_keys`` file -> ``(key, ID)`` bucketed by key;
3. :func:`join_bucket`: one bucket's queries joined with its keys (a key that is
   not a node of the type is an error naming the query's file and row), regrouped
   by block;
4. :func:`place_block`: one block's queries -> new IDs, checked for repeats, split by
   partition in ascending new-ID order and written as raw pieces (the shuffle route of
   :mod:`~dgl_chunked.remap.shuffled`: regrouped by slab of new IDs, and
   :func:`sort_slab` writes each slab's pieces in ascending new-ID order);
5. :func:`write_partition`: the pieces of one partition concatenated into ``.npy``
   files and a ``.pt`` dict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.chunk.kernels import key_buckets
from dgl_chunked.io.dgl.spans import ArraySpans
from dgl_chunked.io.formats.files import makedirs_for
from dgl_chunked.io.formats.npy import npy_header_bytes, raw_bytes
from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors
from dgl_chunked.lookup.queries import QueryInput
from dgl_chunked.remap.id_mappings import Keys
from dgl_chunked.remap.kernels import run_positions
from dgl_chunked.remap.keys import check_unique_keys, join_keys
from dgl_chunked.remap.mapping import Blocks
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.shuffled import inverse_block
from dgl_chunked.remap.tasks import TypeJob, block_positions
from dgl_chunked.storage import fs
from dgl_chunked.storage.buckets import read_bucket, write_buckets

__all__ = [
    "ArraySpec",
    "Shuffle",
    "join_bucket",
    "place_block",
    "sort_slab",
    "stage_keys",
    "stage_queries",
    "write_partition",
]

ArraySpec = tuple[str, str, tuple[int, ...]]
"""``(name, dtype str, row shape)`` of one output array."""


def _block_of(ids: IdArray, bounds: tuple[int, ...]) -> IdArray:
    return (np.searchsorted(np.asarray(bounds), ids, side="right") - 1).astype(np.int64)


# --- 1-3. queries, keys, join -----------------------------------------------------------


def stage_queries(
    queries: QueryInput, index: int, data: Any, job: TypeJob, by_key: bool, num_buckets: int, path: str
) -> int:
    """Stage piece ``index`` of the queries; return its row count."""
    piece = queries.pieces[index]
    keys, labels, where = queries.read(piece, data)
    rows = np.arange(keys.shape[0], dtype=np.int64)
    columns = {"piece": np.full(keys.shape[0], index, np.int64), "row": rows, **labels}
    if by_key:
        if queries.text_keys and keys.dtype != object:  # matched as text (join_keys): hash them as text too
            keys = keys.astype(str).astype(object)
        write_buckets(
            path, {"key": keys, **columns}, key_buckets(keys, num_buckets), num_buckets, queries.storage_options
        )
        return int(keys.shape[0])
    if keys.dtype == object:
        raise RemapError(f"{where(0)}: holds text {keys[0]!r}; looking up by original ID needs integers")
    ids = keys.astype(np.int64)
    bad = (ids < 0) | (ids >= job.space.total)
    if bad.any():
        at = int(np.argmax(bad))
        raise RemapError(
            f"{where(at)}: original ID {int(ids[at])} is outside [0, {job.space.total}) of {job.space.label}"
        )
    write_buckets(
        path, {"type_nid": ids, **columns}, _block_of(ids, job.bounds), len(job.bounds) - 1, queries.storage_options
    )
    return int(keys.shape[0])


def stage_keys(keys: Keys, piece: int, num_buckets: int, path: str) -> None:
    """Stage piece ``piece`` of the keys (a node_keys file, a piece of raw_id_mappings) bucketed by key.

    Each row also keeps its piece and row, so that a repeated key can be named with
    both places it appears.
    """
    values, ids = keys.pairs(piece)
    rows = np.arange(values.shape[0], dtype=np.int64)
    columns = {"key": values, "type_nid": ids, "piece": np.full(values.shape[0], piece, np.int64), "row": rows}
    write_buckets(path, columns, key_buckets(values, num_buckets), num_buckets, keys.storage_options)


def _where(queries: QueryInput, piece: int, row: int) -> str:
    """Where row ``row`` of query piece ``piece`` came from (a CSV line is found by counting)."""
    p = queries.pieces[piece]
    if queries.format != "csv":
        return queries.describe(p, row)
    path = queries.files[p.file].path
    with fs.open_file(path, "rb", queries.storage_options) as f:
        if p.start > 0:
            f.seek(p.start - 1)
        if p.start > 0 or queries.header:
            f.readline()  # the line holding byte start-1 (or the header) is not this piece's
        offset = f.tell()
    return queries.describe(p, row, offset)


def join_bucket(
    queries: QueryInput,
    key_paths: Sequence[str],
    query_paths: Sequence[str],
    bucket: int,
    job: TypeJob,
    path: str,
    source: Keys,
) -> None:
    """Join bucket ``bucket``'s queries with its keys and regroup them by block of original IDs."""
    so = queries.storage_options
    keys = read_bucket(key_paths, bucket, so)
    check_unique_keys(source, keys, job.space.label)
    found = read_bucket(query_paths, bucket, so)
    order = np.argsort(found["key"], kind="stable")  # equal keys share a bucket: a repeat is found here
    sorted_keys = found["key"][order]
    repeat = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if repeat.size:
        i, j = int(order[repeat[0]]), int(order[repeat[0] + 1])
        first, again = (_where(queries, int(found["piece"][x]), int(found["row"][x])) for x in (i, j))
        raise RemapError(f"{again}: repeats key {found['key'][j]!r} of {job.space.label} (first at {first})")
    ids = join_keys(keys["key"], keys["type_nid"], found["key"])
    if (ids < 0).any():
        i = int(np.argmax(ids < 0))
        raise RemapError(
            f"{_where(queries, int(found['piece'][i]), int(found['row'][i]))}: key {found['key'][i]!r} is not a node "
            f"of {job.space.label} (not in {source.label})"
        )
    found.pop("key")
    write_buckets(path, {"type_nid": ids, **found}, _block_of(ids, job.bounds), len(job.bounds) - 1, so)


# --- 4-5. blocks and partitions ------------------------------------------------------------


def _piece_path(root: str, part: int, name: str, k: int) -> str:
    return fs.join(root, f"p{part}/{name}/{k:06d}")


def _write_pieces(
    root: str,
    part: int,
    k: int,
    arrays: Sequence[ArraySpec],
    found: Mapping[str, npt.NDArray[Any]],
    rows: npt.NDArray[Any],
    so: StorageOptions,
) -> None:
    """Piece ``k`` of partition ``part``: the ``rows`` (a mask or an index) of each answer array
    in ``found``, as raw bytes of its dtype."""
    for name, dtype, _ in arrays:
        target = _piece_path(root, part, name, k)
        makedirs_for(target, so)
        with fs.open_file(target, "wb", so) as f:
            f.write(raw_bytes(found[name][rows].astype(dtype, copy=False)))


@dataclass(frozen=True)
class Shuffle:
    """The shuffle route of a lookup (``orig_*.dgl`` not ascending, :mod:`~dgl_chunked.remap.shuffled`).

    ``scratch`` holds the slabs' ``(original ID, new ID)`` staged by block (``offsets``
    per slab); block ``k``'s answers go to ``regroup/<k>.arrow`` bucketed by slab of
    ``grid``, so that :func:`sort_slab` writes each partition's pieces in ascending
    new-ID order.
    """

    grid: Blocks
    offsets: tuple[IdArray, ...]
    scratch: str
    regroup: str

    def regroup_path(self, k: int) -> str:
        return fs.join(self.regroup, f"{k:06d}.arrow")


def place_block(
    queries: QueryInput,
    job: TypeJob,
    paths: Sequence[str],
    k: int,
    owner: Any,
    root: str,
    arrays: Sequence[ArraySpec],
    shuffle: Shuffle | None = None,
) -> IdArray:
    """New IDs of block ``k``'s queries; write them per partition (or per slab, ``shuffle``);
    return the count per partition."""
    assert job.blocks is not None
    so = queries.storage_options
    lo, hi = job.bounds[k], job.bounds[k + 1]
    found = read_bucket(paths, k, so)
    type_nid = found["type_nid"]
    order = np.argsort(type_nid, kind="stable")
    found = {name: values[order] for name, values in found.items()}
    type_nid = found["type_nid"]
    repeat = np.flatnonzero(type_nid[1:] == type_nid[:-1])
    if repeat.size:
        i = int(repeat[0])
        first, again = (_where(queries, int(found["piece"][j]), int(found["row"][j])) for j in (i, i + 1))
        raise RemapError(f"{again}: repeats original ID {int(type_nid[i])} of {job.space.label} (first at {first})")
    if shuffle is None:
        owners, rank = run_positions(block_positions(job, k, owner), hi - lo)
        part = owners[type_nid - lo]
        nids = job.space.offsets[part] + job.blocks.starts[k][part] + rank[type_nid - lo]
    else:
        nids = inverse_block(job, k, shuffle.offsets, shuffle.scratch, so)[type_nid - lo]
        part = job.space.owner(nids)
    found["nids"], found["orig_nids"] = nids, type_nid
    counts = np.bincount(part, minlength=job.space.num_parts).astype(np.int64)
    if shuffle is not None:
        slab = shuffle.grid.block_of(part, nids - job.space.offsets[part])
        columns = {name: found[name] for name, _, _ in arrays}
        write_buckets(shuffle.regroup_path(k), columns, slab, shuffle.grid.num_blocks, so)
        return counts
    for p in np.flatnonzero(counts).tolist():
        _write_pieces(root, p, k, arrays, found, part == p, so)
    return counts


def sort_slab(
    job: TypeJob, s: int, shuffle: Shuffle, root: str, arrays: Sequence[ArraySpec], so: StorageOptions
) -> IdArray:
    """Slab ``s``'s answers from every block, in ascending new-ID order, as pieces of its partition."""
    paths = [shuffle.regroup_path(k) for k in range(len(job.bounds) - 1)]
    found = read_bucket(paths, s, so)
    order = np.argsort(found["nids"], kind="stable")
    p = int(np.argmax(shuffle.grid.counts[s]))
    counts = np.zeros(job.space.num_parts, np.int64)
    counts[p] = order.shape[0]
    if order.size:
        _write_pieces(root, p, s, arrays, found, order, so)
    return counts


def _blocks_of(
    paths: list[str], dtype: np.dtype[Any], row_shape: tuple[int, ...], so: StorageOptions
) -> Callable[[], Iterator[npt.NDArray[Any]]]:
    """A block factory reading the raw pieces ``paths`` one at a time."""

    def blocks() -> Iterator[npt.NDArray[Any]]:
        for path in paths:
            with fs.open_file(path, "rb", so) as f:
                yield np.frombuffer(f.read(), dtype=dtype).reshape((-1, *row_shape))

    return blocks


def write_partition(
    root: str,
    part: int,
    counts: IdArray,
    arrays: Sequence[ArraySpec],
    stem: str,
    formats: Sequence[str],
    so: StorageOptions,
) -> None:
    """Concatenate partition ``part``'s pieces (blocks with ``counts[k] > 0``) into its output files."""
    rows = int(counts.sum())
    blocks = [k for k in np.flatnonzero(counts).tolist()]
    tensors = {}
    for name, dtype_str, row_shape in arrays:
        dtype = np.dtype(dtype_str)
        pieces = [_piece_path(root, part, name, k) for k in blocks]
        if "npy" in formats:
            header = fs.join(root, f"p{part}/{name}/header")
            makedirs_for(header, so)
            fs.atomic_write_bytes(header, npy_header_bytes(dtype, (rows, *row_shape)), so)
            target = fs.join(root, f"out/part{part}/{stem}.{name}.npy")
            makedirs_for(target, so)
            fs.concat_files([header, *pieces], target, so)
        tensors[name] = ArraySpans((rows, *row_shape), dtype, _blocks_of(pieces, dtype, row_shape, so))
    if "pt" in formats:
        target = fs.join(root, f"out/part{part}/{stem}.pt")
        makedirs_for(target, so)
        write_torch_tensors(target, tensors, storage_options=so, archive=stem.rsplit("/", 1)[-1])
