"""``lookup_ids``: original IDs or keys (with labels) -> per partition, the new IDs a trainer loads.

Output layout (``.dglc-owned.json`` marks the directory as ours)::

    OUT/
      lookup.json                     written last: type, partitions, rows and files
      part<p>/<type>.nids.npy         int64: DGL's type-wise new IDs owned by partition p, ascending
      part<p>/<type>.orig_nids.npy    int64: the original type-wise IDs, aligned
      part<p>/<type>.<label>.npy      each label column, aligned
      part<p>/<type>.pt               the same as one torch.save dict {"nids": ..., "orig_nids": ..., label: ...}

A trainer of partition ``p`` (``g.get_partition_book().partid``) does::

    d = torch.load(f"OUT/part{p}/paper.pt")
    loader = dgl.distributed.DistNodeDataLoader(g, {"paper": d["nids"]}, sampler, batch_size=...)
    # labels of a batch's seeds: d["label"][torch.searchsorted(d["nids"], seeds)]

(a homogeneous graph passes ``d["nids"]`` directly). Several trainers of one
machine split the file, e.g. ``d["nids"][local_rank::trainers_per_machine]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from dask.delayed import delayed

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import StepRunner
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.graph import ChunkedGraph
from dgl_chunked.lookup.queries import QueryInput, query_input
from dgl_chunked.lookup.tasks import (
    ArraySpec,
    Shuffle,
    join_bucket,
    place_block,
    sort_slab,
    stage_keys,
    stage_queries,
    write_partition,
)
from dgl_chunked.remap.id_mappings import IdMappingSource, find_keys, user_ids_known
from dgl_chunked.remap.mapping import regular_bounds
from dgl_chunked.remap.model import RemapError
from dgl_chunked.remap.plan import MappingInputs, absolute, mapping_inputs, mapping_source, owner_jobs
from dgl_chunked.remap.shuffled import is_shuffled, job_slabs, stage_inverse
from dgl_chunked.remap.spaces import resolve_type
from dgl_chunked.remap.tasks import TypeJob, collect_counts, count_tasks
from dgl_chunked.storage import fs
from dgl_chunked.storage.buckets import bucket_schema
from dgl_chunked.storage.owned import acquire_lease, check_no_overlap, prepare_owned_output

__all__ = ["LOOKUP_ENTRIES", "LOOKUP_KIND", "LookupResult", "lookup_ids"]

LOOKUP_KIND = "lookup"
LOOKUP_MANIFEST = "lookup.json"
LOOKUP_ENTRIES = (LOOKUP_MANIFEST, "part*", "_tmp")
_KEYS_PER_BUCKET = 1 << 20


@dataclass(frozen=True)
class LookupResult:
    """Where each partition's new IDs and labels went, and how many rows each has."""

    out_dir: str
    manifest: str
    type: str
    rows: tuple[int, ...]
    files: tuple[dict[str, str], ...]


