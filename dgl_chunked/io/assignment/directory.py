"""DGL partition-assignment directories: ``<ntype>.txt`` + ``partition_meta.json``.

This is the interchange format between DGL's step 1 (``random_partition.py``,
ParMETIS) and step 2 (``dispatch_data.py``), spec section 3.7::

    ASSIGN/
      <ntype>.txt            one ASCII partition ID per line, line i = per-type node i,
                             no header (one file per node type, also for dgl_chunked)
      partition_meta.json    {"algo_name": "random"|"metis", "num_parts": N, "version": "1.0.0"}
      dglc_partition.json    dgl_chunked only: real method name, seed, balance options,
                             our version, and the size/mtime of every <ntype>.txt
      dglc_parts.zarr/       dgl_chunked only: the same IDs as int32 Zarr arrays (one per
                             node type), a binary sidecar for fast, range-readable access

DGL's ``partition_meta.json`` validator accepts only ``algo_name`` "random" or
"metis", so that file carries the DGL-accepted name (the method's own choice; see
:func:`dgl_algo_name`) while ``dglc_partition.json`` records the real method
(``"method"``), so nothing is mislabelled.

``num_parts`` always comes from ``partition_meta.json``, never from the IDs seen
(ParMETIS' postprocessing infers it and silently loses empty partitions).

Writes are ordered so that a half-written directory never looks complete:
``partition_meta.json`` is removed first when overwriting and written last; each
text file is written under a temporary name and renamed. The Zarr sidecar is used
by :func:`open_assignment` only when ``dglc_partition.json`` says it matches the
current size and modification time of every text file (so hand-edited text wins).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pacsv

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PartArray, PathLike, StorageOptions
from dgl_chunked._version import __version__
from dgl_chunked.errors import AssignmentError, OutputExistsError
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
    import zarr

    from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata

__all__ = [
    "PartitionMeta",
    "DGL_ALGO_NAMES",
    "dgl_algo_name",
    "read_partition_meta",
    "read_assignment_sidecar",
    "open_assignment",
    "write_assignment",
    "retract_assignment",
]

logger = logging.getLogger(__name__)

META_NAME = "partition_meta.json"
SIDECAR_NAME = "dglc_partition.json"
ZARR_NAME = "dglc_parts.zarr"
DGL_ALGO_NAMES = ("random", "metis")
_SCAN_BLOCK = 1 << 22
_DEFAULT_CHUNK_ROWS = 1 << 20
_INT_LINE = re.compile(rb"-?[0-9]+")


@dataclass(frozen=True, kw_only=True)
class PartitionMeta:
    """Contents of ``partition_meta.json`` (plus the real method, when we wrote it).

    ``algo_name`` is the DGL-accepted value stored in ``partition_meta.json``;
    ``method`` is the real method from ``dglc_partition.json`` (None for
    directories made by DGL or other tools).
    """

    num_parts: int
    algo_name: str
    version: str = "1.0.0"
    method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``partition_meta.json`` object (without ``method``)."""
        return {"algo_name": self.algo_name, "num_parts": self.num_parts, "version": self.version}


def dgl_algo_name(method: str) -> str:
    """The ``algo_name`` DGL accepts for ``method``: itself if allowed, else "random"."""
    return method if method in DGL_ALGO_NAMES else "random"


# --- partition_meta.json ---------------------------------------------------------


def _not_a_file(path: str, storage_options: StorageOptions) -> bool:
    """True when ``path`` exists but is a directory (a file was expected)."""
    fs, inner = _fs.filesystem(path, storage_options)
    return bool(fs.isdir(inner))


def _load_json(path: str, storage_options: StorageOptions, what: str) -> Any:
    if not _fs.exists(path, storage_options):
        raise AssignmentError(
            f"{path}: expected {what}, found no such file; write it (dgl-chunked partition) "
            f"or point to a complete assignment directory"
        )
    if _not_a_file(path, storage_options):
        raise AssignmentError(f"{path}: expected {what} in a file, found a directory; replace it with the file")
    with _fs.open_file(path, "rb", storage_options) as f:
        raw = f.read()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        line = getattr(err, "lineno", 1)
        raise AssignmentError(
            f"{path}: line {line}: expected valid JSON ({what}), found {err}; fix or regenerate the file"
        ) from err


