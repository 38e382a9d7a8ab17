"""dgl_chunked: Dask-native, out-of-core partitioning for DGL's distributed training."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
