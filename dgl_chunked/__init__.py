"""dgl_chunked: Dask-native, out-of-core partitioning for DGL's distributed training.

The main job, as a Python API::

    import dgl_chunked as dglc
    graph = dglc.open_chunked_graph("chunked/")            # lazy, from metadata.json
    parts = dglc.assign_partitions(graph, 4, seed=0)        # lazy int32 arrays per node type
    dglc.dispatch(graph, parts, "out/", num_parts=4)        # DGL partitions + out/metadata.json

It runs on whatever Dask scheduler is current (a ``distributed.Client`` if one exists).

Names of the layers a command may not need (``chunk``, ``partition``, ``pipeline``,
``synth``, ``verify``) load on first use (PEP 562), so ``dgl-chunked dispatch`` imports
neither pandas nor the partitioners; ``dispatch`` and ``io`` load at once (the function
``dispatch`` shares its name with its package, so the package must be imported first).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dgl_chunked import errors
from dgl_chunked._version import __version__
from dgl_chunked.dispatch import DispatchOptions, DispatchResult, GraphBoltOptions, dispatch
from dgl_chunked.io import (
    ChunkedGraph,
    ChunkedGraphMetadata,
    PartitionConfig,
    ValidationReport,
    open_assignment,
    open_chunked_graph,
    read_graphs,
    read_metadata,
    read_partition_config,
    read_tensor_dict,
    validate_chunked_graph,
    write_assignment,
)

if TYPE_CHECKING:
    from dgl_chunked.chunk import chunk_graph
    from dgl_chunked.convert_graphbolt import convert_to_graphbolt
    from dgl_chunked.dispatch.forecast import RunForecast, forecast_run
    from dgl_chunked.lookup import LookupResult, lookup_ids
    from dgl_chunked.partition import (
        LPConfig,
        PartitionOptions,
        PartitionReport,
        assign_partitions,
        compute_partition_report,
        make_assignment,
    )
    from dgl_chunked.pipeline import run
    from dgl_chunked.remap import RemapResult, ResultSource, remap_results
    from dgl_chunked.synth import SynthSpec, write_synthetic_graph
    from dgl_chunked.verify import VerifyReport, load_partition_output, verify_partitions

_LAZY = {
    "chunk_graph": "dgl_chunked.chunk",
    "convert_to_graphbolt": "dgl_chunked.convert_graphbolt",
    "LPConfig": "dgl_chunked.partition",
    "PartitionOptions": "dgl_chunked.partition",
    "PartitionReport": "dgl_chunked.partition",
    "assign_partitions": "dgl_chunked.partition",
    "compute_partition_report": "dgl_chunked.partition",
    "make_assignment": "dgl_chunked.partition",
    "RunForecast": "dgl_chunked.dispatch.forecast",
    "forecast_run": "dgl_chunked.dispatch.forecast",
    "run": "dgl_chunked.pipeline",
    "LookupResult": "dgl_chunked.lookup",
    "RemapResult": "dgl_chunked.remap",
    "ResultSource": "dgl_chunked.remap",
    "lookup_ids": "dgl_chunked.lookup",
    "remap_results": "dgl_chunked.remap",
    "SynthSpec": "dgl_chunked.synth",
    "write_synthetic_graph": "dgl_chunked.synth",
    "VerifyReport": "dgl_chunked.verify",
    "load_partition_output": "dgl_chunked.verify",
    "verify_partitions": "dgl_chunked.verify",
}


def __getattr__(name: str) -> Any:
    """Load a lazy public name on first use (see the module docstring)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dgl_chunked' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ChunkedGraph",
    "ChunkedGraphMetadata",
    "DispatchOptions",
    "DispatchResult",
    "GraphBoltOptions",
    "LPConfig",
    "LookupResult",
    "PartitionConfig",
    "PartitionOptions",
    "PartitionReport",
    "RemapResult",
    "ResultSource",
    "RunForecast",
    "SynthSpec",
    "ValidationReport",
    "VerifyReport",
    "__version__",
    "assign_partitions",
    "chunk_graph",
    "compute_partition_report",
    "convert_to_graphbolt",
    "dispatch",
    "errors",
    "forecast_run",
    "load_partition_output",
    "lookup_ids",
    "make_assignment",
    "open_assignment",
    "open_chunked_graph",
    "read_graphs",
    "read_metadata",
    "read_partition_config",
    "read_tensor_dict",
    "remap_results",
    "run",
    "validate_chunked_graph",
    "verify_partitions",
    "write_assignment",
    "write_synthetic_graph",
]
