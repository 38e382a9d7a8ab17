"""Both steps in one call: assign partitions, then dispatch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.api import DispatchOptions, DispatchResult, dispatch
from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.chunked import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import assign_partitions

__all__ = ["run"]


def run(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    seed: int = 0,
    balance_ntypes: Sequence[str] | None = None,
    balance_edges: bool = False,
    partitions_dir: PathLike | None = None,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
) -> DispatchResult:
    """Partition ``graph`` with ``method`` and write DGL partitions to ``out_dir``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.ChunkedGraph` or a chunked graph directory.
    out_dir
        Output directory for ``metadata.json`` and ``part<i>/``.
    num_parts, method, seed, balance_ntypes, balance_edges
        Passed to :func:`~dgl_chunked.partition.assign_partitions`.
    partitions_dir
        Also keep the assignment there, in DGL's layout (``<ntype>.txt``).
    options, storage_options, client
        As for :func:`~dgl_chunked.dispatch.dispatch`.

    Returns
    -------
    DispatchResult
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    parts = assign_partitions(graph, num_parts, method=method, seed=seed,
                              balance_ntypes=balance_ntypes, balance_edges=balance_edges)
    if partitions_dir is not None:
        write_assignment(partitions_dir, parts, num_parts=num_parts, algo_name=method,
                         storage_options=storage_options, overwrite=True)
        assignment: Any = partitions_dir
    else:
        assignment = parts
    opts = options or DispatchOptions()
    if opts.part_method is None:
        from dataclasses import replace

        opts = replace(opts, part_method=method)
    return dispatch(graph, assignment, out_dir, num_parts=num_parts, options=opts,
                    storage_options=storage_options, client=client)
