"""Forecast the bytes a run moves over the network when its storage is remote.

On a cluster whose input, staging and output live on an object store (or any
network filesystem), every byte a task reads or writes crosses the host's link.
This module counts those bytes per step from the same facts as
:func:`~dgl_chunked.dispatch.forecast.estimates.forecast_dispatch` (``metadata.json``, file
headers, file sizes) and the access pattern of the code:

- the client, opening the graph, reads ``metadata.json`` and each feature file's
  header or footer (read-ahead bounded by :data:`~dgl_chunked.storage.fs.HEADER_BLOCK`);
- ``stage assignment`` writes the staged owners (``int32`` per node), reading the
  assignment files when the assignment comes from a directory;
- ``number nodes`` reads the owners and writes the new IDs (and the sort order with
  original node IDs);
- ``stage edges and features`` reads every input file once, the owners of the rows of
  each feature task, and, once per worker process that runs an edge task, the map of
  new node IDs (built from the staged owners) of every node type; it writes the staged
  arrays;
- ``write partitions`` reads each partition's segments of the staged arrays (its
  sources twice: the HALO pass and the write pass; the edge owners of every chunk
  whole, once per partition, when original edge IDs are kept) and writes the output.

With ``run --partitions-dir``, ``write assignment`` reads the staged owners and
writes the assignment files: on a local disk in place, on S3 as pieces of at least
5 MiB the store joins (``UploadPartCopy``), elsewhere as pieces written, read back
and joined.

Every request also moves headers, :data:`REQUEST_DOWN_BYTES` and
:data:`REQUEST_UP_BYTES`; the requests per task are :mod:`.requests`' (both counted
by an S3 server behind a byte-counting relay). MB is 10^6 bytes. The
time of a step on a host is its bytes over the host's bandwidth (one thread reads
and writes in turn; several overlap the two directions), plus the compute time
:mod:`.estimates` gives for the same step.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dgl_chunked.dispatch.forecast.bandwidth import parse_bandwidth
from dgl_chunked.dispatch.forecast.estimates import HEADER_BYTES, DispatchForecast, StepForecast
from dgl_chunked.dispatch.forecast.requests import (
    ASSIGN_PIECE_REQUESTS,
    ASSIGN_TASK_REQUESTS,
    REQUEST_DOWN_BYTES,
    REQUEST_UP_BYTES,
    assignment_join_requests,
    assignment_write_requests,
    edge_task_requests,
    feature_task_requests,
    number_task_requests,
    open_requests,
    split_file_requests,
    write_client_requests,
    write_partition_requests,
)
from dgl_chunked.dispatch.ids import compact_owner_dtype, staged_id_dtype
from dgl_chunked.dispatch.kernels import keeps_edge_owners
from dgl_chunked.dispatch.new_id_map import map_bytes
from dgl_chunked.dispatch.options import DispatchOptions
from dgl_chunked.io.assignment.writer import piece_rows
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.io.formats import get_format
from dgl_chunked.io.formats.files import file_sizes
from dgl_chunked.storage import fs

__all__ = [
    "ASSIGNMENT_STEP",
    "REQUEST_DOWN_BYTES",
    "REQUEST_SECONDS",
    "REQUEST_UP_BYTES",
    "NetworkForecast",
    "NetworkStep",
    "assignment_file_bytes",
    "forecast_network",
    "parse_bandwidth",
]

REQUEST_SECONDS = 0.015
"""Round trip of one small request to the storage (S3 API on the benchmark's server,
measured: about 100 requests of the client's opening took 1.5-1.8 s)."""
OWNER_BYTES = 4
"""Bytes per node of the staged owners (``nodes/<t>/part``, int32)."""


@dataclass(frozen=True)
class NetworkStep:
    """The bytes one step moves between the hosts (or the client) and the storage."""

    name: str
    down_bytes: int
    """Read from the storage, all hosts and the client together (payload and headers)."""
    up_bytes: int
    """Written to the storage, all hosts and the client together."""
    requests: int
    host_down_bytes: int
    """Read by the busiest host."""
    host_up_bytes: int
    """Written by the busiest host."""
    seconds: float | None
    """At the forecast's bandwidth: the busiest host's transfer plus the step's compute."""


@dataclass(frozen=True)
class NetworkForecast:
    """Network bytes and time of a run on ``hosts`` hosts whose storage is remote."""

    hosts: int
    processes_per_host: int
    threads_per_process: int
    bandwidth: float | None
    """Bytes per second of every host's link, each direction (``None``: not given)."""
    stages: tuple[NetworkStep, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def down_bytes(self) -> int:
        return sum(s.down_bytes for s in self.stages)

    @property
    def up_bytes(self) -> int:
        return sum(s.up_bytes for s in self.stages)

    @property
    def seconds(self) -> float | None:
        if self.bandwidth is None:
            return None
        return sum(s.seconds or 0.0 for s in self.stages)

    def table(self) -> str:
        """The network forecast as ``dgl-chunked plan`` prints it."""
        rate = "" if self.bandwidth is None else f", {self.bandwidth * 8 / 1e6:g} Mbit/s per host"
        lines = [
            f"network (storage remote): {self.hosts} host(s) x {self.processes_per_host} process(es){rate}"
            " (MB = 10^6 bytes)",
            f"{'step':<28}{'MB down':>10}{'MB up':>10}{'requests':>10}{'host down':>11}{'host up':>10}"
            + (f"{'seconds':>9}" if self.bandwidth else ""),
        ]
        for s in self.stages:
            line = (
                f"{s.name:<28}{s.down_bytes / 1e6:>10.1f}{s.up_bytes / 1e6:>10.1f}{s.requests:>10}"
                f"{s.host_down_bytes / 1e6:>11.1f}{s.host_up_bytes / 1e6:>10.1f}"
            )
            lines.append(line + (f"{s.seconds:>9.1f}" if s.seconds is not None else ""))
        total = f"{'total':<28}{self.down_bytes / 1e6:>10.1f}{self.up_bytes / 1e6:>10.1f}"
        lines.append(total + (f"{'':>31}{self.seconds:>9.1f}" if self.seconds is not None else ""))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class _Step:
    """Bytes of one step: per task (spread over the hosts) and the client's own."""

    name: str
    tasks: list[tuple[int, int, int]] = field(default_factory=list)
    """``(down, up, requests)`` of every task."""
    client: tuple[int, int, int] = (0, 0, 0)

    def add(self, down: int, up: int, requests: int) -> None:
        self.tasks.append((int(down), int(up), int(requests)))


def _busiest_host(tasks: Sequence[tuple[int, int, int]], hosts: int, procs: int) -> tuple[int, int]:
    """``(down, up)`` bytes of the busiest host: tasks placed largest first on the least
    loaded of its ``hosts * procs`` worker processes (process ``k`` on host ``k % hosts``,
    so that ties go to another host first, as Dask spreads them)."""
    slots = [[0, 0] for _ in range(max(1, hosts * procs))]
    for down, up, req in sorted(tasks, key=lambda t: t[0] + t[1], reverse=True):
        target = min(slots, key=sum)
        target[0] += down + req * REQUEST_DOWN_BYTES
        target[1] += up + req * REQUEST_UP_BYTES
    per_host = [[0, 0] for _ in range(max(1, hosts))]
    for k, (down, up) in enumerate(slots):
        per_host[k % len(per_host)][0] += down
        per_host[k % len(per_host)][1] += up
    busiest = max(per_host, key=sum)
    return busiest[0], busiest[1]


def _finish(step: _Step, hosts: int, procs: int, threads: int, bandwidth: float | None, cpu: float) -> NetworkStep:
    reqs = sum(t[2] for t in step.tasks) + step.client[2]
    down = sum(t[0] for t in step.tasks) + step.client[0] + reqs * REQUEST_DOWN_BYTES
    up = sum(t[1] for t in step.tasks) + step.client[1] + reqs * REQUEST_UP_BYTES
    h_down, h_up = _busiest_host(step.tasks, hosts, procs)  # a host's processes share its link
    seconds = None
    if bandwidth:
        overlap = procs * threads
        seconds = max(h_down, h_up, (h_down + h_up) / overlap) / bandwidth + cpu
        seconds += step.client[2] * REQUEST_SECONDS  # the client's requests, one after the other
    return NetworkStep(step.name, down, up, reqs, h_down, h_up, seconds)


def _client_open(graph: ChunkedGraph, size: Mapping[str, int], orig_nids: bool) -> tuple[int, int, int]:
    """What opening the graph reads: ``metadata.json``, and a header or footer of every
    feature file (rows and dtype)."""
    meta = graph.metadata
    down, files = file_sizes([fs.join(meta.base_dir, "metadata.json")], graph.storage_options)[0], 0
    for data in (meta.node_data, meta.edge_data):
        for feats in data.values():
            for src in feats.values():
                block = get_format(src.format).header_bytes
                down += sum(size[p] if block is None else min(size[p], block) for p in src.paths)
                files += len(src.paths)  # its header (sizes come from one listing per folder)
    return down, 0, open_requests(files, len(meta.node_types), orig_nids)


def _features(graph: ChunkedGraph) -> Iterator[tuple[Literal["node", "edge"], str, str, int]]:
    """``(kind, type, feature, bytes per row)`` of every node and edge feature."""
    meta = graph.metadata
    kinds: tuple[tuple[Literal["node", "edge"], Mapping[str, Mapping[str, Any]]], ...] = (
        ("node", meta.node_data),
        ("edge", meta.edge_data),
    )
    for kind, data in kinds:
        for type_name, feats in data.items():
            for feat in feats:
                dtype, shape = graph.feature_info(kind, type_name, feat)
                yield kind, type_name, feat, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _input_sizes(graph: ChunkedGraph) -> dict[str, int]:
    """Bytes of every edge and feature file (one listing per folder)."""
    meta = graph.metadata
    sources = [*meta.edges.values()] + [
        src for data in (meta.node_data, meta.edge_data) for feats in data.values() for src in feats.values()
    ]
    paths = [p for src in sources for p in src.paths]
    return dict(zip(paths, file_sizes(paths, graph.storage_options), strict=True))


def _edge_step(
    graph: ChunkedGraph,
    size: Mapping[str, int],
    num_parts: int,
    opts: DispatchOptions,
    procs: int,
    extra_node_row_bytes: int,
) -> _Step:
    meta = graph.metadata
    n_total = sum(meta.num_nodes(t) for t in meta.node_types)
    id_size = staged_id_dtype(n_total, wide=opts.wide_ids).itemsize
    owner_size = compact_owner_dtype(num_parts).itemsize
    step = _Step("stage edges and features")
    edge_tasks = 0
    for spec in meta.edge_types:
        keep = keeps_edge_owners(meta, spec.name, opts.save_orig_eids)
        for k, group in enumerate(graph.edge_groups(spec.name)):
            read = sum(size[r.path] for r in group.refs)
            up = group.rows * (2 * id_size + owner_size * keep)
            step.add(read, up, edge_task_requests(len(group.refs), keep, k == 0))
            edge_tasks += 1
    typed: set[tuple[str, str]] = set()
    for kind, type_name, feat, row in _features(graph):
        owner = OWNER_BYTES if kind == "node" else owner_size
        for group in graph.feature_groups(kind, type_name, feat):
            read = sum(size[r.path] for r in group.refs) + owner * group.rows
            step.add(read, row * group.rows, feature_task_requests(len(group.refs), (kind, type_name) not in typed))
            typed.add((kind, type_name))
    if extra_node_row_bytes:
        for t in meta.node_types:
            step.add(
                OWNER_BYTES * meta.num_nodes(t),
                extra_node_row_bytes * meta.num_nodes(t),
                feature_task_requests(0, True),
            )
    step.client = (0, 0, 4 + 2 * len(meta.node_types))  # the node-ID cache cleared, records listed
    # the new-ID maps: built once per worker process that runs an edge task
    maps = 0
    for t in {n for spec in meta.edge_types for n in (spec.src_type, spec.dst_type)}:
        n = meta.num_nodes(t)
        maps += OWNER_BYTES * n if map_bytes(n, opts.block_rows, num_parts) < 4 * n else id_size * n
    for i in range(min(procs, edge_tasks)):
        down, up, req = step.tasks[i]
        step.tasks[i] = (down + maps, up, req + 6 * len(meta.node_types))
    return step


def _write_step(
    graph: ChunkedGraph, num_parts: int, opts: DispatchOptions, forecast: DispatchForecast, extra_node_row_bytes: int
) -> _Step:
    meta = graph.metadata
    id_size = staged_id_dtype(forecast.nodes, wide=opts.wide_ids).itemsize
    owner_size = compact_owner_dtype(num_parts).itemsize
    feat_bytes, feat_tasks = extra_node_row_bytes * forecast.nodes, len(meta.node_types) * bool(extra_node_row_bytes)
    for kind, type_name, feat, row in _features(graph):
        feat_bytes += row * (meta.num_nodes(type_name) if kind == "node" else meta.num_edges(type_name))
        feat_tasks += len(graph.feature_groups(kind, type_name, feat))
    edge_tasks = sum(len(graph.edge_groups(s.name)) for s in meta.edge_types)
    kept_owner_edges = sum(meta.num_edges(s.name) for s in meta.edge_types if opts.save_orig_eids)
    per_part_down = (3 * id_size * forecast.edges + feat_bytes + 8 * forecast.nodes * opts.save_orig_nids) / num_parts
    per_part_down += owner_size * kept_owner_edges  # every chunk's owners, whole, per partition
    out_per_part = (forecast.output_bytes - HEADER_BYTES) / num_parts  # less the partition config
    blocks = sum(-(-meta.num_nodes(t) // opts.block_rows) for t in meta.node_types)
    requests = write_partition_requests(
        edge_tasks, feat_tasks, blocks, len(meta.node_types), opts.save_orig_nids, opts.save_orig_eids
    )
    step = _Step("write partitions")
    for p in range(num_parts):  # files split into pieces (forecast.writes) read a few segments again
        split = sum(
            split_file_requests(f.kind, f.pieces[p]) for f in (forecast.writes.files if forecast.writes else ())
        )
        step.add(int(per_part_down), int(out_per_part), requests + split)
    files = num_parts * (3 + opts.save_orig_nids + opts.save_orig_eids)
    step.client = (0, 4096, write_client_requests(files))  # metadata.json, marks, the staging's records
    return step


def assignment_file_bytes(nodes: int, num_parts: int) -> int:
    """Bytes of DGL's text assignment files: one partition ID and a newline per node."""
    return nodes * (len(str(max(num_parts - 1, 0))) + 1)


ASSIGNMENT_STEP = "write assignment"
"""``run --partitions-dir``'s step (the name ``run`` logs it under)."""


def _assignment_write_step(graph: ChunkedGraph, num_parts: int, block_rows: int, remote: bool, on_s3: bool) -> _Step:
    """``run --partitions-dir``: per block, the staged owners read (whole chunks) and its
    text written; then ``partition_meta.json`` and its sidecar. Local: only the owners
    cross the network (the blocks write into the file in place). On S3 a block spans
    :func:`~dgl_chunked.io.assignment.writer.piece_rows` rows and the store joins the
    pieces; elsewhere the client joins them (read back, written once)."""
    meta = graph.metadata
    step = _Step(ASSIGNMENT_STEP)
    blocks, text_total = 0, 0
    for t in meta.node_types:
        n = meta.num_nodes(t)
        chunk = block_rows if n > block_rows else n
        rows = piece_rows(chunk, on_s3)
        for lo in range(0, n, rows):
            chunks, text = -(-min(rows, n - lo) // max(chunk, 1)), assignment_file_bytes(min(rows, n - lo), num_parts)
            step.add(
                OWNER_BYTES * chunk * chunks, text * remote, ASSIGN_PIECE_REQUESTS + 2 * chunks if on_s3 else 4 + remote
            )
            blocks += 1
            text_total += text
    if on_s3:
        step.client = (0, 2048, assignment_join_requests(len(meta.node_types)))  # meta files
    elif remote:
        requests = assignment_write_requests(blocks, len(meta.node_types)) - 5 * blocks
        step.client = (text_total, text_total + 2048, requests)  # pieces read back, joined, meta files
    return step


def forecast_network(
    graph: ChunkedGraph,
    num_parts: int,
    forecast: DispatchForecast,
    *,
    options: DispatchOptions | None = None,
    hosts: int = 1,
    processes_per_host: int = 1,
    threads_per_process: int = 1,
    bandwidth: float | str | None = None,
    assignment_bytes: int = 0,
    partition_step: StepForecast | None = None,
    extra_node_row_bytes: int = 0,
    partitions_dir: str | None = None,
) -> NetworkForecast:
    """Bytes over the network per step of a dispatch (or run) whose storage is remote.

    Parameters
    ----------
    graph
        The opened chunked graph (metadata, headers and file sizes are read).
    num_parts
        Number of partitions.
    forecast
        :func:`~dgl_chunked.dispatch.forecast.estimates.forecast_dispatch` of the same run (its
        output size and compute times).
    options
        The dispatch options of the run.
    hosts, processes_per_host, threads_per_process
        The cluster: worker processes share their host's link.
    bandwidth
        Every host's link, each direction (``"1gbit"``, bytes per second); ``None``
        forecasts bytes only.
    assignment_bytes
        Bytes of the assignment files dispatch reads (0 when ``run`` computes it).
    partition_step
        ``run``'s partition step, whose network bytes are the client's opening of the
        graph (random assignment); ``None`` for ``dispatch``.
    extra_node_row_bytes
        Bytes per node of computed node data (``trainer_id``).
    partitions_dir
        ``run --partitions-dir``: the step ``write assignment`` that writes it is
        forecast (its files' bytes count where it is remote).

    Returns
    -------
    NetworkForecast
    """
    opts = options or DispatchOptions()
    rate = parse_bandwidth(bandwidth)
    meta = graph.metadata
    n_total = forecast.nodes
    id_size = staged_id_dtype(n_total, wide=opts.wide_ids).itemsize
    procs = hosts * processes_per_host
    cpu = {s.name: s.seconds for s in forecast.stages}
    size = _input_sizes(graph)

    opening = _Step(partition_step.name if partition_step else "open the graph")
    opening.client = _client_open(graph, size, opts.save_orig_nids)
    assign = _Step("stage assignment")
    number = _Step("number nodes")
    for t in meta.node_types:
        n = meta.num_nodes(t)
        for lo in range(0, n, opts.block_rows):
            rows = min(opts.block_rows, n - lo)
            chunk = opts.block_rows if n > opts.block_rows else n  # Zarr stores the last chunk whole
            assign.add(assignment_bytes * rows // max(n_total, 1), OWNER_BYTES * chunk, ASSIGN_TASK_REQUESTS)
            number.add(
                OWNER_BYTES * chunk,
                (id_size + 8 * opts.save_orig_nids) * chunk,
                number_task_requests(opts.save_orig_nids),
            )
    steps = [assign, number]
    if partitions_dir is not None:
        remote, on_s3 = fs.is_url(partitions_dir), partitions_dir.split("://", 1)[0] in ("s3", "s3a")
        steps.append(_assignment_write_step(graph, num_parts, opts.block_rows, remote, on_s3))
    stages = [
        _finish(opening, hosts, processes_per_host, threads_per_process, rate, 0.0),
        *(
            _finish(s, hosts, processes_per_host, threads_per_process, rate, cpu.get(s.name, 0.0))
            for s in (
                *steps,
                _edge_step(graph, size, num_parts, opts, procs, extra_node_row_bytes),
                _write_step(graph, num_parts, opts, forecast, extra_node_row_bytes),
            )
        ),
    ]
    if partition_step is not None and rate:
        first = stages[0]
        stages[0] = NetworkStep(
            first.name, first.down_bytes, first.up_bytes, first.requests, 0, 0,
            partition_step.seconds + (first.seconds or 0.0),
        )  # fmt: skip
    notes = [
        "bytes between the hosts (and the client) and the storage; Dask's own traffic between "
        "scheduler and workers is not counted",
    ]
    if partition_step is not None and not partition_step.name.endswith("(random)"):
        notes.append(f"{partition_step.name}: the partitioner's own reads and writes are not counted")
    return NetworkForecast(hosts, processes_per_host, threads_per_process, rate, tuple(stages), tuple(notes))
