"""GraphBolt's ``fused_csc_sampling_graph.pt`` without torch: streamed writer, strict reader.

``dgl.distributed.load_partition(..., use_graphbolt=True)`` does ``torch.load`` on
``part<i>/fused_csc_sampling_graph.pt``: a :mod:`~dgl_chunked.io.formats.torch_zip` archive
whose ``data.pkl`` pickles a ``FusedCSCSamplingGraph`` holding a
``torch.ScriptObject`` whose state is GraphBolt's ``GetState()`` dict::

    {"independent_tensors": {"version_number": int64[1] = [6199], "indptr", "indices",
                             ["node_type_offset"], ["type_per_edge"]},
     ["node_type_to_id": {ntype: int64 0-d}], ["edge_type_to_id": {"s:r:d": int64 0-d}],
     "node_attributes": {name: tensor}, "edge_attributes": {name: tensor}}

``docs/spec/graphbolt.md`` ("The pickle") has the full layout. :func:`write_graphbolt_graph`
streams every tensor (numpy arrays, memmaps or :class:`ArraySpans`) into the
archive in spans; :func:`read_graphbolt_graph` checks every field and raises
:class:`~dgl_chunked.errors.DGLFormatError` naming the file and field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.spans import Stream, as_stream
from dgl_chunked.io.formats.torch_pickle import (
    STORAGE_TYPES,
    GraphStub,
    PickleEmitter,
    ScriptObjectStub,
    TensorRef,
    load_restricted,
)
from dgl_chunked.io.formats.torch_zip import TorchZipReader, TorchZipWriter, archive_name
from dgl_chunked.storage.fs import filesystem
from dgl_chunked.storage.output_file import open_output

__all__ = [
    "GRAPHBOLT_FILE",
    "PICKLE_VERSION",
    "GraphBoltGraph",
    "describe_graphbolt_file",
    "is_torch_zip",
    "read_graphbolt_graph",
    "write_graphbolt_graph",
]

GRAPHBOLT_FILE = "fused_csc_sampling_graph.pt"
PICKLE_VERSION = 6199
"""GraphBolt's ``kPickleVersion`` (checked by ``SetState``; DGL 2.1 to 2.4)."""
_CLASS = "__torch__.torch.classes.graphbolt.FusedCSCSamplingGraph"
_PY_CLASS = ("dgl.graphbolt.impl.fused_csc_sampling_graph", "FusedCSCSamplingGraph")