def read_partition_meta(assign_dir: PathLike, *, storage_options: StorageOptions = None) -> PartitionMeta:
    """Read and validate ``ASSIGN/partition_meta.json``.

    Raises
    ------
    AssignmentError
        Missing file, invalid JSON, ``num_parts`` not a positive integer, a missing
        or non-string ``algo_name`` or ``version``; the message names the file.
    """
    path = _fs.join(assign_dir, META_NAME)
    obj = _load_json(path, storage_options, '{"algo_name", "num_parts", "version"}')
    if not isinstance(obj, dict):
        raise AssignmentError(f"{path}: line 1: expected a JSON object, found {type(obj).__name__}")
    num_parts = obj.get("num_parts")
    if not isinstance(num_parts, int) or isinstance(num_parts, bool) or num_parts < 1:
        raise AssignmentError(
            f'{path}: "num_parts": expected a positive integer, found {num_parts!r}; set it to the number of partitions'
        )
    algo = obj.get("algo_name")
    if not isinstance(algo, str) or not algo:
        raise AssignmentError(f'{path}: "algo_name": expected "random" or "metis", found {algo!r}')
    version = obj.get("version", "1.0.0")
    if not isinstance(version, str):
        raise AssignmentError(f'{path}: "version": expected "1.0.0", found {version!r}')
    sidecar = _sidecar_or_none(assign_dir, storage_options)
    method = sidecar.get("method") if sidecar else None
    return PartitionMeta(
        num_parts=num_parts, algo_name=algo, version=version, method=method if isinstance(method, str) else None
    )


def read_assignment_sidecar(assign_dir: PathLike, *, storage_options: StorageOptions = None) -> dict[str, Any] | None:
    """``dglc_partition.json`` as a dict (method, seed, options, files), or None if absent."""
    path = _fs.join(assign_dir, SIDECAR_NAME)
    if not _fs.exists(path, storage_options):
        return None
    obj = _load_json(path, storage_options, "the dgl_chunked assignment sidecar")
    return obj if isinstance(obj, dict) else None


def _sidecar_or_none(assign_dir: PathLike, storage_options: StorageOptions) -> dict[str, Any] | None:
    """The sidecar, or None (with a log line) when it is unreadable: it is optional."""
    try:
        return read_assignment_sidecar(assign_dir, storage_options=storage_options)
    except AssignmentError as err:
        logger.warning("ignoring the dgl_chunked sidecar: %s", err)
        return None


# --- reading <ntype>.txt ----------------------------------------------------------


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
        while block := f.read(_SCAN_BLOCK):
            n_nl = block.count(b"\n")
            if k < len(wanted) and wanted[k] <= lines + n_nl:
                newlines = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
                while k < len(wanted) and wanted[k] <= lines + n_nl:
                    found[wanted[k]] = pos + int(newlines[wanted[k] - lines - 1]) + 1
                    k += 1
            lines += n_nl
            pos += len(block)
            last = block[-1]
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
    """Dask kernel: read and parse the text lines of one output block (``stamp``, the
    file's size and mtime, only makes the task key change when the file does)."""
    i = block_info[None]["chunk-location"][0]
    lo, hi = block_info[None]["array-location"][0]
    with _fs.open_file(path, "rb", storage_options) as f:
        f.seek(offsets[i])
        data = f.read(offsets[i + 1] - offsets[i])
    return parse_assignment_block(data, rows=hi - lo, first_line=starts[i] + 1, num_parts=num_parts, path=path)


def default_chunks(n: int, target: int = _DEFAULT_CHUNK_ROWS) -> tuple[int, ...]:
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
        stamp=_file_stamp(path, storage_options),
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
    dirs = [p for p in paths.values() if _not_a_file(p, storage_options)]
    if dirs:
        raise AssignmentError(
            f"{dirs[0]}: expected a text file of partition IDs, found a directory; replace it with the <ntype>.txt file"
        )
    sidecar = _sidecar_or_none(assign_dir, storage_options)
    group = _fresh_zarr(
        assign_dir, sidecar if sidecar and sidecar.get("num_parts") == meta.num_parts else None, paths, storage_options
    )
    out: dict[str, da.Array] = {}
    for ntype in metadata.node_types:
        n = metadata.num_nodes(ntype)
        ch = _check_chunks(ntype, n, (chunks or {}).get(ntype))
        stored: Any = group.get(ntype) if group is not None else None
        if stored is not None and hasattr(stored, "dtype") and stored.shape == (n,):
            out[ntype] = _open_zarr(stored, ch, (paths[ntype], sidecar))
        else:
            out[ntype] = _open_text(paths[ntype], ntype, n, ch, meta.num_parts, storage_options)
    return meta, out


def _open_zarr(array: Any, chunks: tuple[int, ...], identity: Any) -> da.Array:
    import dask.array as da
    from dask.base import tokenize

    name = f"dglc-read-assignment-zarr-{tokenize(identity, chunks)}"
    return da.from_zarr(array, chunks=(chunks,), name=name)  # type: ignore[no-any-return]


