"""The input side: a Chunked Graph Format directory (``metadata.json`` plus chunk files).

- :mod:`.model` is the frozen model of ``metadata.json``; :mod:`.metadata` parses
  and checks the JSON into it;
- :mod:`.formats` reads and writes one chunk file through the format registry
  (:mod:`dgl_chunked.io.formats`, one module per file format);
- :mod:`.chunks` holds the per-file references and task kernels, and :mod:`.graph`
  builds lazy Dask views of the whole graph from metadata alone;
- :mod:`.validate` checks every chunk file and reports every problem.
"""

from __future__ import annotations

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

__all__ = [
    "ArraySource",
    "ChunkRef",
    "ChunkedGraph",
    "ChunkedGraphMetadata",
    "EdgeTypeSpec",
    "ValidationReport",
    "count_edge_rows",
    "feature_chunk_info",
    "open_chunked_graph",
    "parse_metadata",
    "read_edge_chunk",
    "read_feature_chunk",
    "read_metadata",
    "validate_chunked_graph",
    "write_edge_chunk",
    "write_feature_chunk",
]
