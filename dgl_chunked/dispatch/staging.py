"""Zarr v3 staging between the map side and the per-partition writers of dispatch
(``docs/spec/staging.md``, "Dispatch staging").

Layout (one Zarr group; every array is written by exactly one task)::

    STAGING/
      nodes/<t>/part              int32 [N_t]    owner partition, regular Zarr chunks
      nodes/<t>/new_nid           int32 [N_t]    new homogeneous ID, same Zarr chunks
      nodes/<t>/sorted_type_nid   int64 [N_t]    each block's type_nids, stably sorted by owner (*)
      edges/<r>/<c>/new_src       int32 [E_c]    read task c's sources' new IDs, sorted by owner
      edges/<r>/<c>/new_dst       int32 [E_c]    new IDs of the destinations, sorted by owner
      edges/<r>/<c>/owner         uint8 [E_c]    owner of each edge (written last), type_eid order (*)
      node_feat/<t>/<f>/<k>       [rows, ...]    read task k of the feature, rows sorted by owner
      edge_feat/<r>/<f>/<k>       [rows, ...]    read task k of the feature, rows sorted by owner

A read task is a group of consecutive chunk files
(:class:`~dgl_chunked.io.chunked.groups.ChunkGroup`), so the number of staged arrays
follows the input's bytes, not its number of files.

(*) Only when something reads them: ``sorted_type_nid`` with ``save_orig_nids``, an edge
type's ``owner`` with ``save_orig_eids`` or when the type has edge features.

Type and feature names are used as Zarr node names; DGL forbids ``/`` in them and
``validate`` checks that, so they map one to one. Arrays sorted by owner carry
``attrs["counts"]`` (rows per partition): a partition's rows are one contiguous
segment per array. New node IDs and staged edge endpoints are int64 instead of int32
when the graph has 2**31 nodes or more (:func:`~dgl_chunked.dispatch.ids.staged_id_dtype`), owners
wider than uint8 with more than 256 partitions (``compact_owner_dtype``). The attribute
is written after the data, so an array with counts is complete; resume relies on that.
The staging directory carries the ownership marker of :mod:`dgl_chunked.storage.owned`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np
import numpy.typing as npt
import zarr
import zarr.storage

from dgl_chunked._typing import StorageOptions
from dgl_chunked.storage import fs, owned
from dgl_chunked.storage.arrays import zarr_store
from dgl_chunked.storage.trash import leftover_trash, move_to_trash, remove_later, wait_for_removals
from dgl_chunked.storage.zarr_lookup import cached_lookup
from dgl_chunked.storage.zarr_rows import read_rows

__all__ = [
    "Staging",
    "default_chunks",
    "node_zarr_chunk_rows",
    "NODE_ZARR_CHUNK_ROWS",
    "segment_bounds",
    "resumable",
    "MISSING",
    "STAGING_FORMAT",
    "STAGING_KIND",
    "STAGING_ENTRIES",
    "WIPE_THREADS",
]

logger = logging.getLogger(__name__)

STAGING_FORMAT = 7
"""Bumped whenever the staging layout changes, so an old staging is never resumed."""

STAGING_KIND = "dispatch-staging"
"""The kind recorded in the staging directory's ownership marker (:mod:`dgl_chunked.storage.owned`)."""

STAGING_ENTRIES = (
    "fingerprint.json",
    "fingerprint.json.tmp-dglc",
    "zarr.json",
    "_done",
    "nodes",
    "edges",
    "node_feat",
    "edge_feat",
)
"""Everything the staging holds at its top level (besides the marker); anything else is refused."""

WIPE_THREADS = 8
"""Threads that remove a local staging's entries at once (:meth:`Staging.wipe`)."""


def _inner_entries(root: str) -> list[str]:
    """The entries two levels below ``root`` that are files, and those three levels below."""
    out: list[str] = []
    for a in os.scandir(root):
        if not a.is_dir(follow_symlinks=False):
            continue
        for b in os.scandir(a.path):
            if b.is_dir(follow_symlinks=False):
                out += [c.path for c in os.scandir(b.path)]
            else:
                out.append(b.path)
    return out


