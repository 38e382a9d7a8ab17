"""Requests to an object store per task of a run, and the bytes each request adds.

Counted by an S3 server (moto) through a relay that counts every byte each way
(``tests/s3relay.py``; ``tests/dispatch/forecast/test_network.py`` checks the
forecast against it): a request carries about :data:`REQUEST_DOWN_BYTES` down and
:data:`REQUEST_UP_BYTES` up besides its payload. Measured per kind of request with
s3fs 2026.9 / aiobotocore 3.10 (HTTP headers, each way, bytes)::

    HEAD 511 / 700       GET (range) 530-560 / 725-780     PUT 483 / 862
    LIST 751 up, ~540 of XML down besides the headers      DELETE 265 / 721
    multipart upload (create, part, complete) 533 / 883

and over whole runs (three graphs, 885-2600 requests) 434-449 down, 787-793 up of
headers per request, plus the small bodies the payload does not count (Zarr's
``zarr.json``, listings, ownership marks): 200 down on average.

Most requests are not payload: for every array a task creates or opens, Zarr on
fsspec asks for its ``zarr.json`` and its parents' (HEAD, GET, LIST), the
ownership marks and ``_done`` records are small files. The counts per task below
are what the server counted per kind of task (same runs), as a fixed part plus a
part per input file, per task and per node type.
"""

from __future__ import annotations

from dgl_chunked.dispatch.graph_split import HALO_TASKS

__all__ = [
    "ASSIGN_TASK_REQUESTS",
    "REQUEST_DOWN_BYTES",
    "REQUEST_UP_BYTES",
    "assignment_join_requests",
    "assignment_write_requests",
    "edge_task_requests",
    "feature_task_requests",
    "split_file_requests",
    "number_task_requests",
    "open_requests",
    "write_client_requests",
    "write_partition_requests",
]

REQUEST_DOWN_BYTES = 640
"""Bytes received per request besides the payload: HTTP headers (440) and the small
bodies of metadata requests (200 on average), measured through the relay."""
REQUEST_UP_BYTES = 790
"""Bytes sent per request besides the payload (a signed S3 request's headers, measured)."""

ASSIGN_TASK_REQUESTS = 6
"""A ``stage assignment`` task: its block of owners (array open, one chunk) and its record."""
NUMBER_TASK_REQUESTS = 10
"""A ``number nodes`` task, without original node IDs (3 more with them)."""


def open_requests(feature_files: int, node_types: int, orig_nids: bool) -> int:
    """The client's, before the first step: ``metadata.json``, a header per feature
    file, the ownership marks, the staging's fingerprint, and per node type the staged
    arrays it creates (36 requests each, 17 more for the original IDs)."""
    return 2 + feature_files + 43 + (36 + 17 * orig_nids) * node_types


def number_task_requests(orig_nids: bool) -> int:
    """A ``number nodes`` task."""
    return NUMBER_TASK_REQUESTS + 3 * orig_nids


def edge_task_requests(files: int, keeps_owners: bool, first_of_type: bool) -> int:
    """A ``stage edges and features`` edge task: its files (one request each), the
    owners, three arrays created (four with the edge owners) and its record."""
    return 46 + files + 19 * keeps_owners + 2 * first_of_type


def feature_task_requests(files: int, first_of_type: bool) -> int:
    """A feature task: its files, the owners of its rows, its array created and its
    record (the first of a node or edge type also creates the type's group)."""
    return 28 + files + 4 * first_of_type


def write_partition_requests(
    edge_tasks: int, feature_tasks: int, node_blocks: int, node_types: int, orig_nids: bool, orig_eids: bool
) -> int:
    """One partition's writers: per file written 5 (its record, temporary name and
    rename), per staged segment read 3 (the array's ``zarr.json``, its chunk),
    9 per edge task (its source, destination and owner segments, read twice)."""
    requests = 15 + 9 * edge_tasks + 3 * feature_tasks
    if orig_nids:
        requests += 5 + 2 * node_types + node_blocks
    if orig_eids:
        requests += 5 + 4 * edge_tasks
    return requests


def split_file_requests(kind: str, pieces: int) -> int:
    """What a file written in ``pieces`` (``dispatch.write_pieces``) adds to its one-task
    writer's requests: its partial file made and renamed (2), and per cut between two
    pieces the staged segment it falls in read again by the next piece (3 per array: the
    sources of a graph file's HALO tasks (at most ``graph_split.HALO_TASKS``), sources and destinations of its
    row ranges; a feature file's rows). A model of the code, not measured against a
    relay: only files on a local or shared file system are split."""
    if pieces <= 1:
        return 0
    if kind == "graph":
        return 2 + 3 * ((min(HALO_TASKS, pieces) - 1) + 2 * (pieces - 1))
    return 2 + 3 * (pieces - 1)


def write_client_requests(files: int) -> int:
    """The client's in ``write partitions``: the output's marks and ``metadata.json``,
    and the staging's records checked and removed (5.5 per file written)."""
    return 52 + (11 * files) // 2


def assignment_write_requests(blocks: int, node_types: int) -> int:
    """``run --partitions-dir``: the directory's marks and lease, ``partition_meta.json``
    and its sidecar (37); per block of owners read, its text piece written, read back
    and removed (10); per node type its file joined and renamed (7)."""
    return 37 + 10 * blocks + 7 * node_types


def assignment_join_requests(node_types: int) -> int:
    """``run --partitions-dir`` on S3, the client's: the directory's marks and lease,
    ``partition_meta.json`` and its sidecar, the pieces' directory (39); per node type
    its pieces joined by the store (a multipart upload: created, one ``UploadPartCopy``
    per piece, completed), its stamp, the pieces listed and removed (6). Measured
    against moto (``tests/dispatch/forecast/test_relay.py``)."""
    return 39 + 6 * node_types


ASSIGN_PIECE_REQUESTS = 6
"""``run --partitions-dir`` on S3, per text piece: the Zarr metadata of the staged
owners (4), the piece written and checked (2); plus 2 per owner chunk it reads."""
