"""remap's ``src_nid`` / ``dst_nid`` columns: each edge's endpoints under their user IDs.

GraphStorm's ``remap_result`` (``python/graphstorm/gconstruct/remap_result.py``,
``worker_remap_edge_pred``) writes an edge prediction as ``pred``, ``src_nid``,
``dst_nid`` (``GS_REMAP_SRC_NID_COL`` / ``GS_REMAP_DST_NID_COL``): the endpoints'
user IDs, read from each end type's ``raw_id_mappings``. Our edge tables carry the
same two columns (:mod:`~dgl_chunked.remap.tables`). The endpoints of the edge with
original (type-wise) ID ``e`` are row ``e`` of the edge type's files in the chunked
graph, so edge tables need the chunked graph (``--in-dir``); their user IDs come from
:func:`~dgl_chunked.remap.id_mappings.find_keys`'s sources, as the ``nid`` column's do.
An end type without user IDs gets its nodes' original (type-wise) IDs, int64.

Out of core, a sort-based join through bucket files (:mod:`~dgl_chunked.storage.buckets`)
under ``OUT/_tmp/staged/<tag>/ends/``:

1. :func:`stage_requests`, one task per block ``k`` of the edge type's original IDs: the
   block's endpoints read from the edge files; per end with user IDs, ``(row in the
   block, node ID)`` grouped by block ``j`` of the end type's node IDs;
2. :func:`answer_requests`, one task per end and node block ``j``: the block's user IDs
   (``node_keys`` read directly, ``raw_id_mappings`` staged by
   :mod:`~dgl_chunked.remap.id_mapping_tasks` first), then each edge block's requests in
   turn, answered as batch ``k`` of one file;
3. :meth:`Endpoints.read`, inside each block task: batch ``k`` of every node block's
   answers, placed by row.

Memory per task: one block of edges, or one block of user IDs plus one edge block's
requests.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from dask.delayed import Delayed, delayed

from dgl_chunked._typing import IdArray
from dgl_chunked.compute import StepRunner
from dgl_chunked.io.chunked.chunks import ChunkGroup, ChunkRef, read_edges_partition
from dgl_chunked.remap.id_mapping_tasks import StagedKeys, mapping_tasks
from dgl_chunked.remap.id_mappings import IdMappingSource, find_keys
from dgl_chunked.remap.keys import KeySource
from dgl_chunked.remap.mapping import regular_bounds
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.plan import MappingInputs
from dgl_chunked.remap.spaces import TypeSpace, resolve_type
from dgl_chunked.remap.tasks import TypeJob
from dgl_chunked.storage import fs
from dgl_chunked.storage.buckets import bucket_writer, read_bucket, read_bucket_table, write_buckets

__all__ = [
    "NODE_BLOCK",
    "End",
    "Endpoints",
    "answer_requests",
    "plan_endpoints",
    "stage_keys_and_ends",
    "stage_requests",
]

NODE_BLOCK = 1 << 20
"""Node IDs per block of an end type whose user IDs are ``node_keys`` or a ``raw_id_mappings``."""


@dataclass(frozen=True)
class End:
    """One end (source or destination) of an edge type: its node type, user IDs and node blocks."""

    ntype: str
    keys: KeySource | StagedKeys | None
    bounds: tuple[int, ...]
    scratch: str

    @property
    def label(self) -> str:
        if self.keys is None:
            return f"original IDs of {self.ntype!r} (no user IDs)"
        return str(self.keys.source.label if isinstance(self.keys, StagedKeys) else self.keys.label)

    def request_path(self, k: int) -> str:
        return fs.join(self.scratch, f"q/{k:06d}.arrow")

    def answer_path(self, j: int) -> str:
        return fs.join(self.scratch, f"a/{j:06d}.arrow")


@dataclass(frozen=True)
class Endpoints:
    """An edge type's endpoints, read one block of original edge IDs at a time (``src_nid``, ``dst_nid``)."""

    etype: str
    refs: tuple[ChunkRef, ...]
    num_src: int
    num_dst: int
    bounds: tuple[int, ...]
    ends: tuple[End, End]
    storage_options: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """What the two columns hold (the ``user_ids`` of the type's ``remap.json`` entry)."""
        return f"src_nid: {self.ends[0].label}; dst_nid: {self.ends[1].label}"

    def block(self, lo: int, hi: int) -> int:
        k = bisect.bisect_left(self.bounds, lo)
        assert self.bounds[k] == lo and self.bounds[k + 1] == hi, (lo, hi)
        return k

    def node_ids(self, lo: int, hi: int) -> tuple[IdArray, IdArray]:
        """``(src, dst)`` original node IDs of edges ``[lo, hi)``, from the chunked graph's edge files."""
        src, dst = [], []
        for ref in self.refs:
            if ref.stop <= lo or ref.start >= hi:
                continue
            frame = read_edges_partition(ChunkGroup((ref,)), num_src=self.num_src, num_dst=self.num_dst)
            a, b = max(lo - ref.start, 0), min(hi, ref.stop) - ref.start
            src.append(frame["src"].to_numpy()[a:b])
            dst.append(frame["dst"].to_numpy()[a:b])
        empty = np.empty(0, np.int64)
        return (
            np.concatenate(src).astype(np.int64) if src else empty,
            np.concatenate(dst).astype(np.int64) if dst else empty,
        )

    def read(self, lo: int, hi: int) -> tuple[pa.Array, pa.Array]:
        """``src_nid`` and ``dst_nid`` of edges ``[lo, hi)`` (one block), in edge ID order."""
        k = self.block(lo, hi)
        raw: tuple[IdArray, IdArray] | None = None
        out = []
        for s, end in enumerate(self.ends):
            if end.keys is None:
                raw = raw if raw is not None else self.node_ids(lo, hi)
                out.append(pa.array(raw[s], pa.int64()))
                continue
            paths = [end.answer_path(j) for j in range(len(end.bounds) - 1)]
            table = read_bucket_table(paths, k, self.storage_options)
            rows = np.asarray(table.column("row").to_numpy(), dtype=np.int64)
            assert rows.shape[0] == hi - lo, (self.etype, lo, hi, rows.shape)
            order = np.argsort(rows, kind="stable")
            out.append(table.column("key").combine_chunks().take(pa.array(order)))
        return out[0], out[1]


