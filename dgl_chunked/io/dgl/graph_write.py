"""Writer of homogeneous DGL graph files (format version 2, ``docs/spec/dgl-binary.md``, "Graph file").

The output is what ``dgl.save_graphs`` writes for ``[g]`` with ``formats=...``,
except that header bytes 32..4095 (uninitialised memory in DGL) are zeros. COO is
streamed span by span; CSR and CSC are built in memory from ``src``/``dst``
(one stable argsort), which bounds the graph size by ``max_in_memory_edges``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.graph_read import HEADER_BLOCK
from dgl_chunked.io.dgl.model import FORMAT_ORDER, HomogeneousGraph
from dgl_chunked.io.dgl.spans import Stream, as_stream, materialize, write_ndarray
from dgl_chunked.io.formats.dgl_records import (
    COO_MAGIC,
    CSR_MAGIC,
    GRAPH_FILE_MAGIC,
    HETEROGRAPH_MAGIC,
    IMMUTABLE_GRAPH_MAGIC,
    UNIT_GRAPH_MAGIC,
    ndarray_header,
    pack_i64,
    pack_string,
    pack_u8,
    pack_u64,
)

__all__ = ["PreparedGraph", "normalize_formats", "prepare_graph", "write_graph_file"]

_NEW_STYLE = 1 << 32
_ALL_FORMATS = 7
_NULL_ARRAY = ndarray_header((0,), np.dtype("<i8"))
_INT64 = np.dtype("<i8")


def normalize_formats(formats: Sequence[str] | str, where: str) -> tuple[str, ...]:
    """Validate ``formats`` and return them in DGL's order (COO, CSR, CSC)."""
    names = (formats,) if isinstance(formats, str) else tuple(formats)
    unknown = sorted(set(names) - set(FORMAT_ORDER))
    if not names or unknown:
        raise DGLFormatError(
            f"{where}: formats must be a non-empty subset of {list(FORMAT_ORDER)}, found "
            f"{list(names)!r}; e.g. formats=('coo',) or ('csc',)."
        )
    return tuple(name for name in FORMAT_ORDER if name in names)


class PreparedGraph:
    """A validated :class:`HomogeneousGraph`: streams for ids and features.

    Built before the output file is opened, so bad input never leaves a file behind.
    """

    def __init__(self, graph: HomogeneousGraph, formats: tuple[str, ...], where: str) -> None:
        n, idtype = graph.num_nodes, graph.idtype
        self.num_nodes, self.idtype, self.formats = n, idtype, formats
        self.src = as_stream(graph.src, f"{where}: src", ids=(idtype.newbyteorder("<"), n))
        self.dst = as_stream(graph.dst, f"{where}: dst", ids=(idtype.newbyteorder("<"), n))
        self.num_edges = self.src.shape[0]
        if self.dst.shape[0] != self.num_edges:
            raise DGLFormatError(
                f"{where}: src has {self.num_edges} edges but dst has {self.dst.shape[0]}; both "
                "must list the same edges in edge-id order."
            )
        if self.num_edges > np.iinfo(idtype).max:
            raise DGLFormatError(f"{where}: {self.num_edges} edges do not fit idtype {idtype}; use int64.")
        self.ndata = _frame(graph.ndata, n, f"{where}: ndata", "num_nodes")
        self.edata = _frame(graph.edata, self.num_edges, f"{where}: edata", "the number of edges")


def _frame(tensors: Mapping[str, Any], rows: int, where: str, what: str) -> list[tuple[str, Stream]]:
    out = []
    for key in sorted(tensors):
        if not isinstance(key, str):
            raise DGLFormatError(f"{where}: tensor names must be str, found {key!r}")
        stream = as_stream(tensors[key], f"{where}[{key!r}]")
        if stream.shape[0] != rows:
            raise DGLFormatError(
                f"{where}[{key!r}]: expected first dimension {rows} ({what}), found shape "
                f"{stream.shape}; DGL rejects such a frame on load."
            )
        out.append((key, stream))
    return out