def _file_stamp(path: str, storage_options: StorageOptions) -> list[Any]:
    fs, inner = _fs.filesystem(path, storage_options)
    info = fs.info(inner)
    mtime = info.get("mtime", info.get("LastModified", info.get("created")))
    return [int(info.get("size") or 0), str(mtime)]


def _fresh_zarr(
    assign_dir: PathLike, sidecar: dict[str, Any] | None, paths: Mapping[str, str], storage_options: StorageOptions
) -> zarr.Group | None:
    """The Zarr sidecar, if every text file still has the recorded size and mtime."""
    if not sidecar or not isinstance(sidecar.get("files"), dict):
        return None
    files = sidecar["files"]
    for ntype, path in paths.items():
        if files.get(ntype) != _file_stamp(path, storage_options):
            logger.info("%s changed since it was written; reading the text, not the Zarr copy", path)
            return None
    try:
        return _zarr_group(_fs.join(assign_dir, ZARR_NAME), "r", storage_options)
    except Exception:  # noqa: BLE001 - a broken optional cache falls back to the text
        logger.info("no usable Zarr sidecar in %s; reading the text files", assign_dir)
        return None


def _zarr_group(path: str, mode: str, storage_options: StorageOptions) -> zarr.Group:
    import zarr

    if _fs.is_url(path) and not path.startswith("file://"):
        return zarr.open_group(path, mode=mode, storage_options=storage_options)  # type: ignore[arg-type]
    fs, inner = _fs.filesystem(path, storage_options)
    return zarr.open_group(inner, mode=mode)  # type: ignore[arg-type]


# --- writing ------------------------------------------------------------------------


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
    zarr_path: str,
    ntype: str,
    start: int,
    num_parts: int,
    storage_options: StorageOptions,
) -> int:
    """Dask kernel: one block -> its text piece and its (chunk-aligned) Zarr region."""
    text = encode_assignment_block(values, num_parts=num_parts, start=start, ntype=ntype)
    with _fs.naming(text_path), _fs.open_file(text_path, "wb", storage_options) as f:
        f.write(text)
    with _fs.naming(zarr_path):
        target: Any = _zarr_group(zarr_path, "r+", storage_options)[ntype]
        target[start : start + len(values)] = np.asarray(values, np.int32)
    return len(values)


def _as_blocks(values: Any, ntype: str) -> da.Array:
    """A 1-D dask array with regular chunks (so every block owns whole Zarr chunks)."""
    import dask.array as da

    if not isinstance(values, da.Array):
        values = np.asarray(values)
        if values.ndim != 1:
            raise AssignmentError(f"parts[{ntype!r}]: expected a 1-D array, found shape {values.shape}")
        return da.from_array(values, chunks=max(1, min(values.shape[0], _DEFAULT_CHUNK_ROWS)))  # type: ignore[no-any-return]
    if values.ndim != 1:
        raise AssignmentError(f"parts[{ntype!r}]: expected a 1-D array, found shape {values.shape}")
    chunks = values.chunks[0]
    if len(set(chunks[:-1])) <= 1 and chunks[-1] <= chunks[0] and 0 < chunks[0] <= 8 * _DEFAULT_CHUNK_ROWS:
        return values
    return values.rechunk(max(1, min(values.shape[0], _DEFAULT_CHUNK_ROWS)))  # type: ignore[no-any-return]


ASSIGNMENT_KIND = "assignment"
"""The kind in an assignment directory's ownership marker (:mod:`dgl_chunked.storage.owned`)."""


def assignment_entries(assign_dir: str, ntypes: Iterable[str], storage_options: StorageOptions = None) -> list[str]:
    """Names dgl_chunked writes in an assignment directory (glob patterns).

    The node types of the assignment already there (its sidecar lists them) count
    too, so overwriting one with other node types is not refused.
    """
    names = [META_NAME, SIDECAR_NAME, ZARR_NAME, ".dglc-*", "*.tmp-dglc", "report.json", "dglc-*"]
    names += [f"{t}.txt" for t in ntypes]
    try:
        with _fs.open_file(_fs.join(assign_dir, SIDECAR_NAME), "rb", storage_options) as f:
            names += [f"{t}.txt" for t in json.load(f).get("files", {})]
    except (OSError, ValueError, AttributeError):
        pass
    return names


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

    Returns
    -------
    PartitionMeta
        What :func:`read_partition_meta` will return for the directory.

    Notes
    -----
    One Dask compute: every block (at most ~8M rows) is validated and formatted on a
    worker, which writes its text piece to ``ASSIGN/.dglc-tmp/`` and its region of the
    Zarr sidecar. The client then concatenates the pieces of each type, streaming,
    into ``<ntype>.txt.tmp-dglc`` and renames it; ``partition_meta.json`` is written
    last. An empty node type gives an empty file, which DGL v2.2.1 rejects. Do not
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
        return _write_assignment(out, parts, num_parts, algo_name, provenance, storage_options)