def lookup_ids(
    partitions: PathLike,
    queries: Any,
    out_dir: PathLike,
    *,
    type: str | None = None,  # noqa: A002 - the CLI's --type
    column: Any = None,
    labels: Sequence[Any] = (),
    by: Literal["key", "id"] | None = None,
    graph: ChunkedGraph | PathLike | None = None,
    assignment: PathLike | None = None,
    id_mappings: PathLike | None = None,
    formats: Sequence[str] = ("npy", "pt"),
    delimiter: str = ",",
    header: bool = True,
    block_rows: int = 1 << 20,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
    client: Any = None,
    progress: bool = False,
) -> LookupResult:
    """Turn original IDs or keys into (partition, new ID), out of core, written per partition.

    Parameters
    ----------
    partitions
        The partition output (directory or ``metadata.json``).
    queries
        Parquet, CSV/TSV or ``.npy`` file(s) (a path, glob or list), a numpy array of
        keys or IDs, or a pandas DataFrame.
    out_dir
        New or empty directory (or an earlier lookup output with ``overwrite``).
    type
        The node type (or edge type, by ID only) of the queries; default the only node type.
    column
        The key or ID column (Parquet/CSV name or 0-based index; default the first).
    labels
        Columns carried along, aligned with the new IDs (numbers; list columns give rows).
    by
        ``"key"`` (the type's keys: the chunked graph's ``node_keys``, or GSProcessing's
        ``raw_id_mappings``) or ``"id"`` (original type-wise IDs); default ``"key"``
        when the type has keys. Without ``graph`` and without mappings beside the
        partitions or in ``id_mappings`` the keys are unknown: a node type then needs
        ``by="id"``.
    graph
        The chunked graph: its keys, and with ``assignment`` the mapping when the
        partitions have no ``orig_nids.dgl``.
    assignment
        The assignment directory the partitions were made from.
    id_mappings
        A ``raw_id_mappings`` directory (GSProcessing's ``<ntype>/`` Parquet files of
        ``orig``, ``new``); default: the chunked graph's, else the one next to the
        partitions (:mod:`~dgl_chunked.remap.id_mappings`).
    formats
        Any of ``"npy"`` and ``"pt"`` (torch.save dicts, written without torch).
    delimiter, header
        For CSV queries.
    block_rows
        Original IDs per block task (and query rows per piece).
    overwrite, storage_options, client, progress
        As for :func:`~dgl_chunked.remap.remap_results`.

    Returns
    -------
    LookupResult

    Raises
    ------
    RemapError
        A key that is not a node of the type, an ID out of range, a repeated key or
        ID (each names the file and row), or no mapping (the message says which
        flag or input is missing).
    """
    bad = sorted(set(formats) - {"npy", "pt"})
    if bad or not formats:
        raise OptionError(f"formats: expected 'npy' and/or 'pt', found {list(formats)}")
    so = storage_options
    inputs = mapping_inputs(partitions, graph, assignment, so)
    config, part_root, graph = inputs.config, inputs.part_root, inputs.graph
    if type is None:
        if len(config.node_map) != 1:
            raise OptionError(
                f"type: the graph has node types {sorted(config.node_map)}; say which one (type=, --type NAME)"
            )
        type = next(iter(config.node_map))
    space = resolve_type(config, type, where="--type")
    keys = (
        find_keys(
            space.name,
            part_root=part_root,
            graph=graph,
            id_mappings=None if id_mappings is None else absolute(id_mappings),
            total=space.total,
            storage_options=so,
        )
        if space.kind == "node" and by != "id"
        else None
    )
    mappings = None if id_mappings is None else absolute(id_mappings)
    if keys is None and space.kind == "node" and by != "id" and not user_ids_known(part_root, graph, mappings, so):
        # without the chunked graph or mappings nothing says whether the type has keys: never take keys for IDs
        raise OptionError(
            f"{space.label}: without the chunked graph (graph=, --in-dir CHUNKED) the type's keys are unknown; "
            "pass --in-dir (or GSProcessing's mappings, --id-mappings DIR) to look up keys, or by='id' (--by id) "
            "if the queries are original type-wise IDs"
        )
    by = by or ("key" if keys is not None else "id")
    if by == "key" and keys is None:
        raise RemapError(
            f"{space.label} has no keys: pass the chunked graph (--in-dir) made by `dgl-chunked chunk` with a key "
            "for it or GSProcessing's raw_id_mappings (--id-mappings DIR), or look up original IDs (by='id', --by id)"
        )
    qin, data = query_input(
        queries,
        column=column,
        labels=labels,
        text_keys=bool(keys and keys.is_string),
        piece_rows=block_rows,
        delimiter=delimiter,
        header=header,
        storage_options=so,
    )
    if by == "key" and keys is not None:  # in-memory queries too: matched, and so hashed, as the keys' kind
        qin = replace(qin, text_keys=keys.is_string)
    qin = replace(qin, storage_options=so)  # in-memory queries too: their staging goes under OUT
    out = absolute(out_dir)
    locations = {"partitions": part_root}
    locations.update({f"query file {i}": f.path for i, f in enumerate(qin.files)})
    if graph is not None:
        locations.update(graph.input_locations())
    if isinstance(keys, IdMappingSource):
        locations["user IDs"] = keys.root
    check_no_overlap({"--out-dir": out}, locations, storage_options=so)
    source = mapping_source(space, inputs)
    job = TypeJob("q", space, regular_bounds(space.total, block_rows), source, None, None)
    with acquire_lease(out, LOOKUP_KIND, storage_options=so):
        prepare_owned_output(
            out, LOOKUP_KIND, overwrite=overwrite, expected=LOOKUP_ENTRIES, storage_options=so, manifest=LOOKUP_MANIFEST
        )
        try:
            rows, files = _run(job, inputs, qin, data, keys if by == "key" else None, out, formats, client, progress)
        finally:
            tmp_fs, tmp = fs.filesystem(fs.join(out, "_tmp"), so)
            if tmp_fs.exists(tmp):
                tmp_fs.rm(tmp, recursive=True)
        manifest = fs.join(out, LOOKUP_MANIFEST)
        doc = {
            "version": 1,
            "partitions": part_root,
            "kind": space.kind,
            "type": space.name,
            "by": by,
            "rows": list(rows),
            "files": list(files),
            "labels": list(qin.label_names),
        }
        fs.atomic_write_bytes(manifest, (json.dumps(doc, indent=2) + "\n").encode(), so)
    return LookupResult(out, manifest, space.name, rows, files)


