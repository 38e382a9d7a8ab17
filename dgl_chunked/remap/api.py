"""``remap_results``: trainer outputs in DGL's new-ID space -> rows in original-ID order, with keys."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dask.delayed import Delayed, delayed

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import StepRunner
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.remap.endpoints import Endpoints, plan_endpoints, stage_keys_and_ends
from dgl_chunked.remap.id_mapping_tasks import StagedKeys, user_ids_label
from dgl_chunked.remap.id_mappings import IdMappingSource, Keys, find_keys, user_ids_known
from dgl_chunked.remap.mapping import regular_bounds
from dgl_chunked.remap.model import RemapError, ResultFile, ResultSource
from dgl_chunked.remap.pairs import pair_pieces
from dgl_chunked.remap.plan import (
    MappingInputs,
    absolute,
    block_rows_for,
    mapping_inputs,
    mapping_source,
    owner_jobs,
)
from dgl_chunked.remap.result_files import FORMATS, MANIFEST, TMP_DIR, OutputFormat, TypeOutput, publish
from dgl_chunked.remap.result_sources import PairInput, RowInput, resolve_source
from dgl_chunked.remap.shuffled import is_shuffled, job_slabs, pair_slab_tasks, shuffled_block_tasks, slab_tasks
from dgl_chunked.remap.spaces import TypeSpace, resolve_type
from dgl_chunked.remap.tables import TABLE_FORMATS, check_renames
from dgl_chunked.remap.tasks import TypeJob, block_tasks, collect_counts, count_tasks, pair_tasks
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import acquire_lease, check_no_overlap, prepare_owned_output

__all__ = ["REMAP_ENTRIES", "REMAP_KIND", "RemapResult", "TypeSummary", "remap_results"]

REMAP_KIND = "remap"
PIECE_ROWS = 1 << 16
"""Fewest pairs a staging task reads: the block tasks read one segment of every piece."""
REMAP_ENTRIES = (MANIFEST, "nodes", "edges", TMP_DIR)
"""What a remap output directory may hold (``--overwrite`` removes only these)."""


@dataclass(frozen=True)
class TypeSummary:
    """What ``remap`` wrote for one type (one entry of ``remap.json``)."""

    kind: str
    name: str
    rows: int
    present: int
    files: dict[str, str]
    columns: tuple[str, ...]
    mapping: str
    dtype: str
    row_shape: tuple[int, ...]
    user_ids: str | None = None


@dataclass(frozen=True)
class RemapResult:
    """The output directory, its ``remap.json`` and a :class:`TypeSummary` per type."""

    out_dir: str
    manifest: str
    types: dict[str, TypeSummary]


def _as_source(value: ResultSource | PathLike | Sequence[PathLike]) -> ResultSource:
    if isinstance(value, ResultSource):
        return value
    if isinstance(value, str | os.PathLike | ResultFile):
        return ResultSource.whole(os.fspath(value)) if not isinstance(value, ResultFile) else ResultSource((value,))
    return ResultSource.ranges(list(value))


@dataclass(frozen=True)
class _TableOptions:
    """Parquet / CSV output: where user IDs come from, column renames, the CSV delimiter."""

    id_mappings: str | None
    renames: Mapping[str, str]
    delimiter: str


def _user_ids(
    space: TypeSpace, inputs: MappingInputs, opts: _TableOptions, scratch: str, bounds: tuple[int, ...]
) -> Any:
    """The key reader of a node type's table (None without user IDs): node_keys, or raw_id_mappings staged."""
    keys: Keys | None = find_keys(
        space.name,
        part_root=inputs.part_root,
        graph=inputs.graph,
        id_mappings=opts.id_mappings,
        total=space.total,
        storage_options=inputs.storage_options,
    )
    if isinstance(keys, IdMappingSource):
        return StagedKeys(keys, bounds, fs.join(scratch, "keys"), space.label)
    return keys