def prepare_graph(
    graph: HomogeneousGraph, formats: Sequence[str] | str, where: str, max_in_memory_edges: int | None
) -> PreparedGraph:
    """Validate everything that can be checked without reading the ids."""
    if not isinstance(graph, HomogeneousGraph):
        raise DGLFormatError(f"{where}: expected a HomogeneousGraph, found {type(graph).__name__}")
    prepared = PreparedGraph(graph, normalize_formats(formats, where), where)
    compressed = [name for name in prepared.formats if name != "coo"]
    if compressed and max_in_memory_edges is not None and prepared.num_edges > max_in_memory_edges:
        raise DGLFormatError(
            f"{where}: formats {compressed} are built in memory, but the graph has "
            f"{prepared.num_edges} edges > max_in_memory_edges={max_in_memory_edges}. Write "
            "formats=('coo',) (DGL builds CSC/CSR after loading) or raise max_in_memory_edges."
        )
    return prepared


def write_graph_file(f: IO[bytes], g: PreparedGraph) -> None:
    """Write the whole file for one prepared graph (no labels)."""
    head = pack_u64(GRAPH_FILE_MAGIC) + pack_u64(2) + pack_u64(2) + pack_u64(1)
    gdata_start = HEADER_BLOCK + 16
    f.write(head + bytes(HEADER_BLOCK - len(head)) + pack_u64(gdata_start) + pack_u64(0))
    f.write(pack_u64(HETEROGRAPH_MAGIC) + _self_loop_metagraph() + pack_u64(1))
    mask = sum(1 << FORMAT_ORDER.index(name) for name in g.formats)
    f.write(pack_u64(UNIT_GRAPH_MAGIC) + pack_i64(mask | _NEW_STYLE) + pack_i64(_ALL_FORMATS | _NEW_STYLE))
    matrices = _compressed(g)
    for name in g.formats:
        f.write(_self_loop_metagraph())
        if name == "coo":
            _write_coo(f, g)
        else:
            _write_csr(f, g.num_nodes, matrices[name])
    f.write(pack_u64(1) + pack_i64(g.num_nodes))
    for frame in (g.ndata, g.edata):
        f.write(pack_u64(1) + pack_u64(len(frame)))
        for key, stream in frame:
            f.write(pack_string(key))
            write_ndarray(f, stream)
    f.write(pack_u64(1) + pack_string("_N") + pack_u64(1) + pack_string("_E"))
    f.write(pack_u64(16) + pack_u64(1) + pack_u64(gdata_start) + pack_u64(16))


def _small(arr: npt.NDArray[Any]) -> bytes:
    arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return ndarray_header(arr.shape, arr.dtype) + arr.tobytes()


def _self_loop_metagraph() -> bytes:
    """The 1x1 metagraph with one self loop (``docs/spec/dgl-binary.md``, "Metagraphs"), int64, sorted flag 0."""
    one = np.array([0], _INT64)
    csr = pack_u64(CSR_MAGIC) + pack_i64(1) + pack_i64(1)
    csr += _small(np.array([0, 1], _INT64)) + _small(one) + _small(one) + pack_u8(0)
    return pack_u64(IMMUTABLE_GRAPH_MAGIC) + csr


def _write_coo(f: IO[bytes], g: PreparedGraph) -> None:
    f.write(pack_u64(COO_MAGIC) + pack_i64(g.num_nodes) + pack_i64(g.num_nodes))
    write_ndarray(f, g.src)
    write_ndarray(f, g.dst)
    f.write(_NULL_ARRAY + pack_u8(0) + pack_u8(0))


def _write_csr(f: IO[bytes], n: int, arrays: tuple[npt.NDArray[Any], ...]) -> None:
    f.write(pack_u64(CSR_MAGIC) + pack_i64(n) + pack_i64(n))
    for arr in arrays:
        write_ndarray(f, as_stream(arr, "CSR array"))
    f.write(pack_u8(0))


def _compressed(g: PreparedGraph) -> dict[str, tuple[npt.NDArray[Any], ...]]:
    """CSR (rows = sources) and CSC (rows = destinations), entries in ascending edge id."""
    wanted = [name for name in g.formats if name != "coo"]
    if not wanted:
        return {}
    src, dst = materialize(g.src), materialize(g.dst)
    out: dict[str, tuple[npt.NDArray[Any], ...]] = {}
    for name in wanted:
        rows, cols = (src, dst) if name == "csr" else (dst, src)
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(g.num_nodes + 1, dtype=g.src.dtype)
        indptr[1:] = np.cumsum(np.bincount(rows, minlength=g.num_nodes))
        out[name] = (indptr, cols[order], order.astype(g.src.dtype))
    return out
