"""The assignment-directory API under its earlier module name (imports keep working).

The code lives by concern: :mod:`~dgl_chunked.io.assignment.layout` (entry names,
file helpers), :mod:`~dgl_chunked.io.assignment.meta` (``partition_meta.json``),
:mod:`~dgl_chunked.io.assignment.sidecar` (``dglc_partition.json``),
:mod:`~dgl_chunked.io.assignment.reader` (:func:`open_assignment`) and
:mod:`~dgl_chunked.io.assignment.writer` (:func:`write_assignment`,
:func:`retract_assignment`). New code imports from :mod:`dgl_chunked.io.assignment`
or from those modules.
"""

from __future__ import annotations

from dgl_chunked.io.assignment.layout import ASSIGNMENT_KIND, META_NAME, SIDECAR_NAME, ZARR_NAME
from dgl_chunked.io.assignment.meta import DGL_ALGO_NAMES, PartitionMeta, dgl_algo_name, read_partition_meta
from dgl_chunked.io.assignment.reader import default_chunks, open_assignment, parse_assignment_block
from dgl_chunked.io.assignment.sidecar import AssignmentSidecar, read_assignment_sidecar
from dgl_chunked.io.assignment.writer import (
    assignment_entries,
    encode_assignment_block,
    retract_assignment,
    write_assignment,
)

__all__ = [
    "ASSIGNMENT_KIND",
    "AssignmentSidecar",
    "DGL_ALGO_NAMES",
    "META_NAME",
    "PartitionMeta",
    "SIDECAR_NAME",
    "ZARR_NAME",
    "assignment_entries",
    "default_chunks",
    "dgl_algo_name",
    "encode_assignment_block",
    "open_assignment",
    "parse_assignment_block",
    "read_assignment_sidecar",
    "read_partition_meta",
    "retract_assignment",
    "write_assignment",
]