def _plan_jobs(
    results: Mapping[str, Any],
    inputs: MappingInputs,
    out: str,
    fmt: OutputFormat,
    block_bytes: int,
    table: _TableOptions,
) -> list[TypeJob]:
    so = inputs.storage_options
    config = inputs.config
    jobs: list[TypeJob] = []
    for i, (name, value) in enumerate(results.items()):
        space = resolve_type(config, name, where="results")
        if any(j.space == space for j in jobs):
            raise RemapError(f"results: {space.label} is given twice")
        data = resolve_source(_as_source(value), space, so)
        source = mapping_source(space, inputs)
        row_bytes = data.dtype.itemsize * max(1, int(_prod(data.row_shape))) + 16
        bounds = regular_bounds(space.total, block_rows_for(row_bytes, block_bytes, source))
        tag = f"{space.kind[0]}{i}"
        scratch = fs.join(out, f"{TMP_DIR}/staged/{tag}")
        keys, ends = None, None
        if fmt in TABLE_FORMATS and space.kind == "edge":
            ends = plan_endpoints(space, inputs, table.id_mappings, scratch, bounds, fmt)
        if fmt in TABLE_FORMATS and space.kind == "node":
            keys = _user_ids(space, inputs, table, scratch, bounds)
            if keys is None and not user_ids_known(inputs.part_root, inputs.graph, table.id_mappings, so):
                raise RemapError(
                    f"results: format {fmt} writes the user IDs of {space.label} (its keys, or GSProcessing's "
                    "raw_id_mappings) beside the values, and none were found beside the partitions; pass the "
                    "chunked graph (graph=, --in-dir CHUNKED) or the mappings (id_mappings=, --id-mappings DIR), "
                    "or use npy/zarr"
                )
        first = data.rows[0] if isinstance(data, PairInput) else data.files[0]
        value_name = _value_name(value, first.key, first.format)
        stem = f"{'nodes' if space.kind == 'node' else 'edges'}/{space.name}"
        output = TypeOutput(
            out_dir=out,
            stem=stem,
            format=fmt,
            id_column="type_nid" if space.kind == "node" else "type_eid",
            value=value_name,
            dtype=data.dtype,
            row_shape=data.row_shape,
            total=space.total,
            block_rows=bounds[1] - bounds[0] if len(bounds) > 1 else 1,
            subset=isinstance(data, PairInput),
            keys=keys,
            endpoints=ends,
            renames=table.renames,
            delimiter=table.delimiter,
            storage_options=so,
        )
        jobs.append(TypeJob(tag, space, bounds, source, data, output, scratch=scratch))
    return jobs


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def _value_name(value: Any, key: str | None, fmt: str) -> str:
    if isinstance(value, ResultSource) and value.name:
        return value.name
    if fmt == "parquet" and key:
        return key
    return key if key and "/" not in key else "value"


def remap_results(
    partitions: PathLike,
    results: Mapping[str, ResultSource | PathLike | Sequence[PathLike]],
    out_dir: PathLike,
    *,
    graph: ChunkedGraph | PathLike | None = None,
    assignment: PathLike | None = None,
    format: OutputFormat = "npy",  # noqa: A002 - the CLI's --format
    id_mappings: PathLike | None = None,
    column_names: Mapping[str, str] | None = None,
    delimiter: str = ",",
    block_bytes: int = 64 << 20,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
    client: Any = None,
    progress: bool = False,
) -> RemapResult:
    """Put results indexed by DGL's new IDs back in original-ID order (and under the original keys).

    Parameters
    ----------
    partitions
        The partition output (its directory or its ``metadata.json``).
    results
        Type name (node type, canonical edge type ``src:rel:dst`` or a unique
        relation name) -> a :class:`ResultSource`, a path (one array over all new
        IDs) or a list of paths (row-range files per rank, tiling the new IDs).
    out_dir
        New or empty directory (or an earlier remap output with ``overwrite``).
    graph
        The chunked graph the partitions were made from: the user IDs of Parquet / CSV
        output (node types chunked with ``key``, or GSProcessing's ``raw_id_mappings``
        inside it), and with ``assignment`` the mapping when the partitions have no
        ``orig_nids.dgl`` / ``orig_eids.dgl``.
    assignment
        The assignment directory the partitions were made from (``--partitions-dir``).
    format
        ``npy``, ``zarr``, ``parquet`` or ``csv`` (see :mod:`dgl_chunked.remap`; the
        tables' columns: :mod:`dgl_chunked.remap.tables`).
    id_mappings
        A ``raw_id_mappings`` directory (GSProcessing's) for the ``nid`` column; default:
        the chunked graph's keys, else its ``raw_id_mappings``, else the one next to the
        partitions (where ``run`` and GraphStorm put it).
    column_names
        Parquet / CSV column renames, built-in name -> yours (GraphStorm's ``--column-names``).
    delimiter
        The CSV delimiter (GraphStorm's ``--output-delimiter``).
    block_bytes
        Rows per task: about this many bytes of results (memory per task is about
        twice this).
    overwrite
        Replace an earlier remap output in ``out_dir``.
    storage_options, client, progress
        fsspec options; the Dask client (default: the current scheduler); progress bars.

    Returns
    -------
    RemapResult

    Raises
    ------
    RemapError
        A result file that does not fit (wrong row count, ranges that do not tile
        the new IDs, IDs out of range or repeated, a type the graph does not have),
        or no mapping (the message says which flag or input is missing).
    """
    if format not in FORMATS:
        raise OptionError(f"format: expected one of {list(FORMATS)}, found {format!r}")
    if not results:
        raise OptionError("results: give at least one type's results")
    so = storage_options
    inputs = mapping_inputs(partitions, graph, assignment, so)
    part_root = inputs.part_root
    out = absolute(out_dir)
    table = _TableOptions(None if id_mappings is None else absolute(id_mappings), dict(column_names or {}), delimiter)
    if table.renames and format not in TABLE_FORMATS:
        raise OptionError(f"column names: only Parquet and CSV output have columns, not {format!r}")
    jobs = _plan_jobs(results, inputs, out, format, block_bytes, table)
    if table.renames:
        check_renames(table.renames, {j.space.label: _plain_columns(j) for j in jobs})
    check_no_overlap({"--out-dir": out}, _input_locations(jobs, inputs), storage_options=so)
    with acquire_lease(out, REMAP_KIND, storage_options=so):
        prepare_owned_output(
            out, REMAP_KIND, overwrite=overwrite, expected=REMAP_ENTRIES, storage_options=so, manifest=MANIFEST
        )
        try:
            summaries = _run(jobs, inputs, out, client, progress)
        finally:
            remove_tmp(out, so)
        manifest = _write_manifest(out, part_root, format, summaries, so)
    return RemapResult(out, manifest, summaries)


