"""GraphBolt's ``fused_csc_sampling_graph.pt`` without torch.

- :mod:`dgl_chunked.io.formats.torch_zip` (torch's zip container) and
  :mod:`dgl_chunked.io.formats.torch_pickle` (the pickle inside it), both ways, are
  what it builds on;
- :mod:`.graph_file` writes and strictly reads the GraphBolt graph file;
- :mod:`.csc` builds a partition's CSC in bounded memory and writes it.
"""

from __future__ import annotations

from dgl_chunked.io.graphbolt.csc import GraphBoltOptions, write_graphbolt_partition
from dgl_chunked.io.graphbolt.graph_file import (
    GRAPHBOLT_FILE,
    GraphBoltGraph,
    describe_graphbolt_file,
    is_torch_zip,
    read_graphbolt_graph,
    write_graphbolt_graph,
)

__all__ = [
    "GRAPHBOLT_FILE",
    "GraphBoltGraph",
    "GraphBoltOptions",
    "describe_graphbolt_file",
    "is_torch_zip",
    "read_graphbolt_graph",
    "write_graphbolt_graph",
    "write_graphbolt_partition",
]
