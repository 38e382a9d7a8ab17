"""``dgl-chunked convert-graphbolt``: existing DGL partitions to GraphBolt, without torch.

The counterpart of ``dgl.distributed.dgl_partition_to_graphbolt`` (DGL 2.1 to 2.4): every
partition's ``graph.dgl`` (ours or DGL's) becomes ``fused_csc_sampling_graph.pt``
next to it, in one Dask task per partition, and the partition config gains
``part-<i>/part_graph_graphbolt`` and ``node_map_dtype``/``edge_map_dtype``
``"int64"``, exactly the keys DGL's converter adds (``part_graph`` and every other
key are kept; the type dictionaries are put in type-ID order, which DGL's own
configs already have). Type IDs come from the config's values: on a config laid out
as DGL's pipeline writes it (DGL's, and ours) that is what DGL's converter gives;
on our outputs from before that layout, DGL's converter numbers the types by their
sorted names and we do not. With ``DGL_DIST_DEBUG`` in the environment, every field
of the partition graph is stored, as DGL does (``docs/spec/graphbolt.md``,
"Environment switches"). Each ``.pt`` is written under a temporary name and renamed;
the config is rewritten last, atomically, so an interrupted conversion never looks
finished. Memory per task: the partition's ``graph.dgl`` (read whole, as DGL does)
plus the destination sort (bounded by ``sort_bytes``).

The defaults are DGL 2.3 / 2.4's (``store_eids=True``; ``_dgl2gb_eid`` and
``_gb_dst_id`` when ``graph_formats`` names ``coo`` or, unset, when ``graph.dgl``
stores COO); ``store_eids=False, graph_formats=("csc",)`` gives DGL 2.1's file.
With ``graphbolt_dir`` the GraphBolt partitions and their config go into a new
folder instead (:func:`convert_to_graphbolt`'s ``graphbolt_dir``): the layout DGL's main branch
loads, which refuses a ``part<i>/`` holding both ``graph.dgl`` and the ``.pt``.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import dask
import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import compute_settled
from dgl_chunked.errors import DGLFormatError, MetadataError, OutputExistsError, UnsupportedFormatError
from dgl_chunked.io.dgl.binary import HomogeneousGraph, read_graphs
from dgl_chunked.io.dgl.partition_config import CONFIG_NAME, types_in_id_order
from dgl_chunked.io.graphbolt.csc import DGL_DEBUG_ENV, GraphBoltOptions, dgl_debug_mode, write_graphbolt_partition
from dgl_chunked.io.graphbolt.graph_file import GRAPHBOLT_FILE
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, prepare_owned_output, read_marker

__all__ = ["convert_partition_to_graphbolt", "convert_to_graphbolt"]

logger = logging.getLogger(__name__)


def _config_path(out: PathLike) -> str:
    path = str(out)
    return path if path.endswith(".json") else fs.join(path, CONFIG_NAME)


def _etype_ranges(doc: dict[str, Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Sorted range starts of the edge ID space and the etype ID of each range."""
    etypes = doc.get("etypes", {"_N:_E:_N": 0})
    rows = []
    for name, ranges in doc["edge_map"].items():
        if name not in etypes:
            raise MetadataError(f"partition config: edge_map names {name!r}, which etypes lacks")
        rows += [(int(s), int(etypes[name])) for s, e in ranges if int(e) > int(s)]
    rows.sort()
    return np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64)


def _paths(base: str, part_graph: str) -> tuple[str, str]:
    """``graph.dgl``'s full path and the ``.pt``'s path as the config records it.

    Relative entries (DGL's ``partition_graph`` and ours) stay relative to the config;
    an absolute one (older DGL) gets an absolute ``.pt`` path next to it.
    """
    if posixpath.isabs(part_graph) or fs.is_url(part_graph):
        return part_graph, _target(part_graph)
    return fs.join(base, part_graph), posixpath.join(posixpath.dirname(part_graph), GRAPHBOLT_FILE)


def _target(graph_path: str) -> str:
    return fs.join(fs.parent(graph_path), GRAPHBOLT_FILE)


