"""Dispatch: chunked graph + node assignment -> DGL distributed partitions."""

from __future__ import annotations

from dgl_chunked.dispatch.api import (
    DispatchOptions,
    DispatchResult,
    PartitionSummary,
    dispatch,
    wait_for_staging_removal,
)
from dgl_chunked.dispatch.options import parse_memory_limit
from dgl_chunked.io.graphbolt.csc import GraphBoltOptions

__all__ = [
    "DispatchOptions",
    "DispatchResult",
    "GraphBoltOptions",
    "PartitionSummary",
    "dispatch",
    "parse_memory_limit",
    "wait_for_staging_removal",
]