def plan_endpoints(
    space: TypeSpace, inputs: MappingInputs, id_mappings: str | None, scratch: str, bounds: tuple[int, ...], fmt: str
) -> Endpoints:
    """The endpoints of edge type ``space`` for a table of format ``fmt`` with blocks ``bounds``.

    Raises
    ------
    RemapError
        No chunked graph, or one that does not fit the partitions.
    """
    graph, so = inputs.graph, inputs.storage_options
    if graph is None:
        raise RemapError(
            f"results: format {fmt} writes each edge's endpoints (src_nid, dst_nid) beside the values of "
            f"{space.label}, read from the chunked graph's edge files; pass the chunked graph the partitions were "
            "made from (graph=, --in-dir CHUNKED), or use npy/zarr"
        )
    if space.name not in graph.metadata.edges or graph.num_edges(space.name) != space.total:
        have = graph.num_edges(space.name) if space.name in graph.metadata.edges else 0
        raise RemapError(
            f"{graph.metadata.base_dir}: holds {have} edges of {space.label}, but the partitions hold "
            f"{space.total}; pass the chunked graph the partitions were made from"
        )
    src, _, dst = space.name.split(":")
    ends: list[End] = []
    staged: dict[str, StagedKeys] = {}
    for s, ntype in enumerate((src, dst)):
        node = resolve_type(inputs.config, ntype, where="results")
        keys = find_keys(
            ntype,
            part_root=inputs.part_root,
            graph=graph,
            id_mappings=id_mappings,
            total=node.total,
            storage_options=so,
        )
        reader: KeySource | StagedKeys | None = keys if not isinstance(keys, IdMappingSource) else None
        if isinstance(keys, IdMappingSource):
            if ntype not in staged:
                node_bounds = regular_bounds(node.total, NODE_BLOCK)
                staged[ntype] = StagedKeys(keys, node_bounds, fs.join(scratch, f"ends/keys{s}"), node.label)
            reader = staged[ntype]
        node_bounds = reader.bounds if isinstance(reader, StagedKeys) else regular_bounds(node.total, NODE_BLOCK)
        ends.append(End(ntype, reader, node_bounds, fs.join(scratch, f"ends/{'sd'[s]}")))
    return Endpoints(
        space.name,
        tuple(graph.edge_chunks(space.name)),
        graph.num_nodes(src),
        graph.num_nodes(dst),
        bounds,
        (ends[0], ends[1]),
        so,
    )


