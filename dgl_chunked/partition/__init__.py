"""Partition assignment: which partition owns each node.

- :func:`assign_partitions` returns, per node type, a lazy int32 Dask array chunked
  like ``graph.node_chunks(ntype)``; ``method`` picks a registered
  :class:`PartitionMethod` (``random``: seeded splitmix64 hash, out of core;
  ``range``: contiguous, balanced ranges of each type's IDs (GraphStorm's), out of core;
  ``metis``: pymetis on the in-memory structure, with balance repair; ``lp``:
  multilevel partitioning and streaming placement, the better kept, refined by label
  propagation under hard caps, out of core, see :mod:`.method`).
- :func:`compute_partition_report` measures edge cut, balance and HALO nodes out of core.
- :func:`make_assignment` is the ``partition`` command: assign, write the assignment
  directory and its ``report.json``, retract it on failure.
- Reading and writing DGL assignment directories lives in :mod:`dgl_chunked.io.assignment`.
"""

from __future__ import annotations

from dgl_chunked.partition.assign import (
    PartitionMethod,
    PartitionOptions,
    assign_partitions,
    available_methods,
    get_method,
    register_method,
)
from dgl_chunked.partition.lp import LPConfig, LPMethod
from dgl_chunked.partition.metis import MetisMemoryError, estimate_metis_memory
from dgl_chunked.partition.random import random_parts, splitmix64
from dgl_chunked.partition.range import range_bounds, range_parts
from dgl_chunked.partition.report import PartitionReport, compute_partition_report
from dgl_chunked.partition.workflow import make_assignment

__all__ = [
    "LPConfig",
    "LPMethod",
    "PartitionMethod",
    "PartitionOptions",
    "PartitionReport",
    "MetisMemoryError",
    "assign_partitions",
    "available_methods",
    "compute_partition_report",
    "estimate_metis_memory",
    "make_assignment",
    "get_method",
    "random_parts",
    "range_bounds",
    "range_parts",
    "register_method",
    "splitmix64",
]
