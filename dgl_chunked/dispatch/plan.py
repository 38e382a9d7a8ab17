"""The plan types of dispatch: what the staging produced and what the partition writers need.

These are plain frozen dataclasses shared by the Dask wiring of the steps (:mod:`.tasks`), the
writers (:mod:`.finalize`, :mod:`.halo`) and the API (:mod:`.api`); they import
only the layers below them, so no dispatch module needs another's internals to
name them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import StorageOptions
from dgl_chunked.dispatch.ids import IdLayout
from dgl_chunked.dispatch.kernels import edge_array
from dgl_chunked.dispatch.staging import Staging
from dgl_chunked.io.graphbolt.csc import GraphBoltOptions

__all__ = ["StagedFeature", "PartitionPlan", "PartitionSummary"]


@dataclass(frozen=True)
class StagedFeature:
    """One staged feature: output key, staged array names and their counts."""

    key: str
    arrays: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    dtype: str
    row_shape: tuple[int, ...]
    type_index: int


@dataclass(frozen=True)
class PartitionPlan:
    """Everything a partition writer needs; small enough to ship to every task."""

    staging: Staging
    out_dir: str
    storage_options: StorageOptions
    ntypes: tuple[str, ...]
    etypes: tuple[str, ...]
    node_layout: IdLayout
    edge_layout: IdLayout
    node_block_starts: tuple[tuple[int, ...], ...]
    node_block_counts: tuple[npt.NDArray[np.int64], ...]
    edge_task_counts: tuple[npt.NDArray[np.int64], ...]
    node_features: tuple[StagedFeature, ...]
    edge_features: tuple[StagedFeature, ...]
    graph_formats: tuple[str, ...]
    save_orig_nids: bool
    save_orig_eids: bool
    halo_hops: int = 1
    keep_halo_edges: bool = False
    graphbolt: GraphBoltOptions | None = None
    """Write ``fused_csc_sampling_graph.pt`` instead of ``graph.dgl`` (``--use-graphbolt``)."""
    halo_table_bytes: int = 64 << 20
    """Budget of the HALO bitmap (0.19 byte per node ID); beyond it, range by range."""

    def edge_segments(self, part: int, column: str) -> Iterator[tuple[int, npt.NDArray[np.int64]]]:
        """``(etype id, segment)`` of one staged edge column (``new_src`` or ``new_dst``)."""
        for r in range(len(self.etypes)):
            for c, counts in enumerate(self.edge_task_counts[r]):
                if counts[part]:
                    yield r, self.edge_segment(r, c, column, part)

    def edge_segment(self, r: int, c: int, column: str, part: int) -> npt.NDArray[np.int64]:
        """Partition ``part``'s rows of edge read task ``c`` of etype ``r``, as int64 new IDs."""
        counts = self.edge_task_counts[r][c]
        name = edge_array(self.etypes[r], c, column)
        return self.staging.segment(name, counts, part).astype(np.int64, copy=False)


@dataclass(frozen=True)
class PartitionSummary:
    """What one partition writer wrote: its node and edge counts.

    ``summary["inner_nodes"]`` still works (the summary was a dict before) and
    :meth:`to_dict` gives the JSON form recorded for resume.
    """

    inner_nodes: int
    """Nodes the partition owns."""
    halo_nodes: int
    """HALO nodes (owned elsewhere, endpoints of the partition's edges)."""
    edges: int
    """Edges the partition owns (destination inner)."""
    halo_edges: int = 0
    """In-edges of HALO nodes kept in ``graph.dgl`` (``keep_halo_edges`` / ``halo_hops > 1``)."""

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, int]) -> PartitionSummary:
        return cls(**{k: int(v) for k, v in data.items()})

    def __getitem__(self, key: str) -> int:
        """Read a count by name, as with the dict this summary replaced."""
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        value: int = getattr(self, key)
        return value
