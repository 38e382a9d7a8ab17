"""Import ParMETIS output as an assignment directory, out of core.

:func:`import_parmetis` reads ParMETIS output (``p<rank>-<name>_nodes.txt`` files,
``<orig_nid> <part_id>`` files, or DGL's post-processed ``<ntype>.txt`` directory)
and writes an assignment directory with
:func:`~dgl_chunked.io.assignment.write_assignment`. ``num_parts`` is given by the
caller, never inferred from the IDs seen. Three computes run: (1) planning: count
the lines of every ``blocksize`` byte piece of every file (for line numbers in
errors); (2) parse each piece, shuffle rows by ``orig_nid`` into the graph's node
blocks (``set_index`` with explicit divisions), check that every node appears exactly
once, and store each block's int32 partition IDs in a scratch ``.npy``; (3)
``write_assignment`` from those. Memory per task: one piece (``blocksize``, 16 MiB
by default, plus 8 bytes per column and line while parsing) or one node block (~30 bytes per node). Nothing
is written to ``assign_dir`` unless the whole output is valid.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from dgl_chunked._dask import run_token
from dgl_chunked._typing import IdArray, PartArray, PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError, OptionError, OutputExistsError
from dgl_chunked.io.assignment import (
    ASSIGNMENT_KIND,
    META_NAME,
    PartitionMeta,
    dgl_algo_name,
    open_assignment,
    write_assignment,
)
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.parmetis import format as _pm
from dgl_chunked.parmetis import result_files
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage import npy
from dgl_chunked.storage.owned import ForeignDataError, check_no_overlap, create_owned_dir, remove_owned

__all__ = ["DEFAULT_BLOCKSIZE", "import_parmetis"]

logger = logging.getLogger(__name__)

DEFAULT_BLOCKSIZE = 1 << 24
_IMPORT_TMP = ".dglc-parmetis-import-tmp"


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


def _plan_pieces(
    files: list[str], *, form: _pm.OutputForm, blocksize: int, storage_options: StorageOptions, run: str
) -> list[result_files.OutputPiece]:
    """Line-aligned pieces of every file (one planning compute counts their lines)."""
    from dask.base import compute
    from dask.delayed import delayed

    layout = []
    for i, path in enumerate(files):
        fs, inner = _fs.filesystem(path, storage_options)
        size = int(fs.size(inner))
        ncols = result_files.first_line_columns(path, storage_options)
        if size == 0 or ncols == 0:
            logger.info("%s holds no lines; skipped", path)
            continue
        cuts = list(range(0, size, blocksize)) + [size]
        layout.append((i, path, size, ncols, cuts))
    plan = delayed(result_files.count_piece_lines, pure=False)
    counts = compute(
        *[
            [plan(p, a, b, storage_options, dask_key_name=(f"dglc-parmetis-count-{run}", i, a)) for a, b in pairwise(c)]
            for i, p, _, _, c in layout
        ]
    )
    pieces = []
    for (i, path, size, ncols, _), found in zip(layout, counts, strict=True):
        form_i = _pm.form_of(ncols, form, path)
        starts = [(first, n) for first, n in found if n]
        line = 1
        for k, (first, n) in enumerate(starts):
            stop = starts[k + 1][0] if k + 1 < len(starts) else size
            pieces.append(
                result_files.OutputPiece(
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
    return pieces


def _scatter(
    graph: ChunkedGraph,
    pieces: list[result_files.OutputPiece],
    files: list[str],
    num_parts: int,
    tmp: str,
    storage_options: StorageOptions,
    run: str,
) -> dict[str, Any]:
    """Compute 2: parse, shuffle into node blocks, check, store; lazy per-type arrays of the result."""
    import dask.array as da
    import dask.dataframe as dd
    from dask.base import compute
    from dask.delayed import delayed

    md = graph.metadata
    offsets = md.node_type_offsets
    chunks = []  # (ntype, lo, hi) in orig_nid, non-empty node blocks in order
    for t, ntype in enumerate(md.node_types):
        bounds = int(offsets[t]) + np.concatenate([[0], np.cumsum(graph.node_chunks(ntype))])
        chunks += [(ntype, int(a), int(b)) for a, b in pairwise(bounds) if b > a]
    if not pieces:
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
        result_files.read_output_partition,
        pieces,
        meta=meta,
        label=f"dglc-parmetis-parse-{run}",  # dask-expr takes no token
        enforce_metadata=False,
        type_offsets=offsets,
        num_parts=num_parts,
    )
    divisions = tuple(lo for _, lo, _ in chunks) + (int(offsets[-1]) - 1,)
    parts = frame.set_index("orig_nid", divisions=divisions).to_delayed()
    store = delayed(_store_chunk, pure=False)
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
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    assign = os.fspath(assign_dir)
    sources = result_files.resolve_outputs(parmetis_output, name, storage_options)
    inputs = graph.input_locations()
    inputs.update(
        {f"ParMETIS output [{i}]": p for i, p in enumerate([sources] if isinstance(sources, str) else sources)}
    )
    check_no_overlap({"assignment directory": assign}, inputs, storage_options=storage_options)
    _check_target(assign, graph, overwrite, storage_options)
    algo = "parmetis" if dgl_algo_name("parmetis") == "metis" else "metis"
    if isinstance(sources, str):
        return _import_assignment_dir(sources, graph, assign, num_parts, algo, overwrite, storage_options)
    # Every task of this import is named with its own run token: the files may have been
    # rewritten since an earlier import whose results a shared cluster still holds.
    run = run_token(assign, tuple(sources), num_parts)
    pieces = _plan_pieces(sources, form=form, blocksize=blocksize, storage_options=storage_options, run=run)
    created = not _fs.exists(assign, storage_options)
    create_owned_dir(assign, ASSIGNMENT_KIND, storage_options=storage_options)
    tmp = create_owned_dir(_fs.join(assign, _IMPORT_TMP), "parmetis-import-tmp", storage_options=storage_options)
    try:
        parts = _scatter(graph, pieces, sources, num_parts, tmp, storage_options, run)
    except BaseException:
        remove_owned(tmp, storage_options=storage_options)
        if created:  # leave no trace of a failed import (when only our marker is left there)
            with contextlib.suppress(ForeignDataError):
                remove_owned(assign, expected=(), storage_options=storage_options)
        raise
    try:
        return _write(assign, parts, num_parts, algo, overwrite, storage_options, sources)
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
    return _write(assign, parts, num_parts, algo, overwrite, storage_options, [source])


def _write(
    assign: str,
    parts: dict[str, Any],
    num_parts: int,
    algo: str,
    overwrite: bool,
    storage_options: StorageOptions,
    sources: list[str],
) -> PartitionMeta:
    """Write the assignment directory, naming ParMETIS and its output files as provenance."""
    return write_assignment(
        assign,
        parts,
        num_parts=num_parts,
        algo_name=algo,
        overwrite=overwrite,
        storage_options=storage_options,
        provenance={"partitioner": "parmetis", "parmetis_output": sources},
    )