def _wipe_local(root: str) -> None:
    """Remove the local staging (or trash) directory ``root``: checked, its fingerprint first,
    its inner entries by :data:`WIPE_THREADS` threads, the rest and the marker last."""
    if owned.require_owned(root, expected=STAGING_ENTRIES, verb="removed"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(root, "fingerprint.json"))
        with ThreadPoolExecutor(WIPE_THREADS) as pool:
            list(pool.map(_remove_path, _inner_entries(root)))
    owned.remove_owned(root, expected=STAGING_ENTRIES)


def _remove_path(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


MISSING = object()
"""What :meth:`Staging.done_value` returns for a task that has not finished."""


def resumable(staging: Staging, key: str, stamp: str, func: Callable[..., Any], *args: Any) -> Any:
    """Run ``func(*args)`` unless task ``key`` already finished in this staging with
    input files of this ``stamp`` (see :class:`~dgl_chunked.dispatch.fingerprint.FileStamps`).

    The result (a counts vector or None) is recorded after ``func`` wrote all its
    outputs, so a recorded task is complete; one that died half-way, or whose input
    files were replaced since, runs again and overwrites what it left.
    """
    value = staging.done_value(key, stamp)
    if value is not MISSING:
        return None if value is None else np.asarray(value, dtype=np.int64)
    result = func(*args)
    staging.mark_done(key, None if result is None else np.asarray(result).tolist(), stamp)
    return result


def segment_bounds(counts: Sequence[int], part: int) -> tuple[int, int]:
    """``[lo, hi)`` of partition ``part``'s rows in an array sorted by owner."""
    c = np.asarray(counts, dtype=np.int64)
    lo = int(c[:part].sum())
    return lo, lo + int(c[part])


@dataclass(frozen=True)
class Staging:
    """A handle on the staging group: a path (or URL) and its storage options.

    It pickles as a few small values, so tasks carry it, not an open store.
    ``token`` names this run's content (a new one per dispatch call) and
    ``lookup_cache_bytes`` is the per-process budget of :meth:`lookup`'s cache;
    ``wide_ids`` takes the int64 paths of graphs beyond 2**31 nodes on any graph
    (staged edge endpoints and cached node IDs), for tests.
    """

    root: str
    storage_options: StorageOptions = None
    token: str = ""
    lookup_cache_bytes: int = 0
    wide_ids: bool = False

    def store(self) -> zarr.storage.StoreLike:
        return zarr_store(self.root, self.storage_options)

    # --- writing -----------------------------------------------------------

    def create(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: Any,
        *,
        chunks: tuple[int, ...] | None = None,
    ) -> zarr.Array[Any]:
        """Create (or replace) an uncompressed array; staging data is short-lived."""
        chunks = chunks or default_chunks(shape, np.dtype(dtype))
        with fs.naming(fs.join(self.root, name)):
            return zarr.create_array(
                store=self.store(),
                name=name,
                shape=shape,
                chunks=chunks,
                dtype=dtype,
                compressors=None,
                fill_value=np.zeros((), dtype=dtype).item(),
                overwrite=True,
            )

    def ensure(self, name: str, shape: tuple[int, ...], dtype: Any, *, chunks: tuple[int, ...]) -> None:
        """Create an array unless a resumed staging already has it with this layout."""
        try:
            arr = self.open(name)
            if arr.shape == shape and arr.dtype == np.dtype(dtype) and arr.chunks == chunks:
                return
        except (FileNotFoundError, KeyError, zarr.errors.NodeNotFoundError):
            pass
        self.create(name, shape, dtype, chunks=chunks)

    def write_sorted(self, name: str, data: npt.NDArray[Any], counts: npt.NDArray[np.int64]) -> None:
        """Write owner-sorted rows, then mark them complete with their counts."""
        arr = self.create(name, data.shape, data.dtype)
        with fs.naming(fs.join(self.root, name)):
            if data.size:
                arr[...] = data
            arr.attrs["counts"] = [int(c) for c in counts]

    # --- completion markers and fingerprint (resume) ------------------------

    def _marker(self, key: str) -> str:
        return fs.join(self.root, f"_done/{quote(key, safe='')}.json")

    def mark_done(self, key: str, value: Any, stamp: str = "") -> None:
        """Record that task ``key`` finished (after its outputs are written), having read
        input files of ``stamp``."""
        record = {"stamp": stamp, "value": value}
        fs.atomic_write_bytes(self._marker(key), json.dumps(record).encode(), self.storage_options)

    def done_value(self, key: str, stamp: str = "") -> Any:
        """The recorded result of task ``key``, or :data:`MISSING` when it has not
        finished, or finished with input files of another stamp."""
        try:
            with fs.open_file(self._marker(key), "rb", self.storage_options) as f:
                record = json.load(f)
        except FileNotFoundError:
            return MISSING
        if not isinstance(record, dict) or record.get("stamp") != stamp:
            return MISSING
        return record.get("value")

    def fingerprint(self) -> str | None:
        try:
            with fs.open_file(fs.join(self.root, "fingerprint.json"), "rb", self.storage_options) as f:
                return str(json.load(f)["fingerprint"])
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def start(self, fingerprint: str) -> bool:
        """Reuse this staging when it belongs to ``fingerprint``, else empty it.

        The staging directory is created and marked as ours (a directory that
        holds anything else is refused before anything is written or removed).
        Returns True when earlier work is reused.
        """
        owned.create_owned_dir(self.root, STAGING_KIND, storage_options=self.storage_options)
        if self.fingerprint() == fingerprint:
            return True
        owned.clear_owned(self.root, expected=STAGING_ENTRIES, storage_options=self.storage_options)
        filesystem, inner = fs.filesystem(fs.join(self.root, "_done"), self.storage_options)
        filesystem.makedirs(inner, exist_ok=True)
        fs.atomic_write_bytes(
            fs.join(self.root, "fingerprint.json"),
            json.dumps({"fingerprint": fingerprint}).encode(),
            self.storage_options,
        )
        return False

    def wipe(self, *, background: bool = False) -> None:
        """Remove the staging directory (only if it is ours and holds only staging entries).

        On a local file system, once the directory is checked, its fingerprint goes first
        (an interrupted removal leaves a staging that no run resumes), then the entries two
        and three levels down (staged arrays, completion records) are removed by
        :data:`WIPE_THREADS` threads at once: one after the other, the 515 files and 342
        directories of a 10M / 100M staging took 0.9-1.6 s of unlinking on a busy disk,
        each call waiting on the file system's journal. The rest, and the ownership
        marker last, as :func:`~dgl_chunked.storage.owned.remove_owned` removes them.

        With ``background`` (a local staging), the checked directory is renamed to a
        trash name beside it (:func:`~dgl_chunked.storage.trash.move_to_trash`) and
        removed so by a background thread: the call returns at once
        (:func:`~dgl_chunked.storage.trash.wait_for_removals` waits for it), and a trash
        directory a killed process leaves behind is removed by the next run
        (:meth:`remove_leftovers`).
        """
        so = self.storage_options
        if fs.is_url(self.root):
            owned.remove_owned(self.root, expected=STAGING_ENTRIES, storage_options=so)
            return
        if not owned.require_owned(self.root, expected=STAGING_ENTRIES, verb="removed", storage_options=so):
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.root, "fingerprint.json"))
        if background:
            trash = move_to_trash(self.root)
            remove_later(lambda: _wipe_local(trash), f"the staging's trash directory {trash}")
            return
        _wipe_local(self.root)

    def remove_leftovers(self) -> None:
        """Remove the trash directories of this staging that killed runs left (local only; those
        that are not ours, or hold other entries, are kept with a warning)."""
        if fs.is_url(self.root):
            return
        wait_for_removals()  # this process's own are not left over: let them end
        for trash in leftover_trash(self.root):
            try:
                _wipe_local(trash)
            except owned.ForeignDataError as err:
                logger.warning("kept %s: %s", trash, err)
            except FileNotFoundError:  # another process's removal of it, still under way
                logger.debug("%s went away while being removed", trash)

    # --- reading -----------------------------------------------------------

    def open(self, name: str) -> zarr.Array[Any]:
        return zarr.open_array(store=self.store(), path=name, mode="r", zarr_format=3)

    def lookup(
        self, name: str, ids: npt.NDArray[np.integer[Any]], dtype: npt.DTypeLike | None = None
    ) -> npt.NDArray[Any]:
        """``array[ids]`` (as ``dtype``) of the 1-D staged array ``name``, kept whole in
        this process when it fits ``lookup_cache_bytes``, else read a Zarr chunk at a time."""
        array = self.open(name)
        return cached_lookup(
            array,
            ids,
            key=(self.root, self.token, name),
            budget_bytes=self.lookup_cache_bytes,
            dtype=dtype,
            compact=not self.wide_ids,
        )

    def counts(self, name: str) -> list[int] | None:
        """The per-partition counts of a completed sorted array, else None."""
        try:
            arr = zarr.open_array(store=self.store(), path=name, mode="r", zarr_format=3)
        except (FileNotFoundError, KeyError, zarr.errors.NodeNotFoundError):
            return None
        counts = arr.attrs.get("counts")
        return None if counts is None else [int(c) for c in counts]  # type: ignore[union-attr,arg-type]

    def segment(self, name: str, counts: Sequence[int], part: int) -> npt.NDArray[Any]:
        """Partition ``part``'s rows (along axis 0) of an owner-sorted array."""
        lo, hi = segment_bounds(counts, part)
        return read_rows(self.open(name), lo, hi)

    def iter_segments(
        self, names: Sequence[str], counts: Sequence[Sequence[int]], part: int
    ) -> Iterator[npt.NDArray[Any]]:
        """Partition ``part``'s segment of each array, in order, skipping empty ones."""
        for name, c in zip(names, counts, strict=True):
            if c[part]:
                yield self.segment(name, c, part)