@dataclass
class GraphBoltGraph:
    """A ``FusedCSCSamplingGraph``'s content as numpy arrays (what the reader returns)."""

    indptr: npt.NDArray[Any]
    indices: npt.NDArray[Any]
    node_type_offset: npt.NDArray[Any] | None = None
    type_per_edge: npt.NDArray[Any] | None = None
    node_type_to_id: dict[str, int] | None = None
    edge_type_to_id: dict[str, int] | None = None
    node_attributes: dict[str, npt.NDArray[Any]] | None = field(default_factory=dict)
    edge_attributes: dict[str, npt.NDArray[Any]] | None = field(default_factory=dict)

    @property
    def total_num_nodes(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def total_num_edges(self) -> int:
        return int(self.indices.shape[0])


def write_graphbolt_graph(
    path: PathLike,
    *,
    indptr: Any,
    indices: Any,
    node_type_offset: Any = None,
    type_per_edge: Any = None,
    node_type_to_id: Mapping[str, int] | None = None,
    edge_type_to_id: Mapping[str, int] | None = None,
    node_attributes: Mapping[str, Any] | None = None,
    edge_attributes: Mapping[str, Any] | None = None,
    storage_options: StorageOptions = None,
    archive: str | None = None,
) -> None:
    """Write what ``torch.save(dgl.graphbolt.fused_csc_sampling_graph(...), path)`` writes.

    Every tensor argument is a numpy array, memmap, zarr array or
    :class:`~dgl_chunked.io.dgl.binary.ArraySpans`; it is stored with its own dtype
    (bool too, as torch's BoolStorage) and streamed.
    Dict arguments keep their order, as torch does. ``None`` leaves a field out,
    exactly as GraphBolt's ``GetState`` does for unset optionals. ``archive`` is the
    zip's top directory (default: the file name without suffix, as torch; pass the
    final name's when writing under a temporary name).

    Raises
    ------
    DGLFormatError
        A tensor with an unsupported dtype or a span generator that produces the
        wrong shape; the partial file is removed.
    """
    where = os.fspath(path)
    tensors: list[tuple[str, Stream]] = []

    def stream(value: Any, name: str) -> Stream:
        s = as_stream(value, f"{where}: {name}")
        if np.dtype(value.dtype) == np.bool_:  # torch has bool storages: keep the dtype (same bytes)
            s = Stream(s.shape, np.dtype(np.bool_), s.spans)
        if s.dtype not in STORAGE_TYPES:
            raise DGLFormatError(f"{where}: {name} has dtype {s.dtype}, which torch storages do not hold here")
        return s

    version = np.array([PICKLE_VERSION], dtype=np.int64)
    indep = {"version_number": version, "indptr": indptr, "indices": indices}
    if node_type_offset is not None:
        indep["node_type_offset"] = node_type_offset
    if type_per_edge is not None:
        indep["type_per_edge"] = type_per_edge
    state: list[tuple[str, dict[str, Any]]] = [("independent_tensors", indep)]
    for name, mapping in (("node_type_to_id", node_type_to_id), ("edge_type_to_id", edge_type_to_id)):
        if mapping is not None:
            state.append((name, {k: np.array(int(v), dtype=np.int64).reshape(()) for k, v in mapping.items()}))
    for name, attrs in (("node_attributes", node_attributes), ("edge_attributes", edge_attributes)):
        if attrs is not None:
            state.append((name, dict(attrs)))

    pk = PickleEmitter()
    pk.global_(*_PY_CLASS)
    pk.raw(b")\x81")
    pk._put()
    pk.empty_dict()
    pk.string("_c_csc_graph")
    pk.global_("torch", "ScriptObject")
    pk.raw(b")\x81")
    pk._put()
    pk.empty_dict()
    pk.raw(b"(" if len(state) > 1 else b"")
    for name, values in state:
        pk.string(name)
        pk.empty_dict()
        pk.raw(b"(" if len(values) > 1 else b"")
        for key, value in values.items():
            pk.string(key)
            if isinstance(value, np.ndarray) and value.ndim == 0:  # type ids: 0-d int64
                s = Stream((), value.dtype, _one_span(value.reshape(1)))
            else:
                s = stream(value, f"{name}[{key!r}]")
            storage_key = str(len(tensors))
            tensors.append((storage_key, s))
            pk.tensor(storage_key, s.dtype, s.shape)
        pk.raw(b"u" if len(values) > 1 else (b"s" if values else b""))
    pk.raw(b"u" if len(state) > 1 else b"s")
    pk.string(_CLASS)
    pk.raw(b"\x86")
    pk._put()
    pk.raw(b"bsb.")
    pickle_bytes = pk.getvalue()

    with open_output(path, storage_options) as f:
        zw = TorchZipWriter(f, archive or archive_name(where))
        zw.write_record("data.pkl", pickle_bytes, len(pickle_bytes))
        zw.write_record("byteorder", b"little", 6)
        for key, s in sorted(tensors, key=lambda kv: kv[0]):
            nbytes = int(np.prod(s.shape, dtype=np.int64)) * s.dtype.itemsize
            zw.write_record(f"data/{key}", _le_spans(s), nbytes)
        zw.close(seed=pickle_bytes)


def _one_span(span: npt.NDArray[Any]) -> Callable[[], Iterator[npt.NDArray[Any]]]:
    return lambda: iter([span])


def _le_spans(s: Stream) -> Any:
    for span in s.spans():
        yield span.astype(span.dtype.newbyteorder("<"), copy=False)


def is_torch_zip(path: PathLike, *, storage_options: StorageOptions = None) -> bool:
    """True when the file starts like a zip archive (``torch.save``'s format)."""
    fs, inner = filesystem(path, storage_options)
    with fs.open(inner, "rb") as f:
        return bytes(f.read(4)) == b"PK\x03\x04"


def read_graphbolt_graph(path: PathLike, *, storage_options: StorageOptions = None) -> GraphBoltGraph:
    """Read a ``fused_csc_sampling_graph.pt`` (ours or ``torch.save``'s) strictly.

    Raises
    ------
    DGLFormatError
        Truncated or corrupt archive, CRC mismatch, unexpected pickle content, wrong
        version number, or inconsistent CSC arrays; the message names the file.
    """
    where = os.fspath(path)
    fs, inner = filesystem(path, storage_options)
    with fs.open(inner, "rb") as f:
        size = f.seek(0, os.SEEK_END) if not isinstance(fs, LocalFileSystem) else os.path.getsize(inner)
        zr = TorchZipReader(f, size, where)
        try:
            obj = load_restricted(zr.read("data.pkl"))
        except DGLFormatError as err:
            raise DGLFormatError(f"{where}: {err}") from None
        state = _script_state(obj, where)
        if zr.records.get(f"{zr.archive}/byteorder") is not None and zr.read("byteorder") != b"little":
            raise DGLFormatError(f"{where}: byteorder record is not 'little'; big-endian files are not supported")

        def load(ref: Any, name: str) -> npt.NDArray[Any]:
            if not isinstance(ref, TensorRef):
                raise DGLFormatError(f"{where}: {name} is {type(ref).__name__}, expected a tensor")
            numel = int(np.prod(ref.shape, dtype=np.int64))
            contiguous = tuple(int(np.prod(ref.shape[i + 1 :], dtype=np.int64)) for i in range(len(ref.shape)))
            if ref.offset != 0 or ref.stride != contiguous or ref.storage_numel < numel:
                raise DGLFormatError(
                    f"{where}: {name} is a view (offset {ref.offset}, stride {ref.stride}) of storage "
                    f"{ref.key!r} with {ref.storage_numel} items; expected a contiguous tensor"
                )
            return zr.array(f"data/{ref.key}", ref.dtype, ref.storage_numel)[:numel].reshape(ref.shape)

        return _graph_from_state(state, load, where)


def _script_state(obj: Any, where: str) -> dict[str, Any]:
    script = obj.state.get("_c_csc_graph") if isinstance(obj, GraphStub) and isinstance(obj.state, dict) else None
    if not isinstance(script, ScriptObjectStub):
        raise DGLFormatError(f"{where}: data.pkl does not hold a FusedCSCSamplingGraph with a _c_csc_graph")
    st = script.state
    if not (isinstance(st, tuple) and len(st) == 2 and st[1] == _CLASS and isinstance(st[0], dict)):
        raise DGLFormatError(f"{where}: _c_csc_graph is not a {_CLASS} script object")
    return st[0]


def _graph_from_state(state: dict[str, Any], load: Any, where: str) -> GraphBoltGraph:
    indep = state.get("independent_tensors")
    if not isinstance(indep, dict) or not {"version_number", "indptr", "indices"} <= set(indep):
        raise DGLFormatError(f"{where}: independent_tensors lacks version_number, indptr or indices")
    version = load(indep["version_number"], "version_number")
    if version.shape != (1,) or int(version[0]) != PICKLE_VERSION:
        raise DGLFormatError(f"{where}: version_number is {version.tolist()}, GraphBolt expects [{PICKLE_VERSION}]")
    g = GraphBoltGraph(indptr=load(indep["indptr"], "indptr"), indices=load(indep["indices"], "indices"))
    for name in ("node_type_offset", "type_per_edge"):
        if name in indep:
            setattr(g, name, load(indep[name], name))
    for name in ("node_type_to_id", "edge_type_to_id"):
        if name in state:
            setattr(g, name, {str(k): int(load(v, f"{name}[{k!r}]").reshape(-1)[0]) for k, v in state[name].items()})
    for name in ("node_attributes", "edge_attributes"):
        attrs = state.get(name)
        setattr(g, name, None if attrs is None else {k: load(v, f"{name}[{k!r}]") for k, v in attrs.items()})
    _check_csc(g, where)
    return g


def _check_csc(g: GraphBoltGraph, where: str) -> None:
    indptr, indices = g.indptr, g.indices
    if indptr.ndim != 1 or indptr.shape[0] < 1 or indptr.dtype.kind != "i" or indices.ndim != 1:
        raise DGLFormatError(f"{where}: indptr must be a non-empty 1-D integer tensor, indices 1-D")
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.shape[0] or np.any(np.diff(indptr) < 0):
        raise DGLFormatError(
            f"{where}: indptr must start at 0, never decrease and end at len(indices) = {indices.shape[0]}"
        )
    n = indptr.shape[0] - 1
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        raise DGLFormatError(f"{where}: indices must lie in [0, {n}), found [{indices.min()}, {indices.max()}]")
    if g.type_per_edge is not None and g.type_per_edge.shape != indices.shape:
        raise DGLFormatError(f"{where}: type_per_edge has {g.type_per_edge.shape[0]} entries for {n} edges")
    for name, attrs, rows in (("node", g.node_attributes, n), ("edge", g.edge_attributes, indices.shape[0])):
        for key, value in (attrs or {}).items():
            if value.ndim == 0 or value.shape[0] != rows:
                raise DGLFormatError(f"{where}: {name} attribute {key!r} has shape {value.shape}, expected {rows} rows")


def describe_graphbolt_file(path: PathLike, *, values: int = 0, storage_options: StorageOptions = None) -> str:
    """A human-readable summary of a GraphBolt graph file (for ``dgl-chunked inspect``)."""
    g = read_graphbolt_graph(path, storage_options=storage_options)

    def arr(name: str, a: npt.NDArray[Any] | None) -> str:
        if a is None:
            return f"  {name}: None"
        shown = f" {a[:values].tolist()}" if values else ""
        return f"  {name}: {a.dtype} {list(a.shape)}{shown}"

    lines = [
        f"{os.fspath(path)}: GraphBolt FusedCSCSamplingGraph (torch zip, pickle version {PICKLE_VERSION})",
        f"  nodes: {g.total_num_nodes}  edges: {g.total_num_edges}",
        arr("indptr", g.indptr),
        arr("indices", g.indices),
        arr("node_type_offset", g.node_type_offset),
        arr("type_per_edge", g.type_per_edge),
        f"  node_type_to_id: {g.node_type_to_id}",
        f"  edge_type_to_id: {g.edge_type_to_id}",
    ]
    for name, attrs in (("node_attributes", g.node_attributes), ("edge_attributes", g.edge_attributes)):
        lines.append(f"  {name}: {'None' if attrs is None else ''}")
        lines.extend(arr("  " + k, v) for k, v in (attrs or {}).items())
    return "\n".join(lines)
