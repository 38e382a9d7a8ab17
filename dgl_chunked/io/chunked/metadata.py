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

Keys (``docs/spec/chunked-format.md``, "Keys")::

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

import json
import os
from collections.abc import Mapping
from typing import Any

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import MISSING, DglChunkedError, MetadataError, Problems
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.entry_keys import is_count, note_ignored_options, parse_row_counts
from dgl_chunked.io.chunked.model import ArraySource, ChunkedGraphMetadata, EdgeTypeSpec
from dgl_chunked.storage import fs as _fs

__all__ = [
    "ArraySource",
    "EdgeTypeSpec",
    "ChunkedGraphMetadata",
    "is_count",
    "parse_metadata",
    "read_metadata",
]

_GLOB_CHARS = frozenset("*?[")


# --- parsing -------------------------------------------------------------------


def _key(parent: str, key: str | int) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else f'{parent}["{key}"]'


def _str_list(data: Mapping[str, Any], key: str, errs: Problems) -> list[str] | None:
    value = data.get(key)
    if value is None:
        errs.add(key, "a list of names", MISSING, f"add the {key!r} key")
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errs.add(key, "a list of non-empty strings", value)
        return None
    for dup in sorted({v for v in value if value.count(v) > 1}):
        errs.add(key, "unique names", dup, "each type may appear once")
    return value


