"""Source objects of the ``chunk`` spec: model and parsing (problems go to an ``errors.Problems``).

A source (an edge ``source``, a node type's ``key``, each feature) is an object
like ``{"path": "edges/*.parquet", "columns": ["src", "dst"]}`` or a plain path
string; see :mod:`dgl_chunked.chunk` for the keys. Parsing expands globs and
directories but opens no data file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import MISSING, Problems
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.metadata import is_count
from dgl_chunked.io.formats import format_of_path, formats_with, get_format
from dgl_chunked.io.formats.registry import Role as FormatRole
from dgl_chunked.storage import fs as _fs

__all__ = ["SourceSpec", "json_key", "parse_source", "unknown_keys"]

Role = Literal["edges", "features", "key"]

_FORMAT_ROLES: Mapping[Role, FormatRole] = {"edges": "raw_edges", "features": "raw_features", "key": "raw_keys"}
_COMMON = frozenset({"format", "path"})
_ROLE_KEYS: Mapping[Role, frozenset[str]] = {
    "edges": frozenset({"layout", "delimiter", "header", "columns"}),
    "features": frozenset({"columns", "column", "dtype"}),
    "key": frozenset({"delimiter", "header", "column"}),
}
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class SourceSpec:
    """One raw input: files of one format plus how to read them.

    ``format`` names a registered format with a raw role
    (:mod:`dgl_chunked.io.formats`; ``tsv`` becomes csv with a tab); ``paths`` are resolved and expanded, read in order;
    ``columns`` selects (source, destination) for edges, or the columns of a
    feature; ``dtype`` is a feature's output dtype (None: keep); ``where`` is the
    JSON path used in error messages.
    """

    format: str
    paths: tuple[str, ...]
    where: str
    delimiter: str = ","
    header: bool = False
    columns: tuple[str | int, ...] | None = None
    layout: str | None = None
    dtype: np.dtype[Any] | None = None


def json_key(parent: str, key: str) -> str:
    """``parent["key"]`` (or ``key`` at the top level)."""
    return f'{parent}["{key}"]' if parent else key


def unknown_keys(obj: Mapping[str, Any], allowed: frozenset[str], where: str, errs: Problems) -> None:
    """Report every key of ``obj`` not in ``allowed`` (typos must not be ignored)."""
    for key in obj:
        if key not in allowed:
            errs.add(
                f"{where}.{key}" if where else key, f"one of the keys {sorted(allowed)}", key, "remove or rename it"
            )


# --- sources -----------------------------------------------------------------------


def _expand(entry: str, base_dir: str, storage_options: StorageOptions) -> list[str]:
    """Resolve one path entry; globs and directories expand in sorted order."""
    path = _fs.join(base_dir, entry)
    fs, inner = _fs.filesystem(path, storage_options)
    glob = bool(_GLOB_CHARS & set(entry))
    if glob or entry.endswith("/") or fs.isdir(inner):
        return _fs.list_files(path, storage_options, glob=glob)
    return [path]


def _format_of(value: Mapping[str, Any], paths: list[str], role: Role, where: str, errs: Problems) -> str | None:
    names = formats_with(_FORMAT_ROLES[role])
    fmt = value.get("format")
    if fmt is None and paths:  # a raw-input format of any role, so a wrong role is named
        fmt = next(filter(None, (format_of_path(paths[0], r) for r in _FORMAT_ROLES.values())), None)
        if fmt is None:
            errs.add(
                f"{where}.format",
                f"one of {list(names)}",
                MISSING,
                f"the extension of {paths[0]!r} does not tell; add a format key",
            )
            return None
    if fmt not in names:
        errs.add(f"{where}.format", f"one of {list(names)} for {role}", fmt)
        return None
    return str(fmt)


def _columns(value: Mapping[str, Any], role: Role, where: str, errs: Problems) -> tuple[str | int, ...] | None:
    if "column" in value and "columns" in value:
        errs.add(where, "either 'column' or 'columns'", sorted(value), "keep one")
        return None
    raw = [value["column"]] if "column" in value else value.get("columns")
    if raw is None:
        return None
    name = "column" if "column" in value else "columns"
    ok = isinstance(raw, list) and raw and all((isinstance(c, str) and c) or (is_count(c)) for c in raw)
    if not ok:
        errs.add(f"{where}.{name}", "column names or 0-based column indices", raw)
        return None
    if role == "edges" and len(raw) != 2:
        errs.add(f"{where}.columns", "2 columns: [source, destination]", raw)
        return None
    return tuple(raw)


def _dtype(value: Any, where: str, errs: Problems) -> np.dtype[Any] | None:
    if value is None:
        return None
    dtype: np.dtype[Any] | None
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    allowed = sorted(str(d) for d in _formats.FEATURE_DTYPES)
    if dtype is None or dtype not in _formats.FEATURE_DTYPES or not isinstance(value, str):
        errs.add(f"{where}.dtype", f"a dtype DGL can load, one of {allowed}", value)
        return None
    return dtype


def _paths(value: Mapping[str, Any], where: str, ctx: tuple[str, StorageOptions], errs: Problems) -> list[str] | None:
    raw = value.get("path", MISSING)
    entries = [raw] if isinstance(raw, str) else raw
    if not isinstance(entries, list) or not entries or not all(isinstance(p, str) and p for p in entries):
        errs.add(f"{where}.path", "a file path, glob or directory (or a list of them)", raw)
        return None
    paths = []
    for entry in entries:
        found = _expand(entry, *ctx)
        if not found:
            errs.add(f"{where}.path", "a glob or directory matching at least one file", entry)
        paths.extend(found)
    return paths


def parse_source(
    value: Any, role: Role, where: str, ctx: tuple[str, StorageOptions], errs: Problems
) -> SourceSpec | None:
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, dict):
        errs.add(where, 'an object like {"path": "x.npy"} (or a path string)', value)
        return None
    paths = _paths(value, where, ctx, errs)
    fmt = _format_of(value, paths or [], role, where, errs) if paths is not None else None
    if fmt is None or paths is None:
        return None
    file_format = get_format(fmt)
    allowed = _COMMON | (file_format.raw_options & _ROLE_KEYS[role]) | (_ROLE_KEYS[role] & {"dtype"})
    unknown_keys(value, allowed, where, errs)
    delimiter = value.get("delimiter", file_format.delimiter)
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        errs.add(f"{where}.delimiter", "a single character", delimiter)
    header = value.get("header", False)
    if not isinstance(header, bool):
        errs.add(f"{where}.header", "true or false", header)
    layout = value.get("layout")
    if layout is not None and layout not in ("2xE", "Ex2"):
        errs.add(f"{where}.layout", "'2xE' (shape (2, E)) or 'Ex2' (shape (E, 2))", layout)
    columns = _columns(value, role, where, errs)
    if file_format.kind == "table" and columns and not all(isinstance(c, str) for c in columns):
        errs.add(f"{where}.columns", f"{file_format.title} column names", list(columns))
    return SourceSpec(
        format=file_format.reads_as,
        paths=tuple(paths),
        where=where,
        delimiter=str(delimiter),
        header=bool(header),
        columns=columns,
        layout=layout if isinstance(layout, str) else None,
        dtype=_dtype(value.get("dtype"), where, errs),
    )
