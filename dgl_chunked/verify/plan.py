"""What the output claims, checked first, and the small plan every verify task gets.

The partition config's ``node_map`` / ``edge_map`` become ``(P, T, 2)`` arrays of
new-ID ranges; :func:`check_maps` and :func:`check_config` hold them against the
input before any task runs. The plan also names the scratch directory where tasks
stage their facts as int64 array files, read back by row range (:func:`stage`,
:func:`staged_rows`, :func:`orig2new`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.io.dgl import PartitionConfig
from dgl_chunked.storage import fs
from dgl_chunked.storage.arrays import read_array, write_array
from dgl_chunked.verify.report import VerifyReport

__all__ = [
    "TRAINER_ID",
    "Feature",
    "Plan",
    "check_config",
    "check_maps",
    "make_plan",
    "orig2new",
    "stage",
    "staged_rows",
]


TRAINER_ID = "trainer_id"
"""Node (and, from DGL's ``partition_graph``, edge) data naming each item's trainer."""


@dataclass(frozen=True)
class Feature:
    """One feature as the input has it: output key, dtype as stored by DGL, row shape."""

    kind: str
    type_index: int
    key: str
    dtype: str
    row_shape: tuple[int, ...]
    id_ntype: int = -1
    """A node-ID feature's node type index (its values were translated to per-type new
    IDs by dispatch, see :mod:`dgl_chunked.io.chunked.node_id_features`); -1 for others."""


@dataclass(frozen=True)
class Plan:
    """Small, picklable facts shared by every task."""

    out_dir: str
    storage_options: StorageOptions
    scratch: str
    scratch_options: StorageOptions
    ntypes: tuple[str, ...]
    etypes: tuple[tuple[str, int, int], ...]  # (name, src type index, dst type index)
    num_nodes: tuple[int, ...]
    edge_bounds: tuple[tuple[int, ...], ...]  # per etype: input edge file starts, then the end
    node_ranges: IdArray  # (P, T, 2)
    edge_ranges: IdArray  # (P, R, 2)
    block_rows: int
    features: tuple[Feature, ...]

    @property
    def num_parts(self) -> int:
        return int(self.node_ranges.shape[0])

    def blocks(self, t: int) -> int:
        """Node blocks of type ``t`` (one node-check task each)."""
        return -(-self.num_nodes[t] // self.block_rows)

    def ranges(self, kind: str) -> IdArray:
        """``node_ranges`` or ``edge_ranges``."""
        return self.node_ranges if kind == "node" else self.edge_ranges

    def trainer_keys(self, kind: str) -> dict[str, int]:
        """Output keys ``<type>/trainer_id`` a ``kind`` feature file may hold beyond the
        input's features (DGL's ``num_trainers_per_machine > 1``), with their type index."""
        names = self.ntypes if kind == "node" else tuple(e[0] for e in self.etypes)
        inputs = {f.key for f in self.features if f.kind == kind}
        keys = {f"{name}/{TRAINER_ID}": i for i, name in enumerate(names)}
        return {key: i for key, i in keys.items() if key not in inputs}


def make_plan(
    graph: ChunkedGraph,
    config: PartitionConfig,
    out_dir: str,
    scratch: tuple[str, StorageOptions],
    *,
    storage_options: StorageOptions,
    block_rows: int,
    node_id_features: Mapping[str, str] | None = None,
) -> Plan:
    """The plan for checking ``out_dir`` (described by ``config``) against ``graph``;
    ``node_id_features`` maps the keys of node-ID features to the node type they name."""
    meta = graph.metadata
    id_ntypes = {k: meta.node_types.index(t) for k, t in (node_id_features or {}).items()}
    ntypes, etypes = tuple(meta.node_types), tuple(e.name for e in meta.edge_types)
    features = []
    for kind, data in (("node", meta.node_data), ("edge", meta.edge_data)):
        names = ntypes if kind == "node" else etypes
        for type_name, feats in data.items():
            for feat in feats:
                dtype, row_shape = graph.feature_info(kind, type_name, feat)  # type: ignore[arg-type]
                stored = np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)
                key = f"{type_name}/{feat}"
                index = names.index(type_name)
                features.append(Feature(kind, index, key, stored.str, tuple(row_shape), id_ntypes.get(key, -1)))
    edge_bounds = []
    for etype in etypes:
        refs = graph.edge_groups(etype)
        edge_bounds.append(tuple([r.start for r in refs] + [refs[-1].stop if refs else 0]))
    return Plan(
        out_dir=out_dir,
        storage_options=storage_options,
        scratch=scratch[0],
        scratch_options=scratch[1],
        ntypes=ntypes,
        num_nodes=tuple(meta.num_nodes_per_type),
        etypes=tuple((e.name, ntypes.index(e.src_type), ntypes.index(e.dst_type)) for e in meta.edge_types),
        edge_bounds=tuple(edge_bounds),
        node_ranges=_ranges(config.node_map, list(ntypes), config.num_parts),
        edge_ranges=_ranges(config.edge_map, list(etypes), config.num_parts),
        block_rows=int(block_rows),
        features=tuple(features),
    )


def _ranges(mapping: Mapping[str, list[list[int]]], names: list[str], num_parts: int) -> IdArray:
    out = np.zeros((num_parts, len(names), 2), np.int64)
    for t, name in enumerate(names):
        out[:, t, :] = np.asarray(mapping[name], np.int64).reshape(num_parts, 2)
    return out


# --- checks of the config itself (on the client, before any task) ----------------------


def check_maps(graph: ChunkedGraph, config: PartitionConfig, report: VerifyReport) -> bool:
    """Every type has a map entry with one range per partition (else nothing else can run)."""
    for what, mapping, names in (
        ("node_map", config.node_map, graph.metadata.node_types),
        ("edge_map", config.edge_map, graph.metadata.edge_type_names),
    ):
        for name in names:
            ranges = mapping.get(name)
            report.expect(
                ranges is not None and len(ranges) == config.num_parts and all(len(r) == 2 for r in ranges),
                f"partition config {what}[{name!r}]: expected {config.num_parts} [start, end) ranges, found {ranges!r}",
            )
    return report.ok


def check_config(config: PartitionConfig, plan: Plan, report: VerifyReport) -> bool:
    """Types in metadata order; maps contiguous from 0 and covering every input node and edge."""
    ntypes, etypes = list(plan.ntypes), [e[0] for e in plan.etypes]
    report.expect(
        config.ntypes == {t: i for i, t in enumerate(ntypes)},
        f"config ntypes {config.ntypes} do not follow metadata node_type order {ntypes}",
    )
    report.expect(
        config.etypes == {e: i for i, e in enumerate(etypes)},
        f"config etypes {config.etypes} do not follow metadata edge_type order {etypes}",
    )
    _check_contiguous(plan.node_ranges, "node_map", report)
    _check_contiguous(plan.edge_ranges, "edge_map", report)
    for what, ranges, counts in (
        ("node", plan.node_ranges, plan.num_nodes),
        ("edge", plan.edge_ranges, tuple(b[-1] for b in plan.edge_bounds)),
    ):
        sizes = (ranges[:, :, 1] - ranges[:, :, 0]).sum(axis=0)
        names = ntypes if what == "node" else etypes
        for name, got, want in zip(names, sizes.tolist(), counts, strict=True):
            report.expect(got == want, f"{what}_map[{name!r}] covers {got} {what}s, the input has {want}")
    return report.ok


def _check_contiguous(ranges: IdArray, what: str, report: VerifyReport) -> None:
    flat = ranges.reshape(-1, 2)
    report.expect(
        bool(
            flat.size == 0
            or (flat[0, 0] == 0 and (flat[1:, 0] == flat[:-1, 1]).all() and (flat[:, 1] >= flat[:, 0]).all())
        ),
        f"{what} ranges are not contiguous partition-major, type-major from 0",
    )


# --- staged facts: int64 array files (storage.arrays) in the scratch directory ------------------------------


def stage(plan: Plan, name: str, rows: IdArray) -> None:
    """Write int64 ``rows`` (shape ``(n, width)`` or ``(n,)``) as the scratch array file ``name``.

    One writer per name; readers take row ranges (:func:`staged_rows`), so a file is
    never read whole unless asked.
    """
    write_array(fs.join(plan.scratch, name), np.asarray(rows, np.int64), storage_options=plan.scratch_options)


def staged_rows(plan: Plan, name: str, width: int, lo: int, hi: int) -> IdArray:
    """Rows ``[lo, hi)`` of a staged file of ``width`` int64 per row (``width=0``: 1-D)."""
    if hi <= lo:
        return np.zeros((0, width) if width else 0, np.int64)
    data = read_array(fs.join(plan.scratch, name), lo, hi, storage_options=plan.scratch_options)
    assert data.shape[1:] == ((width,) if width else ()), (name, data.shape, width)
    return data


def orig2new(plan: Plan, t: int, ids: IdArray) -> IdArray:
    """New IDs of ``ids`` (type_nids of type ``t``), reading one staged node block at a time."""
    out = np.empty(ids.shape[0], np.int64)
    block = ids // plan.block_rows
    for b in np.unique(block).tolist():
        sel = np.flatnonzero(block == b)
        lo = b * plan.block_rows
        values = staged_rows(plan, f"orig2new-{t}-{b}", 0, 0, min(plan.num_nodes[t], lo + plan.block_rows) - lo)
        out[sel] = values[ids[sel] - lo]
    return out