def convert_partition_to_graphbolt(
    config_path: str,
    part: int,
    options: GraphBoltOptions,
    storage_options: StorageOptions = None,
    target_dir: str | None = None,
) -> str:
    """Convert partition ``part`` of the config at ``config_path``; return the ``.pt`` path relative to its config.

    The ``.pt`` goes next to ``graph.dgl``, or with ``target_dir`` into
    ``target_dir/part<part>/`` (a separate GraphBolt folder, whose config is in ``target_dir``).
    """
    with fs.open_file(config_path, "rb", storage_options) as f:
        doc = types_in_id_order(json.load(f), where=config_path)
    entry = doc.get(f"part-{part}", {})
    if "part_graph" not in entry:
        raise MetadataError(f"{config_path}: part-{part} has no part_graph (graph.dgl) to convert")
    base = fs.parent(config_path)
    graph_path, rel = _paths(base, entry["part_graph"])
    graphs, _ = read_graphs(graph_path, storage_options=storage_options)
    if len(graphs) != 1 or len(graphs[0].ntypes) != 1 or len(graphs[0].canonical_etypes) != 1:
        raise DGLFormatError(f"{graph_path}: expected one homogeneous partition graph, as DGL writes")
    g = graphs[0]
    etype = g.canonical_etypes[0]
    ndata, edata = dict(g.ndata.get(g.ntypes[0], {})), dict(g.edata.get(etype, {}))
    for name, data in (("ndata", ndata), ("edata", edata)):
        if "_ID" not in data:
            raise DGLFormatError(f"{graph_path}: {name} lacks _ID; is this a DGL partition?")
    src, dst = g.edges()
    starts, ids = _etype_ranges(doc)
    eid = np.asarray(edata["_ID"], np.int64)
    if eid.size and (starts.size == 0 or eid.min() < starts[0]):
        raise DGLFormatError(f"{graph_path}: edge _ID below the config's edge_map")
    # as DGL: type_per_edge comes from the partition book (edge_map); edata _TYPE, as stored,
    # is only kept as an attribute in debug mode
    type_per_edge = ids[np.searchsorted(starts, eid, side="right") - 1].astype(np.int32)
    graph = HomogeneousGraph(num_nodes=g.num_nodes[g.ntypes[0]], src=src, dst=dst, ndata=ndata, edata=edata)
    if target_dir is None:
        target = _target(graph_path)
    else:
        target, rel = fs.join(target_dir, f"part{part}/{GRAPHBOLT_FILE}"), f"part{part}/{GRAPHBOLT_FILE}"
        filesystem, inner = fs.filesystem(fs.parent(target), storage_options)
        filesystem.makedirs(inner, exist_ok=True)
    tmp = target + ".tmp"
    write_graphbolt_partition(
        tmp,
        graph,
        ntypes=doc.get("ntypes", {"_N": 0}),
        etypes=doc.get("etypes", {"_N:_E:_N": 0}),
        options=options,
        num_parts=int(doc["num_parts"]),
        type_per_edge=type_per_edge,
        totals=(int(doc["num_nodes"]), int(doc["num_edges"])),
        # DGL decides by the formats the loaded graph.dgl was created with: those it stores
        stored_formats=g.stored_formats.get(etype, ("coo",)),
        storage_options=storage_options,
        archive=GRAPHBOLT_FILE.rsplit(".", 1)[0],
    )
    filesystem, tmp_inner = fs.filesystem(tmp, storage_options)
    filesystem.mv(tmp_inner, fs.filesystem(target, storage_options)[1])
    return rel


def convert_to_graphbolt(
    out_dir: PathLike,
    *,
    store_eids: bool = True,
    store_inner_node: bool = False,
    store_inner_edge: bool = False,
    graph_formats: Sequence[str] | None = None,
    graphbolt_dir: PathLike | None = None,
    sort_bytes: int | None = None,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
) -> str:
    """Add GraphBolt graphs to finished DGL partitions (``dgl_partition_to_graphbolt``).

    Parameters
    ----------
    out_dir
        The partition output directory or its config JSON.
    store_eids, store_inner_node, store_inner_edge
        DGL's flags: also store edge ``_ID`` (default on, as DGL >= 2.3; DGL 2.1's
        default was off), node ``inner_node``, edge ``inner_edge``.
    graph_formats
        DGL 2.3's argument: with ``"coo"`` among them the edge attributes
        ``_dgl2gb_eid`` and ``_gb_dst_id`` are stored; ``None`` (default) stores them
        when the partition's ``graph.dgl`` holds COO (ours and DGL's by default).
        DGL 2.1's file: ``store_eids=False, graph_formats=["csc"]``.
    graphbolt_dir
        Write the GraphBolt partitions into this new folder (``part<i>/`` with only
        the ``.pt``) with a config of the same name whose other paths lead back to
        ``out_dir``'s files, instead of beside each ``graph.dgl``: the layout DGL's
        main branch loads. Nothing in ``out_dir`` is written or changed.
    sort_bytes
        Memory budget of each task's destination sort (default
        :data:`~dgl_chunked.io.graphbolt.csc.SORT_BYTES`).
    overwrite
        Replace ``fused_csc_sampling_graph.pt`` files that already exist (refused otherwise).

    Returns
    -------
    str
        The GraphBolt config's path: with ``graphbolt_dir``, the config in it; else
        the output's own config when dgl_chunked wrote the output (it carries our
        marker), else a new ``<name>_graphbolt.json`` beside the untouched original
        (see :func:`graphbolt_config_path`).
    """
    config_path = _config_path(out_dir)
    if not fs.exists(config_path, storage_options):
        raise MetadataError(f"partition config {config_path!r} does not exist; pass a finished output directory")
    with fs.open_file(config_path, "rb", storage_options) as f:
        doc = types_in_id_order(json.load(f), where=config_path)
    formats = None if graph_formats is None else tuple(graph_formats)
    if formats is not None and (not formats or set(formats) - {"coo", "csr", "csc"}):
        raise UnsupportedFormatError(
            f"graph formats {list(formats)!r}: expected a non-empty subset of ['coo', 'csr', 'csc']"
        )
    base = fs.parent(config_path)
    num_parts = int(doc["num_parts"])
    target_dir = None
    if graphbolt_dir is not None:
        target_dir = _prepare_graphbolt_dir(str(graphbolt_dir), base, num_parts, overwrite, storage_options)
        target = fs.join(target_dir, posixpath.basename(config_path))
    else:
        # an output we did not write (DGL's) is never altered: its config stays as it is and the
        # GraphBolt config goes beside it; its existing .pt files are never replaced
        ours = read_marker(base, storage_options=storage_options) is not None
        target = config_path if ours else graphbolt_config_path(config_path)
        _check_existing(doc, base, ours, overwrite, storage_options)
        if not ours and not overwrite and fs.exists(target, storage_options):
            raise OutputExistsError(f"{target} already exists; pass overwrite (--overwrite) to replace it")
    debug = dgl_debug_mode()  # read here, on the client, as DGL's converter reads its own process's
    if debug:
        logger.warning(
            "%s is set: every field of the DGL partitions goes into the GraphBolt graphs, as DGL's "
            "converter does in its debug mode",
            DGL_DEBUG_ENV,
        )
    options = GraphBoltOptions(
        store_eids, store_inner_node, store_inner_edge, store_all_fields=debug, graph_formats=formats
    )
    if sort_bytes is not None:
        options = replace(options, sort_bytes=sort_bytes)
    run = uuid.uuid4().hex[:12]
    tasks = [
        dask.delayed(convert_partition_to_graphbolt, pure=False)(
            config_path, p, options, storage_options, target_dir, dask_key_name=(f"dglc-convert-graphbolt-{run}", p)
        )
        for p in range(num_parts)
    ]
    rels = compute_settled(*tasks)
    if target_dir is not None:
        doc = _redirected(doc, base, target_dir)
    for p, rel in enumerate(rels):
        doc[f"part-{p}"]["part_graph_graphbolt"] = rel
    doc["node_map_dtype"] = doc["edge_map_dtype"] = "int64"
    fs.atomic_write_bytes(target, json.dumps(doc, indent=4).encode(), storage_options)  # as DGL dumps it
    return target


