"""Public test helpers, for this package's tests, notebooks and downstream users.

- :func:`make_chunked_graph` writes a small heterogeneous chunked graph.
- :func:`load_truth` reads any small chunked graph eagerly into numpy (the oracle).
- :func:`write_graph_from_truth` writes a :class:`GraphTruth` with any chunking and
  any formats, to test that results do not depend on either.
- :func:`raise_if_dask_computes` fails when code computes more than allowed.

Nothing in the package imports this module.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dask
import numpy as np
import numpy.typing as npt
from dask.local import get_sync
from dask.utils import key_split
from distributed.diagnostics.plugin import WorkerPlugin

from dgl_chunked._typing import IdArray, PathLike, StorageOptions
from dgl_chunked.io.chunked import formats as _formats
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata, parse_metadata, read_metadata
from dgl_chunked.storage import fs as _fs
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

__all__ = [
    "SMALL_SPEC",
    "CountingScheduler",
    "GraphTruth",
    "KillWorkerAfter",
    "load_truth",
    "make_chunked_graph",
    "planted_partition_edges",
    "raise_if_dask_computes",
    "write_graph_from_truth",
]

SMALL_SPEC = SynthSpec(
    graph_name="small",
    node_types={"author": 12, "institution": 5, "paper": 20},
    edge_types={
        "author:writes:paper": 40,
        "author:reviews:paper": 15,
        "paper:cites:paper": 30,
        "author:affiliated_with:institution": 12,
    },
    node_features={
        "paper": {"feat": (4, "float32"), "year": (0, "int16")},
        "author": {"emb": (3, "float64")},
    },
    edge_features={
        "author:writes:paper": {"order": (0, "int32")},
        "paper:cites:paper": {"w": (2, "float32")},
    },
    masks=("paper",),
    labels={"paper": 3},
    num_node_chunks=2,
    num_edge_chunks=3,
    num_feature_chunks=2,
)
"""The default of :func:`make_chunked_graph`: 3 node types, 4 edge types, 37 nodes,
97 edges; feature files chunked differently from the edge files and the node chunks."""


@dataclass(frozen=True, kw_only=True)
class GraphTruth:
    """A whole chunked graph in memory: the oracle for tests on small graphs."""

    graph_name: str
    num_nodes: Mapping[str, int]
    edges: Mapping[str, tuple[IdArray, IdArray]]
    node_data: Mapping[str, Mapping[str, npt.NDArray[Any]]]
    edge_data: Mapping[str, Mapping[str, npt.NDArray[Any]]]

    @property
    def num_edges(self) -> dict[str, int]:
        """Edge count per canonical edge type."""
        return {e: len(src) for e, (src, _) in self.edges.items()}


def make_chunked_graph(tmp_path: PathLike, *, spec: SynthSpec | None = None, **overrides: Any) -> ChunkedGraphMetadata:
    """Write a small heterogeneous chunked graph to ``tmp_path/chunked``.

    Parameters
    ----------
    tmp_path
        A scratch directory (pytest's ``tmp_path``).
    spec
        What to write; default :data:`SMALL_SPEC`.
    **overrides
        Fields of the spec to replace, e.g. ``edge_format="parquet"``.

    Examples
    --------
    >>> meta = make_chunked_graph(tmp_path, num_edge_chunks=1)  # doctest: +SKIP
    """
    spec = dataclasses.replace(spec or SMALL_SPEC, **overrides)
    return write_synthetic_graph(os.path.join(os.fspath(tmp_path), "chunked"), spec, overwrite=True)


def _concat(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    return np.concatenate([np.asarray(p) for p in parts]) if parts else np.empty(0)


def load_truth(metadata: ChunkedGraphMetadata | PathLike, *, storage_options: StorageOptions = None) -> GraphTruth:
    """Read every edge list and feature eagerly with the per-chunk readers.

    For small graphs only. Accepts the metadata or an input directory.
    """
    if not isinstance(metadata, ChunkedGraphMetadata):
        metadata = read_metadata(metadata, storage_options=storage_options)
    edges = {}
    for spec in metadata.edge_types:
        src = metadata.edges[spec.name]
        opts = {
            "fmt": src.format,
            "options": src.options,
            "storage_options": storage_options,
        }
        pairs = [_formats.read_edge_chunk(p, allow_empty=True, **opts) for p in src.paths]  # type: ignore[arg-type]
        edges[spec.name] = (
            _concat([s for s, _ in pairs]).astype(np.int64),
            _concat([d for _, d in pairs]).astype(np.int64),
        )

    def read(source: Any) -> npt.NDArray[Any]:
        return _concat(
            [
                _formats.read_feature_chunk(
                    p,
                    fmt=source.format,
                    options=source.options,
                    storage_options=storage_options,
                    mmap=False,
                )
                for p in source.paths
            ]
        )

    def features(
        data: Mapping[str, Mapping[str, Any]],
    ) -> dict[str, dict[str, npt.NDArray[Any]]]:
        return {t: {f: read(s) for f, s in feats.items()} for t, feats in data.items()}

    return GraphTruth(
        graph_name=metadata.graph_name,
        num_nodes=dict(zip(metadata.node_types, metadata.num_nodes_per_type, strict=True)),
        edges=edges,
        node_data=features(metadata.node_data),
        edge_data=features(metadata.edge_data),
    )


def _cuts(total: int, chunks: int | Sequence[int]) -> list[int]:
    """Chunk sizes: a count of near-equal chunks, or explicit sizes."""
    if isinstance(chunks, int):
        k = max(min(chunks, total), 1)
        return [total // k + (i < total % k) for i in range(k)]
    if sum(chunks) != total:
        raise ValueError(f"chunk sizes {list(chunks)} do not sum to {total}")
    return list(chunks)


def _write_truth_edges(
    out: str,
    truth: GraphTruth,
    chunks: int | Mapping[str, Sequence[int]],
    fmt: dict[str, Any],
) -> tuple[dict[str, Any], list[list[int]]]:
    sources, per_chunk = {}, []
    options = {k: v for k, v in fmt.items() if k != "name"}
    for i, (etype, (src, dst)) in enumerate(truth.edges.items()):
        # an int: near-equal sizes, no empty files; a dict: explicit, zeros allowed (empty files)
        sizes = [s for s in _cuts(len(src), chunks) if s] if isinstance(chunks, int) else _cuts(len(src), chunks[etype])
        bounds = np.cumsum([0, *sizes])
        rels = [f"edge_index/{i}-{k}.{fmt['name']}" for k in range(len(sizes))]
        for k, rel in enumerate(rels):
            part = slice(bounds[k], bounds[k + 1])
            path = os.path.join(out, rel)
            _formats.write_edge_chunk(path, src[part], dst[part], fmt=fmt["name"], options=options)
        sources[etype] = {"format": fmt, "data": rels}
        per_chunk.append(sizes)
    return sources, per_chunk


def _write_truth_features(
    out: str,
    key: str,
    data: Mapping[str, Mapping[str, npt.NDArray[Any]]],
    chunks: int | Mapping[tuple[str, str], Sequence[int]],
    fmt: str,
    layout: Literal["columns", "list"],
) -> dict[str, dict[str, Any]]:
    sources: dict[str, dict[str, Any]] = {}
    for t, (tname, feats) in enumerate(data.items()):
        for f, (feat, array) in enumerate(feats.items()):
            sizes = _cuts(len(array), chunks if isinstance(chunks, int) else chunks[(tname, feat)])
            bounds = np.cumsum([0, *sizes])
            rels = [f"{key}/{t}/{f}-{k}.{fmt}" for k in range(len(sizes))]
            for k, rel in enumerate(rels):
                part = array[bounds[k] : bounds[k + 1]]
                _formats.write_feature_chunk(os.path.join(out, rel), part, fmt=fmt, parquet_layout=layout)
            sources.setdefault(tname, {})[feat] = {
                "format": {"name": fmt},
                "data": rels,
            }
    return sources


def write_graph_from_truth(
    out_dir: PathLike,
    truth: GraphTruth,
    *,
    edge_chunks: int | Mapping[str, Sequence[int]] = 2,
    feature_chunks: int | Mapping[tuple[str, str], Sequence[int]] = 2,
    edge_format: Literal["csv", "parquet"] = "csv",
    feature_format: Literal["numpy", "parquet"] = "numpy",
    csv_delimiter: str = " ",
    parquet_layout: Literal["columns", "list"] = "columns",
    per_chunk_counts: bool = True,
) -> ChunkedGraphMetadata:
    """Write ``truth`` as a chunked graph with the given chunkings and formats.

    ``edge_chunks`` maps edge types (and ``feature_chunks`` maps ``(type, feat)``)
    to explicit chunk sizes (zeros give empty files), or is a number of near-equal
    chunks for all. With ``per_chunk_counts=False`` only ``num_nodes_per_type`` is
    written, so edge counts must come from the files.
    """
    out = os.path.abspath(os.fspath(out_dir))
    os.makedirs(out, exist_ok=True)
    edge_fmt: dict[str, Any] = {"name": edge_format}
    if edge_format == "csv":
        edge_fmt["delimiter"] = csv_delimiter
    edges, per_chunk = _write_truth_edges(out, truth, edge_chunks, edge_fmt)
    meta: dict[str, Any] = {
        "graph_name": truth.graph_name,
        "node_type": list(truth.num_nodes),
        "num_nodes_per_type": list(truth.num_nodes.values()),
        "edge_type": list(truth.edges),
        "edges": edges,
        "node_data": _write_truth_features(
            out,
            "node_data",
            truth.node_data,
            feature_chunks,
            feature_format,
            parquet_layout,
        ),
        "edge_data": _write_truth_features(
            out,
            "edge_data",
            truth.edge_data,
            feature_chunks,
            feature_format,
            parquet_layout,
        ),
    }
    if per_chunk_counts:
        meta["num_edges_per_chunk"] = per_chunk
    _fs.atomic_write_bytes(os.path.join(out, "metadata.json"), json.dumps(meta, indent=4).encode())
    return parse_metadata(meta, base_dir=out)


class CountingScheduler:
    """A Dask scheduler that counts computes and fails past ``max_computes``.

    Copied in spirit from ``xarray.tests.CountingScheduler``.
    """

    def __init__(self, max_computes: int = 0) -> None:
        self.total_computes = 0
        self.max_computes = max_computes

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        self.total_computes += 1
        if self.total_computes > self.max_computes:
            raise RuntimeError(f"Too many computes. Total: {self.total_computes} > max: {self.max_computes}.")
        return get_sync(dsk, keys, **kwargs)


def raise_if_dask_computes(max_computes: int = 0) -> Any:
    """Context manager: raise RuntimeError on the ``max_computes + 1``-th compute.

    Examples
    --------
    >>> with raise_if_dask_computes():  # doctest: +SKIP
    ...     g = open_chunked_graph(path); g.edges(etype)
    """
    return dask.config.set(scheduler=CountingScheduler(max_computes))


class KillWorkerAfter(WorkerPlugin):
    """Fault injection: SIGKILL the worker process ``pid`` once it has finished
    ``count`` tasks whose key name is ``prefix``; other workers are untouched.

    Deterministic (no polling, no timing): the kill happens in the worker's own task
    transition, right after the ``count``-th such task completed there.

    Examples
    --------
    >>> client.register_plugin(KillWorkerAfter("dglc-stage-edges", 2, pid))  # doctest: +SKIP
    """

    def __init__(self, prefix: str, count: int, pid: int) -> None:
        self.prefix, self.count, self.pid = prefix, count, pid
        self.seen = 0

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "memory" or os.getpid() != self.pid or key_split(key) != self.prefix:
            return
        self.seen += 1
        if self.seen >= self.count:
            os.kill(os.getpid(), signal.SIGKILL)


def planted_partition_edges(
    n: int, m: int, groups: int, *, skewed: bool, p_in: float = 0.9, seed: int = 0
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(src, dst)`` of ``m`` edges over ``n`` nodes in ``groups`` planted communities.

    A share ``p_in`` of the edges stays inside the community of its source; the rest
    land anywhere. Community sizes are equal or, with ``skewed``, Pareto-distributed
    (a few large communities, many small ones), as in real graphs.

    Examples
    --------
    >>> src, dst = planted_partition_edges(100, 500, 4, skewed=False, p_in=1.0)
    >>> src.shape, dst.shape
    ((500,), (500,))
    """
    rng = np.random.default_rng(seed)
    sizes = rng.pareto(1.5, groups) + 1 if skewed else np.ones(groups)
    sizes = np.maximum(1, sizes / sizes.sum() * n).astype(np.int64)
    sizes[-1] += n - sizes.sum()
    comm = rng.permutation(np.repeat(np.arange(groups), sizes))
    members = np.argsort(comm, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(comm, minlength=groups))])
    src = rng.integers(0, n, m)
    c = comm[src]
    inside = members[starts[c] + (rng.random(m) * (starts[c + 1] - starts[c])).astype(np.int64)]
    return src, np.where(rng.random(m) < p_in, inside, rng.integers(0, n, m))
