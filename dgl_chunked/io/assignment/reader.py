"""Reading an assignment directory (DGL's or ours) as lazy per-node-type Dask arrays.

:func:`open_assignment` validates eagerly what is cheap (``partition_meta.json``,
the files present, each text file's line count, streamed) and leaves the parsing of
the IDs to the tasks, whose errors name the file and the first bad (1-based)
line. The Zarr copy written by dgl_chunked is read instead of the text only when
the sidecar says it matches the current size and modification time of every text
file (so hand-edited text wins).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from dgl_chunked._typing import PartArray, PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError, one_line
from dgl_chunked.io.assignment.layout import (
    DEFAULT_CHUNK_ROWS,
    META_NAME,
    ZARR_NAME,
    file_stamp,
    is_directory,
    zarr_group,
)
from dgl_chunked.io.assignment.meta import PartitionMeta, read_partition_meta
from dgl_chunked.io.assignment.sidecar import AssignmentSidecar, sidecar_or_none
from dgl_chunked.storage import fs as _fs

if TYPE_CHECKING:
    import dask.array as da
    import zarr

    from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata

__all__ = ["default_chunks", "open_assignment", "parse_assignment_block"]

logger = logging.getLogger(__name__)

_SCAN_BYTES = 1 << 22
_INT_LINE = re.compile(rb"-?[0-9]+")


@dataclass(frozen=True)
class _TextIndex:
    rows: int
    offsets: tuple[int, ...]  # byte offset of the first line of every chunk, then the file size


def _scan_text(path: str, storage_options: StorageOptions, starts: list[int]) -> _TextIndex:
    """Count lines with bounded memory, noting the byte offset of each line in ``starts``."""
    wanted = sorted(set(s for s in starts if s > 0))
    found: dict[int, int] = {0: 0}
    lines = pos = 0
    last = None
    k = 0
    with _fs.open_file(path, "rb", storage_options) as f:
        while buf := f.read(_SCAN_BYTES):
            n_nl = buf.count(b"\n")
            if k < len(wanted) and wanted[k] <= lines + n_nl:
                newlines = np.flatnonzero(np.frombuffer(buf, np.uint8) == 10)
                while k < len(wanted) and wanted[k] <= lines + n_nl:
                    found[wanted[k]] = pos + int(newlines[wanted[k] - lines - 1]) + 1
                    k += 1
            lines += n_nl
            pos += len(buf)
            last = buf[-1]
    rows = lines + (1 if last is not None and last != 10 else 0)
    return _TextIndex(rows=rows, offsets=tuple(found.get(s, pos) for s in starts) + (pos,))


def _bad_line(line: bytes, lineno: int, path: str, num_parts: int) -> str | None:
    """The error for one line, or None when it is a valid partition ID."""
    text = line[:-1] if line.endswith(b"\r") else line
    if not _INT_LINE.fullmatch(text):
        return (
            f"{path}: line {lineno}: expected an integer partition ID in [0, {num_parts}), "
            f"found {text[:40]!r}; write one ASCII integer per line"
        )
    value = int(text)
    if value < 0:
        return f"{path}: line {lineno}: expected a partition ID in [0, {num_parts}), found negative ID {value}"
    if value >= num_parts:
        return (
            f"{path}: line {lineno}: expected a partition ID in [0, {num_parts}) (num_parts from "
            f"partition_meta.json), found {value}; fix the ID or num_parts"
        )
    return None


def parse_assignment_block(data: bytes, *, rows: int, first_line: int, num_parts: int, path: str) -> PartArray:
    """Parse ``rows`` lines of partition IDs; AssignmentError names file and line.

    ``first_line`` is the 1-based line number of the first line in ``data``.
    """
    if rows == 0:
        return np.empty(0, np.int32)
    values = None
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=["f0"], use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter="\x1f", ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types={"f0": pa.int64()}),
        )
        col = table.column("f0")
        if table.num_rows == rows and col.null_count == 0:
            values = col.to_numpy()
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        values = None
    if values is not None:
        bad = np.flatnonzero((values < 0) | (values >= num_parts))
        if bad.size == 0:
            return np.asarray(values, dtype=np.int32)
    for i, line in enumerate(data.split(b"\n")[:rows]):
        msg = _bad_line(line, first_line + i, path, num_parts)
        if msg:
            raise AssignmentError(msg)
    raise AssignmentError(
        f"{path}: lines {first_line}-{first_line + rows - 1}: expected {rows} integer "
        "lines; the file changed while being read, or holds stray delimiters"
    )


def _read_text_block(
    *,
    path: str,
    storage_options: StorageOptions,
    offsets: tuple[int, ...],
    starts: tuple[int, ...],
    num_parts: int,
    stamp: Any = None,
    block_info: Any = None,
) -> PartArray:
    """Dask kernel: read and parse the text lines of one block of node IDs (``stamp``, the
    file's size and mtime, only makes the task key change when the file does)."""
    i = block_info[None]["chunk-location"][0]
    lo, hi = block_info[None]["array-location"][0]
    size = offsets[i + 1] - offsets[i]
    # read-ahead of this task's bytes only: the default (s3fs: 50 MiB) fetched the rest of the file
    with _fs.open_file(path, "rb", storage_options, block_size=max(size, _fs.HEADER_BLOCK)) as f:
        f.seek(offsets[i])
        data = f.read(size)
    return parse_assignment_block(data, rows=hi - lo, first_line=starts[i] + 1, num_parts=num_parts, path=path)


def default_chunks(n: int, target: int = DEFAULT_CHUNK_ROWS) -> tuple[int, ...]:
    """``n`` rows in near-equal blocks of at most ``target`` rows (``(0,)`` for n = 0)."""
    k = max(1, -(-n // target))
    return tuple(n // k + (1 if i < n % k else 0) for i in range(k))


def _open_text(
    path: str, ntype: str, n: int, chunks: tuple[int, ...], num_parts: int, storage_options: StorageOptions
) -> da.Array:
    import dask.array as da

    starts = [int(s) for s in np.concatenate([[0], np.cumsum(chunks)[:-1]])]
    index = _scan_text(path, storage_options, starts)
    if index.rows != n:
        what = "the file is empty" if index.rows == 0 else f"found {index.rows} lines"
        line = index.rows + 1 if index.rows < n else n + 1
        raise AssignmentError(
            f"{path}: line {line}: expected {n} lines (one per {ntype!r} node, num_nodes_per_type), "
            f"{what}; regenerate the assignment for this graph"
        )
    return da.map_blocks(  # type: ignore[no-any-return]
        _read_text_block,
        chunks=(chunks,),
        dtype=np.int32,
        meta=np.empty(0, np.int32),
        token="dglc-read-assignment",
        path=path,
        storage_options=storage_options,
        offsets=index.offsets,
        starts=tuple(starts),
        num_parts=num_parts,
        stamp=file_stamp(path, storage_options),
    )


def _check_chunks(ntype: str, n: int, chunks: tuple[int, ...] | None) -> tuple[int, ...]:
    if chunks is None:
        return default_chunks(n)
    chunks = tuple(int(c) for c in chunks)
    if sum(chunks) != n or any(c < 0 for c in chunks) or not chunks:
        raise AssignmentError(f"chunks[{ntype!r}]: expected non-negative block sizes summing to {n}, found {chunks!r}")
    return chunks


def open_assignment(
    assign_dir: PathLike,
    metadata: ChunkedGraphMetadata,
    *,
    storage_options: StorageOptions = None,
    chunks: Mapping[str, tuple[int, ...]] | None = None,
    num_parts: int | None = None,
) -> tuple[PartitionMeta, dict[str, da.Array]]:
    """Lazily open an assignment directory (DGL's or ours).

    Parameters
    ----------
    assign_dir
        Directory (path or fsspec URL) holding ``<ntype>.txt`` and ``partition_meta.json``.
    metadata
        The graph the assignment belongs to: node types and counts.
    storage_options
        fsspec options for URLs.
    chunks
        Block sizes per node type (e.g. ``graph.node_chunks(ntype)``); default: near-equal
        blocks of at most 2**20 rows.
    num_parts
        When given, must equal ``num_parts`` in ``partition_meta.json``.

    Returns
    -------
    (PartitionMeta, dict[str, dask.array.Array])
        Per node type an int32 array of length ``num_nodes(ntype)`` with the given chunks.

    Raises
    ------
    AssignmentError
        Eagerly: missing/invalid ``partition_meta.json``, missing text files, a line count
        different from the node count (streamed, bounded memory). Lazily (inside tasks):
        a non-integer line or an ID outside ``[0, num_parts)``. Each message names the
        file and the first bad (1-based) line.
    """
    meta = read_partition_meta(assign_dir, storage_options=storage_options)
    if num_parts is not None and num_parts != meta.num_parts:
        raise AssignmentError(
            f"{_fs.join(assign_dir, META_NAME)}: num_parts is {meta.num_parts}, "
            f"but the caller expected {num_parts}; use the matching assignment"
        )
    paths = {t: _fs.join(assign_dir, f"{t}.txt") for t in metadata.node_types}
    missing = [p for p in paths.values() if not _fs.exists(p, storage_options)]
    if missing:
        raise AssignmentError(
            f"{missing[0]}: expected one <ntype>.txt per node type, found no such "
            f"file (missing: {missing}); write every node type's assignment"
        )
    dirs = [p for p in paths.values() if is_directory(p, storage_options)]
    if dirs:
        raise AssignmentError(
            f"{dirs[0]}: expected a text file of partition IDs, found a directory; replace it with the <ntype>.txt file"
        )
    sidecar = sidecar_or_none(assign_dir, storage_options)
    group = _fresh_zarr(
        assign_dir, sidecar if sidecar and sidecar.num_parts == meta.num_parts else None, paths, storage_options
    )
    out: dict[str, da.Array] = {}
    for ntype in metadata.node_types:
        n = metadata.num_nodes(ntype)
        ch = _check_chunks(ntype, n, (chunks or {}).get(ntype))
        stored: Any = group.get(ntype) if group is not None else None
        if stored is not None and hasattr(stored, "dtype") and stored.shape == (n,):
            where = _fs.join(_fs.join(assign_dir, ZARR_NAME), ntype)
            out[ntype] = _open_zarr(stored, ch, (paths[ntype], sidecar.to_json() if sidecar else None), where)
        else:
            out[ntype] = _open_text(paths[ntype], ntype, n, ch, meta.num_parts, storage_options)
    return meta, out


def _open_zarr(array: Any, chunks: tuple[int, ...], identity: Any, where: str) -> da.Array:
    import dask.array as da
    from dask.base import tokenize

    return da.map_blocks(  # type: ignore[no-any-return]
        _read_zarr_block,
        chunks=(chunks,),
        dtype=np.int32,
        meta=np.empty(0, np.int32),
        name=f"dglc-read-assignment-zarr-{tokenize(identity, chunks)}",
        array=array,
        where=where,
    )


def _read_zarr_block(*, array: Any, where: str, block_info: Any = None) -> PartArray:
    """Dask kernel: rows of one block from the Zarr copy; a damaged chunk file of it
    raises :class:`AssignmentError` naming the copy, the rows and the fix."""
    lo, hi = block_info[None]["array-location"][0]
    try:
        return np.asarray(array[lo:hi], dtype=np.int32)
    except Exception as err:  # noqa: BLE001 - zarr and its codecs raise many kinds for damaged bytes
        raise AssignmentError(
            f"{where}: rows {lo + 1}-{hi} cannot be read ({one_line(err)}); this Zarr copy of the "
            f"<ntype>.txt files is damaged: delete {ZARR_NAME} (the text files are read instead) or rerun partition"
        ) from err


def _fresh_zarr(
    assign_dir: PathLike, sidecar: AssignmentSidecar | None, paths: Mapping[str, str], storage_options: StorageOptions
) -> zarr.Group | None:
    """The Zarr copy of the IDs, if every text file still has the size and mtime the sidecar recorded."""
    if sidecar is None or not sidecar.binary:  # "": written without the Zarr copy
        return None
    files = sidecar.files
    for ntype, path in paths.items():
        if files.get(ntype) != file_stamp(path, storage_options):
            logger.info("%s changed since it was written; reading the text, not the Zarr copy", path)
            return None
    try:
        return zarr_group(_fs.join(assign_dir, ZARR_NAME), "r", storage_options)
    except Exception:  # noqa: BLE001 - a broken optional cache falls back to the text
        logger.info("no usable Zarr sidecar in %s; reading the text files", assign_dir)
        return None
