"""The frozen model of ``metadata.json`` (see :mod:`.metadata` for the keys and the parser).

:class:`ChunkedGraphMetadata` is what every reader of a Chunked Graph Format
directory works from: types, counts and the resolved chunk files of each array
(:class:`ArraySource`), never the raw JSON. :meth:`ChunkedGraphMetadata.to_dict`
writes it back in a fixed key order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import MetadataError, UnknownNameError
from dgl_chunked.storage import fs as _fs

__all__ = ["ArraySource", "ChunkedGraphMetadata", "EdgeTypeSpec"]


@dataclass(frozen=True, kw_only=True)
class ArraySource:
    """One ``{"format": {...}, "data": [...]}`` object with resolved paths.

    ``where`` is its JSON path, e.g. ``edges["author:writes:paper"]``.
    """

    format: str
    paths: tuple[str, ...]
    options: Mapping[str, Any]
    where: str
    row_counts: tuple[int, ...] | None = None
    """Rows per file, from the entry's ``row_counts`` (GSProcessing writes them), or None."""


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
    ignored_options: tuple[str, ...] = field(default=(), compare=False)
    """JSON paths of the format options dropped as DGL's dispatch drops them
    (``formats.normalize_options``); not part of the graph."""

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

        >>> from dgl_chunked.io.chunked.metadata import parse_metadata
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
            out = {"format": {"name": src.format, **src.options}, "data": paths}
            return out if src.row_counts is None else {**out, "row_counts": list(src.row_counts)}

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
