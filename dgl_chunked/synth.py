"""Synthetic graphs in the Chunked Graph Format, for tests, notebooks and benchmarks.

:func:`write_synthetic_graph` writes one file per chunk in Dask tasks on the
current scheduler. Each chunk is generated from its own seed, derived from
``(seed, kind, type, feature, chunk index)``, so memory is bounded by one chunk
and the output depends only on the :class:`SynthSpec`. ``metadata.json`` is
written last and atomically, with relative paths and both the ``num_*_per_type``
and ``num_*_per_chunk`` keys. The layout follows DGL's ``tools/chunk_graph.py``::

    OUT/
      metadata.json
      edge_index/<src:rel:dst><i>.txt|.parquet
      node_data/<ntype>/<feat>-<i>.npy|.parquet
      edge_data/<src:rel:dst>/<feat>-<i>.npy|.parquet

Degree distributions: ``"uniform"`` draws both ends uniformly; ``"powerlaw"``
uses R-MAT recursion (a, b, c, d = 0.57, 0.19, 0.19, 0.05) per edge type, so
low IDs get most edges.
"""

from __future__ import annotations

import json
import os
import warnings
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from dask.base import compute
from dask.delayed import delayed

from dgl_chunked._dask import run_token
from dgl_chunked._typing import IdArray, PathLike, StorageOptions
from dgl_chunked.errors import MetadataError, Problems
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata, parse_metadata
from dgl_chunked.storage import fs as _fs
from dgl_chunked.storage.owned import acquire_lease, prepare_owned_output

__all__ = [
    "MASK_NAMES",
    "SynthSpec",
    "generate_edge_chunk",
    "generate_feature_chunk",
    "write_synthetic_graph",
]

SYNTH_KIND = "synth"
SYNTH_ENTRIES = ("metadata.json", "metadata.json.tmp-dglc", "edge_index", "node_data", "edge_data")
"""What :func:`write_synthetic_graph` writes at the top of its output; ``overwrite`` refuses anything else."""

MASK_NAMES = ("train_mask", "val_mask", "test_mask")
_RMAT = (0.57, 0.19, 0.19, 0.05)
_EXT = {"csv": "txt", "parquet": "parquet", "numpy": "npy"}
FeatureSpecs = Mapping[str, Mapping[str, tuple[int, str]]]


