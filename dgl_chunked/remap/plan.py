"""Client-side planning shared by ``remap`` and ``lookup``: which mapping a type uses, its blocks.

:func:`mapping_source` picks, per type, where the map between original and new IDs
comes from: the partitions' ``orig_nids.dgl`` / ``orig_eids.dgl`` when every
partition has the type's entry (in any order), else, for partitions that carry
dgl_chunked's mark (:func:`ours`), the assignment directory with the chunked graph
(our numbering is deterministic: dispatch numbers each partition's items in
ascending original ID), else one :class:`~dgl_chunked.remap.model.RemapError`
saying which flag or input was missing. Other producers' partitions (DGL's
pipeline, ``partition_graph``) need their ``orig_*ids.dgl``: DGL's numbering inside
a type is not the assignment's order. :func:`owner_jobs` opens the assignment
once per node type, chunked like the blocks, and stages a destination type's owners
for edge types.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.ids import compact_owner_dtype
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.assignment import open_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.dgl.partition_config import OUTPUT_KIND, PartitionConfig, read_partition_config
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.remap.mapping import EdgeAssignmentSource, NodeAssignmentSource, OrigIdSource, regular_bounds
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.spaces import TypeSpace
from dgl_chunked.remap.tasks import Source, TypeJob
from dgl_chunked.storage import fs
from dgl_chunked.storage.arrays import zarr_store
from dgl_chunked.storage.owned import MARKER_NAME, ForeignDataError, read_marker

__all__ = [
    "MappingInputs",
    "absolute",
    "block_rows_for",
    "mapping_inputs",
    "mapping_source",
    "ours",
    "owner_jobs",
]

OWNER_CHUNK = 1 << 20
"""Rows per Zarr chunk of a staged destination-type assignment."""
CACHE_BYTES = 256 << 20
"""Per-worker budget of cached owner arrays (as dispatch's lookup cache)."""


@dataclass(frozen=True)
class MappingInputs:
    """Where mappings may come from: the partitions, and optionally the assignment and the chunked graph."""

    part_root: str
    config: PartitionConfig
    graph: ChunkedGraph | None = None
    assignment: str | None = None
    storage_options: dict[str, Any] | None = field(default=None, compare=False)


def ours(part_root: str, so: StorageOptions) -> bool:
    """The partitions carry dgl_chunked's mark (``dispatch``/``run`` wrote them), so their numbering is known:
    inside a partition, new IDs follow ascending original ID."""
    try:
        marker = read_marker(part_root, storage_options=so)
    except ForeignDataError:
        return False
    return marker is not None and marker.kind == OUTPUT_KIND


def _missing(space: TypeSpace, path: str, inputs: MappingInputs) -> RemapError:
    flag = "--save-orig-nids" if space.kind == "node" else "--save-orig-eids"
    head = f"{path}: not found, so the partitions do not say which original ID each new ID of {space.label} has"
    if not ours(inputs.part_root, inputs.storage_options):
        # DGL numbers a partition's items of a type in no known order (data_shuffle.py reorder_data sorts by type
        # with an unstable argsort), so the assignment cannot rebuild the mapping of partitions we did not write
        return RemapError(
            f"{head}, and dgl_chunked did not write these partitions (no {MARKER_NAME}), so the assignment cannot "
            f"rebuild it; rerun DGL's dispatch (dispatch_data.py) with {flag}, or dgl-chunked dispatch/run with {flag}"
        )
    need = "--partitions-dir ASSIGN and --in-dir CHUNKED"
    have = []
    if inputs.assignment is not None and inputs.graph is None:
        have.append(" (the assignment alone is not enough: also pass the chunked graph, --in-dir)")
    return RemapError(
        f"{head}; rerun dispatch/run with {flag}, or pass the assignment the partitions were made from "
        f"({need}; `run --partitions-dir ASSIGN` keeps it){''.join(have)}"
    )


def mapping_source(space: TypeSpace, inputs: MappingInputs) -> Source:
    """Where ``space``'s map between original and new IDs comes from (see the module docstring)."""
    so = inputs.storage_options
    paths = tuple(fs.join(inputs.part_root, f"part{p}/{space.ids_name}.dgl") for p in range(space.num_parts))
    missing = next((p for p in paths if not fs.exists(p, so)), None)
    if missing is None:
        payloads = []
        for p, path in enumerate(paths):
            try:
                index = index_tensor_dict(path, storage_options=so)
            except DGLFormatError as err:
                raise RemapError(str(err)) from None
            if space.name not in index:
                raise RemapError(
                    f"{path}: has no entry {space.name!r} (found {sorted(index)}); is it these partitions'?"
                )
            got = index[space.name]
            if got.row_shape or got.dtype.kind not in "iu" or got.rows != space.sizes[p]:
                raise RemapError(
                    f"{path}: entry {space.name!r} holds {got.shape} {got.dtype}, expected {space.sizes[p]} integer "
                    f"IDs (partition {p}'s share of {space.label} in the partition config)"
                )
            payloads.append(got)
        return OrigIdSource(paths, tuple(payloads), so)
    if inputs.assignment is None or inputs.graph is None or not ours(inputs.part_root, so):
        raise _missing(space, missing, inputs)
    if space.kind == "node":
        return NodeAssignmentSource(inputs.assignment, space.num_parts)
    return _edge_source(space, inputs, "")


def _edge_source(space: TypeSpace, inputs: MappingInputs, owners: str) -> EdgeAssignmentSource:
    graph = inputs.graph
    assert graph is not None and inputs.assignment is not None
    if space.name not in graph.metadata.edges:
        raise RemapError(f"the chunked graph has no edge type {space.name!r}; is it the graph of these partitions?")
    src, _, dst = space.name.split(":")
    return EdgeAssignmentSource(
        assignment=inputs.assignment,
        num_parts=space.num_parts,
        refs=tuple(graph.edge_chunks(space.name)),
        num_src=graph.num_nodes(src),
        num_dst=graph.num_nodes(dst),
        owners=owners,
        cache_key="",
        cache_bytes=CACHE_BYTES,
        storage_options=inputs.storage_options,
    )


def block_rows_for(row_bytes: int, block_bytes: int, source: Source) -> int:
    """Original IDs per block: about ``block_bytes`` of rows; edge blocks span whole chunk files."""
    rows = max(1, block_bytes // max(1, row_bytes))
    if isinstance(source, EdgeAssignmentSource) and source.refs:
        rows = max(rows, max(r.rows for r in source.refs))
    return rows


def owner_jobs(jobs: list[TypeJob], inputs: MappingInputs, scratch: str, token: str) -> tuple[list[TypeJob], list[Any]]:
    """Attach assignment blocks to node jobs and staged owners to edge jobs.

    Returns the jobs and the Dask tasks that stage edge types' destination owners
    (to compute before counting).
    """
    graph, assignment = inputs.graph, inputs.assignment
    so = inputs.storage_options
    out: list[TypeJob] = []
    stores: list[Any] = []
    staged: dict[str, str] = {}
    for job in jobs:
        if isinstance(job.source, NodeAssignmentSource):
            assert graph is not None and assignment is not None
            chunks = {job.space.name: tuple(int(b) for b in np.diff(job.bounds))}
            _, parts = open_assignment(assignment, graph.metadata, storage_options=so, chunks=chunks)
            job = replace(job, owner_blocks=tuple(parts[job.space.name].to_delayed().ravel()))
        elif isinstance(job.source, EdgeAssignmentSource):
            assert graph is not None and assignment is not None
            dst = job.space.name.split(":")[2]
            if dst not in staged:
                staged[dst] = fs.join(scratch, f"owners/{len(staged)}.zarr")
                name = f"dglc-remap-owners-{token}-{len(staged)}"
                stores += _stage_owners(graph, assignment, dst, staged[dst], job.space.num_parts, so, name)
            source = replace(job.source, owners=staged[dst], cache_key=f"dglc-remap-owners-{token}-{dst}")
            job = replace(job, source=source)
        out.append(job)
    return out, stores


def _write_owners(path: str, lo: int, owner: Any, so: StorageOptions) -> None:
    import zarr

    array = zarr.open_array(zarr_store(path, so, read_only=False), mode="r+")
    array[lo : lo + len(owner)] = np.asarray(owner).astype(array.dtype)


def _stage_owners(
    graph: ChunkedGraph, assignment: str, ntype: str, path: str, num_parts: int, so: StorageOptions, name: str
) -> list[Any]:
    import zarr
    from dask.delayed import delayed

    n = graph.num_nodes(ntype)
    bounds = regular_bounds(n, OWNER_CHUNK)
    _, parts = open_assignment(
        assignment, graph.metadata, storage_options=so, chunks={ntype: tuple(np.diff(bounds).tolist())}
    )
    zarr.create_array(
        store=zarr_store(path, so, read_only=False),
        shape=(n,),
        chunks=(max(1, min(OWNER_CHUNK, n)),),
        dtype=compact_owner_dtype(num_parts),
        compressors=None,
        fill_value=0,
        overwrite=True,
    )
    return [
        delayed(_write_owners, pure=False)(path, bounds[k], block, so, dask_key_name=f"{name}-{k}")
        for k, block in enumerate(parts[ntype].to_delayed().ravel())
    ]


def absolute(path: PathLike) -> str:
    """A local path made absolute; a URL as it is."""
    text = os.fspath(path)
    return text if fs.is_url(text) else os.path.abspath(text)


def mapping_inputs(
    partitions: PathLike, graph: ChunkedGraph | PathLike | None, assignment: PathLike | None, so: StorageOptions
) -> MappingInputs:
    """Read the partition config and open the chunked graph (when given)."""
    config = read_partition_config(partitions, storage_options=so)
    root = absolute(partitions)
    root = fs.parent(root) if root.endswith(".json") else root
    if graph is not None and not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=so)
    return MappingInputs(root, config, graph, None if assignment is None else absolute(assignment), so)
