"""ParMETIS round trip, out of core: export ParMETIS input, import ParMETIS output.

:func:`export_parmetis` writes ``<name>_nodes.txt``, ``<name>_edges.txt`` and
``<name>_stats.txt`` (format: :mod:`dgl_chunked.parmetis.format`) for DGL's
``pm_dglpart``/``pm_dglpart3``:

- node lines: one task per node chunk writes a text piece; pieces are streamed into
  the final file in ``orig_nid`` order. Weights: one-hot per node type, then one
  column per balance mask (1 where the bool node feature is true).
- edge lines: ParMETIS crashes on self loops and duplicate edges (dgl#3443), so
  edges are read per edge file, hashed by their endpoint pair and shuffled into
  ``ceil(E / bucket_rows)`` buckets (``dask.dataframe`` shuffle; set
  ``dataframe.shuffle.method`` to choose how). Each bucket drops self loops and
  keeps one edge per pair: the one with the smallest ``orig_eid`` (its original
  direction is written). ``dedup="unordered"`` (default) treats ``u->v`` and
  ``v->u`` as one pair, since ParMETIS symmetrises the graph; ``"ordered"`` drops
  only repeated ``u->v``. Buckets are written in bucket order, each sorted by
  ``orig_eid``: the bytes depend on the graph and ``bucket_rows`` only, never on
  the input chunking or the workers. Only the partitioner's copy is simplified:
  dispatch still writes every input edge.
- the stats file is written last.

Memory per task: one node chunk (times the number of weight columns), or one edge
file, or one bucket of ``bucket_rows`` edges (2**21 by default: 32 bytes per edge
shuffled, about 100 bytes per edge while sorting).

:func:`import_parmetis` reads ParMETIS output (``p<rank>-<name>_nodes.txt`` files,
``<orig_nid> <part_id>`` files, or DGL's post-processed ``<ntype>.txt`` directory)
and writes an assignment directory with
:func:`~dgl_chunked.io.assignment.directory.write_assignment`. ``num_parts`` is given by the
caller, never inferred from the IDs seen. Three computes run: (1) planning: count
the lines of every ``blocksize`` byte block of every file (for line numbers in
errors); (2) parse each block, shuffle rows by ``orig_nid`` into the graph's node
chunks (``set_index`` with explicit divisions), check that every node appears exactly
once, and store each chunk's int32 partition IDs in a scratch ``.npy``; (3)
``write_assignment`` from those. Memory per task: one block (``blocksize``, 16 MiB
by default, plus 8 bytes per column and line while parsing) or one node chunk (~30 bytes per node). Nothing
is written to ``assign_dir`` unless the whole output is valid.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dgl_chunked._dask import run_token
from dgl_chunked._typing import IdArray, PartArray, PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError, MetadataError, OptionError, OutputExistsError
from dgl_chunked.io.assignment.directory import (
    ASSIGNMENT_KIND,
    META_NAME,
    PartitionMeta,
    dgl_algo_name,
    open_assignment,
    write_assignment,
)
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.parmetis import format as _pm
from dgl_chunked.partition.random import splitmix64
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage import npy
from dgl_chunked.storage.owned import (
    ForeignDataError,
    acquire_lease,
    check_no_overlap,
    create_owned_dir,
    remove_owned,
    require_owned,
)

if TYPE_CHECKING:
    import dask.array as da
    import dask.dataframe as dd
    from dask.delayed import Delayed

__all__ = ["ParmetisFiles", "dedup_edges_block", "edge_keys_partition", "export_parmetis", "import_parmetis"]

logger = logging.getLogger(__name__)

DEFAULT_BUCKET_ROWS = 1 << 21
DEFAULT_BLOCKSIZE = 1 << 24
_COPY_BLOCK = 1 << 22
_EXPORT_TMP = ".dglc-parmetis-tmp"
_IMPORT_TMP = ".dglc-parmetis-import-tmp"
EXPORT_KIND = "parmetis-export"


@dataclass(frozen=True, kw_only=True)
class ParmetisFiles:
    """What :func:`export_parmetis` wrote, and what it left out of the edges file."""

    nodes_path: str
    edges_path: str
    stats_path: str
    num_nodes: int
    num_edges: int
    num_node_weights: int
    self_loops_dropped: int
    duplicates_dropped: int
    dedup: str


def _open(graph: ChunkedGraph | PathLike, storage_options: StorageOptions) -> ChunkedGraph:
    return graph if isinstance(graph, ChunkedGraph) else open_chunked_graph(graph, storage_options=storage_options)


# --- export: kernels ------------------------------------------------------------------


def edge_keys_partition(
    df: pd.DataFrame, *, src_offset: int, dst_offset: int, eid_offset: int, unordered: bool
) -> pd.DataFrame:
    """One edge file -> ``u``, ``v`` (orig_nid), ``orig_eid`` and ``key`` (a hash of the pair)."""
    u = df["src"].to_numpy(np.int64) + src_offset
    v = df["dst"].to_numpy(np.int64) + dst_offset
    lo, hi = (np.minimum(u, v), np.maximum(u, v)) if unordered else (u, v)
    key = splitmix64(splitmix64(lo.astype(np.uint64)) ^ hi.astype(np.uint64)).view(np.int64)
    eid = df.index.to_numpy(np.int64) + eid_offset
    return pd.DataFrame({"u": u, "v": v, "orig_eid": eid, "key": key})


def dedup_edges_block(u: IdArray, v: IdArray, orig_eid: IdArray, *, unordered: bool) -> tuple[IdArray, int, int]:
    """Rows to keep (sorted by ``orig_eid``): no self loops, one row per pair (the
    smallest ``orig_eid``). Returns ``(rows, self_loops, duplicates)``."""
    rows = np.flatnonzero(u != v)
    loops = len(u) - len(rows)
    a, b = u[rows], v[rows]
    lo, hi = (np.minimum(a, b), np.maximum(a, b)) if unordered else (a, b)
    order = np.lexsort((orig_eid[rows], hi, lo))
    lo, hi = lo[order], hi[order]
    first = np.ones(len(order), bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    kept = rows[order[first]]
    kept = kept[np.argsort(orig_eid[kept], kind="stable")]
    return kept, loops, len(rows) - len(kept)


def _write_bytes(path: str, data: bytes, storage_options: StorageOptions) -> None:
    with _fs.open_file(path, "wb", storage_options) as f:
        f.write(data)


def _write_node_piece(
    *masks: Any, path: str, type_id: int, num_types: int, start: int, stop: int, storage_options: StorageOptions
) -> int:
    data = _pm.encode_node_lines(type_id=type_id, num_types=num_types, start=start, stop=stop, masks=masks)
    _write_bytes(path, data, storage_options)
    return stop - start


def _write_edge_piece(
    df: pd.DataFrame, *, path: str, unordered: bool, etype_offsets: IdArray, storage_options: StorageOptions
) -> tuple[int, int, int]:
    u, v, eid = (df[c].to_numpy(np.int64) for c in ("u", "v", "orig_eid"))
    kept, loops, dups = dedup_edges_block(u, v, eid, unordered=unordered)
    eid = eid[kept]
    etype_id = np.searchsorted(etype_offsets, eid, side="right").astype(np.int64) - 1
    data = _pm.encode_edge_lines(u[kept], v[kept], eid - etype_offsets[etype_id], etype_id)
    _write_bytes(path, data, storage_options)
    return len(kept), loops, dups


def _concat(pieces: Sequence[str], target: str, storage_options: StorageOptions) -> None:
    """Stream ``pieces`` into ``target`` (temporary name, then rename)."""
    fs, inner = _fs.filesystem(target, storage_options)
    with fs.open(inner + ".tmp-dglc", "wb") as dst:
        for piece in pieces:
            with _fs.open_file(piece, "rb", storage_options) as src:
                while data := src.read(_COPY_BLOCK):
                    dst.write(data)
    fs.mv(inner + ".tmp-dglc", inner)


@dataclass(frozen=True, kw_only=True)
class _ExportPlan:
    out: str
    name: str
    tmp: str
    node_pieces: tuple[str, ...]
    edge_pieces: tuple[str, ...]
    num_nodes: int
    num_weights: int
    dedup: str
    storage_options: StorageOptions


def _finish_export(node_rows: list[int], edge_counts: list[tuple[int, int, int]], plan: _ExportPlan) -> ParmetisFiles:
    nodes, edges, stats = (_fs.join(plan.out, n) for n in _pm.parmetis_file_names(plan.name))
    _concat(plan.node_pieces, nodes, plan.storage_options)
    _concat(plan.edge_pieces, edges, plan.storage_options)
    kept, loops, dups = (int(sum(c[i] for c in edge_counts)) for i in range(3))
    _fs.atomic_write_bytes(stats, _pm.encode_stats(plan.num_nodes, kept, plan.num_weights), plan.storage_options)
    _remove(plan.tmp, plan.storage_options)
    logger.info(
        "parmetis export: %d nodes, %d edges (dropped %d self loops, %d duplicates)", plan.num_nodes, kept, loops, dups
    )
    return ParmetisFiles(
        nodes_path=nodes,
        edges_path=edges,
        stats_path=stats,
        num_nodes=plan.num_nodes,
        num_edges=kept,
        num_node_weights=plan.num_weights,
        self_loops_dropped=loops,
        duplicates_dropped=dups,
        dedup=plan.dedup,
    )


# --- export: wiring -------------------------------------------------------------------


def _mask_arrays(graph: ChunkedGraph, names: Sequence[str]) -> list[list[da.Array | None]]:
    """Per node type, per balance mask: the 1-D mask array, or None (type lacks it)."""
    data = graph.metadata.node_data
    unknown = [m for m in names if not any(m in data.get(t, {}) for t in graph.node_types)]
    if unknown:
        known = sorted({f for t in graph.node_types for f in data.get(t, {})})
        raise MetadataError(
            f"balance_masks: expected node features named in metadata.json node_data, found "
            f"{unknown!r} on no node type; known node features: {known}"
        )
    out: list[list[da.Array | None]] = []
    for ntype in graph.node_types:
        row: list[da.Array | None] = []
        for m in names:
            if m not in data.get(ntype, {}):
                row.append(None)
                continue
            dtype, shape = graph.feature_info("node", ntype, m)
            if shape not in ((), (1,)) or not (dtype == np.bool_ or np.issubdtype(dtype, np.integer)):
                raise MetadataError(
                    f'node_data["{ntype}"]["{m}"]: expected a 1-D bool (or 0/1 integer) mask to '
                    f"balance, found {dtype} with row shape {shape}"
                )
            row.append(graph.node_feature(ntype, m).reshape(-1))
        out.append(row)
    return out


def _node_tasks(
    graph: ChunkedGraph, masks: list[list[da.Array | None]], tmp: str, storage_options: StorageOptions
) -> tuple[list[Delayed], list[str]]:
    from dask.delayed import delayed

    tasks, pieces = [], []
    write = delayed(_write_node_piece, pure=False)
    run = run_token(tmp)
    for t, ntype in enumerate(graph.node_types):
        chunks = graph.node_chunks(ntype)
        if not sum(chunks):
            continue
        blocks = [m.rechunk((chunks,)).to_delayed().ravel() if m is not None else None for m in masks[t]]
        bounds = np.concatenate([[0], np.cumsum(chunks)]).tolist()
        for c in range(len(chunks)):
            if not chunks[c]:
                continue
            path = f"{tmp}/nodes-{t:05d}-{c:07d}.txt"
            args = [b[c] if b is not None else None for b in blocks]
            tasks.append(
                write(
                    *args,
                    path=path,
                    type_id=t,
                    num_types=len(graph.node_types),
                    start=bounds[c],
                    stop=bounds[c + 1],
                    storage_options=storage_options,
                    dask_key_name=(f"dglc-parmetis-nodes-{run}", t, c),
                )
            )
            pieces.append(path)
    return tasks, pieces


def _edge_frame(graph: ChunkedGraph, unordered: bool) -> dd.DataFrame | None:
    import dask.dataframe as dd

    md = graph.metadata
    offsets, eoffsets = md.node_type_offsets, graph.edge_type_offsets
    empty = np.empty(0, np.int64)
    meta = pd.DataFrame({"u": empty, "v": empty, "orig_eid": empty, "key": empty})
    frames = []
    for i, spec in enumerate(md.edge_types):
        if not graph.num_edges(spec.name):
            continue
        frames.append(
            graph.edges(spec.name).map_partitions(
                edge_keys_partition,
                src_offset=int(offsets[md.ntype_id(spec.src_type)]),
                dst_offset=int(offsets[md.ntype_id(spec.dst_type)]),
                eid_offset=int(eoffsets[i]),
                unordered=unordered,
                meta=meta,
                clear_divisions=True,
                token="dglc-parmetis-edge-keys",
            )
        )
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else dd.concat(frames)  # type: ignore[no-any-return]


def _edge_tasks(
    graph: ChunkedGraph, unordered: bool, bucket_rows: int, tmp: str, storage_options: StorageOptions
) -> tuple[list[Delayed], list[str]]:
    from dask.delayed import delayed

    frame = _edge_frame(graph, unordered)
    if frame is None:
        return [], []
    total = int(graph.edge_type_offsets[-1])
    buckets = max(1, -(-total // bucket_rows))
    parts = frame.shuffle(on="key", npartitions=buckets).to_delayed()
    write = delayed(_write_edge_piece, pure=False)
    run = run_token(tmp, unordered)
    pieces = [f"{tmp}/edges-{b:07d}.txt" for b in range(len(parts))]
    tasks = [
        write(
            part,
            path=path,
            unordered=unordered,
            etype_offsets=graph.edge_type_offsets,
            storage_options=storage_options,
            dask_key_name=(f"dglc-parmetis-edges-{run}", b),
        )
        for b, (part, path) in enumerate(zip(parts, pieces, strict=True))
    ]
    return tasks, pieces


def _prepare_export(out: str, names: Sequence[str], overwrite: bool, storage_options: StorageOptions) -> str:
    """Mark ``out`` as ours; refuse existing files unless ``overwrite`` (foreign ones always)."""
    create_owned_dir(out, EXPORT_KIND, storage_options=storage_options)
    fs, inner = _fs.filesystem(out, storage_options)
    present = [n for n in names if fs.exists(f"{inner.rstrip('/')}/{n}")]
    if present and not overwrite:
        raise OutputExistsError(
            f"{out}: expected no ParMETIS input files, found {present}; pass overwrite=True "
            "(--overwrite) or choose another directory"
        )
    if present:
        require_owned(
            out, expected=[*names, ".dglc-*", "*.tmp-dglc"], verb="overwritten", storage_options=storage_options
        )
    stats = f"{inner.rstrip('/')}/{names[2]}"
    if fs.exists(stats):  # the stats file marks a complete export: remove it first
        fs.rm(stats)
    return create_owned_dir(_fs.join(out, _EXPORT_TMP), "parmetis-export-tmp", storage_options=storage_options)


def export_parmetis(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    name: str | None = None,
    balance_masks: Sequence[str] = (),
    dedup: Literal["unordered", "ordered"] = "unordered",
    bucket_rows: int = DEFAULT_BUCKET_ROWS,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
    compute: bool = True,
) -> ParmetisFiles | Delayed:
    """Write the ParMETIS input files of ``graph`` (out of core; see the module docstring).

    Parameters
    ----------
    graph
        The chunked graph (object or directory).
    out_dir
        Directory for ``<name>_nodes.txt``, ``<name>_edges.txt``, ``<name>_stats.txt``.
    name
        File name prefix; default the graph name.
    balance_masks
        Bool node features (e.g. ``train_mask``) that get one weight column each.
    dedup
        ``"unordered"``: ``u->v`` and ``v->u`` are one edge; ``"ordered"``: only repeats.
    bucket_rows
        Edges per dedup bucket (bounds the memory of a bucket task).
    overwrite
        Replace existing files of the same name.
    storage_options
        fsspec options for ``out_dir`` (and the graph, when a path is given).
    compute
        False: return a ``Delayed`` that writes everything and returns :class:`ParmetisFiles`.

    Returns
    -------
    ParmetisFiles
        Paths, counts, and the numbers of self loops and duplicate edges left out.

    Examples
    --------
    >>> files = export_parmetis("chunked/", "pm/", balance_masks=["train_mask"])  # doctest: +SKIP
    >>> files.self_loops_dropped, files.duplicates_dropped  # doctest: +SKIP
    """

    if dedup not in ("unordered", "ordered"):
        raise OptionError(f"dedup: expected 'unordered' or 'ordered', found {dedup!r}")
    if bucket_rows < 1:
        raise OptionError(f"bucket_rows: expected a positive integer, found {bucket_rows!r}")
    graph = _open(graph, storage_options)
    name = name or graph.metadata.graph_name
    if not name or "/" in name:
        raise OptionError(f"name: expected a file name prefix without '/', found {name!r}")
    masks = _mask_arrays(graph, list(balance_masks))
    out = os.fspath(out_dir)
    check_no_overlap({"--out-dir": out}, graph.input_locations(), storage_options=storage_options)
    if compute:
        with acquire_lease(out, EXPORT_KIND, storage_options=storage_options):
            return _export(graph, out, name, masks, dedup, bucket_rows, overwrite, storage_options, compute=True)
    return _export(graph, out, name, masks, dedup, bucket_rows, overwrite, storage_options, compute=False)


def _export(
    graph: ChunkedGraph,
    out: str,
    name: str,
    masks: list[list[da.Array | None]],
    dedup: str,
    bucket_rows: int,
    overwrite: bool,
    storage_options: StorageOptions,
    *,
    compute: bool,
) -> ParmetisFiles | Delayed:
    from dask.delayed import delayed

    tmp = _prepare_export(out, _pm.parmetis_file_names(name), overwrite, storage_options)
    node_tasks, node_pieces = _node_tasks(graph, masks, tmp, storage_options)
    edge_tasks, edge_pieces = _edge_tasks(graph, dedup == "unordered", bucket_rows, tmp, storage_options)
    plan = _ExportPlan(
        out=out,
        name=name,
        tmp=tmp,
        node_pieces=tuple(node_pieces),
        edge_pieces=tuple(edge_pieces),
        num_nodes=int(sum(graph.metadata.num_nodes_per_type)),
        num_weights=len(graph.node_types) + (len(masks[0]) if masks else 0),
        dedup=dedup,
        storage_options=storage_options,
    )
    finish = delayed(_finish_export, pure=False)(
        node_tasks, edge_tasks, plan, dask_key_name=f"dglc-parmetis-finish-{run_token(plan)}"
    )
    if not compute:
        return finish  # type: ignore[no-any-return]
    try:
        return finish.compute()  # type: ignore[no-any-return]
    except BaseException:
        _remove(tmp, storage_options)  # the final files are written only by the last step
        raise


def _remove(path: str, storage_options: StorageOptions) -> None:
    remove_owned(path, storage_options=storage_options)


# --- import ---------------------------------------------------------------------------


def _store_chunk(
    df: pd.DataFrame,
    *,
    lo: int,
    hi: int,
    path: str,
    files: tuple[str, ...],
    type_names: tuple[str, ...],
    type_offsets: IdArray,
    storage_options: StorageOptions,
) -> int:
    parts = _pm.check_exactly_once(
        df.index.to_numpy(np.int64),
        df["part_id"].to_numpy(np.int32),
        df["file"].to_numpy(np.int32),
        df["line"].to_numpy(np.int64),
        lo=lo,
        hi=hi,
        files=files,
        type_names=type_names,
        type_offsets=type_offsets,
    )
    with _fs.open_file(path, "wb", storage_options) as f:
        np.save(f, parts, allow_pickle=False)
    return len(parts)


def _load_chunk(path: str, storage_options: StorageOptions) -> PartArray:
    with _fs.open_file(path, "rb", storage_options) as f:
        return npy.load(f)


def _plan_blocks(
    files: list[str], *, form: _pm.OutputForm, blocksize: int, storage_options: StorageOptions
) -> list[_pm.OutputBlock]:
    """Line-aligned blocks of every file (one planning compute counts their lines)."""
    from dask.base import compute
    from dask.delayed import delayed

    layout = []
    for i, path in enumerate(files):
        fs, inner = _fs.filesystem(path, storage_options)
        size = int(fs.size(inner))
        ncols = _pm.first_line_columns(path, storage_options)
        if size == 0 or ncols == 0:
            logger.info("%s holds no lines; skipped", path)
            continue
        cuts = list(range(0, size, blocksize)) + [size]
        layout.append((i, path, size, ncols, cuts))
    plan = delayed(_pm.count_block_lines, pure=True)
    counts = compute(*[[plan(p, a, b, storage_options) for a, b in pairwise(c)] for _, p, _, _, c in layout])
    blocks = []
    for (i, path, size, ncols, _), found in zip(layout, counts, strict=True):
        form_i = _pm.form_of(ncols, form, path)
        starts = [(first, n) for first, n in found if n]
        line = 1
        for k, (first, n) in enumerate(starts):
            stop = starts[k + 1][0] if k + 1 < len(starts) else size
            blocks.append(
                _pm.OutputBlock(
                    path=path,
                    file=i,
                    start=first,
                    stop=stop,
                    first_line=line,
                    ncols=ncols,
                    form=form_i,
                    storage_options=storage_options,
                )
            )
            line += n
    return blocks


def _scatter(
    graph: ChunkedGraph,
    blocks: list[_pm.OutputBlock],
    files: list[str],
    num_parts: int,
    tmp: str,
    storage_options: StorageOptions,
) -> dict[str, Any]:
    """Compute 2: parse, shuffle into node chunks, check, store; lazy per-type arrays of the result."""
    import dask.array as da
    import dask.dataframe as dd
    from dask.base import compute
    from dask.delayed import delayed

    md = graph.metadata
    offsets = md.node_type_offsets
    chunks = []  # (ntype, lo, hi) in orig_nid, non-empty node chunks in order
    for t, ntype in enumerate(md.node_types):
        bounds = int(offsets[t]) + np.concatenate([[0], np.cumsum(graph.node_chunks(ntype))])
        chunks += [(ntype, int(a), int(b)) for a, b in pairwise(bounds) if b > a]
    if not blocks:
        raise AssignmentError(
            f"{', '.join(files[:4])}: expected {int(offsets[-1])} node lines, found none; "
            "pass the ParMETIS output files"
        )
    meta = pd.DataFrame(
        {
            "orig_nid": np.empty(0, np.int64),
            "part_id": np.empty(0, np.int32),
            "file": np.empty(0, np.int32),
            "line": np.empty(0, np.int64),
        }
    )
    frame = dd.from_map(
        _pm.read_output_partition,
        blocks,
        meta=meta,
        label="dglc-parmetis-parse",
        enforce_metadata=False,
        type_offsets=offsets,
        num_parts=num_parts,
    )
    divisions = tuple(lo for _, lo, _ in chunks) + (int(offsets[-1]) - 1,)
    parts = frame.set_index("orig_nid", divisions=divisions).to_delayed()
    store = delayed(_store_chunk, pure=False)
    run = run_token(tmp, tuple(files), num_parts)
    paths = [f"{tmp}/chunk-{k:07d}.npy" for k in range(len(chunks))]
    compute(
        *[
            store(
                p,
                lo=lo,
                hi=hi,
                path=path,
                files=tuple(files),
                type_names=md.node_types,
                type_offsets=offsets,
                storage_options=storage_options,
                dask_key_name=(f"dglc-parmetis-store-{run}", k),
            )
            for k, (p, (_, lo, hi), path) in enumerate(zip(parts, chunks, paths, strict=True))
        ]
    )
    load = delayed(_load_chunk, pure=False)
    index = {path: k for k, path in enumerate(paths)}
    out: dict[str, Any] = {name: np.empty(0, np.int32) for name in md.node_types}
    for name in md.node_types:
        mine = [
            da.from_delayed(
                load(path, storage_options, dask_key_name=(f"dglc-parmetis-load-{run}", index[path])),
                shape=(hi - lo,),
                dtype=np.int32,
                meta=np.empty(0, np.int32),
            )
            for (ntype, lo, hi), path in zip(chunks, paths, strict=True)
            if ntype == name
        ]
        if mine:
            out[name] = da.concatenate(mine)
    return out


def _check_target(assign: str, graph: ChunkedGraph, overwrite: bool, storage_options: StorageOptions) -> None:
    fs, inner = _fs.filesystem(assign, storage_options)
    names = [META_NAME, *(f"{t}.txt" for t in graph.node_types)]
    present = [n for n in names if fs.exists(f"{inner.rstrip('/')}/{n}")]
    if present and not overwrite:
        raise OutputExistsError(
            f"{assign}: expected an empty or new assignment directory, found {present}; "
            "pass overwrite=True (--overwrite) or choose another directory"
        )


def import_parmetis(
    parmetis_output: PathLike | Sequence[PathLike],
    graph: ChunkedGraph | PathLike,
    assign_dir: PathLike,
    *,
    num_parts: int,
    name: str | None = None,
    form: _pm.OutputForm = "auto",
    blocksize: int = DEFAULT_BLOCKSIZE,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
) -> PartitionMeta:
    """Turn ParMETIS output into an assignment directory (out of core; module docstring).

    Parameters
    ----------
    parmetis_output
        Output files, directories or globs. A directory contributes its
        ``p<rank>-<name>_nodes.txt`` files in rank order, or, if it holds
        ``partition_meta.json``, is read as DGL's post-processed ``<ntype>.txt`` directory.
    graph
        The chunked graph that was exported (object or directory).
    assign_dir
        The assignment directory to write (``<ntype>.txt``, ``partition_meta.json``).
    num_parts
        Number of partitions: stored as given, never inferred; every ID must be below it.
    name
        Only read rank files of this graph name from directories.
    form
        ``"nodes"`` (``<ntype_id> <weights...> <type_nid> <part_id>``), ``"gnid"``
        (``<orig_nid> <part_id>``) or ``"auto"`` (2 columns: gnid, more: nodes).
    blocksize
        Bytes per parse task.
    overwrite
        Replace an existing assignment in ``assign_dir``.
    storage_options
        fsspec options for every path.

    Returns
    -------
    PartitionMeta
        As written to ``partition_meta.json`` (``algo_name`` "metis").

    Raises
    ------
    AssignmentError
        A bad line (non-integer, wrong column count, unknown node, part ID outside
        ``[0, num_parts)``), a node named twice, or a node never named; the message
        names the file and line (for a missing node: the node and the files).

    Examples
    --------
    >>> import_parmetis("pm_out/", "chunked/", "assign/", num_parts=4)  # doctest: +SKIP
    """
    if not isinstance(num_parts, int) or isinstance(num_parts, bool) or num_parts < 1:
        raise AssignmentError(f"num_parts: expected a positive integer, found {num_parts!r}")
    if blocksize < 1:
        raise OptionError(f"blocksize: expected a positive number of bytes, found {blocksize!r}")
    graph = _open(graph, storage_options)
    assign = os.fspath(assign_dir)
    sources = _pm.resolve_outputs(parmetis_output, name, storage_options)
    inputs = graph.input_locations()
    inputs.update(
        {f"ParMETIS output [{i}]": p for i, p in enumerate([sources] if isinstance(sources, str) else sources)}
    )
    check_no_overlap({"assignment directory": assign}, inputs, storage_options=storage_options)
    _check_target(assign, graph, overwrite, storage_options)
    algo = "parmetis" if dgl_algo_name("parmetis") == "metis" else "metis"
    if isinstance(sources, str):
        return _import_assignment_dir(sources, graph, assign, num_parts, algo, overwrite, storage_options)
    blocks = _plan_blocks(sources, form=form, blocksize=blocksize, storage_options=storage_options)
    created = not _fs.exists(assign, storage_options)
    create_owned_dir(assign, ASSIGNMENT_KIND, storage_options=storage_options)
    tmp = create_owned_dir(_fs.join(assign, _IMPORT_TMP), "parmetis-import-tmp", storage_options=storage_options)
    try:
        parts = _scatter(graph, blocks, sources, num_parts, tmp, storage_options)
    except BaseException:
        remove_owned(tmp, storage_options=storage_options)
        if created:  # leave no trace of a failed import (when only our marker is left there)
            with contextlib.suppress(ForeignDataError):
                remove_owned(assign, expected=(), storage_options=storage_options)
        raise
    try:
        return write_assignment(
            assign,
            parts,
            num_parts=num_parts,
            algo_name=algo,
            overwrite=overwrite,
            storage_options=storage_options,
            provenance={"partitioner": "parmetis", "parmetis_output": sources},
        )
    finally:
        remove_owned(tmp, storage_options=storage_options)


def _import_assignment_dir(
    source: str,
    graph: ChunkedGraph,
    assign: str,
    num_parts: int,
    algo: str,
    overwrite: bool,
    storage_options: StorageOptions,
) -> PartitionMeta:
    """DGL's ``<ntype>.txt`` directory, rewritten with the given ``num_parts``."""
    same = _fs.filesystem(source, storage_options)[1].rstrip("/") == _fs.filesystem(assign, storage_options)[1].rstrip(
        "/"
    )
    if same:
        raise AssignmentError(
            f"{source}: is already an assignment directory; pass it to dispatch as it is, "
            "or import it into another directory to fix its num_parts"
        )
    _, parts = open_assignment(
        source,
        graph.metadata,
        storage_options=storage_options,
        chunks={t: graph.node_chunks(t) for t in graph.node_types},
    )
    return write_assignment(
        assign,
        parts,
        num_parts=num_parts,
        algo_name=algo,
        overwrite=overwrite,
        storage_options=storage_options,
        provenance={"partitioner": "parmetis", "parmetis_output": [source]},
    )
