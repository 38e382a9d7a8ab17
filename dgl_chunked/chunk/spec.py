"""The raw-input spec of ``dgl-chunked chunk``: model and parsing.

A spec is a small JSON (or YAML) document describing where the raw arrays of a
graph live. :func:`parse_spec` checks it without opening any data file (it only
expands globs and directories) and raises one :class:`~dgl_chunked.errors.MetadataError`
listing every problem, each with its JSON path, what was expected and what was
found. The format is documented in :mod:`dgl_chunked.chunk`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.chunk.spec_source import SourceSpec, json_key, parse_source, unknown_keys
from dgl_chunked.errors import MISSING, MetadataError, Problems
from dgl_chunked.io.chunked.metadata import is_count
from dgl_chunked.storage import fs as _fs

__all__ = [
    "NodeTypeSpec",
    "RawGraphSpec",
    "RelationSpec",
    "SourceSpec",
    "parse_spec",
    "read_spec",
]

SelfLoops = Literal["keep", "remove", "add"]

_NODE_KEYS = frozenset({"count", "key", "features", "num_chunks"})
_EDGE_KEYS = frozenset({"source", "features", "reverse", "self_loops", "self_loop_fill", "dedup", "num_chunks"})


@dataclass(frozen=True, kw_only=True)
class NodeTypeSpec:
    """A node type: its count (None: inferred), key source and features."""

    name: str
    count: int | None = None
    key: SourceSpec | None = None
    features: Mapping[str, SourceSpec] = field(default_factory=dict)
    num_chunks: int | None = None


@dataclass(frozen=True, kw_only=True)
class RelationSpec:
    """A relation (canonical edge type) and the transforms applied to it.

    ``reverse`` is the relation name of the added reverse edge type (None: none);
    ``self_loops`` is ``"keep"``, ``"remove"`` or ``"add"`` (exactly one per node).
    """

    name: str
    src_type: str
    rel: str
    dst_type: str
    source: SourceSpec
    features: Mapping[str, SourceSpec] = field(default_factory=dict)
    reverse: str | None = None
    self_loops: SelfLoops = "keep"
    self_loop_fill: float = 1.0
    dedup: bool = False
    num_chunks: int | None = None

    @property
    def reverse_name(self) -> str | None:
        """Canonical name of the reverse edge type, or None."""
        if self.reverse is None:
            return None
        return f"{self.dst_type}:{self.reverse}:{self.src_type}"


@dataclass(frozen=True, kw_only=True)
class RawGraphSpec:
    """A parsed spec: node types and relations in output order."""

    graph_name: str
    node_types: tuple[NodeTypeSpec, ...]
    edge_types: tuple[RelationSpec, ...]
    base_dir: str

    def input_paths(self) -> list[str]:
        """Every raw file the spec names: keys, node features, edges, edge features."""
        sources = [n.key for n in self.node_types if n.key is not None]
        sources += [src for n in self.node_types for src in n.features.values()]
        sources += [r.source for r in self.edge_types]
        sources += [src for r in self.edge_types for src in r.features.values()]
        return [p for src in sources for p in src.paths]


def _parse_features(value: Any, where: str, ctx: tuple[str, StorageOptions], errs: Problems) -> dict[str, SourceSpec]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add(where, "an object mapping feature names to sources", value)
        return {}
    out = {}
    for feat, spec in value.items():
        if not feat or "/" in feat:
            errs.add(json_key(where, feat), "a non-empty feature name without '/'", feat)
            continue
        src = parse_source(spec, "features", json_key(where, feat), ctx, errs)
        if src is not None:
            out[feat] = src
    return out


# --- types -------------------------------------------------------------------------


def _num_chunks(value: Mapping[str, Any], where: str, errs: Problems) -> int | None:
    n = value.get("num_chunks")
    if n is not None and (not is_count(n) or n < 1):
        errs.add(f"{where}.num_chunks", "an integer >= 1", n)
        return None
    return int(n) if n is not None else None


def _parse_node_type(name: str, value: Any, ctx: tuple[str, StorageOptions], errs: Problems) -> NodeTypeSpec | None:
    where = json_key("node_types", name)
    if not name or ":" in name or "/" in name:
        errs.add(where, "a node type name without ':' or '/'", name)
        return None
    value = {} if value is None else value
    if not isinstance(value, dict):
        errs.add(where, 'an object like {"count": 10} (may be empty)', value)
        return None
    unknown_keys(value, _NODE_KEYS, where, errs)
    count = value.get("count")
    if count is not None and not is_count(count):
        errs.add(f"{where}.count", "a non-negative integer", count)
        count = None
    key = parse_source(value["key"], "key", f"{where}.key", ctx, errs) if "key" in value else None
    if key is not None and key.columns is not None and len(key.columns) != 1:
        errs.add(f"{where}.key.column", "one column", list(key.columns))
    features = _parse_features(value.get("features"), f"{where}.features", ctx, errs)
    if count is None and key is None and not features and "key" not in value:
        errs.add(where, "a count, a key or a feature to infer the number of nodes from", value, 'add "count": N')
    return NodeTypeSpec(name=name, count=count, key=key, features=features, num_chunks=_num_chunks(value, where, errs))


def _parse_relation_options(value: Mapping[str, Any], rel: str, where: str, errs: Problems) -> dict[str, Any]:
    out: dict[str, Any] = {}
    reverse = value.get("reverse", False)
    if reverse is True:
        out["reverse"] = f"rev-{rel}"
    elif isinstance(reverse, str) and reverse and ":" not in reverse and "/" not in reverse:
        out["reverse"] = reverse
    elif reverse is not False:
        errs.add(f"{where}.reverse", "true, false or a relation name without ':' or '/'", reverse)
    loops = value.get("self_loops", "keep")
    if loops not in ("keep", "remove", "add"):
        errs.add(f"{where}.self_loops", "'keep', 'remove' or 'add'", loops)
    else:
        out["self_loops"] = loops
    fill = value.get("self_loop_fill", 1.0)
    if isinstance(fill, bool) or not isinstance(fill, int | float):
        errs.add(f"{where}.self_loop_fill", "a number", fill)
    else:
        out["self_loop_fill"] = float(fill)
    dedup = value.get("dedup", False)
    if not isinstance(dedup, bool):
        errs.add(f"{where}.dedup", "true or false", dedup)
    out["dedup"] = dedup is True
    return out


def _parse_relation(
    name: str, value: Any, ntypes: set[str], ctx: tuple[str, StorageOptions], errs: Problems
) -> RelationSpec | None:
    where = json_key("edge_types", name)
    parts = name.split(":")
    if len(parts) != 3 or not all(parts) or "/" in name:
        errs.add(where, "a canonical 'src:rel:dst' edge type without '/'", name)
        return None
    for end in (parts[0], parts[2]):
        if end not in ntypes:
            errs.add(where, f"end types among node_types {sorted(ntypes)}", end)
    if not isinstance(value, dict):
        errs.add(where, 'an object like {"source": {"path": "edge_index.npy"}}', value)
        return None
    unknown_keys(value, _EDGE_KEYS, where, errs)
    if "source" not in value:
        errs.add(f"{where}.source", "the edge source", MISSING, "add a source")
        return None
    source = parse_source(value["source"], "edges", f"{where}.source", ctx, errs)
    options = _parse_relation_options(value, parts[1], where, errs)
    if options.get("self_loops", "keep") != "keep" and parts[0] != parts[2]:
        errs.add(
            f"{where}.self_loops",
            "'keep' for a relation between two node types",
            options["self_loops"],
            "self loops need the same source and destination type",
        )
    features = _parse_features(value.get("features"), f"{where}.features", ctx, errs)
    if source is None:
        return None
    return RelationSpec(
        name=name,
        src_type=parts[0],
        rel=parts[1],
        dst_type=parts[2],
        source=source,
        features=features,
        num_chunks=_num_chunks(value, where, errs),
        **options,
    )


def _check_names(relations: list[RelationSpec], errs: Problems) -> None:
    seen: dict[str, str] = {}
    for rel in relations:
        for name, origin in (
            (rel.name, json_key("edge_types", rel.name)),
            (rel.reverse_name, f"{json_key('edge_types', rel.name)}.reverse"),
        ):
            if name is None:
                continue
            if name in seen:
                errs.add(
                    origin,
                    "edge type names that are unique (reverse types included)",
                    name,
                    f"it is also made by {seen[name]}; rename the reverse relation",
                )
            seen[name] = origin


def parse_spec(data: object, *, base_dir: PathLike, storage_options: StorageOptions = None) -> RawGraphSpec:
    """Check a decoded spec document and build the :class:`RawGraphSpec`.

    Parameters
    ----------
    data
        The decoded JSON/YAML document (see :mod:`dgl_chunked.chunk`).
    base_dir
        Folder that relative paths resolve against (overridden by a ``base_dir``
        key, itself relative to this folder).
    storage_options
        fsspec options, used to expand globs and directories.

    Returns
    -------
    RawGraphSpec

    Raises
    ------
    MetadataError
        Every problem found, each naming its JSON path.

    Examples
    --------
    >>> spec = parse_spec({"node_types": {"n": {"count": 3}}, "edge_types": {
    ...     "n:to:n": {"source": {"path": "e.csv"}}}}, base_dir="/data")
    >>> spec.edge_types[0].source.format, spec.edge_types[0].source.paths
    ('csv', ('/data/e.csv',))
    """
    if not isinstance(data, dict):
        raise MetadataError(f"spec: expected an object at the top level, found {type(data).__name__}")
    errs = Problems("the chunk spec", prefix="spec ")
    unknown_keys(data, frozenset({"graph_name", "base_dir", "node_types", "edge_types"}), "", errs)
    base = os.fspath(base_dir)
    if isinstance(data.get("base_dir"), str):
        base = _fs.join(base, data["base_dir"])
    base = base if _fs.is_url(base) else os.path.abspath(base)
    ctx = (base, storage_options)
    name = data.get("graph_name", "graph")
    if not isinstance(name, str) or not name:
        errs.add("graph_name", "a non-empty string", name)
    nodes_raw = data.get("node_types")
    if not isinstance(nodes_raw, dict) or not nodes_raw:
        errs.add(
            "node_types",
            "an object mapping node type names to their inputs",
            nodes_raw if "node_types" in data else MISSING,
        )
        nodes_raw = {}
    nodes = [_parse_node_type(n, v, ctx, errs) for n, v in nodes_raw.items()]
    edges_raw = data.get("edge_types", {})
    if not isinstance(edges_raw, dict):
        errs.add("edge_types", "an object mapping 'src:rel:dst' to relation inputs", edges_raw)
        edges_raw = {}
    relations = [_parse_relation(e, v, set(nodes_raw), ctx, errs) for e, v in edges_raw.items()]
    _check_names([r for r in relations if r is not None], errs)
    errs.raise_if_any()
    return RawGraphSpec(
        graph_name=str(name),
        node_types=tuple(n for n in nodes if n is not None),
        edge_types=tuple(r for r in relations if r is not None),
        base_dir=base,
    )


def read_spec(path: PathLike, *, storage_options: StorageOptions = None) -> RawGraphSpec:
    """Read a spec file (``.json``, or ``.yaml``/``.yml``) and parse it.

    Relative paths in the spec resolve against the spec file's folder.

    Raises
    ------
    MetadataError
        Missing file, a syntax error, or any problem :func:`parse_spec` finds.
    """
    path = os.fspath(path)
    try:
        with _fs.open_file(path, "rb", storage_options) as f:
            raw = f.read()
    except (FileNotFoundError, IsADirectoryError) as err:
        raise MetadataError(f"{path}: expected a chunk spec file, found nothing; fix the path") from err
    try:
        if path.lower().endswith((".yaml", ".yml")):
            import yaml  # a dependency of dask, so always present

            data = yaml.safe_load(raw)
        else:
            data = json.loads(raw)
    except Exception as err:  # yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError
        detail = " ".join(str(err).split())  # YAML's messages span several lines
        raise MetadataError(f"{path}: expected valid JSON/YAML, found a syntax error ({detail})") from err
    return parse_spec(data, base_dir=_fs.parent(path), storage_options=storage_options)
