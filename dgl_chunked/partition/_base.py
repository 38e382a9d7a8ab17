"""What every partitioning method shares: its options, its protocol, their checks.

The methods (:mod:`.random`, :mod:`.metis`, :mod:`.lp`) import this module only, and
the registry (:mod:`.assign`) imports the methods: no cycle between them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from dgl_chunked._typing import IdArray, PartArray, StorageOptions
from dgl_chunked.errors import AssignmentError, MissingPackageError

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph

__all__ = [
    "SEED_LIMIT",
    "PartitionMethod",
    "PartitionOptions",
    "check_seed",
    "import_partitioner",
    "input_stamp",
    "mask_features",
    "node_type_blocks",
    "trivial_parts",
]

SEED_LIMIT = 1 << 64
"""Seeds are integers in ``[0, SEED_LIMIT)``."""


@dataclass(frozen=True, kw_only=True)
class PartitionOptions:
    """Options every method receives; a method ignores those it cannot honour.

    Attributes
    ----------
    seed
        Integer seed in ``[0, 2**64)``; same seed, same assignment.
    balance_ntypes
        Names to balance across partitions: node types (always balanced by ``metis``)
        and/or boolean node features such as ``train_mask`` (one stratum per mask).
    balance_edges
        Also balance the number of owned (in-)edges per partition.
    max_memory
        In-memory methods (``metis``) refuse graphs whose estimated peak exceeds this
        many bytes; None uses the method's default.
    scratch_dir
        Where out-of-core methods (``lp``) keep intermediate data: a local directory
        or an fsspec URL every worker can reach (None: the method's default, a local
        temporary directory). The caller removes it when done with the arrays.
    storage_options
        fsspec options for a ``scratch_dir`` URL.
    method_config
        The method's own tuning for this call (:class:`~dgl_chunked.partition.LPConfig`
        for ``lp``); None: the registered method's.
    """

    seed: int = 0
    balance_ntypes: tuple[str, ...] | None = None
    balance_edges: bool = False
    max_memory: int | None = None
    scratch_dir: str | None = None
    storage_options: StorageOptions = None
    method_config: Any = None


@runtime_checkable
class PartitionMethod(Protocol):
    """A partitioning method (the plug-in point)."""

    name: str
    dgl_algo_name: str

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        """Per node type a lazy int32 array chunked like ``graph.node_chunks(ntype)``."""
        ...


def check_seed(seed: int) -> int:
    """``seed`` as an ``int``.

    Raises
    ------
    AssignmentError
        ``seed`` is not an integer in ``[0, 2**64)``.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= int(seed) < SEED_LIMIT:
        raise AssignmentError(f"seed: expected an integer in [0, 2**64), found {seed!r}")
    return int(seed)


def mask_features(graph: ChunkedGraph, names: tuple[str, ...] | None) -> list[tuple[int, str]]:
    """(node type ID, feature) of every balance name that is a node feature, in order."""
    out = []
    for name in names or ():
        for t, ntype in enumerate(graph.metadata.node_types):
            if name in graph.metadata.node_data.get(ntype, {}):
                out.append((t, name))
    return out


def node_type_blocks(
    graph: ChunkedGraph,
    kernel: Callable[..., PartArray],
    token: str,
    type_kwargs: Callable[[str], dict[str, Any]],
) -> dict[str, da.Array]:
    """Per node type a lazy int32 array chunked like ``graph.node_chunks(ntype)``; never computes.

    Block by block it is ``kernel(**type_kwargs(ntype), block_info=...)``: a method that
    assigns each node from its ``type_nid`` alone (:mod:`.random`, :mod:`.range`) finds
    the block's ID range in ``block_info[None]["array-location"]``.
    """
    import dask.array as da

    return {
        ntype: da.map_blocks(
            kernel,
            chunks=(tuple(graph.node_chunks(ntype)),),
            dtype=np.int32,
            meta=np.empty(0, np.int32),
            token=token,
            **type_kwargs(ntype),
        )
        for ntype in graph.metadata.node_types
    }


def input_stamp(graph: ChunkedGraph, masks: Sequence[tuple[int, str]]) -> list[tuple[Any, ...]]:
    """Edge and mask files with their row ranges, and size and mtime when local.

    For a partitioner's token: a rewritten input gets a new token, while another open
    of unchanged files gets the same one (so a rerun's dispatch resumes).
    """
    refs = [r for e in graph.edge_types for r in graph.edge_chunks(e)]
    refs += [r for t, f in masks for r in graph.node_feature_chunks(graph.metadata.node_types[t], f)]
    stamp: list[tuple[Any, ...]] = []
    for ref in refs:
        try:
            st = os.stat(ref.path)
            stamp.append((ref.path, ref.start, ref.stop, st.st_size, st.st_mtime_ns))
        except OSError:  # a URL: the path and rows only
            stamp.append((ref.path, ref.start, ref.stop))
    return stamp


def import_partitioner(module: str, method: str, install: str | None = None) -> Any:
    """The package ``module`` that method ``method`` needs.

    Parameters
    ----------
    module, method
        The package and the method needing it.
    install
        What to install when it is missing (None: the extra named like the method,
        ``dgl_chunked[<method>]``, or the package itself).

    Raises
    ------
    MissingPackageError
        ``module`` is not installed (an ImportError; the message says what to install,
        and the CLI prints it as its one ``error:`` line).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        fix = install or f"pip install dgl_chunked[{method}] (or pip install {module})"
        raise MissingPackageError(f"method {method!r} needs {module}, which is not installed: {fix}") from err


def trivial_parts(xadj: IdArray, adjncy: IdArray, num_parts: int) -> PartArray | None:
    """The partition of a CSR graph that needs no partitioner (one part, no nodes: all
    in part 0; no edges: round robin, which cuts nothing; no more nodes than parts:
    each node its own part, the only one within a cap of one node per part), else None.

    METIS given fewer nodes than parts prints "too many parts" and "Cannot bisect a
    graph with 0 vertices" to the process's standard output (pymetis 2025.2.2), into
    the ``partition`` command's report; its k-way partition (above 8 parts) is over the
    caps there (16 parts: a 3-node ring all in one part, a 16-node ring two per part).
    """
    num_nodes = xadj.size - 1
    if num_parts == 1 or num_nodes == 0:
        return np.zeros(num_nodes, np.int32)
    if adjncy.size == 0 or num_nodes <= num_parts:
        return (np.arange(num_nodes) % num_parts).astype(np.int32)
    return None
