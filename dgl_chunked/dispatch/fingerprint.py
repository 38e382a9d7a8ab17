"""The fingerprint of a dispatch run: input files, assignment and options (resume must match)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dask.array as da
from dask.base import tokenize

from dgl_chunked._typing import StorageOptions
from dgl_chunked.dispatch.options import DispatchOptions
from dgl_chunked.dispatch.staging import STAGING_FORMAT
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.storage import fs

__all__ = ["run_fingerprint", "stat_token"]


def run_fingerprint(
    graph: ChunkedGraph,
    assignment: Any,
    parts: Mapping[str, da.Array],
    num_parts: int,
    opts: DispatchOptions,
    storage_options: StorageOptions,
    extra_node_data: Mapping[str, Mapping[str, da.Array]],
) -> str:
    """Identify the input files, the assignment and the options: a resumed run must match."""
    files = [ref.path for etype in graph.metadata.edges for ref in graph.edge_chunks(etype)]
    for kind, data in (("node", graph.metadata.node_data), ("edge", graph.metadata.edge_data)):
        for type_name, feats in data.items():
            for feat in feats:
                refs = (
                    graph.node_feature_chunks(type_name, feat)
                    if kind == "node"
                    else graph.edge_feature_chunks(type_name, feat)
                )
                files += [r.path for r in refs]
    if isinstance(assignment, Mapping):
        assign_token = tokenize(*(parts[t] for t in graph.metadata.node_types))
    else:
        names = [*(f"{t}.txt" for t in graph.metadata.node_types), "partition_meta.json"]
        assign_token = tokenize(*(stat_token(fs.join(str(assignment), n), storage_options) for n in names))
    option_token = tokenize(
        opts.save_orig_nids,
        opts.save_orig_eids,
        opts.graph_formats,
        opts.block_rows,
        opts.part_method,
        opts.halo_hops,
        opts.keep_halo_edges,
        opts.graphbolt(),
        opts.wide_ids,
        sorted((t, n, tokenize(a)) for t, d in extra_node_data.items() for n, a in d.items()),
    )
    return str(
        tokenize(
            STAGING_FORMAT,
            graph.metadata.fingerprint(),
            [stat_token(f, storage_options) for f in files],
            assign_token,
            num_parts,
            option_token,
        )
    )


def stat_token(path: str, storage_options: StorageOptions) -> tuple[str, Any, Any]:
    """(path, size, mtime) of a file: a cheap change detector (one stat per file)."""
    filesystem, inner = fs.filesystem(path, storage_options)
    try:
        info = filesystem.info(inner)
    except FileNotFoundError:
        return (path, None, None)
    mtime = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    return (path, info.get("size"), str(mtime))
