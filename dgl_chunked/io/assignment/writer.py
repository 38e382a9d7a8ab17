"""Writing an assignment directory that DGL's ``dispatch_data.py`` accepts.

Writes are ordered so that a half-written directory never looks complete:
``partition_meta.json`` is removed first when overwriting and written last; each
text file is written under a temporary name and renamed (or, on S3, appears whole
when its multipart upload completes). One Dask compute validates and formats every
block on a worker, which writes its text and its region of the Zarr copy; the
client then finishes each ``<ntype>.txt``, writes the sidecar
(:mod:`~dgl_chunked.io.assignment.sidecar`) and, last, ``partition_meta.json``.

How the text reaches ``<ntype>.txt``:

- local directory, ``num_parts <= 10`` (every line ``"<digit>\\n"``, 2 bytes): the
  client creates ``<ntype>.txt.tmp-dglc`` of its final size, each block writes its
  bytes at offset ``2 * start`` (``os.pwrite``), the client renames it. No pieces,
  nothing read back.
- S3: each block (whole input blocks, at least 5 MiB of text: :func:`piece_rows`)
  writes a piece under ``.dglc-tmp/``; the store joins them into ``<ntype>.txt``
  (:func:`~dgl_chunked.storage.fs.join_files`: ``UploadPartCopy``), so the text
  crosses the link once.
- otherwise: pieces under ``.dglc-tmp/``, streamed through the client into
  ``<ntype>.txt.tmp-dglc`` (:func:`~dgl_chunked.storage.fs.concat_files`), renamed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import compute_settled
from dgl_chunked.errors import AssignmentError, OutputExistsError
from dgl_chunked.io.assignment.layout import (
    ASSIGNMENT_KIND,
    DEFAULT_CHUNK_ROWS,
    META_NAME,
    SIDECAR_NAME,
    ZARR_NAME,
    file_stamp,
    zarr_group,
)
from dgl_chunked.io.assignment.meta import PartitionMeta, dgl_algo_name
from dgl_chunked.io.assignment.sidecar import AssignmentSidecar, read_assignment_sidecar
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.owned import (
    acquire_lease,
    check_no_overlap,
    create_owned_dir,
    read_marker,
    remove_owned,
    require_owned,
)

if TYPE_CHECKING:
    import dask.array as da

__all__ = ["assignment_entries", "encode_assignment_block", "retract_assignment", "write_assignment"]

logger = logging.getLogger(__name__)

_TMP_SUFFIX = ".tmp-dglc"
"""Suffix of a text file being written (``assignment_entries`` owns ``*.tmp-dglc``)."""


def encode_assignment_block(values: npt.ArrayLike, *, num_parts: int, start: int, ntype: str) -> bytes:
    """Validate one block of partition IDs and format it as ``"<id>\\n"`` lines."""
    arr = np.asarray(values)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise AssignmentError(f"parts[{ntype!r}]: expected a 1-D integer array, found {arr.dtype} {arr.shape}")
    bad = np.flatnonzero((arr < 0) | (arr >= num_parts))
    if bad.size:
        raise AssignmentError(
            f"parts[{ntype!r}][{start + int(bad[0])}]: expected a partition ID in "
            f"[0, {num_parts}), found {int(arr[bad[0]])}"
        )
    if num_parts <= 10:  # one digit: build the bytes directly
        buf = np.full(2 * arr.size, 10, np.uint8)
        buf[0::2] = arr.astype(np.uint8) + 48
        return buf.tobytes()
    return "".join(f"{v}\n" for v in arr.tolist()).encode("ascii")


def _write_block(
    values: npt.NDArray[Any],
    *,
    text_path: str,
    zarr_path: str | None,
    ntype: str,
    start: int,
    num_parts: int,
    storage_options: StorageOptions,
    in_place: bool = False,
) -> int:
    """Dask kernel: one block -> its text (a piece of its own, or ``in_place`` its
    bytes at ``2 * start`` of the preallocated local file) and its (chunk-aligned)
    Zarr region; the bytes of its text."""
    text = encode_assignment_block(values, num_parts=num_parts, start=start, ntype=ntype)
    if in_place:
        _write_at(text_path, text, 2 * start)
    else:
        with _fs.naming(text_path), _fs.open_file(text_path, "wb", storage_options) as f:
            f.write(text)
    if zarr_path is not None:
        with _fs.naming(zarr_path):
            target: Any = zarr_group(zarr_path, "r+", storage_options)[ntype]
            target[start : start + len(values)] = np.asarray(values, np.int32)
    return len(text)


def _write_at(path: str, data: bytes, offset: int) -> None:
    """Write ``data`` at ``offset`` of the existing local file ``path`` (whole, whatever
    ``pwrite`` returns at a time)."""
    view = memoryview(data)
    with _fs.naming(path):
        fd = os.open(path, os.O_WRONLY)
        try:
            while view:
                n = os.pwrite(fd, view, offset)
                view, offset = view[n:], offset + n
        finally:
            os.close(fd)


def _in_place(out: str, num_parts: int, storage_options: StorageOptions) -> bool:
    """Whether the blocks write straight into the final file: every line is
    ``"<digit>\\n"`` (so block ``[start, stop)`` owns bytes ``[2 start, 2 stop)``)
    and the directory is on the local file system (``os.pwrite``)."""
    return num_parts <= 10 and isinstance(_fs.filesystem(out, storage_options)[0], LocalFileSystem)


def piece_rows(chunk_rows: int, on_s3: bool) -> int:
    """Rows of the blocks (one text piece each) the writer makes of blocks of
    ``chunk_rows``: on S3 enough whole blocks that a piece, 2 bytes a line at least,
    reaches S3's smallest part (:data:`~dgl_chunked.storage.fs.MIN_PART_BYTES`), so
    that the store joins the pieces itself."""
    if not on_s3 or chunk_rows <= 0:
        return chunk_rows
    return chunk_rows * -(-_fs.MIN_PART_BYTES // (2 * chunk_rows))


def _as_blocks(values: Any, ntype: str, on_s3: bool = False) -> da.Array:
    """A 1-D dask array with regular chunks (so every block owns whole Zarr chunks),
    of :func:`piece_rows` rows on S3."""
    arr = _regular_blocks(values, ntype)
    chunk = int(arr.chunks[0][0])
    rows = piece_rows(chunk, on_s3)
    return arr if rows == chunk or arr.numblocks[0] <= 1 else arr.rechunk(rows)


def _regular_blocks(values: Any, ntype: str) -> da.Array:
    """A 1-D dask array with regular chunks."""
    import dask.array as da

    if not isinstance(values, da.Array):
        values = np.asarray(values)
        if values.ndim != 1:
            raise AssignmentError(f"parts[{ntype!r}]: expected a 1-D array, found shape {values.shape}")
        return da.from_array(values, chunks=max(1, min(values.shape[0], DEFAULT_CHUNK_ROWS)))  # type: ignore[no-any-return]
    if values.ndim != 1:
        raise AssignmentError(f"parts[{ntype!r}]: expected a 1-D array, found shape {values.shape}")
    chunks = values.chunks[0]
    if len(set(chunks[:-1])) <= 1 and chunks[-1] <= chunks[0] and 0 < chunks[0] <= 8 * DEFAULT_CHUNK_ROWS:
        return values
    return values.rechunk(max(1, min(values.shape[0], DEFAULT_CHUNK_ROWS)))  # type: ignore[no-any-return]


def assignment_entries(assign_dir: str, ntypes: Iterable[str], storage_options: StorageOptions = None) -> list[str]:
    """Names dgl_chunked writes in an assignment directory (glob patterns).

    The node types of the assignment already there (its sidecar lists them) count
    too, so overwriting one with other node types is not refused.
    """
    names = [META_NAME, SIDECAR_NAME, ZARR_NAME, ".dglc-*", "*.tmp-dglc", "report.json", "dglc-*"]
    names += [f"{t}.txt" for t in ntypes]
    try:
        sidecar = read_assignment_sidecar(assign_dir, storage_options=storage_options)
    except (OSError, AssignmentError):
        sidecar = None
    return names + [f"{t}.txt" for t in (sidecar.files if sidecar else ())]


def _prepare_dir(assign_dir: str, names: list[str], overwrite: bool, storage_options: StorageOptions) -> None:
    """Create or reuse the marked directory; refuse to clobber an assignment unless ``overwrite``.

    Overwriting drops the meta file first, and refuses (before removing anything)
    when the directory holds entries dgl_chunked does not write.
    """
    create_owned_dir(assign_dir, ASSIGNMENT_KIND, storage_options=storage_options)
    fs, inner = _fs.filesystem(assign_dir, storage_options)
    inner = inner.rstrip("/")
    present = [n for n in (META_NAME, SIDECAR_NAME, ZARR_NAME, *names) if fs.exists(f"{inner}/{n}")]
    if present and not overwrite:
        raise OutputExistsError(
            f"{assign_dir}: expected an empty or new assignment directory, found "
            f"{present}; pass overwrite=True (--overwrite) or choose another directory"
        )
    if present:
        ntypes = [n[: -len(".txt")] for n in names]
        expected = assignment_entries(assign_dir, ntypes, storage_options)
        require_owned(assign_dir, expected=expected, verb="overwritten", storage_options=storage_options)
    for name in (META_NAME, SIDECAR_NAME, ZARR_NAME):  # partition_meta.json first
        if name in present:
            fs.rm(f"{inner}/{name}", recursive=True)


def write_assignment(
    assign_dir: PathLike,
    parts: Mapping[str, da.Array | npt.ArrayLike],
    *,
    num_parts: int,
    algo_name: str,
    storage_options: StorageOptions = None,
    overwrite: bool = False,
    provenance: Mapping[str, Any] | None = None,
    inputs: Mapping[str, str] | None = None,
    binary: bool = True,
) -> PartitionMeta:
    """Write an assignment directory that DGL's ``dispatch_data.py`` accepts.

    Parameters
    ----------
    assign_dir
        Target directory (path or fsspec URL); created if needed.
    parts
        Per node type the partition ID of every node (dask or numpy, 1-D, integer).
    num_parts
        Number of partitions (>= 1), stored in ``partition_meta.json``.
    algo_name
        The real method name (``"random"``, ``"metis"``, ...). It goes to
        ``dglc_partition.json``; ``partition_meta.json`` gets :func:`dgl_algo_name`.
    storage_options
        fsspec options for URLs.
    overwrite
        Replace an existing assignment in ``assign_dir`` (``partition_meta.json`` is
        removed first so an interrupted rewrite never looks complete).
    provenance
        Extra JSON-able facts for the sidecar (e.g. ``seed``, ``balance_ntypes``).
    inputs
        ``label -> path`` of what the assignment is computed from (e.g.
        :meth:`ChunkedGraph.input_locations`): ``assign_dir`` may not overlap them.
    binary
        Also write the Zarr copy (``dglc_parts.zarr``) that a later ``dispatch`` reads
        instead of the text. ``run --partitions-dir`` passes False: its dispatch already
        has the assignment, and the copy would cost 4 bytes per node written and kept.

    Returns
    -------
    PartitionMeta
        What :func:`read_partition_meta` will return for the directory.

    Notes
    -----
    One Dask compute: every block (at most ~8M rows) is validated and formatted on a
    worker, which writes its text (in place into ``<ntype>.txt.tmp-dglc`` on a local
    disk below 11 parts, else a piece in ``ASSIGN/.dglc-tmp/``) and its region of the
    Zarr sidecar. The client then renames the file, or has S3 join the pieces, or
    concatenates them, streaming (see the module's notes); ``partition_meta.json`` is
    written last. An empty node type gives an empty file, which DGL v2.2.1 rejects. Do not
    write over the directory the ``parts`` are being read from.
    """

    if not isinstance(num_parts, int) or isinstance(num_parts, bool) or num_parts < 1:
        raise AssignmentError(f"num_parts: expected a positive integer, found {num_parts!r}")
    bad = [t for t in parts if not t or "/" in t]
    if bad:
        raise AssignmentError(f"parts: node type {bad[0]!r} cannot name a file; it must be non-empty without '/'")
    out = str(assign_dir)
    check_no_overlap({"assignment directory": out}, dict(inputs or {}), storage_options=storage_options)
    with acquire_lease(out, ASSIGNMENT_KIND, storage_options=storage_options):
        _prepare_dir(out, [f"{t}.txt" for t in parts], overwrite, storage_options)
        return _write_assignment(out, parts, num_parts, algo_name, provenance, storage_options, binary)


def _write_assignment(
    out: str,
    parts: Mapping[str, da.Array | npt.ArrayLike],
    num_parts: int,
    algo_name: str,
    provenance: Mapping[str, Any] | None,
    storage_options: StorageOptions,
    binary: bool = True,
) -> PartitionMeta:
    import dask

    zarr_path, tmp_dir = _fs.join(out, ZARR_NAME), _fs.join(out, ".dglc-tmp")
    if binary:
        with _fs.naming(zarr_path):
            group = zarr_group(zarr_path, "w", storage_options)
    in_place = _in_place(out, num_parts, storage_options)
    on_s3 = _fs.joins_on_store(_fs.filesystem(out, storage_options)[0])
    local_dir = _fs.filesystem(out, storage_options)[1].rstrip("/") if in_place else ""
    pieces: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}  # in place: the file of each type and its final size
    tasks, keys = [], []  # keys: the text path of each task (a piece; in place, the one file)
    write = dask.delayed(_write_block, pure=False)
    run = run_token(out, num_parts, {t: getattr(v, "name", None) for t, v in parts.items()})
    for ntype, values in parts.items():
        arr = _as_blocks(values, ntype, on_s3)
        n, chunk = int(arr.shape[0]), int(arr.chunks[0][0]) or 1
        if binary:
            with _fs.naming(zarr_path):
                group.create_array(
                    ntype, shape=(n,), chunks=(chunk,), dtype=np.int32, fill_value=0, compressors=None, overwrite=True
                )
        starts = np.concatenate([[0], np.cumsum(arr.chunks[0])]).tolist()
        blocks_i = [i for i in range(arr.numblocks[0]) if arr.chunks[0][i]]
        if in_place:  # every block writes its bytes into the one preallocated file
            target = os.path.join(local_dir, f"{ntype}.txt{_TMP_SUFFIX}")
            text_paths = dict.fromkeys(blocks_i, target)
            pieces[ntype] = [target] if blocks_i else []
            sizes[target] = 2 * n
        else:
            text_paths = {i: f"{tmp_dir}/{ntype}.{i}.txt" for i in blocks_i}
            pieces[ntype] = list(text_paths.values())
        # unoptimised: optimising each block apart would rename (and so rerun) a task
        # shared by all blocks, such as the lp driver
        blocks = arr.to_delayed(optimize_graph=False).ravel()
        tasks += [
            write(
                blocks[i],
                text_path=text_paths[i],
                zarr_path=zarr_path if binary else None,
                ntype=ntype,
                start=starts[i],
                num_parts=num_parts,
                storage_options=storage_options,
                in_place=in_place,
                dask_key_name=(f"dglc-write-assignment-{run}", ntype, i),
            )
            for i in blocks_i
        ]
        keys += [text_paths[i] for i in blocks_i]
    if not in_place:
        create_owned_dir(tmp_dir, "assignment-tmp", storage_options=storage_options)
    try:
        for path, size in sizes.items():
            _preallocate(path, size)
        written = dict(zip(keys, compute_settled(*tasks), strict=True))
        if in_place:
            stamps = {t: _finish_in_place(out, t, bool(pieces[t]), storage_options) for t in parts}
        else:
            stamps = {t: _concatenate(out, t, pieces[t], written, storage_options) for t in parts}
    except BaseException:
        for path in sizes:  # in place: leave no half-written file (its name is ours: *.tmp-dglc)
            with contextlib.suppress(OSError):
                os.remove(path)
        raise
    finally:
        if not in_place:
            remove_owned(tmp_dir, storage_options=storage_options)
    meta = PartitionMeta(num_parts=num_parts, algo_name=dgl_algo_name(algo_name), method=algo_name)
    sidecar = AssignmentSidecar.create(
        num_parts=num_parts,
        method=algo_name,
        dgl_algo_name=meta.algo_name,
        files=stamps,
        provenance=provenance,
        binary=ZARR_NAME if binary else "",
    )
    _fs.atomic_write_bytes(_fs.join(out, SIDECAR_NAME), sidecar.to_json(), storage_options)
    _fs.atomic_write_bytes(_fs.join(out, META_NAME), meta.to_json(), storage_options)  # last: now complete
    return meta


def _preallocate(path: str, size: int) -> None:
    """Create the local file ``path`` of ``size`` bytes (sparse until written)."""
    with _fs.naming(path), open(path, "wb") as f:
        f.truncate(size)


def _finish_in_place(out: str, ntype: str, nonempty: bool, storage_options: StorageOptions) -> tuple[int, str]:
    """Rename the file the blocks wrote in place to ``<ntype>.txt``; its stamp."""
    path = _fs.join(out, f"{ntype}.txt")
    inner = _fs.filesystem(path, storage_options)[1]
    with _fs.naming(path):
        os.replace(inner + _TMP_SUFFIX, inner)
    if not nonempty:
        logger.warning("%s is empty (node type %r has no nodes); DGL v2.2.1 rejects empty files", path, ntype)
    return file_stamp(path, storage_options)


def _concatenate(
    out: str, ntype: str, pieces: list[str], sizes: Mapping[str, int], storage_options: StorageOptions
) -> tuple[int, str]:
    """Join the text pieces into ``<ntype>.txt`` (on S3's side where their sizes allow,
    else streamed through the client to a temporary name, then renamed); its stamp."""
    path = _fs.join(out, f"{ntype}.txt")
    with _fs.naming(path):
        _fs.join_files(pieces, [sizes[p] for p in pieces], path, storage_options)
    if not pieces:
        logger.warning("%s is empty (node type %r has no nodes); DGL v2.2.1 rejects empty files", path, ntype)
    return file_stamp(path, storage_options)


def retract_assignment(assign_dir: PathLike, *, storage_options: StorageOptions = None) -> None:
    """Remove ``partition_meta.json`` so that ``assign_dir`` no longer looks complete.

    Used when a command that wrote an assignment fails afterwards (for example when
    the input's edge files turn out to be corrupt): readers refuse a directory
    without ``partition_meta.json``, and rerunning the command rewrites it.
    """
    path = _fs.join(str(assign_dir), META_NAME)
    fs, inner = _fs.filesystem(path, storage_options)
    try:
        if read_marker(str(assign_dir), storage_options=storage_options) is None:
            return  # not a directory dgl_chunked wrote: leave it alone
        if fs.exists(inner):
            fs.rm(inner)
    except OSError:
        logger.warning("could not remove %s after a failure; delete it by hand", path)
