"""From raw arrays to the Chunked Graph Format: ``dgl-chunked chunk``, out of core.

:func:`chunk_graph` reads raw inputs described by a small spec (JSON, or YAML
through PyYAML, which dask already depends on) and writes a complete chunked
graph: ``metadata.json`` with every key (``num_nodes_per_type``,
``num_edges_per_type``, per-chunk counts, relative paths), written last and
atomically. Every file is read and written by Dask tasks, one chunk at a time,
so memory per task is about one chunk of the largest array.

Spec format
-----------
::

    graph_name: mag240m                      # optional (default "graph")
    base_dir: raw/                           # optional; relative paths resolve against it
                                             # (default: the spec file's folder)
    node_types:                              # order = node type IDs
      paper:
        count: 121751666                     # optional: else key rows, else first feature's rows
        num_chunks: 64                       # optional: overrides --num-chunks for this type
        features:
          feat:  {path: paper/node_feat.npy, dtype: float16}    # dtype: cast on the way
          label: {path: paper/node_label.npy}
          year:  {path: "paper/meta/*.parquet", column: year}
      author:
        key: {path: author/ids.csv, header: true, column: author_id}
      institution: {count: 25721}
    edge_types:                              # canonical "src:rel:dst"; order = edge type IDs
      "paper:cites:paper":
        source: {path: paper___cites___paper/edge_index.npy}    # shape (2, E) or (E, 2)
        reverse: true                        # adds "paper:rev-cites:paper"; or a name: cited_by
        self_loops: remove                   # keep (default) | remove | add
        dedup: true                          # drop repeated (src, dst), first one kept
      "author:writes:paper":
        source: {path: writes.tsv, format: tsv, header: true, columns: [author_id, paper]}
        features:
          order: {path: writes_order.npy}    # one row per raw edge
        reverse: written_by

**Sources** (``source``, ``key``, each feature) are objects, or a plain path string:

- ``path``: a file, a glob (``"part-*.parquet"``), a directory (its files, minus
  names starting with ``_`` or ``.``), or a list of these; files are read in order
  and concatenated. Relative to ``base_dir``; fsspec URLs work.
- ``format``: the name of a format of :mod:`dgl_chunked.io.formats` that can be
  ``chunk``'s raw input (``numpy``, ``csv``, ``tsv``, ``parquet``, ...); default from
  the extension (``.npy``, ``.csv``, ``.tsv``, ``.parquet``/``.pq``, ...).
- ``numpy``: edges are int arrays of shape ``(2, E)`` or ``(E, 2)`` (``layout: 2xE`` or
  ``Ex2`` when the shape is ``(2, 2)``); features are 1-D or 2-D; keys are 1-D int or
  string arrays. Row ranges are read with a seek past the header (no full load).
- ``csv``/``tsv``: ``delimiter`` (default ``,``, tab for tsv), ``header`` (bool,
  default false) and ``columns: [src, dst]`` (header names, or 0-based indices
  without a header; default the first two) or, for a key, ``column``. Read in byte
  ranges that are aligned to lines. Features cannot be CSV (as in DGL).
- ``parquet`` (and every table format): ``columns: [src, dst]`` (default the first
  two) for edges; ``column``/``columns`` for features (one scalar column: 1-D;
  several: stacked 2-D; one list column: 2-D) and keys. Read by row groups.
- ``dtype`` (features): output dtype, one DGL loads (float16/32/64, int8/16/32/64,
  uint8, bool); a source dtype DGL cannot load (e.g. uint16) needs one.

**Node types**: ``count`` (optional), ``key``, ``features``, ``num_chunks``. All
features must have ``count`` rows. Node features are written as ``num_chunks``
near-equal ``.npy`` chunks.

**Keys** (ID remapping): a node type with ``key`` gets dense IDs ``0..N-1`` in the
order of its key source (features are row-aligned with it), and every edge end of
that type holds keys (int64 or strings; integer edge columns are matched as text
against string keys). Keys must be unique. The join is out of core: keys and edge
ends are hash-partitioned into buckets, each bucket joined in one task, and IDs
scattered back in edge order. The mapping is kept in ``node_keys/<ntype>/orig_key-<j>.parquet``
(column ``orig_key``; row ``i`` of the concatenation is the node with ID ``i``),
listed in the sidecar ``node_keys.json``::

    {"author": {"format": {"name": "parquet"}, "column": "orig_key", "dtype": "string",
                "data": ["node_keys/author/orig_key-0.parquet", ...],
                "num_rows_per_chunk": [1000, ...]}}

**Relations**: ``source`` (required), ``features`` (one row per raw edge),
``num_chunks``, and the transforms, applied in this order:

1. key remapping of keyed ends;
2. ``self_loops: remove`` (or ``add``) drops every edge ``(i, i)`` (same src and dst type only);
3. ``dedup: true`` drops every edge repeating an earlier ``(src, dst)``: the first
   occurrence by original edge ID is kept, with its features (out of core: a hash
   partition by ``(src, dst)``, one task per bucket);
4. ``self_loops: add`` then appends exactly one ``(i, i)`` per node, after the
   original edges, whose edge features are ``self_loop_fill`` (default 1, as
   ``dgl.add_self_loop``);
5. ``reverse: true`` (or a relation name) adds ``dst:rev-<rel>:src`` right after the
   relation, with swapped endpoints in the same edge order; its ``edge_data`` lists
   the relation's own feature files (the same rows).

Output
------
::

    OUT/
      metadata.json                                   written last
      node_keys.json                                  only with keys
      edge_index/<src:rel:dst>-<k>.parquet            "src", "dst" int64; -loops-<c> for added self loops
      node_data/<ntype>/<feat>-<c>.npy
      edge_data/<src:rel:dst>/<feat>-<k>.npy
      node_keys/<ntype>/orig_key-<j>.parquet

Edge chunks follow the read tasks (empty chunks are left out); ``edge_format="csv"``
writes space-delimited text as DGL's dispatcher reads it.
"""

from __future__ import annotations

from dgl_chunked.chunk.api import chunk_graph, read_orig_keys
from dgl_chunked.chunk.spec import (
    NodeTypeSpec,
    RawGraphSpec,
    RelationSpec,
    SourceSpec,
    parse_spec,
    read_spec,
)
from dgl_chunked.chunk.writer import NODE_KEYS_FILE

__all__ = [
    "NODE_KEYS_FILE",
    "NodeTypeSpec",
    "RawGraphSpec",
    "RelationSpec",
    "SourceSpec",
    "chunk_graph",
    "parse_spec",
    "read_orig_keys",
    "read_spec",
]
