"""Features whose values are node IDs (GraphStorm's hard negatives): which, and of which type.

A spec is ``TYPE/FEATURE`` or ``TYPE/FEATURE=NTYPE``: ``TYPE`` an edge type
(``src:rel:dst``) or a node type, ``FEATURE`` one of its features, ``NTYPE`` the node
type the values name (default: an edge type's destination type, as GraphStorm's hard
negatives; a node feature's own type). ``dispatch`` translates such features to
per-type new IDs (:mod:`dgl_chunked.dispatch.node_id_features`), ``verify`` expects them so.

The spec ``gsprocessing`` stands for every hard-negative feature of a GSProcessing
output: the edge features whose transformation is ``edge_dst_hard_negative`` in the
config GSProcessing leaves beside ``metadata.json`` (``launch_arguments.json`` names it
by ``config_filename``; the config read is ``<name>_with_transformations.json``), read
as GraphStorm's ``load_hard_negative_config`` reads it (graphstorm
``python/graphstorm/gpartition/post_hard_negative.py``).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.storage import fs

__all__ = ["GSPROCESSING", "NodeIdFeature", "gsprocessing_hard_negatives", "parse_node_id_features"]

GSPROCESSING = "gsprocessing"
"""The spec that stands for every hard-negative feature of a GSProcessing output."""


@dataclass(frozen=True)
class NodeIdFeature:
    """One feature whose values are per-type IDs of nodes of ``ntype``."""

    kind: Literal["node", "edge"]
    type_name: str
    feature: str
    ntype: str

    @property
    def key(self) -> str:
        """The feature's key in ``node_feat.dgl`` / ``edge_feat.dgl``."""
        return f"{self.type_name}/{self.feature}"


def _split_spec(spec: str, types: Sequence[str]) -> tuple[str, str, str | None]:
    """``(type, feature, ntype or None)`` of ``TYPE/FEATURE[=NTYPE]``; the type is the
    longest known type name the spec starts with (types may hold ``/``)."""
    head, eq, ntype = spec.rpartition("=") if "=" in spec else (spec, "", "")
    for name in sorted(types, key=len, reverse=True):
        if head.startswith(name + "/") and len(head) > len(name) + 1:
            return name, head[len(name) + 1 :], (ntype.strip() if eq else None)
    raise OptionError(
        f"node_id_features: {spec!r} does not start with a node or edge type and '/': expected "
        f"TYPE/FEATURE or TYPE/FEATURE=NTYPE, TYPE one of {sorted(types)}"
    )


def _read_json(path: str, graph: ChunkedGraph, what: str) -> Any:
    if not fs.exists(path, graph.storage_options):
        raise OptionError(
            f"node_id_features: {GSPROCESSING!r} reads {path} ({what}), which does not exist; "
            "name the features instead (TYPE/FEATURE[=NTYPE])"
        )
    try:
        with fs.open_file(path, "rb", graph.storage_options) as f:
            return json.load(f)
    except ValueError as err:
        raise OptionError(f"{path}: not valid JSON ({err}); fix or remove it") from None


def gsprocessing_hard_negatives(graph: ChunkedGraph) -> list[str]:
    """The specs of every hard-negative feature GSProcessing's config names (see the
    module docstring); ``TYPE/FEATURE=DST`` each.

    Raises
    ------
    OptionError
        ``launch_arguments.json`` or the config is missing, not JSON, or lacks a key.
    """
    base = graph.metadata.base_dir
    launch_path = fs.join(base, "launch_arguments.json")
    launch = _read_json(launch_path, graph, "GSProcessing's launch arguments")
    name = launch.get("config_filename") if isinstance(launch, dict) else None
    if not isinstance(name, str):
        raise OptionError(f'{launch_path}: expected a string "config_filename", found {name!r}')
    config_path = fs.join(base, posixpath.splitext(name)[0] + "_with_transformations.json")
    config = _read_json(config_path, graph, "GSProcessing's config with transformations")
    specs = []
    try:
        for edge in config["graph"]["edges"]:
            for feat in edge.get("features", []):
                if feat["transformation"]["name"] == "edge_dst_hard_negative":
                    etype = ":".join([edge["source"]["type"], edge["relation"]["type"], edge["dest"]["type"]])
                    specs.append(f"{etype}/{feat['name']}={edge['dest']['type']}")
    except (KeyError, TypeError) as err:
        raise OptionError(
            f"{config_path}: expected GSProcessing's graph.edges[].features[].transformation.name, "
            f"source/relation/dest types and feature names; missing {err}"
        ) from None
    return specs


def parse_node_id_features(
    graph: ChunkedGraph, specs: Iterable[str] | Mapping[str, str | None]
) -> tuple[NodeIdFeature, ...]:
    """The checked :class:`NodeIdFeature` s of ``specs``.

    Parameters
    ----------
    graph
        The chunked graph.
    specs
        ``"TYPE/FEATURE"`` or ``"TYPE/FEATURE=NTYPE"`` strings, or a mapping
        ``{"TYPE/FEATURE": NTYPE or None}``; ``"gsprocessing"`` stands for
        :func:`gsprocessing_hard_negatives`.

    Raises
    ------
    OptionError
        Unknown type, feature or node type, a feature that is not integer-valued, or
        one named twice.
    """
    meta = graph.metadata
    items = [f"{k}={v}" if v else k for k, v in specs.items()] if isinstance(specs, Mapping) else list(specs)
    if any(s.strip().lower() == GSPROCESSING for s in items):
        rest = [s for s in items if s.strip().lower() != GSPROCESSING]
        items = rest + [s for s in gsprocessing_hard_negatives(graph) if s not in rest]
    edge_names = {e.name: e for e in meta.edge_types}
    out: dict[str, NodeIdFeature] = {}
    for spec in (s.strip() for s in items):
        type_name, feat, ntype = _split_spec(spec, [*meta.node_types, *edge_names])
        kind: Literal["node", "edge"] = "edge" if type_name in edge_names else "node"
        feats = (meta.edge_data if kind == "edge" else meta.node_data).get(type_name, {})
        if feat not in feats:
            raise OptionError(
                f"node_id_features: {kind} type {type_name!r} has no feature {feat!r}; expected one of {sorted(feats)}"
            )
        if ntype is None:
            ntype = edge_names[type_name].dst_type if kind == "edge" else type_name
        if ntype not in meta.node_types:
            raise OptionError(
                f"node_id_features: {spec!r} names node type {ntype!r}; expected one of {list(meta.node_types)}"
            )
        dtype, _ = graph.feature_info(kind, type_name, feat)
        if not np.issubdtype(dtype, np.integer):
            raise OptionError(
                f"node_id_features: feature {type_name}/{feat} holds {dtype}, not integers; node IDs must be integers"
            )
        if np.iinfo(dtype).max < meta.num_nodes(ntype) - 1:
            raise OptionError(
                f"node_id_features: feature {type_name}/{feat} holds {dtype}, too narrow for the "
                f"{meta.num_nodes(ntype)} IDs of node type {ntype!r}; store it as int64"
            )
        entry = NodeIdFeature(kind, type_name, feat, ntype)
        if entry.key in out and out[entry.key] != entry:
            raise OptionError(f"node_id_features: {entry.key!r} is named twice, with different node types")
        out[entry.key] = entry
    return tuple(out.values())
