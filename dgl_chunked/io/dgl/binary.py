"""DGL binary files without DGL: tensor dicts and graph files (format version 2).

Writers and strict readers for the files of a DGL distributed partition
(``docs/spec/dgl-binary.md``, "Tensor dict" and "Graph file"):

* tensor dicts -- ``node_feat.dgl``, ``edge_feat.dgl``, ``orig_nids.dgl``,
  ``orig_eids.dgl`` -- read by ``dgl.data.utils.load_tensors``;
* graph files -- ``graph.dgl`` -- read by ``dgl.load_graphs``.

Writing streams every array in spans of at most 64 MiB (numpy arrays, memmaps,
zarr arrays or :class:`ArraySpans`), so feature files larger than memory are
fine; only CSR/CSC construction holds a graph's ids in memory. Output is
deterministic: entries are sorted by key and the header padding is zeros.

Reading checks every structural field and raises
:class:`~dgl_chunked.errors.DGLFormatError` (naming file, byte offset and field)
for anything truncated, corrupt or unsupported -- never a numpy or struct error,
and never an allocation larger than the file. Paths may be fsspec URLs.

Examples
--------
>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "node_feat.dgl")
>>> write_tensor_dict(path, {"paper/feat": np.ones((3, 2), np.float32)})
>>> read_tensor_dict(path)["paper/feat"].shape
(3, 2)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

import numpy.typing as npt
from fsspec.implementations.local import LocalFileSystem

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.describe import describe, format_annotation
from dgl_chunked.io.dgl.graph_read import read_graph_file
from dgl_chunked.io.dgl.graph_write import prepare_graph, write_graph_file
from dgl_chunked.io.dgl.model import CanonicalEtype, GraphData, HomogeneousGraph
from dgl_chunked.io.dgl.spans import ArraySpans, Reserved, as_stream, write_ndarray
from dgl_chunked.io.formats.dgl import read_tensor_file
from dgl_chunked.io.formats.dgl_records import (
    BFLOAT16_RAW,
    GRAPH_FILE_MAGIC,
    TENSOR_FILE_MAGIC,
    Cursor,
    pack_string,
    pack_u64,
)
from dgl_chunked.storage.fs import filesystem
from dgl_chunked.storage.output_file import open_output

__all__ = [
    "BFLOAT16_RAW",
    "ArraySpans",
    "CanonicalEtype",
    "GraphData",
    "HomogeneousGraph",
    "Reserved",
    "annotate_dgl_file",
    "describe_dgl_file",
    "dgl_file_kind",
    "format_annotation",
    "read_graphs",
    "read_tensor_dict",
    "write_graph",
    "write_graph_skeleton",
    "write_tensor_dict",
    "write_tensor_dict_skeleton",
]

logger = logging.getLogger(__name__)


def write_tensor_dict(path: PathLike, tensors: Mapping[str, Any], *, storage_options: StorageOptions = None) -> None:
    """Write a tensor dict as DGL's ``save_tensors`` does (``docs/spec/dgl-binary.md``, "Tensor dict").

    Parameters
    ----------
    path
        Output file (local path or fsspec URL); overwritten if it exists.
    tensors
        Name -> numpy array, ``np.memmap``, zarr array or :class:`ArraySpans`.
        Entries are written in sorted key order. ``bool`` is stored as uint8 (and
        DGL loads it back as uint8).
    storage_options
        Passed to fsspec.

    Raises
    ------
    DGLFormatError
        For 0-d arrays (DGL loads them as garbage: use shape ``(1,)``), uint16/32/64
        (torch 2.2 cannot load them), other unsupported dtypes, non-str keys, or
        :class:`ArraySpans` whose spans disagree with the declared shape/dtype.
        Nothing is left on disk in that case.
    """
    where = os.fspath(path)
    if not isinstance(tensors, Mapping):
        raise DGLFormatError(f"{where}: expected a mapping of name -> array, found {type(tensors).__name__}")
    for key in tensors:
        if not isinstance(key, str) or not _utf8(key):
            raise DGLFormatError(f"{where}: tensor names must be UTF-8 encodable str, found {key!r}")
    streams = [(key, as_stream(tensors[key], f"{where}[{key!r}]")) for key in sorted(tensors)]
    with open_output(path, storage_options) as f:
        _write_tensor_records(f, streams)
    logger.debug("wrote %d tensors to %s", len(streams), where)


def _write_tensor_records(f: Any, streams: list[tuple[str, Any]]) -> None:
    f.write(pack_u64(TENSOR_FILE_MAGIC) + pack_u64(len(streams)) + pack_u64(len(streams)))
    for key, stream in streams:
        f.write(pack_string(key))
        write_ndarray(f, stream)


def write_tensor_dict_skeleton(path: str, tensors: Mapping[str, Reserved]) -> int:
    """Write a tensor dict as :func:`write_tensor_dict` does into the local file ``path``, every
    payload left as a hole whose start it records in the array's ``offset`` (see
    :func:`write_graph_skeleton`: an existing file is not truncated first).

    Returns
    -------
    int
        The file's size, holes included.
    """
    streams = [(key, as_stream(tensors[key], f"{path}[{key!r}]")) for key in sorted(tensors)]
    return _write_in_place(path, lambda f: _write_tensor_records(f, streams))


def read_tensor_dict(
    path: PathLike, *, storage_options: StorageOptions = None, mmap: bool = False
) -> dict[str, npt.NDArray[Any]]:
    """Read a DGL tensor-dict file (``load_tensors``) into numpy arrays.

    Parameters
    ----------
    path
        Local path or fsspec URL.
    storage_options
        Passed to fsspec.
    mmap
        Return read-only ``np.memmap`` views instead of reading payloads into memory.
        Only for local files; ignored for other filesystems.

    Returns
    -------
    dict
        Name -> array in file order, with DGL's dtype (bool comes back as uint8;
        bfloat16 as :data:`BFLOAT16_RAW`).

    Raises
    ------
    DGLFormatError
        The file is truncated, corrupt or not a tensor-dict file.
    """
    with _cursor(path, storage_options, mmap=mmap) as cur:
        return read_tensor_file(cur)


def write_graph(
    path: PathLike,
    graph: HomogeneousGraph,
    *,
    formats: Sequence[str] = ("coo",),
    storage_options: StorageOptions = None,
    max_in_memory_edges: int | None = None,
) -> None:
    """Write one homogeneous graph as ``dgl.save_graphs(path, [g], formats=...)`` does.

    Parameters
    ----------
    path
        Output file (local path or fsspec URL); overwritten if it exists.
    graph
        The graph: ids, features and idtype.
    formats
        Non-empty subset of ``{"coo", "csr", "csc"}``; stored in DGL's order COO, CSR,
        CSC. COO has a null ``data`` array (edge id = position); CSR/CSC store edge ids
        with each row's entries in ascending edge id. The allowed-formats word is
        always "all" (``7 | 1<<32``).
    storage_options
        Passed to fsspec.
    max_in_memory_edges
        CSR and CSC are built in memory (about 4 x 8 bytes per edge). When given,
        graphs with more edges raise instead of using that memory. COO always streams.

    Raises
    ------
    DGLFormatError
        Bad formats, ids outside ``[0, num_nodes)``, ``src``/``dst`` of different
        lengths, features whose first dimension is not the node/edge count,
        unsupported dtypes, or too many edges for an in-memory CSR/CSC. The partial
        file is removed.
    """
    where = os.fspath(path)
    prepared = prepare_graph(graph, formats, where, max_in_memory_edges)
    with open_output(path, storage_options) as f:
        write_graph_file(f, prepared)
    logger.debug("wrote graph (%d nodes, %d edges) to %s", prepared.num_nodes, prepared.num_edges, where)


def write_graph_skeleton(path: str, graph: HomogeneousGraph) -> int:
    """Write ``graph`` as :func:`write_graph` does (COO) into the local file ``path``, leaving the
    payload of each :class:`~dgl_chunked.io.dgl.spans.Reserved` array as a hole whose start
    it records in the array's ``offset``; other writers fill the holes (``os.pwrite``).

    An existing file is not truncated first: what the other writers already put into its
    holes stays (a skeleton written again, as after a lost worker, changes nothing else).

    Returns
    -------
    int
        The file's size, holes included. Validation errors and write errors remove the file.
    """
    prepared = prepare_graph(graph, ("coo",), path, None)
    return _write_in_place(path, lambda f: write_graph_file(f, prepared))


def _write_in_place(path: str, write: Callable[[BinaryIO], object]) -> int:
    """Open the local file ``path`` for writing without truncating it (a seekable file, so
    holes are skipped), let ``write`` fill it, then cut it to what was written; its size.
    Any error removes the file, so a failed skeleton never looks complete."""
    try:
        with os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o666), "r+b") as f:
            write(f)
            size = f.tell()
            f.truncate(size)
            return size
    except BaseException:
        if os.path.exists(path):
            os.remove(path)
        raise


def read_graphs(
    path: PathLike, *, storage_options: StorageOptions = None
) -> tuple[list[GraphData], dict[str, npt.NDArray[Any]]]:
    """Read every graph and the labels of a DGL graph file (``dgl.load_graphs``).

    Returns
    -------
    graphs, labels
        One :class:`GraphData` per graph (general heterographs) and the labels dict.

    Raises
    ------
    DGLFormatError
        The file is truncated, corrupt, of another kind, or of format version 1.
    """
    with _cursor(path, storage_options) as cur:
        return read_graph_file(cur)


def dgl_file_kind(path: PathLike, *, storage_options: StorageOptions = None) -> str:
    """``"tensors"`` or ``"graphs"`` from the file magic; DGLFormatError otherwise."""
    with _cursor(path, storage_options) as cur:
        return _kind(cur)


def annotate_dgl_file(path: PathLike, *, storage_options: StorageOptions = None) -> list[tuple[int, int, str, str]]:
    """List every field of a DGL file as ``(offset, size, field, value)``.

    Field names and values follow ``golden/serialization/annot_g_default.txt``;
    payloads show their first 64 bytes in hex. :func:`format_annotation` prints them.
    """
    with _cursor(path, storage_options, annotate=True) as cur:
        if _kind(cur) == "tensors":
            read_tensor_file(cur)
        else:
            read_graph_file(cur)
        return cur.rows


def describe_dgl_file(path: PathLike, *, values: int = 0, storage_options: StorageOptions = None) -> str:
    """A human-readable summary of a DGL file (for ``dgl-chunked inspect``).

    Parameters
    ----------
    path
        Tensor-dict or graph file.
    values
        Also print the first ``values`` elements of every array (flattened).
    """
    with _cursor(path, storage_options) as cur:
        kind, size = _kind(cur), cur.size
        if kind == "tensors":
            return describe(os.fspath(path), size, read_tensor_file(cur), None, values=values)
        graphs, labels = read_graph_file(cur)
    return describe(os.fspath(path), size, labels, graphs, values=values)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(cur: Cursor) -> str:
    head = cur.peek(8)
    magic = int.from_bytes(head, "little") if len(head) == 8 else None
    if magic == TENSOR_FILE_MAGIC:
        return "tensors"
    if magic == GRAPH_FILE_MAGIC:
        return "graphs"
    found = f"0x{magic:016x}" if magic is not None else f"only {len(head)} bytes"
    raise cur.error(
        0,
        "file.magic",
        f"expected a DGL tensor-dict (0x{TENSOR_FILE_MAGIC:016x}) or graph file "
        f"(0x{GRAPH_FILE_MAGIC:016x}) magic, found {found}",
    )


@contextmanager
def _cursor(
    path: PathLike, storage_options: StorageOptions, *, mmap: bool = False, annotate: bool = False
) -> Iterator[Cursor]:
    fs, inner = filesystem(path, storage_options)
    local = isinstance(fs, LocalFileSystem)
    with fs.open(inner, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        yield Cursor(f, size, where=os.fspath(path), annotate=annotate, mmap_path=inner if (mmap and local) else None)
