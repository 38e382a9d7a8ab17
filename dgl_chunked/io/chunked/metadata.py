"""The input model: ``metadata.json`` of the Chunked Graph Format.

This is the only module that touches the raw JSON. :func:`parse_metadata` turns it
into a frozen :class:`ChunkedGraphMetadata`, checking everything that can be
checked without opening a chunk file, and raises one :class:`MetadataError` that
lists every problem (also in ``err.problems``), each with its JSON path, what was
expected, what was found and how to fix it.

Layout (as written by DGL's ``tools/chunk_graph.py``; names are conventions)::

    IN_DIR/
      metadata.json
      edge_index/<src:rel:dst><i>.txt        CSV "src dst" rows, per-type node IDs
      node_data/<ntype>/<feat>-<i>.npy       rows = per-type node IDs, in file order
      edge_data/<src:rel:dst>/<feat>-<i>.npy rows = per-type edge IDs, in file order

Keys (spec section 4.1)::

    {
      "graph_name": "tiny",
      "node_type": ["author", "paper"],            # order = node type IDs
      "num_nodes_per_type": [12, 15],              # or derived from ...
      "num_nodes_per_chunk": [[6, 6], [8, 7]],     # ... this legacy key
      "edge_type": ["author:writes:paper"],        # canonical "src:rel:dst"
      "num_edges_per_type": [25],                  # optional
      "num_edges_per_chunk": [[13, 12]],           # optional, one count per file
      "edges": {"author:writes:paper": {"format": {"name": "csv", "delimiter": " "},
                                        "data": ["edge_index/author:writes:paper0.txt"]}},
      "node_data": {"paper": {"feat": {"format": {"name": "numpy"}, "data": ["..."]}}},
      "edge_data": {"author:writes:paper": {"year": {"format": {...}, "data": [...]}}}
    }

Paths are absolute, URLs, or relative to the folder holding ``metadata.json``. As
an extension for Spark-style outputs, a ``data`` entry may be a glob
(``"edges/part-*.parquet"``), and ``data`` may be one string naming a glob or a
directory (names starting with ``_`` or ``.``, such as ``_SUCCESS``, are skipped);
both expand in sorted order when the metadata is parsed. When neither
``num_edges_per_type`` nor ``num_edges_per_chunk`` is given, edge counts come from
the files (:meth:`dgl_chunked.io.chunked.graph.ChunkedGraph.edge_chunks`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from dgl_chunked._typing import IdArray, PathLike, StorageOptions
from dgl_chunked.errors import DglChunkedError, MetadataError, UnknownNameError
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.storage import fs as _fs

__all__ = [
    "ArraySource",
    "EdgeTypeSpec",
    "ChunkedGraphMetadata",
    "parse_metadata",
    "read_metadata",
]

_GLOB_CHARS = frozenset("*?[")


class _Missing:
    def __repr__(self) -> str:
        return "nothing (key missing)"


_MISSING = _Missing()


@dataclass(frozen=True, kw_only=True)
class ArraySource:
    """One ``{"format": {...}, "data": [...]}`` object with resolved paths.

    ``where`` is its JSON path, e.g. ``edges["author:writes:paper"]``.
    """

    format: str
    paths: tuple[str, ...]
    options: Mapping[str, Any]
    where: str


@dataclass(frozen=True, kw_only=True)
class EdgeTypeSpec:
    """A canonical edge type ``"src:rel:dst"`` split into its parts."""

    name: str
    src_type: str
    rel: str
    dst_type: str


@dataclass(frozen=True, kw_only=True)
class ChunkedGraphMetadata:
    """A parsed, consistent ``metadata.json`` (see the module docstring).

    ``num_edges_per_type`` is None only when neither edge-count key was given;
    ``num_edges_per_chunk`` is None unless given (or derivable without I/O, when
    every edge type has at most one file).
    """

    graph_name: str
    node_types: tuple[str, ...]
    num_nodes_per_type: tuple[int, ...]
    num_nodes_per_chunk: tuple[tuple[int, ...], ...] | None
    edge_types: tuple[EdgeTypeSpec, ...]
    num_edges_per_type: tuple[int, ...] | None
    num_edges_per_chunk: tuple[tuple[int, ...], ...] | None
    edges: Mapping[str, ArraySource]
    node_data: Mapping[str, Mapping[str, ArraySource]]
    edge_data: Mapping[str, Mapping[str, ArraySource]]
    base_dir: str

    @property
    def edge_type_names(self) -> tuple[str, ...]:
        """Canonical edge type strings in edge type ID order."""
        return tuple(e.name for e in self.edge_types)

    def ntype_id(self, ntype: str) -> int:
        """Node type ID (position in ``node_type``)."""
        try:
            return self.node_types.index(ntype)
        except ValueError:
            raise UnknownNameError(f"unknown node type {ntype!r}; expected one of {list(self.node_types)}") from None

    def etype_id(self, etype: str) -> int:
        """Edge type ID of a canonical edge type (position in ``edge_type``)."""
        try:
            return self.edge_type_names.index(etype)
        except ValueError:
            raise UnknownNameError(
                f"unknown edge type {etype!r}; expected one of {list(self.edge_type_names)}"
            ) from None

    def etype(self, etype: str) -> EdgeTypeSpec:
        """The :class:`EdgeTypeSpec` of a canonical edge type string."""
        return self.edge_types[self.etype_id(etype)]

    def misfit_feature_files(self, kind: str, type_name: str, paths: Sequence[str], rows: Sequence[int]) -> str:
        """Which feature files disagree with the per-chunk counts, as a message suffix.

        Only when metadata gives ``num_nodes_per_chunk`` (``kind="node"``) or
        ``num_edges_per_chunk`` (``kind="edge"``) and the feature has one file per
        chunk; otherwise, and when every file agrees, the empty string.

        >>> meta = parse_metadata({"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[2, 3]],
        ...     "edge_type": [], "edges": {}, "node_data": {}, "edge_data": {}}, base_dir="/in")
        >>> meta.misfit_feature_files("node", "n", ["/in/f0.npy", "/in/f1.npy"], [2, 4])
        "; file '/in/f1.npy' has 4 rows, num_nodes_per_chunk[0][1] says 3"
        """
        if kind == "node":
            key, table, i = "num_nodes_per_chunk", self.num_nodes_per_chunk, self.ntype_id(type_name)
        else:
            key, table, i = "num_edges_per_chunk", self.num_edges_per_chunk, self.etype_id(type_name)
        if table is None or len(table[i]) != len(paths):
            return ""
        found = [
            f"file {path!r} has {n} rows, {key}[{i}][{k}] says {want}"
            for k, (path, n, want) in enumerate(zip(paths, rows, table[i], strict=True))
            if n != want
        ]
        return "; " + "; ".join(found) if found else ""

    def num_nodes(self, ntype: str) -> int:
        """Number of nodes of ``ntype``."""
        return self.num_nodes_per_type[self.ntype_id(ntype)]

    def num_edges(self, etype: str) -> int:
        """Number of edges of ``etype``; MetadataError if only the files know it."""
        if self.num_edges_per_type is None:
            raise MetadataError(
                "num_edges_per_type: expected edge counts, found none in metadata.json; "
                "use ChunkedGraph.num_edges(), which counts the files"
            )
        return self.num_edges_per_type[self.etype_id(etype)]

    @cached_property
    def node_type_offsets(self) -> IdArray:
        """``orig_nid`` of the first node of each type, int64 ``[T + 1]``."""
        return np.concatenate([[0], np.cumsum(self.num_nodes_per_type, dtype=np.int64)]).astype(np.int64)

    @cached_property
    def edge_type_offsets(self) -> IdArray:
        """``orig_eid`` of the first edge of each type, int64 ``[E + 1]`` (needs counts)."""
        counts = [self.num_edges(e) for e in self.edge_type_names]
        return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)

    def with_edge_counts(self, per_chunk: Mapping[str, tuple[int, ...]]) -> ChunkedGraphMetadata:
        """A copy with ``num_edges_per_chunk``/``num_edges_per_type`` filled in."""
        chunks = tuple(tuple(int(c) for c in per_chunk[e]) for e in self.edge_type_names)
        return replace(
            self,
            num_edges_per_chunk=chunks,
            num_edges_per_type=tuple(sum(c) for c in chunks),
        )

    def to_dict(self, *, relative: bool = True) -> dict[str, Any]:
        """JSON-able dict that :func:`parse_metadata` turns back into an equal object.

        Keys are emitted in a fixed order; paths under ``base_dir`` become relative
        unless ``relative=False``.
        """

        def source(src: ArraySource) -> dict[str, Any]:
            paths = [_relpath(p, self.base_dir) if relative else p for p in src.paths]
            return {"format": {"name": src.format, **src.options}, "data": paths}

        out: dict[str, Any] = {
            "graph_name": self.graph_name,
            "node_type": list(self.node_types),
        }
        out["num_nodes_per_type"] = list(self.num_nodes_per_type)
        if self.num_nodes_per_chunk is not None:
            out["num_nodes_per_chunk"] = [list(c) for c in self.num_nodes_per_chunk]
        out["edge_type"] = list(self.edge_type_names)
        if self.num_edges_per_type is not None:
            out["num_edges_per_type"] = list(self.num_edges_per_type)
        if self.num_edges_per_chunk is not None:
            out["num_edges_per_chunk"] = [list(c) for c in self.num_edges_per_chunk]
        out["edges"] = {e: source(s) for e, s in self.edges.items()}
        for key, data in (("node_data", self.node_data), ("edge_data", self.edge_data)):
            out[key] = {t: {f: source(s) for f, s in feats.items()} for t, feats in data.items()}
        return out

    def fingerprint(self) -> str:
        """SHA-256 of the canonical JSON (absolute paths): equal metadata, equal hash."""
        text = json.dumps(self.to_dict(relative=False), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _relpath(path: str, base: str) -> str:
    sep = "/" if _fs.is_url(base) else os.sep
    prefix = base.rstrip(sep) + sep
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else path


# --- parsing -------------------------------------------------------------------


class _Problems:
    """Collects ``where: expected ..., found ...; fix`` messages."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, expected: str, found: Any, fix: str = "") -> None:
        text = repr(found)
        text = text if len(text) <= 80 else text[:77] + "..."
        self.items.append(f"{where}: expected {expected}, found {text}" + (f"; {fix}" if fix else ""))

    def error(self) -> MetadataError:
        if len(self.items) == 1:
            err = MetadataError(self.items[0])
        else:
            lines = "\n".join(f"  - {p}" for p in self.items)
            err = MetadataError(f"{len(self.items)} problems in metadata.json:\n{lines}")
        err.problems = list(self.items)  # type: ignore[attr-defined]
        return err