def _arrays(qin: QueryInput, labels: dict[str, Any]) -> list[ArraySpec]:
    out: list[ArraySpec] = [("nids", "<i8", ()), ("orig_nids", "<i8", ())]
    for name, (dtype, shape) in labels.items():
        if name in ("nids", "orig_nids"):
            raise RemapError(f"queries: label column {name!r} clashes with an output array; rename it")
        out.append((name, dtype, shape))
    return out


def _run(
    job: TypeJob,
    inputs: MappingInputs,
    qin: QueryInput,
    data: list[Any],
    keys: Any,
    out: str,
    formats: Sequence[str],
    client: Any,
    progress: bool,
) -> tuple[tuple[int, ...], tuple[dict[str, str], ...]]:
    so = inputs.storage_options
    runner = StepRunner(client=client, progress=progress, command="lookup")
    token = run_token(out, inputs.part_root, job.space, job.bounds)
    tmp = fs.join(out, "_tmp")
    [job], stores = owner_jobs([job], inputs, fs.join(tmp, "owners"), token)
    if stores:
        runner.compute(stores, "stage destination owners")
    counts = count_tasks(job, token)
    job = collect_counts(job, list(runner.compute(counts, "count owners per block")))
    buckets = max(1, math.ceil((keys.total if keys is not None else 0) / _KEYS_PER_BUCKET))
    q_paths = [fs.join(tmp, f"q/{i:06d}.arrow") for i in range(len(qin.pieces))]
    lean = job.lean()
    shuffle = _stage_inverse(lean, tmp, runner, token, so) if is_shuffled(job) else None
    stage_tasks = [
        delayed(stage_queries, pure=False)(
            qin,
            i,
            data[i] if data else None,
            lean,
            keys is not None,
            buckets,
            q_paths[i],
            dask_key_name=f"dglc-lookup-queries-{token}-{i}",
        )
        for i in range(len(qin.pieces))
    ]
    if keys is not None:
        k_paths = [fs.join(tmp, f"k/{j:06d}.arrow") for j in range(keys.num_pieces)]
        stage_tasks += [
            delayed(stage_keys, pure=False)(keys, j, buckets, k_paths[j], dask_key_name=f"dglc-lookup-keys-{token}-{j}")
            for j in range(keys.num_pieces)
        ]
    runner.compute(stage_tasks, "stage queries" + (" and keys" if keys is not None else ""))
    block_paths = q_paths
    if keys is not None:
        block_paths = [fs.join(tmp, f"j/{h:06d}.arrow") for h in range(buckets)]
        joins = [
            delayed(join_bucket, pure=False)(
                qin, k_paths, q_paths, h, lean, block_paths[h], keys, dask_key_name=f"dglc-lookup-join-{token}-{h}"
            )
            for h in range(buckets)
        ]
        runner.compute(joins, "join keys")
    label_specs = _label_specs(qin, data, block_paths, so)
    arrays = _arrays(qin, label_specs)
    owners = list(job.owner_blocks) if job.owner_blocks is not None else [None] * (len(job.bounds) - 1)
    root = fs.join(tmp, "pieces")
    places = [
        delayed(place_block, pure=False)(
            qin, lean, block_paths, k, owner, root, arrays, shuffle, dask_key_name=f"dglc-lookup-block-{token}-{k}"
        )
        for k, owner in enumerate(owners)
    ]
    per_block = (
        np.stack(runner.compute(places, "place blocks")) if places else np.zeros((0, job.space.num_parts), np.int64)
    )
    if shuffle is not None:  # pieces per slab of new IDs, so that each partition's files ascend
        sorts = [
            delayed(sort_slab, pure=False)(
                lean, s, shuffle, root, arrays, so, dask_key_name=f"dglc-lookup-sort-{token}-{s}"
            )
            for s in range(shuffle.grid.num_blocks)
        ]
        per_block = (
            np.stack(runner.compute(sorts, "sort by new ID")) if sorts else np.zeros((0, job.space.num_parts), np.int64)
        )
    stem = job.space.name
    writes = [
        delayed(write_partition, pure=False)(
            root, p, per_block[:, p], arrays, stem, formats, so, dask_key_name=f"dglc-lookup-write-{token}-{p}"
        )
        for p in range(job.space.num_parts)
    ]
    runner.compute(writes, "write partitions")
    files = []
    for p in range(job.space.num_parts):
        names = {name: f"part{p}/{stem}.{name}.npy" for name, _, _ in arrays} if "npy" in formats else {}
        if "pt" in formats:
            names["pt"] = f"part{p}/{stem}.pt"
        for rel in names.values():
            src_fs, src = fs.filesystem(fs.join(root, f"out/{rel}"), so)
            _, dst = fs.filesystem(fs.join(out, rel), so)
            src_fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
            src_fs.mv(src, dst)
        files.append(names)
    return tuple(int(c) for c in per_block.sum(axis=0)), tuple(files)


