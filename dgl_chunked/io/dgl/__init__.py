"""DGL's own files without DGL: tensor dicts, graph files and the partition config.

- :mod:`.binary` is the public face: writers and strict readers of ``graph.dgl``,
  ``node_feat.dgl``, ``edge_feat.dgl`` and friends (``docs/spec/dgl-binary.md``);
- :mod:`.spans` (streamed array sources), :mod:`.model`, :mod:`.graph_read`,
  :mod:`.graph_write` and :mod:`.describe` are its parts, built on
  :mod:`dgl_chunked.io.formats.dgl_records` (byte-level records and the bounds-checked
  ``Cursor``) and :mod:`dgl_chunked.io.formats.dgl` (the tensor-dict reader, format ``dgl``);
- :mod:`.partition_config` is the JSON ``load_partition`` reads (``docs/spec/partition-config.md``, "Keys").
"""

from __future__ import annotations

from dgl_chunked.io.dgl.binary import (
    ArraySpans,
    CanonicalEtype,
    GraphData,
    HomogeneousGraph,
    annotate_dgl_file,
    describe_dgl_file,
    dgl_file_kind,
    format_annotation,
    read_graphs,
    read_tensor_dict,
    write_graph,
    write_tensor_dict,
)
from dgl_chunked.io.dgl.partition_config import (
    CONFIG_NAME,
    PartitionConfig,
    read_partition_config,
    write_partition_config,
)

__all__ = [
    "CONFIG_NAME",
    "ArraySpans",
    "CanonicalEtype",
    "GraphData",
    "HomogeneousGraph",
    "PartitionConfig",
    "annotate_dgl_file",
    "describe_dgl_file",
    "dgl_file_kind",
    "format_annotation",
    "read_graphs",
    "read_partition_config",
    "read_tensor_dict",
    "write_graph",
    "write_partition_config",
    "write_tensor_dict",
]
