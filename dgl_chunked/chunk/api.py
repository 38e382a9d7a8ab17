"""Public entry points of ``dgl-chunked chunk``: :func:`chunk_graph`, :func:`read_orig_keys`.

See :mod:`dgl_chunked.chunk` for the spec format and the output layout, and
:mod:`dgl_chunked.chunk.writer` for the steps.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.chunk.documents import metadata_document, node_keys_document
from dgl_chunked.chunk.plan import make_plan
from dgl_chunked.chunk.spec import RawGraphSpec, parse_spec, read_spec
from dgl_chunked.chunk.writer import EDGE_EXTENSIONS, NODE_KEYS_FILE, Run
from dgl_chunked.errors import MetadataError
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata, parse_metadata
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.owned import (
    ForeignDataError,
    acquire_lease,
    check_no_overlap,
    clear_owned,
    create_owned_dir,
    location_token,
    prepare_owned_output,
    read_marker,
    remove_owned,
)

__all__ = ["chunk_graph", "read_orig_keys"]

logger = logging.getLogger(__name__)


# --- the public entry point --------------------------------------------------------------


def _load_spec(spec: RawGraphSpec | Mapping[str, Any] | PathLike, storage_options: StorageOptions) -> RawGraphSpec:
    if isinstance(spec, RawGraphSpec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(dict(spec), base_dir=os.getcwd(), storage_options=storage_options)
    return read_spec(spec, storage_options=storage_options)


CHUNK_KIND = "chunk"
CHUNK_ENTRIES = (
    "metadata.json",
    "metadata.json.tmp-dglc",
    "node_keys.json",
    "node_keys.json.tmp-dglc",
    "edge_index",
    "node_data",
    "edge_data",
    "node_keys",
    "_staging",
)
"""What :func:`chunk_graph` writes at the top of its output; ``overwrite`` refuses anything else."""


def _spec_inputs(spec: object, raw: RawGraphSpec) -> dict[str, str]:
    """``label -> path`` of the spec file and every raw source: nothing may be written there."""
    out: dict[str, str] = {}
    if isinstance(spec, (str, os.PathLike)):
        out["chunk spec"] = os.fspath(spec)
    sources = [(f"node type {n.name!r} key", n.key) for n in raw.node_types if n.key is not None]
    sources += [(f"node feature {n.name}/{f}", src) for n in raw.node_types for f, src in n.features.items()]
    sources += [(f"relation {r.name!r}", r.source) for r in raw.edge_types]
    sources += [(f"edge feature {r.name}/{f}", src) for r in raw.edge_types for f, src in r.features.items()]
    for label, src in sources:
        out.update({f"raw source ({label}) [{i}]": p for i, p in enumerate(src.paths)})
    return out


def _staging_location(out: str, staging_dir: PathLike | None, storage_options: StorageOptions) -> str:
    """``OUT/_staging``, or ``DIR/dglc-chunk-staging-<token of OUT>`` inside a given ``DIR``."""
    if staging_dir is None:
        return _fs.join(out, "_staging")
    token = location_token(out, storage_options=storage_options)
    return _fs.join(os.fspath(staging_dir), f"dglc-chunk-staging-{token}")


def _clear(out: str, storage_options: StorageOptions, *, before: str) -> None:
    """Remove what a failed run wrote into ``out``, back to its state ``before`` the run:
    ``"absent"`` (remove it), ``"empty"`` (keep the empty directory), ``"ours"`` (an
    earlier output of ours: keep the marker)."""
    try:
        if before != "ours":
            remove_owned(out, expected=CHUNK_ENTRIES, keep_dir=before == "empty", storage_options=storage_options)
        else:
            clear_owned(out, expected=CHUNK_ENTRIES, storage_options=storage_options)
    except ForeignDataError as err:  # keep the run's own error; say what was left
        logger.warning("a failed chunk run left its files in place: %s", err)


def _state(out: str, storage_options: StorageOptions) -> str:
    if read_marker(out, storage_options=storage_options) is not None:
        return "ours"
    return "empty" if _fs.exists(out, storage_options) else "absent"


def _execute(run: Run) -> dict[str, Any]:
    keys, edges = run.read()
    run.after_read(keys, edges)
    if any(any(rel.keyed) for rel in run.plan.relations.values()) or keys:
        run.join()
    run.dedup()
    meta = metadata_document(run, run.write())
    if keys:
        text = json.dumps(node_keys_document(run, keys), indent=4).encode()
        _fs.atomic_write_bytes(_fs.join(run.out, NODE_KEYS_FILE), text, run.so)
    return meta


def chunk_graph(
    spec: RawGraphSpec | Mapping[str, Any] | PathLike,
    out_dir: PathLike,
    *,
    num_chunks: int,
    num_buckets: int | None = None,
    edge_format: str = "parquet",
    staging_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
    overwrite: bool = False,
) -> ChunkedGraphMetadata:
    """Read raw inputs described by ``spec`` and write a chunked graph to ``out_dir``.

    Parameters
    ----------
    spec
        A spec file (``.json``, ``.yaml``), a decoded spec (relative paths resolve
        against the working directory, or its ``base_dir``), or a parsed
        :class:`~dgl_chunked.chunk.spec.RawGraphSpec`. See :mod:`dgl_chunked.chunk`.
    out_dir
        Output directory (local path or fsspec URL).
    num_chunks
        Output chunks (and read tasks) per type, unless a type sets ``num_chunks``.
        Memory per task is about one chunk of the largest array.
    num_buckets
        Hash buckets of the key join and of dedup (default ``num_chunks``).
    edge_format
        ``"parquet"`` (default) or ``"csv"`` (space-delimited, as DGL's dispatcher reads).
    staging_dir
        A folder to create the scratch in, as ``staging_dir/dglc-chunk-staging-<token>``
        (default ``OUT/_staging``); the scratch is removed at the end, nothing else
        in ``staging_dir`` is touched.
    storage_options
        fsspec options for URLs.
    overwrite
        Replace an earlier chunked graph that this tool wrote in ``out_dir`` (else
        :class:`~dgl_chunked.errors.OutputExistsError`). A directory it did not create,
        or an entry it does not write, is refused and left alone.

    Returns
    -------
    ChunkedGraphMetadata
        The metadata written to ``out_dir/metadata.json``.

    Raises
    ------
    MetadataError
        A bad spec (every problem, each with its JSON path).
    OutputExistsError
        ``out_dir`` holds an earlier output and ``overwrite`` is False.
    ForeignDataError, OverlapError, LeaseHeldError
        ``out_dir`` holds files dgl_chunked did not write, overlaps the spec or a raw
        source, or another run is writing it (:mod:`dgl_chunked.storage.owned`).
    ChunkReadError, ChunkMismatchError
        Missing or bad input files or values, naming the spec key, file and row.
        Problems found before reading data rows are reported before anything is
        written; after that, a failure removes what the run wrote (best effort: a
        task already running on a worker may still finish a file), and
        ``metadata.json``, written last, is never written.

    Examples
    --------
    >>> meta = chunk_graph("raw/spec.yaml", "chunked/", num_chunks=8)  # doctest: +SKIP
    >>> meta.edge_type_names  # doctest: +SKIP
    ('paper:cites:paper', 'paper:rev-cites:paper', 'author:writes:paper')
    """
    if not isinstance(num_chunks, int) or num_chunks < 1:
        raise MetadataError(f"num_chunks: expected an integer >= 1, found {num_chunks!r}")
    if edge_format not in EDGE_EXTENSIONS:
        raise MetadataError(f"edge_format: expected 'parquet' or 'csv', found {edge_format!r}")
    raw = _load_spec(spec, storage_options)
    out = os.fspath(out_dir)
    out = out if _fs.is_url(out) else os.path.abspath(out)
    staging_dir = _staging_location(out, staging_dir, storage_options)
    outputs = {"--out-dir": out, "--staging-dir": staging_dir}
    check_no_overlap(outputs, _spec_inputs(spec, raw), storage_options=storage_options)
    plan = make_plan(raw, num_chunks=num_chunks, num_buckets=num_buckets, storage_options=storage_options)
    before = _state(out, storage_options)
    with acquire_lease(out, CHUNK_KIND, storage_options=storage_options):
        prepare_owned_output(
            out, CHUNK_KIND, overwrite=overwrite, expected=CHUNK_ENTRIES, storage_options=storage_options
        )
        create_owned_dir(staging_dir, "chunk-staging", storage_options=storage_options)
        try:
            meta = _execute(Run(plan, out, staging_dir, edge_format))
        except BaseException:
            _clear(out, storage_options, before=before)  # nothing half-written stays behind
            raise
        finally:
            remove_owned(staging_dir, storage_options=storage_options)
        text = json.dumps(meta, indent=4).encode()
        _fs.atomic_write_bytes(_fs.join(out, "metadata.json"), text, storage_options)
    logger.info("wrote %s: %d node types, %d edge types", out, len(meta["node_type"]), len(meta["edge_type"]))
    return parse_metadata(meta, base_dir=out, storage_options=storage_options)


def read_orig_keys(out_dir: PathLike, ntype: str, *, storage_options: StorageOptions = None) -> np.ndarray[Any, Any]:
    """The original key of every node of ``ntype`` (index = dense ID), read eagerly.

    Parameters
    ----------
    out_dir
        A chunked graph written by :func:`chunk_graph` with keys.
    ntype
        A node type that had a ``key`` in the spec.

    Returns
    -------
    numpy.ndarray
        int64, or object (str) for string keys.

    Raises
    ------
    MetadataError
        No ``node_keys.json``, or ``ntype`` has no keys.
    """
    import pyarrow.parquet as pq

    path = _fs.join(os.fspath(out_dir), NODE_KEYS_FILE)
    try:
        with _fs.open_file(path, "rb", storage_options) as f:
            listing = json.load(f)
    except FileNotFoundError as err:
        raise MetadataError(
            f"{path}: expected the key sidecar, found nothing; was the graph chunked with keys?"
        ) from err
    if ntype not in listing:
        raise MetadataError(f"{path}: expected an entry for {ntype!r}, found {sorted(listing)}")
    parts = []
    for rel in listing[ntype]["data"]:
        with _fs.open_file(_fs.join(os.fspath(out_dir), rel), "rb", storage_options) as f:
            parts.append(pq.read_table(f).column("orig_key").to_numpy(zero_copy_only=False))
    dtype = np.int64 if listing[ntype]["dtype"] == "int64" else object
    return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)