def _plain_columns(job: TypeJob) -> list[str]:
    assert job.output is not None
    return replace(job.output, renames={}).columns()


def _input_locations(jobs: list[TypeJob], inputs: MappingInputs) -> dict[str, str]:
    out = {"partitions": inputs.part_root}
    if inputs.assignment:
        out["assignment"] = inputs.assignment
    if inputs.graph is not None:
        out.update(inputs.graph.input_locations())
    for job in jobs:
        keys = job.output.keys if job.output is not None else None
        if isinstance(keys, StagedKeys):
            out[f"user IDs of {job.space.label}"] = keys.source.root
        ends = job.output.endpoints if job.output is not None else None
        if isinstance(ends, Endpoints):
            out.update(
                {f"user IDs of {e.ntype!r}": e.keys.source.root for e in ends.ends if isinstance(e.keys, StagedKeys)}
            )
        data = job.data
        files = (
            data.rows + data.ids if isinstance(data, PairInput) else data.files if isinstance(data, RowInput) else ()
        )
        out.update({f"result file of {job.space.label} ({f.path})": f.path for f in files})
    return out


def remove_tmp(out: str, so: StorageOptions) -> None:
    """Remove ``OUT/_tmp`` (ours: inside our marked output)."""
    filesystem, inner = fs.filesystem(fs.join(out, TMP_DIR), so)
    if filesystem.exists(inner):
        filesystem.rm(inner, recursive=True)


def _run(jobs: list[TypeJob], inputs: MappingInputs, out: str, client: Any, progress: bool) -> dict[str, TypeSummary]:
    runner = StepRunner(client=client, progress=progress, command="remap")
    token = run_token(out, inputs.part_root, [(j.space, j.bounds) for j in jobs])
    jobs, stores = owner_jobs(jobs, inputs, fs.join(out, f"{TMP_DIR}/staged"), token)
    if stores:
        runner.compute(stores, "stage destination owners")
    counts = [count_tasks(j, token) for j in jobs]
    results = runner.compute([t for ts in counts for t in ts], "count owners per block")
    pos = 0
    for i, ts in enumerate(counts):
        jobs[i] = collect_counts(jobs[i], list(results[pos : pos + len(ts)]))
        pos += len(ts)
    shuffled = {i: () for i, j in enumerate(jobs) if is_shuffled(j)}
    jobs = _stage_pairs(jobs, runner, token, skip=set(shuffled))
    if shuffled:
        jobs, shuffled = _stage_slabs(jobs, set(shuffled), runner, token)
    stage_keys_and_ends(jobs, runner, token)
    for job in jobs:
        assert job.output is not None
        job.output.prepare()
    tasks = [
        shuffled_block_tasks(j, shuffled[i], token) if i in shuffled else block_tasks(j, token)
        for i, j in enumerate(jobs)
    ]
    present = runner.compute([t for ts in tasks for t in ts], "write blocks")
    pending = [
        (pieces, target, job.output.storage_options)
        for job in jobs
        if job.output
        for target, pieces in job.output.concat_jobs()
    ]
    concat = [
        delayed(fs.concat_files, pure=False)(*args, dask_key_name=f"dglc-remap-concat-{token}-{n}")
        for n, args in enumerate(pending)
    ]
    if concat:
        runner.compute(concat, "concatenate pieces")
    summaries, pos = {}, 0
    for job, ts in zip(jobs, tasks, strict=True):
        assert job.output is not None and job.data is not None
        files = publish(job.output, job.output.storage_options)
        summaries[f"{job.space.kind}/{job.space.name}"] = TypeSummary(
            kind=job.space.kind,
            name=job.space.name,
            rows=job.space.total,
            present=int(sum(present[pos : pos + len(ts)])),
            files=files,
            columns=tuple(job.output.columns()) if job.output.format in TABLE_FORMATS else (job.output.value,),
            mapping=job.source.label,
            dtype=job.data.dtype.str,
            row_shape=tuple(job.data.row_shape),
            user_ids=user_ids_label(job.output.keys or job.output.endpoints),
        )
        pos += len(ts)
    return summaries


