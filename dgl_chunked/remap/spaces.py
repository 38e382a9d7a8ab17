"""DGL's new-ID space of one node or edge type, from the partition config.

A ``DistGraph`` numbers the nodes of type ``t`` partition by partition: partition
``p`` holds type-wise new IDs ``[offsets[p], offsets[p + 1])``, where the sizes
come from ``node_map[t]`` (``edge_map`` for edges). Inside a partition dgl_chunked
numbers the IDs in ascending original ID, so for its partitions the map between the
two spaces is ``P`` increasing runs; DGL's pipeline keeps no order inside a type
(see :mod:`~dgl_chunked.remap.shuffled`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from dgl_chunked.io.dgl.partition_config import PartitionConfig
from dgl_chunked.remap.model import RemapError

__all__ = ["TypeSpace", "resolve_type", "type_space"]

Kind = Literal["node", "edge"]


@dataclass(frozen=True)
class TypeSpace:
    """The new IDs of one type: ``sizes[p]`` of them in partition ``p``, type-wise.

    Attributes
    ----------
    kind
        ``"node"`` or ``"edge"``.
    name
        The node type, or the canonical edge type as the config names it.
    sizes
        IDs per partition.
    """

    kind: Kind
    name: str
    sizes: tuple[int, ...]

    @property
    def num_parts(self) -> int:
        return len(self.sizes)

    @property
    def total(self) -> int:
        return int(sum(self.sizes))

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """int64 ``(P + 1,)``: partition ``p`` holds type-wise new IDs ``[offsets[p], offsets[p + 1])``."""
        return np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)]).astype(np.int64)

    def owner(self, new_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Partition of each type-wise new ID (in range)."""
        return np.searchsorted(self.offsets[1:], new_ids, side="right").astype(np.int64)

    @property
    def label(self) -> str:
        return f"{self.kind} type {self.name!r}"

    @property
    def ids_name(self) -> str:
        """``orig_nids`` or ``orig_eids``: the file and the dispatch flag that keep this mapping."""
        return "orig_nids" if self.kind == "node" else "orig_eids"


def type_space(config: PartitionConfig, kind: Kind, name: str) -> TypeSpace:
    """The :class:`TypeSpace` of a type named exactly as in the config."""
    ranges = (config.node_map if kind == "node" else config.edge_map)[name]
    return TypeSpace(kind, name, tuple(int(e) - int(s) for s, e in ranges))


def resolve_type(config: PartitionConfig, name: str, *, where: str = "") -> TypeSpace:
    """The type ``name`` names: a node type, a canonical edge type ``src:rel:dst`` or a relation.

    Raises
    ------
    RemapError
        No such type (the message lists the graph's types), or a relation name
        shared by several edge types.
    """
    if name in config.node_map:
        return type_space(config, "node", name)
    if name in config.edge_map:
        return type_space(config, "edge", name)
    matches = [e for e in config.edge_map if e.split(":")[1:2] == [name]]
    if len(matches) == 1:
        return type_space(config, "edge", matches[0])
    head = f"{where}: " if where else ""
    if len(matches) > 1:
        raise RemapError(f"{head}relation {name!r} names several edge types {matches}; use the canonical src:rel:dst")
    raise RemapError(
        f"{head}the graph has no node or edge type {name!r}; "
        f"node types {sorted(config.node_map)}, edge types {sorted(config.edge_map)}"
    )
