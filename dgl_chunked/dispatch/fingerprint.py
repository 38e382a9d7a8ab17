"""What a resumed dispatch must match: the run's fingerprint, and each task's file stamps.

The fingerprint (:func:`run_fingerprint`) names the metadata, the read tasks (which
files each reads, by :mod:`~dgl_chunked.io.chunked.groups`), the assignment and the
options: a staging of another fingerprint is emptied. The input files' size and
mtime are not in it but in every task's completion record (:class:`FileStamps`), so
a rerun after one file was replaced redoes only the tasks that read it (and what
depends on them: the edge-feature tasks of a replaced edge file's rows, and the
partition writers), and keeps the rest of the staging.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import dask.array as da
from dask.base import tokenize

from dgl_chunked._typing import StorageOptions
from dgl_chunked.dispatch.options import DispatchOptions, graphbolt_for_run
from dgl_chunked.dispatch.staging import STAGING_FORMAT
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.storage import fs

__all__ = ["FileStamps", "file_stamps", "run_fingerprint", "stat_token"]

_STAT_THREADS = 16


@dataclass(frozen=True)
class FileStamps:
    """``path -> (path, size, mtime)`` of every input file of a run, read once at its start."""

    stamps: Mapping[str, Any]

    def of(self, paths: Iterable[str]) -> str:
        """A token of these files' stamps (what a task that reads them records)."""
        return str(tokenize([self.stamps[p] for p in paths]))

    def everything(self) -> str:
        """A token of every input file's stamp (the partition writers read all of it)."""
        text = "\n".join(f"{p}\t{s[1]}\t{s[2]}" for p, s in sorted(self.stamps.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def input_files(graph: ChunkedGraph) -> list[str]:
    """Every edge and feature file ``metadata.json`` names."""
    files = [p for source in graph.metadata.edges.values() for p in source.paths]
    for data in (graph.metadata.node_data, graph.metadata.edge_data):
        files += [p for feats in data.values() for source in feats.values() for p in source.paths]
    return files


def file_stamps(graph: ChunkedGraph, storage_options: StorageOptions) -> FileStamps:
    """The stamp of every input file (in threads: on object stores each is a request)."""
    files = sorted(set(input_files(graph)))
    if not any(fs.is_url(f) for f in files):
        return FileStamps({f: stat_token(f, storage_options) for f in files})
    with ThreadPoolExecutor(max(1, min(_STAT_THREADS, len(files)))) as pool:
        stamps = list(pool.map(lambda f: stat_token(f, storage_options), files))
    return FileStamps(dict(zip(files, stamps, strict=True)))


def run_fingerprint(
    graph: ChunkedGraph,
    assignment: Any,
    parts: Mapping[str, da.Array],
    num_parts: int,
    opts: DispatchOptions,
    storage_options: StorageOptions,
    extra_node_data: Mapping[str, Mapping[str, da.Array]],
) -> str:
    """Identify the metadata, the read tasks, the assignment and the options: a resumed
    run must match (the files' stamps are checked per task, see :class:`FileStamps`)."""
    tasks = [[(g.paths, g.start, g.stop) for g in graph.edge_groups(e)] for e in graph.metadata.edges]
    for kind, data in (("node", graph.metadata.node_data), ("edge", graph.metadata.edge_data)):
        for type_name, feats in data.items():
            for feat in feats:
                groups = graph.feature_groups(kind, type_name, feat)  # type: ignore[arg-type]
                tasks.append([(g.paths, g.start, g.stop) for g in groups])
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
        graphbolt_for_run(opts),
        opts.wide_ids,
        opts.node_id_features,
        sorted((t, n, tokenize(a)) for t, d in extra_node_data.items() for n, a in d.items()),
    )
    return str(
        tokenize(
            STAGING_FORMAT,
            graph.metadata.fingerprint(),
            tasks,
            assign_token,
            num_parts,
            option_token,
        )
    )


def stat_token(path: str, storage_options: StorageOptions) -> tuple[str, Any, Any]:
    """(path, size, mtime) of a file: a cheap change detector (one stat per file)."""
    if not fs.is_url(path):  # os.stat: 2 us against fsspec's 50 (thousands of Spark part files)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return (path, None, None)
        return (path, st.st_size, str(st.st_mtime_ns))
    filesystem, inner = fs.filesystem(path, storage_options)
    try:
        info = filesystem.info(inner)
    except FileNotFoundError:
        return (path, None, None)
    mtime = info.get("mtime", info.get("LastModified", info.get("last_modified")))
    return (path, info.get("size"), str(mtime))