def _check_existing(doc: dict[str, Any], base: str, ours: bool, overwrite: bool, so: StorageOptions) -> None:
    """Refuse ``.pt`` files beside ``graph.dgl`` that exist, unless ours and ``overwrite``."""
    for p in range(int(doc["num_parts"])):
        graph = doc.get(f"part-{p}", {}).get("part_graph")
        existing = _target(_paths(base, graph)[0]) if graph else None
        if existing and fs.exists(existing, so) and not (ours and overwrite):
            raise OutputExistsError(
                f"{existing} already exists; pass overwrite (--overwrite) to replace the GraphBolt graphs"
                if ours
                else f"{existing} already exists and dgl_chunked did not write it; move it away to convert again"
            )


GRAPHBOLT_DIR_KIND = "convert-graphbolt"
"""The ownership marker's kind of a ``--graphbolt-dir`` folder."""


def _prepare_graphbolt_dir(path: str, source: str, num_parts: int, overwrite: bool, so: StorageOptions) -> str:
    """Create (or, with ``overwrite``, empty our earlier) GraphBolt folder; it must lie outside ``source``."""
    path = path if fs.is_url(path) else os.path.abspath(path)
    source_abs = source if fs.is_url(source) else os.path.abspath(source)
    check_no_overlap({"--graphbolt-dir": path}, {"partition output": source_abs}, storage_options=so)
    expected = ["*.json", "*.json.tmp*", *(f"part{p}" for p in range(num_parts))]
    return prepare_owned_output(path, GRAPHBOLT_DIR_KIND, overwrite=overwrite, expected=expected, storage_options=so)


def _redirected(doc: dict[str, Any], source: str, target_dir: str) -> dict[str, Any]:
    """``doc`` with every relative file path of each ``part-<i>`` made relative to ``target_dir``."""
    out = dict(doc)
    for p in range(int(doc["num_parts"])):
        entry = dict(doc.get(f"part-{p}", {}))
        for key, value in entry.items():
            if isinstance(value, str) and not (posixpath.isabs(value) or fs.is_url(value)):
                entry[key] = _relative(fs.join(source, value), target_dir)
        out[f"part-{p}"] = entry
    return out


def _relative(path: str, start: str) -> str:
    """``path`` relative to the folder ``start`` where both are on one file system, else ``path`` itself."""
    if not (fs.is_url(path) or fs.is_url(start)):
        return os.path.relpath(os.path.abspath(path), os.path.abspath(start)).replace(os.sep, "/")
    a, b = urlsplit(path), urlsplit(start)
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        return path
    return posixpath.relpath(a.path, b.path or "/")


def graphbolt_config_path(config_path: str) -> str:
    """Where :func:`convert_to_graphbolt` puts the config of an output it did not write:
    ``<name>_graphbolt.json`` beside ``<name>.json`` (DGL's loaders take any config path)."""
    return config_path.removesuffix(".json") + "_graphbolt.json"
