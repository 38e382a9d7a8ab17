"""Dispatch: chunked graph + node assignment -> DGL distributed partitions."""

from __future__ import annotations

from dgl_chunked.dispatch.api import DispatchOptions, DispatchResult, PartitionSummary, dispatch

__all__ = ["DispatchOptions", "DispatchResult", "PartitionSummary", "dispatch"]
