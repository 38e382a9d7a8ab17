"""The graph and the cluster that the remap and lookup benchmarks start from, made one way.

A homogeneous synthetic graph of ``nodes`` nodes (a tenth as many edges, Parquet edges,
2.5M nodes per chunk), partitioned into 2 parts by ``run --save-orig-nids``, and the
2-worker LocalCluster it and the measurements run on (processes, 1 thread each, the
CLI's worker environment). Importable by its name from ``python benchmarks/x.py``, as
``peak_memory.py`` is.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

__all__ = ["process_client", "run_two_parts", "synth_homogeneous"]


def process_client(workers: int) -> Any:
    """A Dask client of a new LocalCluster of ``workers`` processes, 1 thread each."""
    from dgl_chunked.cluster import dask_client

    return dask_client(None, workers=workers, threads_per_worker=1)


def synth_homogeneous(chunked: Path, nodes: int) -> None:
    """Write the synthetic graph of ``nodes`` nodes (node type ``_N``) to ``chunked``, on threads."""
    import dask

    import dgl_chunked as dglc

    chunks = max(1, nodes // 2_500_000)
    spec = dglc.SynthSpec(
        node_types={"_N": nodes},
        edge_types={"_N:_E:_N": nodes // 10},
        num_node_chunks=chunks,
        num_edge_chunks=chunks,
        edge_format="parquet",
    )
    with dask.config.set(scheduler="threads"):
        dglc.write_synthetic_graph(chunked, spec)


def run_two_parts(chunked: Path, out: Path) -> None:
    """``run`` of ``chunked`` into 2 partitions under ``out``, keeping ``orig_nids``, on 2 workers."""
    import dgl_chunked as dglc

    with warnings.catch_warnings(), process_client(2) as client:
        warnings.simplefilter("ignore")
        dglc.run(chunked, out, num_parts=2, client=client, options=dglc.DispatchOptions(save_orig_nids=True))