@dataclass(frozen=True, kw_only=True)
class SynthSpec:
    """What :func:`write_synthetic_graph` writes.

    ``node_types`` maps names to counts; ``edge_types`` maps canonical
    ``"src:rel:dst"`` strings to counts. Features map type -> name -> ``(dim, dtype)``
    (dim 0 gives a 1-D feature). ``masks`` lists node types that get bool
    ``train_mask``/``val_mask``/``test_mask`` (a disjoint 60/20/20 random split);
    ``labels`` maps node types to a number of classes for an int64 ``label``.
    ``num_feature_chunks`` (None: as the node/edge chunks) lets feature files be
    chunked differently from ``num_nodes_per_chunk`` and from the edge files.
    """

    graph_name: str = "synth"
    node_types: Mapping[str, int]
    edge_types: Mapping[str, int]
    distribution: Literal["uniform", "powerlaw"] = "uniform"
    node_features: FeatureSpecs = field(default_factory=dict)
    edge_features: FeatureSpecs = field(default_factory=dict)
    masks: tuple[str, ...] = ()
    labels: Mapping[str, int] = field(default_factory=dict)
    num_node_chunks: int = 2
    num_edge_chunks: int = 2
    num_feature_chunks: int | None = None
    edge_format: Literal["csv", "parquet"] = "csv"
    feature_format: Literal["numpy", "parquet"] = "numpy"
    parquet_layout: Literal["columns", "list"] = "columns"
    csv_delimiter: str = " "
    seed: int = 0

    def __post_init__(self) -> None:
        problems = _spec_problems(self)
        if problems:
            raise MetadataError("invalid SynthSpec: " + "; ".join(problems.messages))

    @classmethod
    def homogeneous(
        cls,
        num_nodes: int,
        num_edges: int,
        *,
        feat_dim: int | None = 16,
        feat_dtype: str = "float32",
        num_classes: int = 10,
        edge_feat_dim: int | None = None,
        num_chunks: int = 2,
        **kwargs: Any,
    ) -> SynthSpec:
        """One node type ``_N`` and one edge type ``_N:_E:_N`` (DGL's convention).

        ``feat`` has ``feat_dim`` columns (None: no feature), masks and ``label``
        are included, ``weight`` (float32) is added when ``edge_feat_dim`` is set.
        Other keywords (``distribution``, ``seed``, formats...) go to the spec.
        """
        nfeat = {"_N": {"feat": (feat_dim, feat_dtype)}} if feat_dim is not None else {}
        efeat = {"_N:_E:_N": {"weight": (edge_feat_dim, "float32")}} if edge_feat_dim is not None else {}
        return cls(
            node_types={"_N": num_nodes},
            edge_types={"_N:_E:_N": num_edges},
            node_features=nfeat,
            edge_features=efeat,
            masks=("_N",),
            labels={"_N": num_classes} if num_classes else {},
            num_node_chunks=num_chunks,
            num_edge_chunks=num_chunks,
            **kwargs,
        )

    @classmethod
    def heterogeneous(cls, scale: int = 1, **kwargs: Any) -> SynthSpec:
        """An academic-style graph: 4 node types, 5 edge types (a self relation,
        two relations between author and paper), node and edge features of several
        dtypes and dims (float16/32/64, int8/16/32, uint8, bool), masks and labels.
        Other keywords go to the spec."""
        s = int(scale)
        return cls(
            node_types={
                "author": 400 * s,
                "institution": 40 * s,
                "paper": 1000 * s,
                "field": 25 * s,
            },
            edge_types={
                "author:writes:paper": 2500 * s,
                "author:reviews:paper": 600 * s,
                "paper:cites:paper": 4000 * s,
                "author:affiliated_with:institution": 450 * s,
                "paper:has_topic:field": 1500 * s,
            },
            node_features={
                "paper": {"feat": (16, "float32"), "year": (0, "int16")},
                "author": {"emb": (8, "float64")},
                "institution": {"code": (0, "uint8")},
                "field": {"emb": (4, "float16")},
            },
            edge_features={
                "author:writes:paper": {"order": (0, "int32")},
                "author:reviews:paper": {"score": (3, "int8")},
                "paper:cites:paper": {"w": (0, "float32")},
                "paper:has_topic:field": {"primary": (0, "bool")},
            },
            masks=("paper", "author"),
            labels={"paper": 10},
            **kwargs,
        )

    def feature_chunks(self, kind: Literal["node", "edge"]) -> int:
        """Number of feature files per node (or edge) feature."""
        if self.num_feature_chunks is not None:
            return self.num_feature_chunks
        return self.num_node_chunks if kind == "node" else self.num_edge_chunks

    def all_node_features(self) -> dict[str, dict[str, tuple[int, str]]]:
        """Node features including masks and labels."""
        out = {t: dict(f) for t, f in self.node_features.items()}
        for ntype in self.masks:
            out.setdefault(ntype, {}).update(dict.fromkeys(MASK_NAMES, (0, "bool")))
        for ntype in self.labels:
            out.setdefault(ntype, {})["label"] = (0, "int64")
        return out


