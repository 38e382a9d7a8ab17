"""Formats in and out: chunked-graph input, assignment directories, DGL binary files.

Nothing here decides how work is scheduled; readers are per-chunk kernels and the
lazy views build Dask collections from metadata alone.
"""

from __future__ import annotations

from dgl_chunked.io import chunked
from dgl_chunked.io.assignment import (
    PartitionMeta,
    open_assignment,
    read_partition_meta,
    write_assignment,
)
from dgl_chunked.io.chunked import *  # noqa: F403  (the input side's API, listed in its __all__)
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
    "GraphData",
    "HomogeneousGraph",
    "PartitionConfig",
    "PartitionMeta",
    "describe_dgl_file",
    "open_assignment",
    "read_graphs",
    "read_partition_config",
    "read_partition_meta",
    "read_tensor_dict",
    "write_assignment",
    "write_graph",
    "write_partition_config",
    "write_tensor_dict",
]
__all__ += chunked.__all__
