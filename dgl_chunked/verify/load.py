"""A finished partition output read eagerly with our own readers (for tests and small outputs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.io.dgl import PartitionConfig, read_partition_config, read_tensor_dict
from dgl_chunked.io.partition_graph import read_partition_graph
from dgl_chunked.storage import fs

__all__ = ["PartitionFiles", "load_partition_output", "read_optional_tensors"]


@dataclass
class PartitionFiles:
    """One partition's files, read eagerly."""

    ndata: dict[str, npt.NDArray[Any]]
    edata: dict[str, npt.NDArray[Any]]
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    node_feats: dict[str, npt.NDArray[Any]]
    edge_feats: dict[str, npt.NDArray[Any]]
    orig_nids: dict[str, npt.NDArray[np.int64]] | None
    orig_eids: dict[str, npt.NDArray[np.int64]] | None
    formats: tuple[str, ...]


def load_partition_output(
    out_dir: PathLike, *, storage_options: StorageOptions = None
) -> tuple[PartitionConfig, list[PartitionFiles]]:
    """Read a partition config and every partition's files with our own reader.

    Eager (every file whole, in memory): for tests and small outputs;
    :func:`~dgl_chunked.verify.verify_partitions` does not use it.

    Examples
    --------
    >>> config, parts = load_partition_output("out/")  # doctest: +SKIP
    >>> parts[0].node_feats["paper/feat"].shape  # doctest: +SKIP
    (10, 4)
    """
    config = read_partition_config(out_dir, storage_options=storage_options)
    parts = []
    for p in range(config.num_parts):
        base = fs.join(str(out_dir), f"part{p}")
        lo = min(r[p][0] for r in config.node_map.values())
        hi = max(r[p][1] for r in config.node_map.values())
        g = read_partition_graph(base, node_range=(lo, hi), storage_options=storage_options)
        parts.append(
            PartitionFiles(
                ndata=g.ndata,
                edata=g.edata,
                src=g.src,
                dst=g.dst,
                node_feats=read_tensor_dict(fs.join(base, "node_feat.dgl"), storage_options=storage_options),
                edge_feats=read_tensor_dict(fs.join(base, "edge_feat.dgl"), storage_options=storage_options),
                orig_nids=read_optional_tensors(fs.join(base, "orig_nids.dgl"), storage_options),
                orig_eids=read_optional_tensors(fs.join(base, "orig_eids.dgl"), storage_options),
                formats=g.formats,
            )
        )
    return config, parts


def read_optional_tensors(path: str, storage_options: StorageOptions) -> dict[str, Any] | None:
    """The tensor dict at ``path``, or None when the file does not exist."""
    return read_tensor_dict(path, storage_options=storage_options) if fs.exists(path, storage_options) else None