def _stage_inverse(job: TypeJob, tmp: str, runner: StepRunner, token: str, so: StorageOptions) -> Shuffle:
    """The shuffle route: stage the orig file's ``(original ID, new ID)`` by block of original IDs."""
    grid = job_slabs(job)
    scratch = fs.join(tmp, "inverse")
    tasks = [
        delayed(stage_inverse, pure=False)(job, grid, s, scratch, so, dask_key_name=f"dglc-lookup-inverse-{token}-{s}")
        for s in range(grid.num_blocks)
    ]
    offsets = tuple(runner.compute(tasks, "stage the orig file by block")) if tasks else ()
    return Shuffle(grid, offsets, scratch, fs.join(tmp, "regroup"))


def _label_specs(qin: QueryInput, data: list[Any], paths: list[str], so: StorageOptions) -> dict[str, Any]:
    """dtype and row shape of every label, from the staged Arrow schema (or the arrays)."""
    import pyarrow as pa

    if data:
        first = data[0][1]
        return {n: (np.asarray(a).dtype.str, tuple(np.asarray(a).shape[1:])) for n, a in first.items()}
    if not qin.label_names:
        return {}
    schema = bucket_schema(paths[0], so)
    out: dict[str, Any] = {}
    for name in qin.label_names:
        kind = schema.field(name).type
        if pa.types.is_fixed_size_list(kind):
            out[name] = (np.dtype(kind.value_type.to_pandas_dtype()).str, (kind.list_size,))
        else:
            out[name] = (np.dtype(kind.to_pandas_dtype()).str, ())
    return out
