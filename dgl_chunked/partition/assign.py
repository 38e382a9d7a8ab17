"""Partition assignment: the method registry and :func:`assign_partitions`.

A method is any object with ``name``, ``dgl_algo_name`` (the value DGL's
``partition_meta.json`` validator accepts: "random" or "metis") and
``assign(graph, num_parts, options)`` returning, per node type, a lazy int32 Dask
array chunked like ``graph.node_chunks(ntype)`` (see :class:`PartitionMethod`).
Register new ones with :func:`register_method`; ``random``, ``range``, ``metis``,
``kaminpar`` and ``lp`` are built in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError
from dgl_chunked.partition._base import PartitionMethod, PartitionOptions
from dgl_chunked.partition.kaminpar import KaMinParMethod
from dgl_chunked.partition.lp import LPMethod
from dgl_chunked.partition.metis import MetisMethod
from dgl_chunked.partition.random import RandomMethod
from dgl_chunked.partition.range import RangeMethod

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph

__all__ = [
    "PartitionOptions",
    "PartitionMethod",
    "register_method",
    "get_method",
    "available_methods",
    "assign_partitions",
]


_REGISTRY: dict[str, PartitionMethod] = {}


def register_method(name: str, impl: PartitionMethod, *, overwrite: bool = False) -> None:
    """Make ``impl`` available as ``assign_partitions(..., method=name)``.

    Raises
    ------
    AssignmentError
        ``name`` is taken (unless ``overwrite``) or ``impl`` lacks the protocol.
    """
    if not isinstance(impl, PartitionMethod) or impl.dgl_algo_name not in ("random", "metis"):
        raise AssignmentError(
            f"register_method({name!r}): expected an object with name, dgl_algo_name "
            f"('random' or 'metis') and assign(graph, num_parts, options); found {impl!r}"
        )
    if name in _REGISTRY and not overwrite:
        raise AssignmentError(f"register_method: method {name!r} is already registered; pass overwrite=True")
    _REGISTRY[name] = impl


def get_method(name: str) -> PartitionMethod:
    """The registered method called ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise AssignmentError(
            f"method: expected one of {available_methods()}, found {name!r}; "
            "register new methods with register_method()"
        ) from None


def available_methods() -> tuple[str, ...]:
    """Names of the registered methods, sorted."""
    return tuple(sorted(_REGISTRY))


def _check_balance_names(graph: ChunkedGraph, names: Sequence[str] | None) -> tuple[str, ...] | None:
    if names is None:
        return None
    if isinstance(names, str):
        names = [n for n in names.split(",") if n]
    md = graph.metadata
    known = set(md.node_types) | {f for feats in md.node_data.values() for f in feats}
    for name in names:
        if name not in known:
            raise AssignmentError(
                f"balance_ntypes: expected node types or node feature names (one of {sorted(known)}), found {name!r}"
            )
    return tuple(names)


def assign_partitions(
    graph: ChunkedGraph,
    num_parts: int,
    *,
    method: str = "random",
    seed: int = 0,
    balance_ntypes: Sequence[str] | None = None,
    balance_edges: bool = False,
    max_memory: int | None = None,
    scratch_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
    method_config: Any = None,
    options: PartitionOptions | None = None,
) -> dict[str, da.Array]:
    """Assign every node to a partition (lazy: nothing is computed here).

    Parameters
    ----------
    graph
        The chunked graph.
    num_parts
        Number of partitions, >= 1 (independent of workers and file chunking).
    method
        A registered method: ``"random"`` (seeded hash, out of core), ``"range"``
        (contiguous per-type ID ranges, balanced, out of core), ``"metis"``
        (pymetis, a dependency; in memory), ``"kaminpar"``
        (KaMinPar, in memory; ``pip install dgl_chunked[kaminpar]``) or ``"lp"``
        (multilevel, out of core).
    seed
        Seed in ``[0, 2**64)``; the output is a function of the seed and the graph.
    balance_ntypes
        Node types and boolean node features (``train_mask``...) to balance; see
        :class:`PartitionOptions`. ``random`` balances them in expectation only.
    balance_edges
        Also balance owned edges (``metis``).
    max_memory
        Memory limit in bytes for in-memory methods (``metis`` default: 4 GiB).
    scratch_dir, storage_options
        Intermediate data of out-of-core methods (``lp``): see :class:`PartitionOptions`.
        On a cluster whose workers share no local disk pass a URL (``s3://...``) and
        its fsspec options, and remove it once the arrays are computed.
    method_config
        The method's tuning for this call only (an :class:`~dgl_chunked.partition.LPConfig`
        for ``lp``), instead of re-registering the method.
    options
        All of the above as one :class:`PartitionOptions` (as the CLI builds it); then
        the keyword arguments ``seed`` to ``method_config`` must keep their defaults.

    Returns
    -------
    dict[str, dask.array.Array]
        Per node type, int32 partition IDs in ``[0, num_parts)``, length
        ``num_nodes(ntype)``, chunked like ``graph.node_chunks(ntype)``.

    Raises
    ------
    AssignmentError
        Unknown method or balance name, ``num_parts < 1``, a bad seed, or (``metis``)
        an estimated memory need above ``max_memory``.

    Examples
    --------
    >>> parts = assign_partitions(graph, 4, seed=1)  # doctest: +SKIP
    >>> parts["paper"].compute()  # doctest: +SKIP
    """
    if not isinstance(num_parts, (int, np.integer)) or isinstance(num_parts, bool) or num_parts < 1:
        raise AssignmentError(f"num_parts: expected an integer >= 1, found {num_parts!r}")
    impl = get_method(method)
    loose = PartitionOptions(
        seed=seed,
        balance_ntypes=_check_balance_names(graph, balance_ntypes),
        balance_edges=bool(balance_edges),
        max_memory=max_memory,
        scratch_dir=None if scratch_dir is None else str(scratch_dir),
        storage_options=storage_options,
        method_config=method_config,
    )
    if options is None:
        options = loose
    elif loose != PartitionOptions():
        raise AssignmentError("options: pass either a PartitionOptions or the keyword arguments it replaces, not both")
    else:
        options = replace(options, balance_ntypes=_check_balance_names(graph, options.balance_ntypes))
    parts = impl.assign(graph, int(num_parts), options)
    for ntype in graph.metadata.node_types:
        got = parts.get(ntype)
        if got is None or got.chunks != (tuple(graph.node_chunks(ntype)),) or got.dtype != np.int32:
            raise AssignmentError(
                f"method {method!r} returned {None if got is None else (got.dtype, got.chunks)} for node "
                f"type {ntype!r}; expected int32 chunked like {graph.node_chunks(ntype)} (a bug in the method)"
            )
    return dict(parts)


def _register_builtins() -> None:
    register_method("random", RandomMethod(), overwrite=True)
    register_method("range", RangeMethod(), overwrite=True)
    register_method("metis", MetisMethod(), overwrite=True)
    register_method("lp", LPMethod(), overwrite=True)
    register_method("kaminpar", KaMinParMethod(), overwrite=True)


_register_builtins()