def _key(parent: str, key: str | int) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else f'{parent}["{key}"]'


def _str_list(data: Mapping[str, Any], key: str, errs: _Problems) -> list[str] | None:
    value = data.get(key)
    if value is None:
        errs.add(key, "a list of names", _MISSING, f"add the {key!r} key")
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errs.add(key, "a list of non-empty strings", value)
        return None
    for dup in sorted({v for v in value if value.count(v) > 1}):
        errs.add(key, "unique names", dup, "each type may appear once")
    return value


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _counts(data: Mapping[str, Any], key: str, n: int, errs: _Problems) -> tuple[int, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(_count(v) for v in value) or len(value) != n:
        errs.add(key, f"a list of {n} non-negative integers (one per type)", value)
        return None
    return tuple(value)


def _nested_counts(
    data: Mapping[str, Any], key: str, names: tuple[str, ...], errs: _Problems
) -> tuple[tuple[int, ...], ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != len(names):
        errs.add(key, f"a list of {len(names)} lists (one per type)", value)
        return None
    bad = [i for i, v in enumerate(value) if not isinstance(v, list) or not all(_count(c) for c in v)]
    for i in bad:
        errs.add(_key(key, i), f"a list of non-negative integers for {names[i]!r}", value[i])
    return None if bad else tuple(tuple(v) for v in value)


def _reconcile(
    per_type: tuple[int, ...] | None,
    per_chunk: tuple[tuple[int, ...], ...] | None,
    names: tuple[str, ...],
    kind: str,
    errs: _Problems,
) -> tuple[int, ...] | None:
    if per_chunk is None:
        return per_type
    sums = tuple(sum(c) for c in per_chunk)
    for i, (a, b) in enumerate(zip(per_type or sums, sums, strict=True)):
        if a != b:
            errs.add(
                f"num_{kind}_per_chunk[{i}]",
                f"chunk counts summing to num_{kind}_per_type[{i}] = {a} ({names[i]!r})",
                list(per_chunk[i]),
                "make the two keys agree",
            )
    return per_type or sums


def _parse_nodes(
    data: Mapping[str, Any], errs: _Problems
) -> tuple[tuple[str, ...] | None, tuple[int, ...] | None, tuple[tuple[int, ...], ...] | None]:
    """Node types (None if unusable), counts per type and per chunk."""
    names = _str_list(data, "node_type", errs)
    if names is None:
        return None, None, None
    ntypes = tuple(names)
    for i, name in enumerate(ntypes):
        if ":" in name or "/" in name:
            errs.add(_key("node_type", i), "a name without ':' or '/'", name)
    per_type = _counts(data, "num_nodes_per_type", len(ntypes), errs)
    per_chunk = _nested_counts(data, "num_nodes_per_chunk", ntypes, errs)
    if "num_nodes_per_type" not in data and "num_nodes_per_chunk" not in data:
        errs.add(
            "num_nodes_per_type",
            "node counts per type",
            _MISSING,
            "add num_nodes_per_type",
        )
    return ntypes, _reconcile(per_type, per_chunk, ntypes, "nodes", errs), per_chunk


def _parse_edge_types(
    names: tuple[str, ...], ntypes: tuple[str, ...] | None, errs: _Problems
) -> tuple[EdgeTypeSpec, ...]:
    """Specs of the valid names; invalid names are reported (and still used as keys
    by the other checks, so one bad name gives one message)."""
    specs = []
    for i, name in enumerate(names):
        parts = name.split(":")
        if len(parts) != 3 or not all(parts) or "/" in name:
            errs.add(_key("edge_type", i), "a canonical 'src:rel:dst' type without '/'", name)
            continue
        for end in (parts[0], parts[2]):
            if ntypes is not None and end not in ntypes:
                errs.add(
                    _key("edge_type", i),
                    f"end types among node_type {list(ntypes)}",
                    end,
                )
        specs.append(EdgeTypeSpec(name=name, src_type=parts[0], rel=parts[1], dst_type=parts[2]))
    return tuple(specs)


def _expand(
    entry: str,
    base_dir: str,
    storage_options: StorageOptions,
    where: str,
    errs: _Problems,
) -> list[str]:
    path = _fs.join(base_dir, entry)
    if not _GLOB_CHARS & set(entry) and not entry.endswith("/"):
        return [path]
    fs, inner = _fs.filesystem(path, storage_options)
    try:  # one listing call; detail=True avoids a stat per file on object stores
        if _GLOB_CHARS & set(entry):
            infos = list(fs.glob(inner, detail=True).values())
        else:
            infos = fs.ls(inner.rstrip("/"), detail=True)
    except (FileNotFoundError, NotADirectoryError):
        infos = []
    names = [i["name"] for i in infos if i.get("type") == "file"]
    found = sorted(p for p in names if not posixpath.basename(p).startswith(("_", ".")))
    if not found:
        errs.add(
            where,
            "a glob or directory matching at least one file",
            entry,
            "fix the pattern",
        )
    return [fs.unstrip_protocol(p) for p in found] if _fs.is_url(path) else found


def _parse_source(
    value: Any,
    where: str,
    role: str,
    base_dir: str,
    storage_options: StorageOptions,
    errs: _Problems,
) -> ArraySource | None:
    fmt = value.get("format") if isinstance(value, dict) else None
    if not isinstance(fmt, dict) or not isinstance(fmt.get("name"), str):
        errs.add(f"{where}.format", 'an object like {"name": "csv", "delimiter": " "}', fmt)
        return None
    data = value.get("data")
    if isinstance(data, str):
        data = [data if _GLOB_CHARS & set(data) else data.rstrip("/") + "/"]
    if not isinstance(data, list) or not all(isinstance(p, str) and p for p in data):
        errs.add(f"{where}.data", "a list of file paths", data)
        return None
    try:
        opts = {k: v for k, v in fmt.items() if k != "name"}
        options = _formats.normalize_options(fmt["name"], opts, role=role, where=where)  # type: ignore[arg-type]
    except DglChunkedError as err:
        errs.items.append(str(err))
        return None
    paths = [
        p for i, e in enumerate(data) for p in _expand(e, base_dir, storage_options, _key(f"{where}.data", i), errs)
    ]
    return ArraySource(format=fmt["name"], paths=tuple(paths), options=options, where=where)


def _parse_edges(
    data: Mapping[str, Any],
    etypes: tuple[str, ...],
    ctx: tuple[str, StorageOptions],
    errs: _Problems,
) -> dict[str, ArraySource]:
    value = data.get("edges")
    if not isinstance(value, dict):
        errs.add(
            "edges",
            "an object mapping each edge_type to its files",
            value,
            "add the 'edges' key",
        )
        return {}
    out = {}
    for key in value:
        if key not in etypes:
            errs.add(_key("edges", key), f"a key listed in edge_type {list(etypes)}", key)
    for etype in etypes:
        if etype not in value:
            errs.add(
                _key("edges", etype),
                "an entry for every edge_type",
                _MISSING,
                'use "data": [] for an empty type',
            )
            continue
        src = _parse_source(value[etype], _key("edges", etype), "edges", *ctx, errs)
        if src is not None:
            out[etype] = src
    return out


def _parse_features(
    data: Mapping[str, Any],
    key: str,
    types: tuple[str, ...] | None,
    ctx: tuple[str, StorageOptions],
    errs: _Problems,
) -> dict[str, dict[str, ArraySource]]:
    value = data.get(key, None)
    if not isinstance(value, dict):
        found = value if key in data else _MISSING
        errs.add(
            key,
            "an object (may be {}) mapping types to features",
            found,
            f'DGL needs it: add "{key}": {{}}',
        )
        return {}
    out: dict[str, dict[str, ArraySource]] = {}
    for tname, feats in value.items():
        where = _key(key, tname)
        if types is not None and tname not in types:
            listing = "node_type" if key == "node_data" else "edge_type (canonical 'src:rel:dst')"
            errs.add(where, f"a type listed in {listing} {list(types)}", tname)
            continue
        if not isinstance(feats, dict):
            errs.add(where, "an object mapping feature names to files", feats)
            continue
        for feat, spec in feats.items():
            if not feat or "/" in feat:
                errs.add(_key(where, feat), "a non-empty feature name without '/'", feat)
                continue
            src = _parse_source(spec, _key(where, feat), "features", *ctx, errs)
            if src is not None:
                out.setdefault(tname, {})[feat] = src
    return out


def _edge_counts(
    data: Mapping[str, Any],
    etypes: tuple[str, ...],
    edges: Mapping[str, ArraySource],
    errs: _Problems,
) -> tuple[tuple[int, ...] | None, tuple[tuple[int, ...], ...] | None]:
    per_type = _counts(data, "num_edges_per_type", len(etypes), errs)
    per_chunk = _nested_counts(data, "num_edges_per_chunk", etypes, errs)
    for i, etype in enumerate(etypes):
        src = edges.get(etype)
        if per_chunk is not None and src is not None and len(per_chunk[i]) != len(src.paths):
            errs.add(
                _key("num_edges_per_chunk", i),
                f"{len(src.paths)} counts, one per file of {_key('edges', etype)}.data",
                list(per_chunk[i]),
                "the two lists must have the same length",
            )
        if per_type is not None and src is not None and not src.paths and per_type[i]:
            errs.add(_key("edges", etype) + ".data", f"files for {per_type[i]} edges", [])
    per_type = _reconcile(per_type, per_chunk, etypes, "edges", errs)
    single = len(edges) == len(etypes) and all(len(s.paths) <= 1 for s in edges.values())
    if per_chunk is None and per_type is not None and single:
        # one file (or none) per type: its count is the type's count, no I/O needed
        per_chunk = tuple((n,) if edges[e].paths else () for e, n in zip(etypes, per_type, strict=True))
    return per_type, per_chunk


def parse_metadata(data: object, *, base_dir: str, storage_options: StorageOptions = None) -> ChunkedGraphMetadata:
    """Validate a decoded ``metadata.json`` object and build the model.

    Parameters
    ----------
    data
        The decoded JSON document.
    base_dir
        Folder (local path or URL) that relative paths are resolved against.
    storage_options
        fsspec options, used only to expand glob or directory ``data`` entries.

    Raises
    ------
    MetadataError
        Listing every problem found (``err.problems``), each with its JSON path.
    """
    if not isinstance(data, dict):
        raise MetadataError(f"metadata.json: expected a JSON object at the top level, found {type(data).__name__}")
    errs = _Problems()
    base_dir = base_dir if _fs.is_url(base_dir) else os.path.abspath(base_dir)
    graph_name = data.get("graph_name")
    if not isinstance(graph_name, str):
        errs.add("graph_name", "a string", graph_name if "graph_name" in data else _MISSING)
    ntypes, num_nodes, per_chunk = _parse_nodes(data, errs)
    raw_etypes = _str_list(data, "edge_type", errs)
    etypes = tuple(raw_etypes or ())
    edge_types = _parse_edge_types(etypes, ntypes, errs)
    ctx = (base_dir, storage_options)
    edges: dict[str, ArraySource] = {}
    num_edges, edge_chunks = None, None
    if raw_etypes is not None:  # else every edge check would repeat the problem
        edges = _parse_edges(data, etypes, ctx, errs)
        num_edges, edge_chunks = _edge_counts(data, etypes, edges, errs)
    node_data = _parse_features(data, "node_data", ntypes, ctx, errs)
    edge_data = _parse_features(data, "edge_data", etypes if raw_etypes is not None else None, ctx, errs)
    if errs.items:
        raise errs.error()
    return ChunkedGraphMetadata(
        graph_name=str(graph_name),
        node_types=ntypes or (),
        num_nodes_per_type=num_nodes or (),
        num_nodes_per_chunk=per_chunk,
        edge_types=edge_types,
        num_edges_per_type=num_edges,
        num_edges_per_chunk=edge_chunks,
        edges=edges,
        node_data=node_data,
        edge_data=edge_data,
        base_dir=base_dir,
    )


def read_metadata(
    path: PathLike,
    *,
    storage_options: StorageOptions = None,
    metadata_filename: str = "metadata.json",
) -> ChunkedGraphMetadata:
    """Read and parse ``metadata.json``.

    Parameters
    ----------
    path
        The input directory, or the JSON file itself; local path or fsspec URL.
    storage_options
        fsspec options for URLs.
    metadata_filename
        File name inside ``path`` when ``path`` is a directory.

    Raises
    ------
    MetadataError
        Missing or invalid JSON, or any inconsistency (see :func:`parse_metadata`).

    Examples
    --------
    >>> meta = read_metadata("tests/golden/tiny-pipeline/chunked")  # doctest: +SKIP
    >>> meta.node_types, meta.num_nodes_per_type  # doctest: +SKIP
    (('author', 'institution', 'paper'), (12, 5, 15))
    """
    path = os.fspath(path)
    fs, inner = _fs.filesystem(path, storage_options)
    file = path if fs.isfile(inner) else _fs.join(path, metadata_filename)
    try:
        with _fs.open_file(file, "rb", storage_options) as f:
            raw = f.read()
    except (FileNotFoundError, IsADirectoryError) as err:
        raise MetadataError(
            f"{file}: expected a metadata file, found nothing; pass the input directory or "
            "set metadata_filename / --metadata-filename"
        ) from err
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise MetadataError(f"{file}: expected valid JSON, found a syntax error ({err}); fix the file") from err
    return parse_metadata(data, base_dir=_fs.parent(file), storage_options=storage_options)