def _stage_slabs(
    jobs: list[TypeJob], which: set[int], runner: StepRunner, token: str
) -> tuple[list[TypeJob], dict[int, tuple[Any, ...]]]:
    """The shuffle route (:mod:`~dgl_chunked.remap.shuffled`): pairs by slab, then slabs by block."""
    grids = {i: job_slabs(jobs[i]) for i in sorted(which)}
    pending = []
    for i, grid in grids.items():
        if isinstance(jobs[i].data, PairInput):
            jobs[i], ts = pair_slab_tasks(jobs[i], grid, _piece_rows(jobs[i]), token)
            pending.append((i, ts))
    _record_pair_offsets(jobs, pending, runner, "stage pairs by slab")
    tasks = {i: slab_tasks(jobs[i], grid, token) for i, grid in grids.items()}
    results = runner.compute([t for ts in tasks.values() for t in ts], "stage slabs by block")
    out, pos = {}, 0
    for i, ts in tasks.items():
        out[i] = tuple(results[pos : pos + len(ts)])
        pos += len(ts)
    return jobs, out


def _stage_pairs(jobs: list[TypeJob], runner: StepRunner, token: str, skip: set[int]) -> list[TypeJob]:
    pending = []
    for i, job in enumerate(jobs):
        if isinstance(job.data, PairInput) and i not in skip:
            pieces = pair_pieces(job.data, _piece_rows(job))
            jobs[i] = replace(job, pieces=tuple(pieces))
            pending.append((i, pair_tasks(jobs[i], pieces, token)))
    _record_pair_offsets(jobs, pending, runner, "stage pairs by block")
    return jobs


def _piece_rows(job: TypeJob) -> int:
    """Rows per piece of a job's pair files: a block's rows, at least ``PIECE_ROWS``."""
    block_rows = job.bounds[1] - job.bounds[0] if len(job.bounds) > 1 else 1
    return max(block_rows, PIECE_ROWS)


def _record_pair_offsets(
    jobs: list[TypeJob], pending: list[tuple[int, list[Delayed]]], runner: StepRunner, what: str
) -> None:
    """Run the pair staging tasks of ``pending`` and record each job's group offsets in ``jobs``."""
    if not pending:
        return
    results = runner.compute([t for _, ts in pending for t in ts], what)
    pos = 0
    for i, ts in pending:
        offsets = tuple(results[pos : pos + len(ts)])
        pairs = sum(int(o[-1]) for o in offsets)
        output = jobs[i].output
        assert output is not None
        # pairs covering every ID (repeats are caught by the blocks) make a dense output, no mask
        jobs[i] = replace(jobs[i], offsets=offsets, output=replace(output, subset=pairs < jobs[i].space.total))
        pos += len(ts)


def _write_manifest(out: str, part_root: str, fmt: str, types: dict[str, TypeSummary], so: StorageOptions) -> str:
    doc = {
        "version": 1,
        "partitions": part_root,
        "format": fmt,
        "types": {
            key: {
                "kind": t.kind,
                "type": t.name,
                "rows": t.rows,
                "present": t.present,
                "files": t.files,
                "columns": list(t.columns),
                "dtype": t.dtype,
                "row_shape": list(t.row_shape),
                "mapping": t.mapping,
                **({"user_ids": t.user_ids} if t.user_ids else {}),
            }
            for key, t in types.items()
        },
    }
    path = fs.join(out, MANIFEST)
    fs.atomic_write_bytes(path, (json.dumps(doc, indent=2) + "\n").encode(), so)
    return path
