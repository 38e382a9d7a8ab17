"""Partition-assignment directories in DGL's layout: ``<ntype>.txt`` + ``partition_meta.json``.

The interchange format between partitioning (ours, DGL's ``random_partition.py`` or
ParMETIS) and dispatch, plus our sidecar that records how an assignment was made.
"""

from __future__ import annotations

from dgl_chunked.io.assignment.directory import (
    DGL_ALGO_NAMES,
    PartitionMeta,
    dgl_algo_name,
    open_assignment,
    read_assignment_sidecar,
    read_partition_meta,
    retract_assignment,
    write_assignment,
)

__all__ = [
    "DGL_ALGO_NAMES",
    "PartitionMeta",
    "dgl_algo_name",
    "open_assignment",
    "read_assignment_sidecar",
    "read_partition_meta",
    "retract_assignment",
    "write_assignment",
]