def stage_requests(ends: Endpoints, k: int) -> None:
    """Block ``k``'s endpoints, per end with user IDs, grouped by the end type's node block."""
    lo, hi = ends.bounds[k], ends.bounds[k + 1]
    ids = ends.node_ids(lo, hi)
    rows = np.arange(hi - lo, dtype=np.int64)
    for end, nids in zip(ends.ends, ids, strict=True):
        if end.keys is None:
            continue
        block = (np.searchsorted(np.asarray(end.bounds), nids, side="right") - 1).astype(np.int64)
        write_buckets(end.request_path(k), {"row": rows, "nid": nids}, block, len(end.bounds) - 1, ends.storage_options)


def answer_requests(ends: Endpoints, s: int, j: int) -> None:
    """Node block ``j`` of end ``s``: every edge block's requests answered with user IDs, batch ``k`` each."""
    end, so = ends.ends[s], ends.storage_options
    assert end.keys is not None
    lo, hi = end.bounds[j], end.bounds[j + 1]
    keys = end.keys.read(lo, hi)
    schema = pa.schema([("row", pa.int64()), ("key", keys.type)])
    with bucket_writer(end.answer_path(j), schema, so) as writer:
        for k in range(len(ends.bounds) - 1):
            requests = read_bucket(end.request_path(k), j, so)
            taken = keys.take(pa.array(requests["nid"] - lo))
            writer.write_batch(pa.record_batch([pa.array(requests["row"]), taken], schema=schema))


def _staged(jobs: list[TypeJob]) -> list[tuple[str, StagedKeys]]:
    """Every ``raw_id_mappings`` to stage (node tables' and edge tables' ends), once each, with a task tag."""
    out: dict[str, tuple[str, StagedKeys]] = {}
    for job in jobs:
        output = job.output
        if output is None:
            continue
        if isinstance(output.keys, StagedKeys):
            out.setdefault(output.keys.scratch, (job.tag, output.keys))
        ends = output.endpoints
        if isinstance(ends, Endpoints):
            for s, end in enumerate(ends.ends):
                if isinstance(end.keys, StagedKeys):
                    out.setdefault(end.keys.scratch, (f"{job.tag}e{s}", end.keys))
    return list(out.values())


def stage_keys_and_ends(jobs: list[TypeJob], runner: StepRunner, token: str) -> None:
    """Before the block tasks: stage every ``raw_id_mappings`` by block (checking no user ID repeats), then
    the edge tables' endpoints (:func:`stage_requests`, then :func:`answer_requests`)."""
    stage_tasks: list[Delayed] = []
    check: list[Delayed] = []
    for tag, keys in _staged(jobs):
        s, c = mapping_tasks(keys, token, tag)
        stage_tasks += s
        check += c
    if stage_tasks:
        runner.compute(stage_tasks, "stage user IDs")
    if check:
        runner.compute(check, "check user IDs")
    requests: list[Any] = []
    answers: list[Any] = []
    for job in jobs:
        ends = job.output.endpoints if job.output is not None else None
        if not isinstance(ends, Endpoints) or all(end.keys is None for end in ends.ends):
            continue
        name = f"dglc-remap-ends-{job.tag}-{token}"
        requests += [
            delayed(stage_requests, pure=False)(ends, k, dask_key_name=f"{name}-q-{k}")
            for k in range(len(ends.bounds) - 1)
        ]
        answers += [
            delayed(answer_requests, pure=False)(ends, s, j, dask_key_name=f"{name}-a{s}-{j}")
            for s, end in enumerate(ends.ends)
            if end.keys is not None
            for j in range(len(end.bounds) - 1)
        ]
    if requests:
        runner.compute(requests, "stage edge endpoints")
        runner.compute(answers, "join endpoints to user IDs")
