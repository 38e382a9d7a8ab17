"""Export a chunked graph as ParMETIS input, out of core.

:func:`export_parmetis` writes ``<name>_nodes.txt``, ``<name>_edges.txt`` and
``<name>_stats.txt`` (format: :mod:`dgl_chunked.parmetis.format`) for DGL's
``pm_dglpart``/``pm_dglpart3``:

- node lines: one task per node block writes a text piece; pieces are streamed into
  the final file in ``orig_nid`` order. Weights: one-hot per node type, then one
  column per balance mask (1 where the bool node feature is true).
- edge lines: self loops and duplicate edges left out (:mod:`.edges`), each kept
  edge in its original direction. ``dedup="unordered"`` (default) treats ``u->v``
  and ``v->u`` as one pair, since ParMETIS symmetrises the graph; ``"ordered"``
  drops only repeated ``u->v``. Only the partitioner's copy is simplified: dispatch
  still writes every input edge.
- the stats file is written last.

Memory per task: one node block (times the number of weight columns), or one edge
file, or one bucket of ``bucket_rows`` edges (2**21 by default: 32 bytes per edge
shuffled, about 100 bytes per edge while sorting).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import compute_settled
from dgl_chunked.errors import MetadataError, OptionError, OutputExistsError
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.parmetis import format as _pm
from dgl_chunked.parmetis.edges import DEFAULT_BUCKET_ROWS, edge_tasks
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.owned import acquire_lease, check_no_overlap, create_owned_dir, remove_owned, require_owned

if TYPE_CHECKING:
    import dask.array as da
    from dask.delayed import Delayed

__all__ = ["EXPORT_KIND", "ParmetisFiles", "export_parmetis"]

logger = logging.getLogger(__name__)

EXPORT_KIND = "parmetis-export"
_EXPORT_TMP = ".dglc-parmetis-tmp"


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


def _write_node_piece(
    *masks: Any, path: str, type_id: int, num_types: int, start: int, stop: int, storage_options: StorageOptions
) -> int:
    data = _pm.encode_node_lines(type_id=type_id, num_types=num_types, start=start, stop=stop, masks=masks)
    with _fs.open_file(path, "wb", storage_options) as f:
        f.write(data)
    return stop - start


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
    _fs.concat_files(plan.node_pieces, nodes, plan.storage_options)
    _fs.concat_files(plan.edge_pieces, edges, plan.storage_options)
    kept, loops, dups = (int(sum(c[i] for c in edge_counts)) for i in range(3))
    _fs.atomic_write_bytes(stats, _pm.encode_stats(plan.num_nodes, kept, plan.num_weights), plan.storage_options)
    remove_owned(plan.tmp, storage_options=plan.storage_options)
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
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
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
    edge_writes, edge_pieces = edge_tasks(graph, dedup == "unordered", bucket_rows, tmp, storage_options)
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
        node_tasks, edge_writes, plan, dask_key_name=f"dglc-parmetis-finish-{run_token(plan)}"
    )
    if not compute:
        return finish  # type: ignore[no-any-return]
    try:
        return compute_settled(finish)[0]  # type: ignore[no-any-return]
    except BaseException:
        remove_owned(tmp, storage_options=storage_options)  # the final files are written only by the last step
        raise