def _write_assignment(
    out: str,
    parts: Mapping[str, da.Array | npt.ArrayLike],
    num_parts: int,
    algo_name: str,
    provenance: Mapping[str, Any] | None,
    storage_options: StorageOptions,
) -> PartitionMeta:
    import dask

    zarr_path, tmp_dir = _fs.join(out, ZARR_NAME), _fs.join(out, ".dglc-tmp")
    with _fs.naming(zarr_path):
        group = _zarr_group(zarr_path, "w", storage_options)
    pieces: dict[str, list[str]] = {}
    tasks = []
    write = dask.delayed(_write_block, pure=False)
    run = run_token(out, num_parts, {t: getattr(v, "name", None) for t, v in parts.items()})
    for ntype, values in parts.items():
        arr = _as_blocks(values, ntype)
        n, chunk = int(arr.shape[0]), int(arr.chunks[0][0]) or 1
        with _fs.naming(zarr_path):
            group.create_array(
                ntype, shape=(n,), chunks=(chunk,), dtype=np.int32, fill_value=0, compressors=None, overwrite=True
            )
        starts = np.concatenate([[0], np.cumsum(arr.chunks[0])]).tolist()
        pieces[ntype] = [f"{tmp_dir}/{ntype}.{i}.txt" for i in range(arr.numblocks[0]) if arr.chunks[0][i]]
        # unoptimised: optimising each block apart would rename (and so rerun) a task
        # shared by all blocks, such as the lp driver
        blocks = arr.to_delayed(optimize_graph=False).ravel()
        tasks += [
            write(
                blocks[i],
                text_path=f"{tmp_dir}/{ntype}.{i}.txt",
                zarr_path=zarr_path,
                ntype=ntype,
                start=starts[i],
                num_parts=num_parts,
                storage_options=storage_options,
                dask_key_name=(f"dglc-write-assignment-{run}", ntype, i),
            )
            for i in range(arr.numblocks[0])
            if arr.chunks[0][i]
        ]
    create_owned_dir(tmp_dir, "assignment-tmp", storage_options=storage_options)
    try:
        dask.compute(*tasks)
        stamps = {t: _concatenate(out, t, pieces[t], storage_options) for t in parts}
    finally:
        remove_owned(tmp_dir, storage_options=storage_options)
    meta = PartitionMeta(num_parts=num_parts, algo_name=dgl_algo_name(algo_name), method=algo_name)
    _write_sidecar(out, meta, stamps, provenance, storage_options)
    _fs.atomic_write_bytes(
        _fs.join(out, META_NAME), json.dumps(meta.to_dict(), indent=4, sort_keys=True).encode(), storage_options
    )
    return meta


def _concatenate(out: str, ntype: str, pieces: list[str], storage_options: StorageOptions) -> list[Any]:
    """Stream the text pieces into ``<ntype>.txt`` (temp name, then rename); its stamp."""
    path = _fs.join(out, f"{ntype}.txt")
    fs, inner = _fs.filesystem(path, storage_options)
    with _fs.naming(path), fs.open(inner + ".tmp-dglc", "wb") as dst:
        for piece in pieces:
            with _fs.open_file(piece, "rb", storage_options) as src:
                while data := src.read(_SCAN_BLOCK):
                    dst.write(data)
    fs.mv(inner + ".tmp-dglc", inner)
    if not pieces:
        logger.warning("%s is empty (node type %r has no nodes); DGL v2.2.1 rejects empty files", path, ntype)
    return _file_stamp(path, storage_options)


def _write_sidecar(
    out: str,
    meta: PartitionMeta,
    stamps: dict[str, list[Any]],
    provenance: Mapping[str, Any] | None,
    storage_options: StorageOptions,
) -> None:
    body = {
        **dict(provenance or {}),
        "num_parts": meta.num_parts,
        "method": meta.method,
        "dgl_algo_name": meta.algo_name,
        "dgl_chunked_version": __version__,
        "format": "dglc-assignment",
        "format_version": 1,
        "files": stamps,
        "binary": ZARR_NAME,
        "token": hashlib.sha256(json.dumps(stamps, sort_keys=True).encode()).hexdigest()[:16],
    }
    _fs.atomic_write_bytes(
        _fs.join(out, SIDECAR_NAME), json.dumps(body, indent=2, sort_keys=True, default=str).encode(), storage_options
    )


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
