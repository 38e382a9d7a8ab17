"""Finding and reading ParMETIS output files: the files a user names (files, globs,
directories of ``p<rank>-<name>_nodes.txt``, or DGL's ``<ntype>.txt`` directory) and
line-aligned byte pieces of them, parsed by :func:`.format.parse_output_piece`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from dgl_chunked._typing import IdArray, PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.assignment import META_NAME
from dgl_chunked.parmetis.format import line_starts, parse_output_piece
from dgl_chunked.storage import fs as _fs

__all__ = [
    "OutputPiece",
    "count_piece_lines",
    "first_line_columns",
    "rank_files",
    "read_output_partition",
    "resolve_outputs",
]

_RANK_FILE = re.compile(r"p(\d+)-(.+)_nodes\.txt")


def first_line_columns(path: str, storage_options: StorageOptions = None) -> int:
    """Number of whitespace-separated fields on the first non-blank line (0 if none)."""
    with _fs.open_file(path, "rb", storage_options) as f:
        pending = b""
        while piece := f.read(1 << 16):
            pending += piece
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    return len(line.split())
        return len(pending.split())


@dataclass(frozen=True, kw_only=True)
class OutputPiece:
    """Whole lines ``[start, stop)`` (bytes) of output file number ``file``."""

    path: str
    file: int
    start: int
    stop: int
    first_line: int
    ncols: int
    form: Literal["nodes", "gnid"]
    storage_options: StorageOptions = None


def _read_range(path: str, start: int, stop: int, storage_options: StorageOptions) -> bytes:
    with _fs.open_file(path, "rb", storage_options) as f:
        f.seek(start)
        return f.read(stop - start)  # type: ignore[no-any-return]


def count_piece_lines(path: str, start: int, stop: int, storage_options: StorageOptions) -> tuple[int, int]:
    return line_starts(_read_range(path, max(start - 1, 0), stop, storage_options), start=start)


def read_output_partition(piece: OutputPiece, *, type_offsets: IdArray, num_parts: int) -> pd.DataFrame:
    """One piece of an output file -> ``orig_nid``, ``part_id``, ``file``, ``line``."""
    data = _read_range(piece.path, piece.start, piece.stop, piece.storage_options)
    parsed = parse_output_piece(
        data,
        path=piece.path,
        first_line=piece.first_line,
        ncols=piece.ncols,
        form=piece.form,
        type_offsets=type_offsets,
        num_parts=num_parts,
    )
    return pd.DataFrame(
        {
            "orig_nid": parsed.orig_nid,
            "part_id": parsed.part_id,
            "file": np.full(len(parsed.line), piece.file, np.int32),
            "line": parsed.line,
        }
    )


def _listing(path: str, storage_options: StorageOptions, pattern: bool) -> list[str]:
    fs, inner = _fs.filesystem(path, storage_options)
    found = sorted(fs.glob(inner)) if pattern else sorted(fs.ls(inner, detail=False))
    return [fs.unstrip_protocol(f) if _fs.is_url(path) else f for f in found]


def rank_files(directory: str, name: str | None, storage_options: StorageOptions) -> list[str]:
    ranked = []
    for path in _listing(directory, storage_options, pattern=False):
        m = _RANK_FILE.fullmatch(path.rstrip("/").rsplit("/", 1)[-1])
        if m and (name is None or m.group(2) == name):
            ranked.append((int(m.group(1)), path))
    if not ranked:
        want = f"p<rank>-{name or '<name>'}_nodes.txt"
        raise AssignmentError(
            f"{directory}: expected ParMETIS output files {want}, found none; "
            "pass the files themselves or the right --name"
        )
    return [p for _, p in sorted(ranked)]


def resolve_outputs(
    spec: PathLike | Sequence[PathLike], name: str | None, storage_options: StorageOptions
) -> list[str] | str:
    """Output files in order, or the path of a DGL ``<ntype>.txt`` assignment directory."""
    items = [os.fspath(spec)] if isinstance(spec, (str, os.PathLike)) else [os.fspath(s) for s in spec]
    if not items:
        raise AssignmentError("parmetis_output: expected at least one file, directory or glob, found none")
    files: list[str] = []
    for item in items:
        fs, inner = _fs.filesystem(item, storage_options)
        if any(ch in item for ch in "*?["):
            matches = [m for m in _listing(item, storage_options, pattern=True) if not fs.isdir(m)]
            if not matches:
                raise AssignmentError(f"{item}: expected ParMETIS output files, found no match for the pattern")
            files += matches
        elif fs.isdir(inner):
            if fs.exists(f"{inner.rstrip('/')}/{META_NAME}"):
                if len(items) > 1:
                    raise AssignmentError(
                        f"{item}: an assignment directory (it has {META_NAME}) must be the only ParMETIS output given"
                    )
                return item
            files += rank_files(item, name, storage_options)
        elif fs.exists(inner):
            files.append(item)
        else:
            raise AssignmentError(f"{item}: expected a ParMETIS output file, directory or glob, found no such path")
    return files
