"""Formats in and out: chunked-graph input, assignment directories, DGL binary files.

Nothing here decides how work is scheduled; readers are per-chunk kernels and the
lazy views build Dask collections from metadata alone.
"""

from __future__ import annotations

from dgl_chunked.io.assignment import (
    PartitionMeta,
    open_assignment,
    read_partition_meta,
    write_assignment,
)
from dgl_chunked.io.chunked.formats import (
    count_edge_rows,
    feature_chunk_info,
    read_edge_chunk,
    read_feature_chunk,
    write_edge_chunk,
    write_feature_chunk,
)
from dgl_chunked.io.chunked.graph import ChunkedGraph, ChunkRef, open_chunked_graph
from dgl_chunked.io.chunked.metadata import (
    ArraySource,
    ChunkedGraphMetadata,
    EdgeTypeSpec,
    parse_metadata,
    read_metadata,
)
from dgl_chunked.io.chunked.validate import ValidationReport, validate_chunked_graph
from dgl_chunked.io.dgl.binary import (
    ArraySpans,
    GraphData,
    HomogeneousGraph,
    describe_dgl_file,
    read_graphs,
    read_tensor_dict,
    write_graph,
    write_tensor_dict,
)
from dgl_chunked.io.dgl.partition_config import (
    PartitionConfig,
    read_partition_config,
    write_partition_config,
)

__all__ = [
    "ArraySpans",
    "ArraySource",
    "ChunkRef",
    "ChunkedGraph",
    "ChunkedGraphMetadata",
    "EdgeTypeSpec",
    "GraphData",
    "HomogeneousGraph",
    "PartitionConfig",
    "PartitionMeta",
    "ValidationReport",
    "count_edge_rows",
    "describe_dgl_file",
    "feature_chunk_info",
    "open_assignment",
    "open_chunked_graph",
    "parse_metadata",
    "read_edge_chunk",
    "read_feature_chunk",
    "read_graphs",
    "read_metadata",
    "read_partition_config",
    "read_partition_meta",
    "read_tensor_dict",
    "validate_chunked_graph",
    "write_assignment",
    "write_edge_chunk",
    "write_feature_chunk",
    "write_graph",
    "write_partition_config",
    "write_tensor_dict",
]