NODE_ZARR_CHUNK_ROWS = 1 << 18
"""Rows per Zarr chunk of the staged per-node arrays (assignment, new IDs, sorted IDs)
when the numbering block is a multiple of it. A node-feature task reads the owners of
its read task's rows, and Zarr reads whole Zarr chunks: with Zarr chunks of a whole block (2^21 rows,
8 MB of int32) a task of 250k rows read 8 MB at 30M nodes against the 4 MB of the
1M-node graph's single Zarr chunk (5.1 against 3.0 ms and 2.5k against 1.2k page faults per
task; 2.3 ms and 750 faults with 2^18)."""


def node_zarr_chunk_rows(block_rows: int, num_nodes: int) -> int:
    """Zarr chunk rows of a staged per-node array: :data:`NODE_ZARR_CHUNK_ROWS` when it divides
    ``block_rows`` (the tasks that write whole blocks then write whole Zarr chunks, never the
    same Zarr chunk from two tasks), else ``block_rows``; never more than ``num_nodes``."""
    rows = NODE_ZARR_CHUNK_ROWS if block_rows % NODE_ZARR_CHUNK_ROWS == 0 else block_rows
    return max(1, min(rows, num_nodes))


def default_chunks(shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[int, ...]:
    """Zarr chunks of about 32 MiB along axis 0."""
    target = 32 << 20
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize if len(shape) > 1 else dtype.itemsize
    rows = max(1, min(shape[0] if shape[0] else 1, target // max(row_bytes, 1)))
    return (rows, *shape[1:])
