"""Partition-assignment directories in DGL's layout: ``<ntype>.txt`` + ``partition_meta.json``.

This is the interchange format between DGL's step 1 (``random_partition.py``,
ParMETIS, or our partitioners) and step 2 (``dispatch_data.py``, or our dispatch);
``docs/spec/assignment.md`` has the formats::

    ASSIGN/
      <ntype>.txt            one ASCII partition ID per line, line i = per-type node i,
                             no header (one file per node type, also for dgl_chunked)
      partition_meta.json    {"algo_name": "random"|"metis", "num_parts": N, "version": "1.0.0"}
      dglc_partition.json    dgl_chunked only: the sidecar (real method name, seed, balance
                             options, our version, the size/mtime of every <ntype>.txt)
      dglc_parts.zarr/       dgl_chunked only: the same IDs as int32 Zarr arrays (one per
                             node type), a binary copy for fast, range-readable access

One module per concern:

- :mod:`.layout`: the entry names and small file helpers;
- :mod:`.meta`: ``partition_meta.json`` (:class:`PartitionMeta`), with the
  DGL-accepted ``algo_name`` (:func:`dgl_algo_name`);
- :mod:`.sidecar`: ``dglc_partition.json`` (:class:`AssignmentSidecar`), which
  records the real method, so nothing is mislabelled;
- :mod:`.reader`: :func:`open_assignment`, lazy and validated (the Zarr copy is used
  only when the sidecar says it matches every text file's size and mtime);
- :mod:`.writer`: :func:`write_assignment` (a half-written directory never looks
  complete: ``partition_meta.json`` is removed first and written last) and
  :func:`retract_assignment`.
"""

from __future__ import annotations

from dgl_chunked.io.assignment.layout import ASSIGNMENT_KIND, META_NAME, SIDECAR_NAME, ZARR_NAME
from dgl_chunked.io.assignment.meta import DGL_ALGO_NAMES, PartitionMeta, dgl_algo_name, read_partition_meta
from dgl_chunked.io.assignment.reader import open_assignment, parse_assignment_block
from dgl_chunked.io.assignment.sidecar import AssignmentSidecar, read_assignment_sidecar
from dgl_chunked.io.assignment.writer import retract_assignment, write_assignment

__all__ = [
    "ASSIGNMENT_KIND",
    "DGL_ALGO_NAMES",
    "META_NAME",
    "SIDECAR_NAME",
    "ZARR_NAME",
    "AssignmentSidecar",
    "PartitionMeta",
    "dgl_algo_name",
    "open_assignment",
    "parse_assignment_block",
    "read_assignment_sidecar",
    "read_partition_meta",
    "retract_assignment",
    "write_assignment",
]