def _spec_problems(spec: SynthSpec) -> Problems:
    problems = Problems("the SynthSpec")
    for name, n in spec.node_types.items():
        if not name or ":" in name or "/" in name or not isinstance(n, int) or n < 0:
            problems.note(f"node_types[{name!r}]: expected a name without ':' or '/' and a count >= 0, found {n!r}")
    for etype, m in spec.edge_types.items():
        parts = etype.split(":")
        if len(parts) != 3 or not all(p in spec.node_types for p in parts[::2]) or "/" in etype:
            problems.note(f"edge_types[{etype!r}]: expected 'src:rel:dst' with src and dst in node_types")
        elif not isinstance(m, int) or m < 0 or (m and not all(spec.node_types[p] for p in parts[::2])):
            problems.note(f"edge_types[{etype!r}]: expected a count >= 0 (0 if an end type is empty), found {m!r}")
    for label, feats, types in (
        ("node_features", spec.all_node_features(), spec.node_types),
        ("edge_features", spec.edge_features, spec.edge_types),
    ):
        for tname, fmap in feats.items():
            if tname not in types:
                problems.note(f"{label}[{tname!r}]: expected a type in {list(types)}")
            for feat, (dim, dtype) in fmap.items():
                if "/" in feat or dim < 0 or np.dtype(dtype) not in _formats.FEATURE_DTYPES:
                    problems.note(
                        f"{label}[{tname!r}][{feat!r}]: expected (dim >= 0, supported dtype), found {(dim, dtype)}"
                    )
    chunks = (spec.num_node_chunks, spec.num_edge_chunks, spec.feature_chunks("node"))
    if min(chunks) < 1:
        problems.note(f"chunk counts: expected >= 1, found {chunks}")
    if spec.distribution not in ("uniform", "powerlaw"):
        problems.note(f"distribution: expected 'uniform' or 'powerlaw', found {spec.distribution!r}")
    if spec.edge_format not in ("csv", "parquet") or spec.feature_format not in (
        "numpy",
        "parquet",
    ):
        problems.note(
            f"formats: expected csv|parquet and numpy|parquet, found {spec.edge_format!r}, {spec.feature_format!r}"
        )
    if len(spec.csv_delimiter) != 1:
        problems.note(f"csv_delimiter: expected one character, found {spec.csv_delimiter!r}")
    return problems