def _counts(data: Mapping[str, Any], key: str, n: int, errs: Problems) -> tuple[int, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(is_count(v) for v in value) or len(value) != n:
        errs.add(key, f"a list of {n} non-negative integers (one per type)", value)
        return None
    return tuple(value)


def _nested_counts(
    data: Mapping[str, Any], key: str, names: tuple[str, ...], errs: Problems
) -> tuple[tuple[int, ...], ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != len(names):
        errs.add(key, f"a list of {len(names)} lists (one per type)", value)
        return None
    bad = [i for i, v in enumerate(value) if not isinstance(v, list) or not all(is_count(c) for c in v)]
    for i in bad:
        errs.add(_key(key, i), f"a list of non-negative integers for {names[i]!r}", value[i])
    return None if bad else tuple(tuple(v) for v in value)


def _reconcile(
    per_type: tuple[int, ...] | None,
    per_chunk: tuple[tuple[int, ...], ...] | None,
    names: tuple[str, ...],
    kind: str,
    errs: Problems,
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
    data: Mapping[str, Any], errs: Problems
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
        errs.add("num_nodes_per_type", "node counts per type", MISSING, "add num_nodes_per_type")
    return ntypes, _reconcile(per_type, per_chunk, ntypes, "nodes", errs), per_chunk


def _parse_edge_types(
    names: tuple[str, ...], ntypes: tuple[str, ...] | None, errs: Problems
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
                errs.add(_key("edge_type", i), f"end types among node_type {list(ntypes)}", end)
        specs.append(EdgeTypeSpec(name=name, src_type=parts[0], rel=parts[1], dst_type=parts[2]))
    return tuple(specs)


def _expand(
    entry: str,
    base_dir: str,
    storage_options: StorageOptions,
    where: str,
    errs: Problems,
) -> list[str]:
    path = _fs.join(base_dir, entry)
    glob = bool(_GLOB_CHARS & set(entry))
    if not glob and not entry.endswith("/"):
        return [path]
    found = _fs.list_files(path, storage_options, glob=glob)
    if not found:
        errs.add(where, "a glob or directory matching at least one file", entry, "fix the pattern")
    return found


def _parse_source(
    value: Any,
    where: str,
    role: str,
    base_dir: str,
    storage_options: StorageOptions,
    ignored: list[str],
    errs: Problems,
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
        options = _formats.normalize_options(fmt["name"], opts, role=role, where=where, ignored=ignored)  # type: ignore[arg-type]
    except DglChunkedError as err:
        errs.note(str(err))
        return None
    paths = [
        p for i, e in enumerate(data) for p in _expand(e, base_dir, storage_options, _key(f"{where}.data", i), errs)
    ]
    counts = parse_row_counts(value, where, paths, errs)
    return ArraySource(format=fmt["name"], paths=tuple(paths), options=options, where=where, row_counts=counts)


def _parse_edges(
    data: Mapping[str, Any],
    etypes: tuple[str, ...],
    ctx: tuple[str, StorageOptions, list[str]],
    errs: Problems,
) -> dict[str, ArraySource]:
    value = data.get("edges")
    if not isinstance(value, dict):
        errs.add("edges", "an object mapping each edge_type to its files", value, "add the 'edges' key")
        return {}
    out = {}
    for key in value:
        if key not in etypes:
            errs.add(_key("edges", key), f"a key listed in edge_type {list(etypes)}", key)
    for etype in etypes:
        if etype not in value:
            errs.add(_key("edges", etype), "an entry for every edge_type", MISSING, 'use "data": [] for an empty type')
            continue
        src = _parse_source(value[etype], _key("edges", etype), "edges", *ctx, errs)
        if src is not None:
            out[etype] = src
    return out


def _parse_features(
    data: Mapping[str, Any],
    key: str,
    types: tuple[str, ...] | None,
    ctx: tuple[str, StorageOptions, list[str]],
    errs: Problems,
) -> dict[str, dict[str, ArraySource]]:
    value = data.get(key, None)
    if not isinstance(value, dict):
        found = value if key in data else MISSING
        errs.add(key, "an object (may be {}) mapping types to features", found, f'DGL needs it: add "{key}": {{}}')
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
    errs: Problems,
) -> tuple[tuple[int, ...] | None, tuple[tuple[int, ...], ...] | None]:
    per_type = _counts(data, "num_edges_per_type", len(etypes), errs)
    per_chunk = _nested_counts(data, "num_edges_per_chunk", etypes, errs)
    counted = [edges[e].row_counts if e in edges else None for e in etypes]
    if per_chunk is None and "num_edges_per_chunk" not in data and etypes and all(c is not None for c in counted):
        per_chunk = tuple(c or () for c in counted)  # every entry has row_counts: no file is opened to count
    for i, c in enumerate(counted):
        if per_chunk is not None and c is not None and i < len(per_chunk) and c != per_chunk[i]:
            errs.add(
                _key("num_edges_per_chunk", i),
                f"the row_counts of {_key('edges', etypes[i])}: {list(c)}",
                list(per_chunk[i]),
                "make the two agree",
            )
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
    errs = Problems("metadata.json")
    base_dir = base_dir if _fs.is_url(base_dir) else os.path.abspath(base_dir)
    graph_name = data.get("graph_name")
    if not isinstance(graph_name, str):
        errs.add("graph_name", "a string", graph_name if "graph_name" in data else MISSING)
    ntypes, num_nodes, per_chunk = _parse_nodes(data, errs)
    raw_etypes = _str_list(data, "edge_type", errs)
    etypes = tuple(raw_etypes or ())
    edge_types = _parse_edge_types(etypes, ntypes, errs)
    ignored: list[str] = []
    ctx = (base_dir, storage_options, ignored)
    edges: dict[str, ArraySource] = {}
    num_edges, edge_chunks = None, None
    if raw_etypes is not None:  # else every edge check would repeat the problem
        edges = _parse_edges(data, etypes, ctx, errs)
        num_edges, edge_chunks = _edge_counts(data, etypes, edges, errs)
    node_data = _parse_features(data, "node_data", ntypes, ctx, errs)
    edge_data = _parse_features(data, "edge_data", etypes if raw_etypes is not None else None, ctx, errs)
    errs.raise_if_any()
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
        ignored_options=tuple(ignored),
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
    try:
        meta = parse_metadata(data, base_dir=_fs.parent(file), storage_options=storage_options)
    except DglChunkedError as err:  # the same problems, each naming the file they are in
        raise _in_file(err, file) from err
    note_ignored_options(file, meta.ignored_options)
    return meta


def _in_file(err: DglChunkedError, file: str) -> DglChunkedError:
    """``err`` (one problem or many, as :class:`~dgl_chunked.errors.Problems` raises them)
    with every problem prefixed by the metadata file's path."""
    problems = [f"{file}: {p}" for p in getattr(err, "problems", None) or [str(err)]]
    text = (
        problems[0]
        if len(problems) == 1
        else f"{len(problems)} problems in {file}:\n" + "\n".join(f"  - {p}" for p in problems)
    )
    out = type(err)(text)
    out.problems = problems  # type: ignore[attr-defined]
    return out
