"""In-memory models of DGL graph files: what we write and what we read back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import DGLFormatError, OptionError, UnknownNameError

__all__ = ["FORMAT_ORDER", "CanonicalEtype", "GraphData", "HomogeneousGraph"]

CanonicalEtype: TypeAlias = tuple[str, str, str]
"""``(src_type, relation, dst_type)``."""

FORMAT_ORDER = ("coo", "csr", "csc")
"""DGL's fixed order of stored sparse formats (bits 1, 2, 4)."""


def _int64() -> np.dtype[Any]:
    return np.dtype(np.int64)


@dataclass(frozen=True, kw_only=True)
class HomogeneousGraph:
    """A graph with one node type ``"_N"`` and one edge type ``"_E"`` (a partition's graph.dgl).

    Attributes
    ----------
    num_nodes
        Number of (local) nodes.
    src, dst
        Local source / destination ids of the ``E`` edges, in edge-id order: numpy,
        memmap, zarr arrays or :class:`ArraySpans` of any integer dtype.
    ndata, edata
        Node (first dimension ``num_nodes``) and edge (first dimension ``E``) tensors.
    idtype
        ``int64`` (DGL's default) or ``int32``.
    """

    num_nodes: int
    src: Any
    dst: Any
    ndata: Mapping[str, Any] = field(default_factory=dict)
    edata: Mapping[str, Any] = field(default_factory=dict)
    idtype: np.dtype[Any] = field(default_factory=_int64)

    def __post_init__(self) -> None:
        idtype = np.dtype(self.idtype)
        if idtype not in (np.dtype(np.int64), np.dtype(np.int32)):
            raise DGLFormatError(
                f"HomogeneousGraph.idtype: expected int64 or int32, found {idtype!r}; DGL graphs "
                "only support these two index types."
            )
        object.__setattr__(self, "idtype", idtype)
        if isinstance(self.num_nodes, bool) or not isinstance(self.num_nodes, (int, np.integer)):
            raise DGLFormatError(f"HomogeneousGraph.num_nodes: expected an int, found {self.num_nodes!r}")
        if self.num_nodes < 0 or self.num_nodes > np.iinfo(idtype).max:
            raise DGLFormatError(
                f"HomogeneousGraph.num_nodes: expected 0 <= num_nodes <= {np.iinfo(idtype).max} "
                f"(idtype {idtype}), found {self.num_nodes}; use idtype=np.int64 for large graphs."
            )
        object.__setattr__(self, "num_nodes", int(self.num_nodes))


@dataclass
class GraphData:
    """One graph read from a DGL graph file (a general heterograph).

    Attributes
    ----------
    ntypes
        Node type names, in type-id order.
    canonical_etypes
        ``(src, rel, dst)`` per relation, in etype-id order (rebuilt from the metagraph).
    num_nodes
        Node count per node type.
    formats
        Per canonical etype, the stored sparse matrices by format name:
        ``"coo": (row, col, data)``, ``"csr": (indptr, indices, data)``,
        ``"csc": (indptr, indices, data)``. ``data`` holds edge ids or is the empty
        int64 "null array" (edge id = position).
    stored_formats, allowed_formats
        Per canonical etype, format names in DGL's order (``coo``, ``csr``, ``csc``).
    idtype
        The index dtype (int32 or int64).
    ndata, edata
        Tensors by node type / canonical etype, then by name.
    """

    ntypes: list[str]
    canonical_etypes: list[CanonicalEtype]
    num_nodes: dict[str, int]
    formats: dict[CanonicalEtype, dict[str, tuple[npt.NDArray[Any], ...]]]
    stored_formats: dict[CanonicalEtype, tuple[str, ...]]
    allowed_formats: dict[CanonicalEtype, tuple[str, ...]]
    idtype: np.dtype[Any]
    ndata: dict[str, dict[str, npt.NDArray[Any]]] = field(default_factory=dict)
    edata: dict[CanonicalEtype, dict[str, npt.NDArray[Any]]] = field(default_factory=dict)

    def canonical_etype(self, etype: str | CanonicalEtype | None = None) -> CanonicalEtype:
        """Resolve ``None`` (only one relation), a relation name or a triple."""
        if etype is None:
            if len(self.canonical_etypes) != 1:
                raise OptionError(
                    f"the graph has {len(self.canonical_etypes)} edge types {self.canonical_etypes}; pass etype=..."
                )
            return self.canonical_etypes[0]
        if isinstance(etype, tuple):
            if etype not in self.canonical_etypes:
                raise UnknownNameError(f"edge type {etype!r} not in {self.canonical_etypes}")
            return etype
        found = [c for c in self.canonical_etypes if c[1] == etype]
        if len(found) != 1:
            raise UnknownNameError(
                f"relation {etype!r} matches {len(found)} of {self.canonical_etypes}; pass the triple"
            )
        return found[0]

    def num_edges(self, etype: str | CanonicalEtype | None = None) -> int:
        """Number of edges of one relation."""
        mats = self.formats[self.canonical_etype(etype)]
        name = next(iter(mats))
        return int(mats[name][0 if name == "coo" else 1].shape[0])

    def edges(self, etype: str | CanonicalEtype | None = None) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """``(src, dst)`` in edge-id order, from the first stored of COO, CSR, CSC."""
        mats = self.formats[self.canonical_etype(etype)]
        if "coo" in mats:
            row, col, data = mats["coo"]
            return _by_eid(np.asarray(row), np.asarray(col), np.asarray(data))
        name = "csr" if "csr" in mats else "csc"
        indptr, indices, data = (np.asarray(a) for a in mats[name])
        rows = np.repeat(np.arange(indptr.shape[0] - 1, dtype=indices.dtype), np.diff(indptr))
        src, dst = (rows, indices) if name == "csr" else (indices, rows)
        return _by_eid(src, dst, data)


def _by_eid(
    src: npt.NDArray[Any], dst: npt.NDArray[Any], data: npt.NDArray[Any]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Reorder entries so that position = edge id (``data`` empty means already so)."""
    if data.shape[0] == 0:
        return np.array(src), np.array(dst)
    out_src = np.empty_like(src)
    out_dst = np.empty_like(dst)
    out_src[data] = src
    out_dst[data] = dst
    return out_src, out_dst