def _split(total: int, parts: int) -> list[int]:
    """Near-equal split into ``min(parts, total)`` parts (``[0]`` if total is 0)."""
    k = max(min(parts, total), 1)
    return [total // k + (i < total % k) for i in range(k)]


def _rng(spec: SynthSpec, *key: str | int) -> np.random.Generator:
    words = [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in key]
    return np.random.default_rng(np.random.SeedSequence([spec.seed, *words]))


# --- per-chunk kernels ----------------------------------------------------------


def _rmat_once(rng: np.random.Generator, m: int, num_src: int, num_dst: int) -> tuple[IdArray, IdArray]:
    a, b, c, _ = _RMAT
    levels_src, levels_dst = (num_src - 1).bit_length(), (num_dst - 1).bit_length()
    src, dst = np.zeros(m, np.int64), np.zeros(m, np.int64)
    for level in range(max(levels_src, levels_dst)):
        u = rng.random(m, dtype=np.float32)
        if level < levels_src:
            src = (src << 1) | (u >= a + b)
        if level < levels_dst:
            dst = (dst << 1) | (((u >= a) & (u < a + b)) | (u >= a + b + c))
    return src, dst


def generate_edge_chunk(spec: SynthSpec, etype: str, chunk: int, rows: int) -> tuple[IdArray, IdArray]:
    """The ``(src, dst)`` per-type IDs of edge chunk ``chunk`` of ``etype``."""
    src_type, _, dst_type = etype.split(":")
    num_src, num_dst = spec.node_types[src_type], spec.node_types[dst_type]
    rng = _rng(spec, "edges", etype, chunk)
    if spec.distribution == "uniform":
        return rng.integers(0, num_src, rows, dtype=np.int64), rng.integers(0, num_dst, rows, dtype=np.int64)
    src, dst = np.empty(rows, np.int64), np.empty(rows, np.int64)
    todo = np.arange(rows)
    while todo.size:  # reject IDs beyond the type's count (less than half of them)
        s, d = _rmat_once(rng, todo.size, num_src, num_dst)
        ok = (s < num_src) & (d < num_dst)
        src[todo[ok]], dst[todo[ok]] = s[ok], d[ok]
        todo = todo[~ok]
    return src, dst


def generate_feature_chunk(
    spec: SynthSpec, kind: str, type_name: str, feat: str, chunk: int, rows: int
) -> npt.NDArray[Any]:
    """Rows of feature chunk ``chunk`` (masks of one chunk share one draw)."""
    feats = spec.all_node_features() if kind == "node" else spec.edge_features
    dim, dtype_name = feats[type_name][feat]
    dtype = np.dtype(dtype_name)
    shape = (rows, dim) if dim else (rows,)
    if feat in MASK_NAMES and kind == "node" and type_name in spec.masks:
        u = _rng(spec, "masks", type_name, chunk).random(rows)
        lo, hi = {
            "train_mask": (0.0, 0.6),
            "val_mask": (0.6, 0.8),
            "test_mask": (0.8, 1.0),
        }[feat]
        return (u >= lo) & (u < hi)
    rng = _rng(spec, kind, type_name, feat, chunk)
    if feat == "label" and kind == "node" and type_name in spec.labels:
        return rng.integers(0, spec.labels[type_name], rows, dtype=np.int64)
    if dtype.kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    high = 100 if dtype.itemsize < 4 else 1000
    return rng.integers(0, high, shape).astype(dtype, copy=False)


def generate_edges_block(*args: Any, **kwargs: Any) -> tuple[IdArray, IdArray]:
    """Deprecated name of :func:`generate_edge_chunk` (a *block* is an ID range, not a file)."""
    warnings.warn("generate_edges_block is deprecated: use generate_edge_chunk", DeprecationWarning, stacklevel=2)
    return generate_edge_chunk(*args, **kwargs)


def generate_feature_block(*args: Any, **kwargs: Any) -> npt.NDArray[Any]:
    """Deprecated name of :func:`generate_feature_chunk`."""
    warnings.warn("generate_feature_block is deprecated: use generate_feature_chunk", DeprecationWarning, stacklevel=2)
    return generate_feature_chunk(*args, **kwargs)


def _write_edges(path: str, spec: SynthSpec, etype: str, chunk: int, rows: int, so: StorageOptions) -> int:
    src, dst = generate_edge_chunk(spec, etype, chunk, rows)
    options = {"delimiter": spec.csv_delimiter} if spec.edge_format == "csv" else {}
    _formats.write_edge_chunk(path, src, dst, fmt=spec.edge_format, options=options, storage_options=so)
    return rows


def _write_feature(path: str, spec: SynthSpec, key: tuple[str, str, str, int, int], so: StorageOptions) -> int:
    kind, type_name, feat, chunk, rows = key
    array = generate_feature_chunk(spec, kind, type_name, feat, chunk, rows)
    _formats.write_feature_chunk(
        path,
        array,
        fmt=spec.feature_format,
        storage_options=so,
        parquet_layout=spec.parquet_layout,
    )
    return rows


# --- wiring ---------------------------------------------------------------------


def _plan_edges(spec: SynthSpec, out: str, so: StorageOptions, meta: dict[str, Any]) -> list[Any]:
    tasks = []
    edge_fmt: dict[str, str] = {"name": spec.edge_format}
    if spec.edge_format == "csv":
        edge_fmt["delimiter"] = spec.csv_delimiter
    write = delayed(_write_edges, pure=False)
    run = run_token(out, spec)
    for etype, count in spec.edge_types.items():
        rows = _split(count, spec.num_edge_chunks) if count else []
        rels = [f"edge_index/{etype}{k}.{_EXT[spec.edge_format]}" for k in range(len(rows))]
        meta["num_edges_per_chunk"].append(rows)
        meta["edges"][etype] = {"format": edge_fmt, "data": rels}
        for k, (rel, n) in enumerate(zip(rels, rows, strict=True)):
            name = (f"dglc-synth-edges-{run}", etype, k)
            tasks.append(write(_fs.join(out, rel), spec, etype, k, n, so, dask_key_name=name))
    return tasks


def _plan_features(
    spec: SynthSpec,
    kind: Literal["node", "edge"],
    out: str,
    so: StorageOptions,
    meta: dict[str, Any],
) -> list[Any]:
    tasks = []
    feats = spec.all_node_features() if kind == "node" else spec.edge_features
    counts: Mapping[str, int] = spec.node_types if kind == "node" else spec.edge_types
    folder = f"{kind}_data"
    write = delayed(_write_feature, pure=False)
    run = run_token(out, spec, kind)
    for tname, fmap in feats.items():
        rows = _split(counts[tname], spec.feature_chunks(kind))
        for feat in fmap:
            rels = [f"{folder}/{tname}/{feat}-{k}.{_EXT[spec.feature_format]}" for k in range(len(rows))]
            meta[folder].setdefault(tname, {})[feat] = {
                "format": {"name": spec.feature_format},
                "data": rels,
            }
            for k, (rel, n) in enumerate(zip(rels, rows, strict=True)):
                name = (f"dglc-synth-{kind}-feature-{run}", tname, feat, k)
                tasks.append(
                    write(
                        _fs.join(out, rel),
                        spec,
                        (kind, tname, feat, k, n),
                        so,
                        dask_key_name=name,
                    )
                )
    return tasks


def _plan(spec: SynthSpec, out: str, so: StorageOptions) -> tuple[dict[str, Any], list[Any]]:
    """The metadata dict (relative paths) and the delayed writes."""
    ntypes, etypes = list(spec.node_types), list(spec.edge_types)
    meta: dict[str, Any] = {
        "graph_name": spec.graph_name,
        "node_type": ntypes,
        "num_nodes_per_type": [spec.node_types[t] for t in ntypes],
        "num_nodes_per_chunk": [_split(spec.node_types[t], spec.num_node_chunks) for t in ntypes],
        "edge_type": etypes,
        "num_edges_per_type": [spec.edge_types[e] for e in etypes],
        "num_edges_per_chunk": [],
        "edges": {},
        "node_data": {},
        "edge_data": {},
    }
    tasks = _plan_edges(spec, out, so, meta)
    tasks += _plan_features(spec, "node", out, so, meta)
    tasks += _plan_features(spec, "edge", out, so, meta)
    return meta, tasks


def write_synthetic_graph(
    out_dir: PathLike,
    spec: SynthSpec,
    *,
    storage_options: StorageOptions = None,
    overwrite: bool = False,
) -> ChunkedGraphMetadata:
    """Write a synthetic chunked graph; one Dask task per file, metadata last.

    Parameters
    ----------
    out_dir
        Output directory (local path or fsspec URL).
    spec
        What to write; the output depends only on it.
    storage_options
        fsspec options for URLs.
    overwrite
        Replace an earlier synthetic graph in ``out_dir`` (else OutputExistsError). Only a
        directory dgl_chunked created is emptied, and only of the entries it writes.

    Returns
    -------
    ChunkedGraphMetadata
        The parsed metadata that was written.

    Examples
    --------
    >>> spec = SynthSpec.homogeneous(1000, 5000, feat_dim=8)
    >>> meta = write_synthetic_graph(tmp_dir, spec)  # doctest: +SKIP
    """
    out = os.fspath(out_dir)
    out = out if _fs.is_url(out) else os.path.abspath(out)
    with acquire_lease(out, SYNTH_KIND, storage_options=storage_options):
        prepare_owned_output(
            out, SYNTH_KIND, overwrite=overwrite, expected=SYNTH_ENTRIES, storage_options=storage_options
        )
        meta, tasks = _plan(spec, out, storage_options)
        compute(*tasks)
        text = json.dumps(meta, indent=4, sort_keys=True).encode()
        _fs.atomic_write_bytes(_fs.join(out, "metadata.json"), text, storage_options)
    return parse_metadata(meta, base_dir=out, storage_options=storage_options)
