"""Strict reader for DGL graph files (format version 2); tensor-dict files are read by
:mod:`dgl_chunked.io.formats.dgl` (format ``dgl``), whose :func:`named_tensors` this uses.

Every structural field is checked (magics, counts against the bytes left, dtype
codes, sizes, format words, metagraphs, row/column counts against the node
counts, index ranges, edge-id permutations, the trailer) and any problem is a
:class:`~dgl_chunked.errors.DGLFormatError` from :class:`Cursor`, naming the file,
the byte offset and the field. Field names follow
``golden/serialization/annot_g_default.txt``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked.io.dgl.model import FORMAT_ORDER, CanonicalEtype, GraphData
from dgl_chunked.io.formats.dgl import named_tensors
from dgl_chunked.io.formats.dgl_records import (
    COO_MAGIC,
    CSR_MAGIC,
    GRAPH_FILE_MAGIC,
    HETEROGRAPH_MAGIC,
    IMMUTABLE_GRAPH_MAGIC,
    UNIT_GRAPH_MAGIC,
    Cursor,
)

__all__ = ["HEADER_BLOCK", "JUNK_FIELD", "read_graph_file"]

HEADER_BLOCK = 4096
JUNK_FIELD = "(rest of 4096-byte header block: unspecified bytes)"
_GRAPH_MIN = 64
_IDTYPES = (np.dtype("<i4"), np.dtype("<i8"))
_SELF_LOOP = ([0, 1], [0], [0])
_ONE_EDGE = ([0, 1, 1], [1], [0])

Sparse = tuple[int, int, tuple[npt.NDArray[Any], ...]]  # (num_rows, num_cols, arrays)


def read_graph_file(cur: Cursor) -> tuple[list[GraphData], dict[str, npt.NDArray[Any]]]:
    """Parse a whole graph file: header, labels, graphs, trailer (``docs/spec/dgl-binary.md``, "Graph file")."""
    cur.magic("file.magic", GRAPH_FILE_MAGIC)
    at = cur.pos
    version = cur.u64("file.version")
    if version != 2:
        hint = " (version 1 is the legacy DGLGraph format, unsupported)" if version == 1 else ""
        raise cur.error(at, "file.version", f"expected format version 2, found {version}{hint}")
    at = cur.pos
    cur.expect(cur.u64("file.graph_type"), 2, at, "file.graph_type (2 = heterograph)")
    num_graphs = cur.count("file.num_graphs", _GRAPH_MIN)
    cur.note(cur.pos, HEADER_BLOCK - cur.pos, JUNK_FIELD, "")
    cur.skip(HEADER_BLOCK - cur.pos, JUNK_FIELD)
    at = cur.pos
    gdata_start = cur.u64("gdata_start_pos")
    labels = named_tensors(cur, "labels")
    cur.expect(gdata_start, cur.pos, at, "gdata_start_pos (must point just after the labels)")
    offsets, graphs = [], []
    for index in range(num_graphs):
        offsets.append(cur.pos)
        graphs.append(_read_graph(cur, index))
    _read_trailer(cur, offsets)
    return graphs, labels


def _read_trailer(cur: Cursor, offsets: list[int]) -> None:
    at = cur.pos
    blob = cur.u64("trailer.blob_len(string length)")
    cur.expect(blob, 8 + 8 * len(offsets), at, "trailer.blob_len")
    at = cur.pos
    cur.expect(cur.u64("trailer.graph_indices.count"), len(offsets), at, "trailer.graph_indices.count")
    for i, offset in enumerate(offsets):
        at = cur.pos
        cur.expect(cur.u64(f"trailer.graph_indices[{i}]"), offset, at, f"trailer.graph_indices[{i}]")
    at = cur.pos
    cur.expect(cur.u64("trailer.blob_len(again)"), blob, at, "trailer.blob_len(again)")
    cur.end()


def _read_graph(cur: Cursor, index: int) -> GraphData:
    cur.magic(f"graph[{index}].heterograph.magic", HETEROGRAPH_MAGIC)
    meta_at = cur.pos
    meta = _read_immutable(cur, "metagraph")
    rels = [_read_unit_graph(cur, r) for r in range(cur.count("relation_graphs.count", _GRAPH_MIN))]
    counts_at = cur.pos
    num_verts = [cur.i64(f"num_verts_per_type[{t}]") for t in range(cur.count("num_verts_per_type.count", 8))]
    ntensors = [named_tensors(cur, f"node_tensors[{t}]") for t in range(cur.count("node_tensors.count(ntypes)", 8))]
    etensors = [named_tensors(cur, f"edge_tensors[{r}]") for r in range(cur.count("edge_tensors.count(etypes)", 8))]
    names_at = cur.pos
    ntypes = [cur.string(f"ntype_names[{t}]") for t in range(cur.count("ntype_names.count", 8))]
    etypes = [cur.string(f"etype_names[{r}]") for r in range(cur.count("etype_names.count", 8))]
    num_types = meta[0]
    for what, got, at in (
        ("num_verts_per_type.count", len(num_verts), counts_at),
        ("node_tensors.count(ntypes)", len(ntensors), counts_at),
        ("ntype_names.count", len(ntypes), names_at),
    ):
        cur.expect(got, num_types, at, f"{what} (must equal the metagraph's node count)")
    for what, got in (("relation_graphs.count", len(rels)), ("edge_tensors.count", len(etensors))):
        cur.expect(got, len(etypes), names_at, f"{what} vs etype_names.count")
    cur.expect(meta[2][1].shape[0], len(etypes), meta_at, "metagraph edge count vs etype_names.count")
    if any(n < 0 for n in num_verts):
        raise cur.error(counts_at, "num_verts_per_type", f"negative node count in {num_verts}")
    canon = _canonical_etypes(meta[2], ntypes, etypes)
    graph = _assemble(cur, canon, ntypes, num_verts, rels, counts_at)
    _attach_frames(cur, graph, ntensors, etensors, names_at)
    return graph


def _canonical_etypes(
    meta_arrays: tuple[npt.NDArray[Any], ...], ntypes: list[str], etypes: list[str]
) -> list[CanonicalEtype]:
    indptr, indices, data = meta_arrays
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    out: list[CanonicalEtype | None] = [None] * len(etypes)
    for src, dst, eid in zip(rows.tolist(), indices.tolist(), data.tolist(), strict=False):
        out[eid] = (ntypes[src], etypes[eid], ntypes[dst])
    return [c for c in out if c is not None]


def _assemble(
    cur: Cursor,
    canon: list[CanonicalEtype],
    ntypes: list[str],
    num_verts: list[int],
    rels: list[tuple[dict[str, Sparse], bool, tuple[str, ...], int]],
    at: int,
) -> GraphData:
    nodes = dict(zip(ntypes, num_verts, strict=False))
    dtypes = set()
    formats, stored, allowed = {}, {}, {}
    for r, ((src, _rel, dst), (mats, self_loop, allow, rel_at)) in enumerate(zip(canon, rels, strict=False)):
        if self_loop != (src == dst):
            raise cur.error(rel_at, f"rel[{r}].metagraph", f"relation metagraph does not match {src}->{dst}")
        for name, (nrows, ncols, arrays) in mats.items():
            want = (nodes[dst], nodes[src]) if name == "csc" else (nodes[src], nodes[dst])
            if (nrows, ncols) != want:
                raise cur.error(
                    rel_at,
                    f"rel[{r}].{name}.adj",
                    f"(num_rows, num_cols) = {(nrows, ncols)} but the node counts of {src!r}/{dst!r} give {want}",
                )
            dtypes.add(arrays[1].dtype)
        formats[canon[r]] = {name: arrays for name, (_r, _c, arrays) in mats.items()}
        stored[canon[r]] = tuple(mats)
        allowed[canon[r]] = allow
    if len(dtypes) > 1:
        raise cur.error(at, "relation graphs", f"mixed index dtypes {sorted(map(str, dtypes))}")
    idtype = np.dtype(dtypes.pop()).newbyteorder("=") if dtypes else np.dtype(np.int64)
    return GraphData(
        ntypes=ntypes,
        canonical_etypes=canon,
        num_nodes=nodes,
        formats=formats,
        stored_formats=stored,
        allowed_formats=allowed,
        idtype=idtype,
    )


def _attach_frames(
    cur: Cursor,
    graph: GraphData,
    ntensors: list[dict[str, npt.NDArray[Any]]],
    etensors: list[dict[str, npt.NDArray[Any]]],
    at: int,
) -> None:
    for ntype, tensors in zip(graph.ntypes, ntensors, strict=False):
        _check_rows(cur, tensors, graph.num_nodes[ntype], f"node_tensors[{ntype!r}]", at)
        graph.ndata[ntype] = tensors
    for etype, tensors in zip(graph.canonical_etypes, etensors, strict=False):
        _check_rows(cur, tensors, graph.num_edges(etype), f"edge_tensors[{etype!r}]", at)
        graph.edata[etype] = tensors


def _check_rows(cur: Cursor, tensors: dict[str, npt.NDArray[Any]], rows: int, field: str, at: int) -> None:
    for key, arr in tensors.items():
        if arr.ndim == 0 or arr.shape[0] != rows:
            raise cur.error(at, f"{field}[{key!r}]", f"expected {rows} rows, found shape {arr.shape}")


def _read_unit_graph(cur: Cursor, r: int) -> tuple[dict[str, Sparse], bool, tuple[str, ...], int]:
    with cur.scope(f"rel[{r}]"):
        start = cur.pos
        cur.magic("magic(UnitGraph)", UNIT_GRAPH_MAGIC)
        at = cur.pos
        stored = _decode_formats(cur, cur.i64("save_formats(|1<<32)"), at, "save_formats", legacy_all=False)
        at = cur.pos
        allowed = _decode_formats(cur, cur.i64("allowed_formats(|1<<32)"), at, "allowed_formats", legacy_all=True)
        mats: dict[str, Sparse] = {}
        loops = set()
        for name in stored:
            with cur.scope(name):
                at = cur.pos
                _n, meta_arrays = _read_immutable(cur, "metagraph")[1:]
                arrays = [a.tolist() for a in meta_arrays]
                if tuple(arrays) not in (_SELF_LOOP, _ONE_EDGE):
                    raise cur.error(
                        at, "metagraph", f"expected a relation metagraph {_SELF_LOOP} or {_ONE_EDGE}, found {arrays}"
                    )
                loops.add(tuple(arrays) == _SELF_LOOP)
                with cur.scope("adj"):
                    mats[name] = _read_coo(cur) if name == "coo" else _read_csr(cur, "magic(CSR)", None)
        sizes = {m[2][1].shape[0] for m in mats.values()}
        if len(loops) != 1 or len(sizes) != 1:
            raise cur.error(start, "", f"stored formats disagree (edge counts {sorted(sizes)})")
        return mats, loops.pop(), allowed, start


def _decode_formats(cur: Cursor, word: int, at: int, field: str, *, legacy_all: bool) -> tuple[str, ...]:
    if word >> 32 == 1:
        mask = word & 0xFFFFFFFF
        if not 1 <= mask <= 7:
            raise cur.error(at, field, f"expected a format bitmask 1..7 | 1<<32, found {word:#x}")
    else:
        legacy = {1: 1, 2: 2, 3: 4, **({0: 7} if legacy_all else {})}
        if word not in legacy:
            raise cur.error(at, field, f"expected {sorted(legacy)} (legacy code) or mask | 1<<32, found {word:#x}")
        mask = legacy[word]
    return tuple(name for bit, name in enumerate(FORMAT_ORDER) if mask >> bit & 1)


def _read_immutable(cur: Cursor, name: str) -> tuple[int, int, tuple[npt.NDArray[Any], ...]]:
    """An ImmutableGraph (a metagraph): square int64 CSR; returns (num_types, nnz, arrays)."""
    with cur.scope(name):
        cur.magic("magic(ImmutableGraph)", IMMUTABLE_GRAPH_MAGIC)
        at = cur.pos
        with cur.scope("csr"):
            nrows, ncols, arrays = _read_csr(cur, "magic(CSR)", np.dtype("<i8"))
        if nrows != ncols:
            raise cur.error(at, "csr", f"a metagraph must be square, found {nrows} x {ncols}")
        if arrays[2].shape[0] != arrays[1].shape[0]:
            raise cur.error(at, "csr.data", "a metagraph must store its etype ids")
        return nrows, arrays[1].shape[0], arrays


def _read_csr(cur: Cursor, magic_name: str, idtype: np.dtype[Any] | None) -> Sparse:
    cur.magic(magic_name, CSR_MAGIC)
    ncols, nrows = _dims(cur)
    at = cur.pos
    indptr = cur.ndarray("indptr")
    _check_ids(cur, indptr, idtype, None, at, "indptr")
    idtype = indptr.dtype
    if indptr.shape[0] != nrows + 1:
        raise cur.error(at, "indptr", f"expected num_rows + 1 = {nrows + 1} entries, found {indptr.shape[0]}")
    at = cur.pos
    indices = cur.ndarray("indices")
    _check_ids(cur, indices, idtype, ncols, at, "indices")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.shape[0]:
        raise cur.error(at, "indptr", f"not a valid CSR row pointer for {indices.shape[0]} entries")
    data = _read_eids(cur, idtype, indices.shape[0])
    cur.flag("sorted")
    return nrows, ncols, (indptr, indices, data)


def _read_coo(cur: Cursor) -> Sparse:
    cur.magic("magic(COO)", COO_MAGIC)
    ncols, nrows = _dims(cur)
    at = cur.pos
    row = cur.ndarray("row")
    _check_ids(cur, row, None, nrows, at, "row")
    at = cur.pos
    col = cur.ndarray("col")
    _check_ids(cur, col, row.dtype, ncols, at, "col")
    if col.shape != row.shape:
        raise cur.error(at, "col", f"expected {row.shape[0]} entries like row, found {col.shape[0]}")
    data = _read_eids(cur, row.dtype, row.shape[0])
    cur.flag("row_sorted")
    cur.flag("col_sorted")
    return nrows, ncols, (row, col, data)


def _dims(cur: Cursor) -> tuple[int, int]:
    at = cur.pos
    ncols, nrows = cur.i64("num_cols"), cur.i64("num_rows")
    if ncols < 0 or nrows < 0:
        raise cur.error(at, "num_cols/num_rows", f"negative size {nrows} x {ncols}")
    return ncols, nrows


def _check_ids(
    cur: Cursor, arr: npt.NDArray[Any], dtype: np.dtype[Any] | None, bound: int | None, at: int, field: str
) -> None:
    if arr.ndim != 1 or arr.dtype not in _IDTYPES or (dtype is not None and arr.dtype != dtype):
        want = dtype if dtype is not None else "int32 or int64"
        raise cur.error(at, field, f"expected a 1-D {want} array, found {arr.dtype} with shape {arr.shape}")
    if bound is not None and arr.shape[0] and (arr.min() < 0 or arr.max() >= bound):
        raise cur.error(at, field, f"ids must lie in [0, {bound}), found [{arr.min()}, {arr.max()}]")


def _read_eids(cur: Cursor, idtype: np.dtype[Any], count: int) -> npt.NDArray[Any]:
    """``data``: the null array (empty) or a permutation of the edge ids 0..count-1."""
    at = cur.pos
    data = cur.ndarray("data")
    if data.ndim == 1 and data.shape[0] == 0 and data.dtype in _IDTYPES:
        return data
    if data.ndim == 1 and data.dtype == idtype and data.shape[0] == count:
        _check_ids(cur, data, idtype, count, at, "data")
        if np.bincount(data, minlength=count).max() == 1:
            return data
    raise cur.error(
        at,
        "data",
        f"expected the null array or a permutation of {count} {idtype} edge ids, "
        f"found {data.dtype} with shape {data.shape}",
    )
