"""Plan of a ``chunk`` run: every source inspected (headers and footers only).

:func:`make_plan` opens every raw file's header, footer or first line, resolves
columns, layouts and dtypes, splits every source into read tasks, and reports
every problem at once (missing files, wrong shapes, unknown columns, bad dtypes,
feature row counts that disagree with the node count), each naming the spec key
and the file. Nothing here reads data rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pyarrow as pa

from dgl_chunked._typing import StorageOptions
from dgl_chunked.chunk.probe import (
    INT64,
    SourcePlan,
    inspect_edges,
    inspect_feature,
    inspect_key,
)
from dgl_chunked.chunk.spec import NodeTypeSpec, RawGraphSpec, RelationSpec
from dgl_chunked.errors import ChunkMismatchError, Problems
from dgl_chunked.io.formats import Piece

__all__ = ["GraphPlan", "NodePlan", "RelationPlan", "make_plan", "with_counts"]


@dataclass(frozen=True, kw_only=True)
class NodePlan:
    """A node type: count (None until a CSV key is read), key and feature plans."""

    spec: NodeTypeSpec
    count: int | None
    key: SourcePlan | None
    key_read_tasks: list[tuple[Piece, ...]]
    features: dict[str, SourcePlan]
    num_chunks: int


@dataclass(frozen=True, kw_only=True)
class RelationPlan:
    """A relation: its source, read tasks, end key types and feature plans.

    ``end_types[i]`` is the Arrow type endpoint ``i`` is read as (int64 IDs, or
    the key type of a keyed node type); ``keyed[i]`` says whether it is remapped.
    """

    spec: RelationSpec
    source: SourcePlan
    read_tasks: list[tuple[Piece, ...]]
    end_types: tuple[pa.DataType, pa.DataType]
    keyed: tuple[bool, bool]
    features: dict[str, SourcePlan]
    num_chunks: int


@dataclass(frozen=True, kw_only=True)
class GraphPlan:
    """All node and relation plans, in spec order."""

    spec: RawGraphSpec
    nodes: dict[str, NodePlan]
    relations: dict[str, RelationPlan]
    num_buckets: int
    storage_options: StorageOptions = field(default=None)


# --- building the plan -------------------------------------------------------------------


def _check_rows(plan: SourcePlan, expected: int, what: str, problems: Problems) -> None:
    if plan.rows is not None and plan.rows != expected:
        files = ", ".join(f"{f.path!r}: {f.rows}" for f in plan.files[:3])
        problems.note(
            f"{plan.where}: expected {expected} rows ({what}), found {plan.rows} "
            f"({files}{', ...' if len(plan.files) > 3 else ''})"
        )


def _node_count(
    spec: NodeTypeSpec, key: SourcePlan | None, features: Mapping[str, SourcePlan], problems: Problems
) -> int | None:
    """The count (explicit, key rows, or first feature's rows); checks the others agree."""
    if spec.count is not None:
        count, origin = spec.count, f'node_types["{spec.name}"].count'
    elif spec.key is not None:
        if key is None or key.rows is None:
            return None  # inspection failed, or a CSV key: counted when read
        count, origin = key.rows, f"the rows of {key.where}"
    elif features:
        first = next(iter(features.values()))
        count, origin = int(first.rows or 0), f"the rows of {first.where}"
    else:
        return None
    if key is not None:
        _check_rows(key, count, f"from {origin}", problems)
    for plan in features.values():
        _check_rows(plan, count, f"from {origin}", problems)
    return count


def _node_plan(spec: NodeTypeSpec, num_chunks: int, so: StorageOptions, problems: Problems) -> NodePlan:
    key = problems.run(inspect_key, spec.key, so) if spec.key is not None else None
    features = {f: problems.run(inspect_feature, s, so) for f, s in spec.features.items()}
    ok = {f: p for f, p in features.items() if p is not None}
    k = spec.num_chunks or num_chunks
    return NodePlan(
        spec=spec,
        count=_node_count(spec, key, ok, problems),
        key=key,
        key_read_tasks=key.read_tasks(k) if key is not None else [],
        features=ok,
        num_chunks=k,
    )


def _relation_plan(
    spec: RelationSpec, nodes: Mapping[str, NodePlan], num_chunks: int, so: StorageOptions, problems: Problems
) -> RelationPlan | None:
    ends = (nodes[spec.src_type], nodes[spec.dst_type])
    keyed = (ends[0].spec.key is not None, ends[1].spec.key is not None)
    if any(k and n.key is None for k, n in zip(keyed, ends, strict=True)):
        return None  # the key source failed to inspect; already reported
    types = tuple(n.key.key_type if n.key is not None else INT64 for n in ends)
    source = problems.run(inspect_edges, spec.source, types, so)
    features = {f: problems.run(inspect_feature, s, so) for f, s in spec.features.items()}
    ok = {f: p for f, p in features.items() if p is not None}
    if source is None:
        return None
    if source.rows is not None:
        for plan in ok.values():
            _check_rows(plan, source.rows, f"one per edge of {spec.source.where}", problems)
    k = spec.num_chunks or num_chunks
    return RelationPlan(
        spec=spec,
        source=source,
        read_tasks=source.read_tasks(k),
        end_types=(types[0], types[1]),
        keyed=keyed,
        features=ok,
        num_chunks=k,
    )


def make_plan(
    spec: RawGraphSpec, *, num_chunks: int, num_buckets: int | None = None, storage_options: StorageOptions = None
) -> GraphPlan:
    """Inspect every source of ``spec`` and split it into read tasks.

    Parameters
    ----------
    spec
        The parsed spec.
    num_chunks
        Default number of output chunks (and read tasks) per type.
    num_buckets
        Hash buckets of the key join and of dedup (default ``num_chunks``).
    storage_options
        fsspec options for URLs.

    Raises
    ------
    DglChunkedError
        Every problem found (the class of the first), each naming the spec key and file.
    """
    problems = Problems("the raw inputs", error=ChunkMismatchError)
    nodes = {n.name: _node_plan(n, num_chunks, storage_options, problems) for n in spec.node_types}
    relations = {}
    for rel in spec.edge_types:
        plan = _relation_plan(rel, nodes, num_chunks, storage_options, problems)
        if plan is not None:
            relations[rel.name] = plan
    problems.raise_if_any()
    return GraphPlan(
        spec=spec,
        nodes=nodes,
        relations=relations,
        num_buckets=num_buckets or num_chunks,
        storage_options=storage_options,
    )


def with_counts(plan: GraphPlan, key_rows: Mapping[str, int], edge_rows: Mapping[str, int]) -> GraphPlan:
    """The plan with counts known only after reading (CSV keys and edges), all rechecked.

    Raises
    ------
    ChunkMismatchError
        A feature (or an explicit count) disagrees with the rows read.
    """
    problems = Problems("the raw inputs", error=ChunkMismatchError)
    nodes = dict(plan.nodes)
    for name, rows in key_rows.items():
        node = nodes[name]
        key = replace(node.key, rows=rows) if node.key is not None else None
        nodes[name] = replace(node, key=key, count=_node_count(node.spec, key, node.features, problems))
    for name, rows in edge_rows.items():
        rel = plan.relations[name]
        for feat in rel.features.values():
            _check_rows(feat, rows, f"one per edge of {rel.spec.source.where}", problems)
    problems.raise_if_any()
    return replace(plan, nodes=nodes)
