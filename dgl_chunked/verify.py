"""Check a finished partition output against its chunked input, out of core on Dask.

Works on any output in the chunked pipeline's layout, ours or DGL's, as long as
``orig_nids.dgl`` and ``orig_eids.dgl`` were saved (they are the only record of
which input node and edge each row is). Checked:

- the partition config: node and edge types in metadata order, ``node_map`` and
  ``edge_map`` contiguous, partition-major and type-major from 0;
- per partition (``graph.dgl``, spec sections 3.2-3.6): inner nodes first with
  ``_ID = start + k``, ``inner_node`` flags, HALO nodes owned elsewhere, distinct
  and exactly the non-owned sources of owned edges, node and edge ``_TYPE``
  against the maps, edge ``_ID`` contiguous, every destination an inner node,
  ``orig_*`` lengths, feature keys, row counts, dtypes and row shapes;
- every input node and edge is stored exactly once, and each node sits in its
  assigned partition when ``assignment`` is given;
- every stored edge joins the input edge's endpoints (compared as new IDs: the
  ``_ID`` of its local endpoints against the new IDs of the input endpoints);
- every feature row equals the input row of its original ID (byte for byte).

How it runs (three layers of Dask tasks on the current scheduler; the facts are
staged as raw int64 files read by byte range, in a temporary local directory
unless ``scratch_dir`` is given -- pass a shared URL when workers run on several
hosts):

1. one task per partition reads ``graph.dgl`` and the orig-ID files, checks the
   partition on its own, and stages its facts sorted by original ID:
   ``(type_nid, new_nid)`` per node type and ``(type_eid, new_src, new_dst,
   new_eid)`` per edge type. Feature files are only indexed (their headers).
2. one task per block of ``block_rows`` node IDs of a type merges the partitions'
   segments of that block: every ID exactly once, the assignment, and the dense
   ``type_nid -> new_nid`` map of the block (staged);
3. one task per input edge file merges the partitions' segments of its
   ``type_eid`` range with the file's rows (endpoints looked up block by block
   in the staged node map), and one task per input feature file compares its rows
   with the output rows of the same original IDs, read as byte ranges.

Memory bound per task: the partition task holds one partition's ``graph.dgl`` and
orig IDs (never its features); the others hold one input chunk (or one block of
``block_rows`` IDs), its facts from all partitions (about 32 bytes per edge, 16
per node) and one staged block of the node map at a time. Feature rows are read in
coalesced runs of at most 64 MiB, so a task holds one input feature chunk plus
one run. Nothing holds the whole input or a whole node-ID space.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np
import numpy.typing as npt
from dask.base import tokenize

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import ChunkMismatchError, DglChunkedError
from dgl_chunked.io.chunked.formats import read_edge_chunk, read_feature_chunk
from dgl_chunked.io.chunked.graph import (
    ChunkedGraph,
    ChunkRef,
    edge_id_problems,
    open_chunked_graph,
)
from dgl_chunked.io.dgl.binary import read_tensor_dict
from dgl_chunked.io.dgl.graph_read import read_tensor_file
from dgl_chunked.io.dgl.partition_config import PartitionConfig, read_partition_config
from dgl_chunked.io.dgl.records import Cursor
from dgl_chunked.io.partition_graph import read_partition_graph
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, remove_owned
from dgl_chunked.storage.owned import scratch_dir as owned_scratch_dir

__all__ = ["PartitionFiles", "VerifyReport", "load_partition_output", "verify_partitions"]

DEFAULT_BLOCK_ROWS = 1 << 20
"""Node IDs per node-check task and per staged block of the node map."""

MAX_PROBLEMS_PER_TASK = 5
_RUN_BYTES = 64 << 20  # longest byte range read at once from an output feature file
_GAP_BYTES = 1 << 20  # rows closer than this are read in one range

Ints = npt.NDArray[np.int64]


@dataclass
class VerifyReport:
    """Problems found (empty when the output is correct) and what was checked."""

    problems: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def expect(self, condition: bool, message: str) -> bool:
        if not condition:
            self.problems.append(message)
        return condition


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
    """Read a partition config and every partition's files with our own reader (eagerly:
    for tests and small outputs; :func:`verify_partitions` does not use it)."""
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
                orig_nids=_optional(fs.join(base, "orig_nids.dgl"), storage_options),
                orig_eids=_optional(fs.join(base, "orig_eids.dgl"), storage_options),
                formats=g.formats,
            )
        )
    return config, parts


def _optional(path: str, storage_options: StorageOptions) -> dict[str, Any] | None:
    return read_tensor_dict(path, storage_options=storage_options) if fs.exists(path, storage_options) else None


# --- the plan every task gets ------------------------------------------------------


@dataclass(frozen=True)
class _Feature:
    """One feature as the input has it: output key, dtype as stored by DGL, row shape."""

    kind: str
    type_index: int
    key: str
    dtype: str
    row_shape: tuple[int, ...]


@dataclass(frozen=True)
class _Plan:
    """Small, picklable facts shared by every task."""

    out_dir: str
    storage_options: StorageOptions
    scratch: str
    scratch_options: StorageOptions
    ntypes: tuple[str, ...]
    etypes: tuple[tuple[str, int, int], ...]  # (name, src type index, dst type index)
    num_nodes: tuple[int, ...]
    edge_bounds: tuple[tuple[int, ...], ...]  # per etype: input edge file starts, then the end
    node_ranges: Ints  # (P, T, 2)
    edge_ranges: Ints  # (P, R, 2)
    block_rows: int
    features: tuple[_Feature, ...]

    @property
    def num_parts(self) -> int:
        return int(self.node_ranges.shape[0])

    def blocks(self, t: int) -> int:
        return -(-self.num_nodes[t] // self.block_rows)


def _stage(plan: _Plan, name: str, rows: Ints) -> None:
    """Write int64 ``rows`` (shape ``(n, width)`` or ``(n,)``) as the raw scratch file ``name``.

    One writer per name; readers take row ranges (:func:`_rows`), so a file is never
    read whole unless asked.
    """
    filesystem, inner = fs.filesystem(fs.join(plan.scratch, name), plan.scratch_options)
    filesystem.pipe_file(inner, np.ascontiguousarray(rows, np.int64).tobytes())


def _rows(plan: _Plan, name: str, width: int, lo: int, hi: int) -> Ints:
    """Rows ``[lo, hi)`` of a staged file of ``width`` int64 per row (``width=0``: 1-D)."""
    if hi <= lo:
        return np.zeros((0, width) if width else 0, np.int64)
    row = 8 * max(width, 1)
    filesystem, inner = fs.filesystem(fs.join(plan.scratch, name), plan.scratch_options)
    data = np.frombuffer(filesystem.cat_file(inner, start=lo * row, end=hi * row), np.int64)
    return data.reshape(hi - lo, width) if width else data


def _orig2new(plan: _Plan, t: int, ids: Ints) -> Ints:
    """New IDs of ``ids`` (type_nids of type ``t``), reading one staged node block at a time."""
    out = np.empty(ids.shape[0], np.int64)
    block = ids // plan.block_rows
    for b in np.unique(block).tolist():
        sel = np.flatnonzero(block == b)
        lo = b * plan.block_rows
        values = _rows(plan, f"orig2new-{t}-{b}", 0, 0, min(plan.num_nodes[t], lo + plan.block_rows) - lo)
        out[sel] = values[ids[sel] - lo]
    return out


# --- layer 1: one task per partition ------------------------------------------------


@dataclass
class _PartFacts:
    """What a partition task returns: problems, staged segment counts, feature index."""

    problems: list[str] = field(default_factory=list)
    fatal: bool = False
    node_counts: dict[int, Ints] = field(default_factory=dict)  # type -> per node block
    edge_counts: dict[int, Ints] = field(default_factory=dict)  # etype -> per input edge file
    features: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (file, payload offset)
    nodes: int = 0
    edges: int = 0


def _partition_task(plan: _Plan, p: int) -> _PartFacts:
    """Check partition ``p`` on its own and stage its node and edge facts."""
    out = _PartFacts()
    base = fs.join(plan.out_dir, f"part{p}")
    try:
        lo, hi = int(plan.node_ranges[p, 0, 0]), int(plan.node_ranges[p, -1, 1])
        g = read_partition_graph(base, node_range=(lo, hi), storage_options=plan.storage_options)
        orig = {
            name: _optional(fs.join(base, f"{name}.dgl"), plan.storage_options) for name in ("orig_nids", "orig_eids")
        }
    except (FileNotFoundError, DglChunkedError) as err:
        out.problems.append(f"part{p}: cannot read its files: {err}")
        out.fatal = True
        return out
    missing = [f"{name}.dgl" for name, value in orig.items() if value is None]
    if missing:
        out.problems.append(
            f"part{p}: {' and '.join(missing)} missing; verify needs them "
            "(dispatch with --save-orig-nids --save-orig-eids)"
        )
        out.fatal = True
        return out
    ndata, edata, src, dst = g.ndata, g.edata, g.src, g.dst
    if not all(k in ndata for k in ("_ID", "inner_node")) or "_ID" not in edata:
        out.problems.append(f"part{p}: {g.source} lacks ndata _ID / inner_node or edata _ID")
        return out
    nid = np.asarray(ndata["_ID"], np.int64)
    _check_nodes(plan, p, nid, ndata, out.problems)
    edges_ok = _check_edges(plan, p, nid, src, dst, edata, out.problems)
    _node_facts(plan, p, orig["orig_nids"], out)  # type: ignore[arg-type]
    if edges_ok:
        _edge_facts(plan, p, orig["orig_eids"], nid, src, dst, out)  # type: ignore[arg-type]
    for kind in ("node", "edge"):
        _index_features(plan, p, kind, fs.join(base, f"{kind}_feat.dgl"), out)
    return out


def _type_of(new_ids: Ints, ranges: Ints) -> npt.NDArray[np.int32]:
    """Type index of each new ID from the (partition, type) block holding it."""
    block = np.searchsorted(ranges[:, :, 0].ravel(), new_ids, side="right") - 1
    return np.asarray(block % ranges.shape[1], dtype=np.int32)


def _check_nodes(plan: _Plan, p: int, nid: Ints, ndata: Mapping[str, Any], problems: list[str]) -> None:
    lo, hi = int(plan.node_ranges[p, 0, 0]), int(plan.node_ranges[p, -1, 1])
    n_inner = hi - lo
    inner = np.asarray(ndata["inner_node"])
    if not np.array_equal(nid[:n_inner], np.arange(lo, hi)):
        problems.append(
            f"part{p}: inner nodes are not first with _ID = {lo} + k (node_map says "
            f"{n_inner} inner nodes, _ID[:{n_inner}] differs)"
        )
    if not (bool((inner[:n_inner] == 1).all()) and bool((inner[n_inner:] == 0).all())):
        problems.append(f"part{p}: inner_node is not 1 for the first {n_inner} nodes and 0 after")
    halo = nid[n_inner:]
    owned = halo[(halo >= lo) & (halo < hi)]
    if owned.size:
        problems.append(f"part{p}: {owned.size} HALO node(s) are owned by part{p} itself (e.g. _ID {owned[0]})")
    if np.unique(halo).shape[0] != halo.shape[0]:
        problems.append(f"part{p}: a HALO node appears more than once in _ID")
    total = int(plan.node_ranges[-1, -1, 1])
    if halo.size and (halo.min() < 0 or halo.max() >= total):
        problems.append(f"part{p}: a HALO _ID is outside the node ID space [0, {total})")
    elif "_TYPE" in ndata and not np.array_equal(ndata["_TYPE"], _type_of(nid, plan.node_ranges)):
        problems.append(f"part{p}: node _TYPE disagrees with node_map")


def _check_edges(
    plan: _Plan, p: int, nid: Ints, src: Ints, dst: Ints, edata: Mapping[str, Any], problems: list[str]
) -> bool:
    """Partition-local edge checks; False when the edge facts cannot be trusted."""
    e_lo, e_hi = int(plan.edge_ranges[p, 0, 0]), int(plan.edge_ranges[p, -1, 1])
    n_inner = int(plan.node_ranges[p, -1, 1] - plan.node_ranges[p, 0, 0])
    if not np.array_equal(edata["_ID"], np.arange(e_lo, e_hi)):
        problems.append(
            f"part{p}: edge _ID is not {e_lo}..{e_hi - 1} in local order "
            f"({np.asarray(edata['_ID']).shape[0]} edges, edge_map says {e_hi - e_lo})"
        )
        return False
    if not bool((dst < n_inner).all()):
        problems.append(f"part{p}: {int((dst >= n_inner).sum())} edge destination(s) are not inner nodes")
    used = np.unique(src[src >= n_inner])
    if not np.array_equal(used, np.arange(n_inner, nid.shape[0])):
        problems.append(
            f"part{p}: HALO nodes are not exactly the non-owned sources of owned edges "
            f"({nid.shape[0] - n_inner} HALO nodes, {used.shape[0]} used as sources)"
        )
    if "_TYPE" in edata:
        sizes = plan.edge_ranges[p, :, 1] - plan.edge_ranges[p, :, 0]
        want = np.repeat(np.arange(len(plan.etypes), dtype=np.int64), sizes)
        if not np.array_equal(np.asarray(edata["_TYPE"], np.int64), want):
            problems.append(f"part{p}: edge _TYPE disagrees with edge_map")
    return True


def _sorted_facts(
    plan: _Plan, p: int, what: str, name: str, ids: Ints, limit: int, expected: int, problems: list[str]
) -> npt.NDArray[np.intp] | None:
    """Order that sorts ``ids`` (orig IDs of one block), or None if they cannot be used."""
    if ids.shape != (expected,):
        problems.append(f"part{p}: {what}[{name!r}] has {ids.shape[0]} entries, the map says {expected}")
        return None
    bad = np.flatnonzero((ids < 0) | (ids >= limit))
    if bad.size:
        problems.append(
            f"part{p}: {what}[{name!r}] holds {bad.size} ID(s) outside [0, {limit}) "
            f"(e.g. {ids[bad[0]]} at row {bad[0]})"
        )
        return None
    return np.argsort(ids, kind="stable")


def _node_facts(plan: _Plan, p: int, orig_nids: Mapping[str, Any], out: _PartFacts) -> None:
    for t, ntype in enumerate(plan.ntypes):
        s, e = (int(x) for x in plan.node_ranges[p, t])
        ids = np.asarray(orig_nids.get(ntype, np.zeros(0, np.int64)), np.int64)
        order = _sorted_facts(plan, p, "orig_nids", ntype, ids, plan.num_nodes[t], e - s, out.problems)
        if order is None:
            continue
        facts = np.stack([ids[order], s + order.astype(np.int64)], axis=1)
        _stage(plan, f"nodes-{t}-{p}", facts)
        out.node_counts[t] = np.bincount(facts[:, 0] // plan.block_rows, minlength=plan.blocks(t)).astype(np.int64)
        out.nodes += e - s


def _edge_facts(
    plan: _Plan, p: int, orig_eids: Mapping[str, Any], nid: Ints, src: Ints, dst: Ints, out: _PartFacts
) -> None:
    e_lo = int(plan.edge_ranges[p, 0, 0])
    for r, (etype, _, _) in enumerate(plan.etypes):
        s, e = (int(x) for x in plan.edge_ranges[p, r])
        bounds = np.asarray(plan.edge_bounds[r], np.int64)
        ids = np.asarray(orig_eids.get(etype, np.zeros(0, np.int64)), np.int64)
        order = _sorted_facts(plan, p, "orig_eids", etype, ids, int(bounds[-1]), e - s, out.problems)
        if order is None:
            continue
        local = s - e_lo + order
        facts = np.stack([ids[order], nid[src[local]], nid[dst[local]], s + order.astype(np.int64)], axis=1)
        _stage(plan, f"edges-{r}-{p}", facts)
        out.edge_counts[r] = np.diff(np.searchsorted(facts[:, 0], bounds)).astype(np.int64)
        out.edges += e - s


class _IndexCursor(Cursor):
    """A tensor-dict reader that records where each payload is instead of reading it."""

    def _payload(self, dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> Any:
        start = self.pos
        self.pos = self._f.seek(start + nbytes)
        return _Payload(start, dtype.str, shape)


@dataclass(frozen=True)
class _Payload:
    offset: int
    dtype: str
    shape: tuple[int, ...]


def _index_features(plan: _Plan, p: int, kind: str, path: str, out: _PartFacts) -> None:
    """Check a feature file's keys, row counts, dtypes and row shapes from its headers."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    try:
        filesystem, inner = fs.filesystem(path, plan.storage_options)
        with filesystem.open(inner, "rb") as f:
            index: dict[str, Any] = read_tensor_file(_IndexCursor(f, f.seek(0, 2), where=path))
    except (FileNotFoundError, DglChunkedError) as err:
        out.problems.append(f"part{p}: cannot read {name}: {err}")
        return
    wanted = [f for f in plan.features if f.kind == kind]
    keys = {f.key for f in wanted}
    if set(index) != keys:
        out.problems.append(f"part{p}: {name} keys {sorted(index)} != expected {sorted(keys)}")
    ranges = plan.node_ranges if kind == "node" else plan.edge_ranges
    for feat in wanted:
        got: _Payload | None = index.get(feat.key)
        if got is None:
            continue
        rows = int(ranges[p, feat.type_index, 1] - ranges[p, feat.type_index, 0])
        want = ((rows, *feat.row_shape), np.dtype(feat.dtype).str)
        if (tuple(got.shape), got.dtype) != want:
            out.problems.append(
                f"part{p}: {kind} feature {feat.key}: expected shape {want[0]} {want[1]}, "
                f"found {tuple(got.shape)} {got.dtype}"
            )
            continue
        out.features[feat.key] = (path, got.offset)


# --- layer 2: node blocks and input edge files ----------------------------------------


@dataclass
class _Result:
    problems: list[str] = field(default_factory=list)
    count: int = 0


def _gather(
    plan: _Plan, kind: str, index: int, segments: list[tuple[int, int, int]], width: int
) -> tuple[Ints, npt.NDArray[np.int32]]:
    """The partitions' staged segments ``(p, start, count)`` as columns; each row's partition."""
    pieces = [_rows(plan, f"{kind}-{index}-{p}", width, lo, lo + n) for p, lo, n in segments]
    parts = [np.full(n, p, np.int32) for p, _, n in segments]
    facts = np.concatenate(pieces) if pieces else np.zeros((0, width), np.int64)
    return facts.T, (np.concatenate(parts) if parts else np.zeros(0, np.int32))


def _coverage(
    ids: Ints, parts: npt.NDArray[np.int32], lo: int, hi: int, what: str, label: str, source: str
) -> tuple[list[str], Ints]:
    """Messages for IDs of ``[lo, hi)`` missing or stored more than once; and the ID counts."""
    counts = np.bincount(ids - lo, minlength=hi - lo)
    out = []
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        out.append(
            f"{what}: {missing.size} input {label}(s) in [{lo}, {hi}) are in no partition's "
            f"{source} (e.g. {label} {lo + missing[0]})"
        )
    dup = np.flatnonzero(counts > 1)
    if dup.size:
        first = lo + int(dup[0])
        where = ", ".join(f"part{q}" for q in sorted(parts[ids == first].tolist()))
        out.append(
            f"{what}: {dup.size} input {label}(s) are stored more than once "
            f"(e.g. {label} {first}: {int(counts[dup[0]])} times, in {where})"
        )
    return out, counts


def _node_block_task(plan: _Plan, t: int, b: int, segments: list[tuple[int, int, int]], assigned: Any) -> _Result:
    """Every node of one block exactly once; its partition; stage its new IDs."""
    lo, hi = b * plan.block_rows, min(plan.num_nodes[t], (b + 1) * plan.block_rows)
    facts, parts = _gather(plan, "nodes", t, segments, 2)
    what = f"node type {plan.ntypes[t]!r}"
    problems, _ = _coverage(facts[0], parts, lo, hi, what, "type_nid", "orig_nids")
    new_nid = np.full(hi - lo, -1, np.int64)
    new_nid[facts[0] - lo] = facts[1]
    _stage(plan, f"orig2new-{t}-{b}", new_nid)
    if assigned is not None:
        assigned = np.asarray(assigned).astype(np.int64)
        owner = np.searchsorted(plan.node_ranges[:, 0, 0], new_nid, side="right") - 1
        bad = np.flatnonzero((new_nid >= 0) & (owner != assigned))
        if bad.size:
            k = int(bad[0])
            problems.append(
                f"{what}: {bad.size} node(s) are not in their assigned partition "
                f"(e.g. type_nid {lo + k} is in part{owner[k]}, assigned to part{assigned[k]})"
            )
    return _Result(problems, int(facts.shape[1]))


def _edge_chunk_task(
    plan: _Plan, r: int, c: int, ref: ChunkRef, segments: list[tuple[int, int, int]], *node_blocks: _Result
) -> _Result:
    """One input edge file against the stored edges that name its type_eids."""
    etype, src_t, dst_t = plan.etypes[r]
    src, dst = read_edge_chunk(
        ref.path, fmt=ref.fmt, options=ref.options, storage_options=ref.storage_options, allow_empty=ref.rows == 0
    )
    bad = edge_id_problems(src, dst, num_src=plan.num_nodes[src_t], num_dst=plan.num_nodes[dst_t], path=ref.path)
    if bad or src.shape[0] != ref.rows:
        raise ChunkMismatchError(
            "; ".join(bad)
            or f"edge file {ref.path!r}: expected {ref.rows} rows, "
            f"found {src.shape[0]}; the input changed since it was partitioned"
        )
    facts, parts = _gather(plan, "edges", r, segments, 4)
    eid, new_src, new_dst, new_eid = facts
    problems, _ = _coverage(eid, parts, ref.start, ref.stop, f"edge type {etype!r}", "type_eid", "orig_eids")
    k = eid - ref.start
    want_src = _orig2new(plan, src_t, src[k])
    want_dst = _orig2new(plan, dst_t, dst[k])
    wrong = (new_src != want_src) | (new_dst != want_dst)
    for p in np.unique(parts[wrong]).tolist():
        i = int(np.flatnonzero(wrong & (parts == p))[0])
        problems.append(
            f"part{p}: {int((wrong & (parts == p)).sum())} edge(s) of {etype!r} do not match the input "
            f"edges named by orig_eids (e.g. type_eid {eid[i]}: stored endpoints have _ID "
            f"({new_src[i]}, {new_dst[i]}), the input's ({src[k[i]]}, {dst[k[i]]}) have ({want_src[i]}, {want_dst[i]}))"
        )
    dense = np.full(ref.rows, -1, np.int64)
    dense[k] = new_eid
    _stage(plan, f"eorig2new-{r}-{c}", dense)
    return _Result(problems, int(eid.shape[0]))


# --- layer 3: input feature files ------------------------------------------------------


def _new_ids(plan: _Plan, feat: _Feature, start: int, stop: int) -> Ints:
    """New IDs of type IDs ``[start, stop)`` from the staged maps (-1 where missing)."""
    if feat.kind == "node":
        return _orig2new(plan, feat.type_index, np.arange(start, stop, dtype=np.int64))
    bounds = plan.edge_bounds[feat.type_index]
    pieces = []
    for c in range(len(bounds) - 1):
        lo, hi = max(start, bounds[c]), min(stop, bounds[c + 1])
        if lo < hi:
            pieces.append(_rows(plan, f"eorig2new-{feat.type_index}-{c}", 0, lo - bounds[c], hi - bounds[c]))
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)


def _runs(rows: Ints, row_bytes: int) -> Iterator[tuple[int, int]]:
    """Split sorted distinct ``rows`` into index ranges read as one byte range each."""
    if rows.size == 0:
        return
    gap = max(1, _GAP_BYTES // max(row_bytes, 1))
    longest = max(1, _RUN_BYTES // max(row_bytes, 1))
    first = 0
    for i in range(1, rows.shape[0] + 1):
        if i == rows.shape[0] or rows[i] - rows[i - 1] > gap or rows[i] - rows[first] >= longest:
            yield first, i
            first = i


def _read_rows(plan: _Plan, path: str, offset: int, feat: _Feature, rows: Ints) -> npt.NDArray[Any]:
    """Rows ``rows`` (sorted, distinct) of one stored feature tensor, by byte ranges."""
    dtype = np.dtype(feat.dtype)
    row_bytes = int(np.prod(feat.row_shape, dtype=np.int64)) * dtype.itemsize
    out = np.empty((rows.shape[0], *feat.row_shape), dtype)
    filesystem, inner = fs.filesystem(path, plan.storage_options)
    for a, b in _runs(rows, row_bytes):
        lo, hi = int(rows[a]), int(rows[b - 1]) + 1
        raw = filesystem.cat_file(inner, start=offset + lo * row_bytes, end=offset + hi * row_bytes)
        span = np.frombuffer(raw, dtype).reshape((hi - lo, *feat.row_shape))
        out[a:b] = span[rows[a:b] - lo]
    return out


def _feature_chunk_task(
    plan: _Plan, feat: _Feature, ref: ChunkRef, files: Mapping[int, tuple[str, int]], *deps: _Result
) -> _Result:
    """One input feature file against the output rows of the same original IDs."""
    want = np.asarray(
        read_feature_chunk(ref.path, fmt=ref.fmt, options=ref.options, storage_options=ref.storage_options)
    )
    want = np.ascontiguousarray(want.astype(feat.dtype, copy=False)).reshape((ref.rows, *feat.row_shape))
    new = _new_ids(plan, feat, ref.start, ref.stop)
    ranges = (plan.node_ranges if feat.kind == "node" else plan.edge_ranges)[:, feat.type_index, :]
    part = np.searchsorted(ranges[:, 0], new, side="right") - 1
    problems = []
    label = "type_nid" if feat.kind == "node" else "type_eid"
    for p in np.unique(part[new >= 0]).tolist():
        if p not in files:
            continue  # its feature file was already reported
        sel = np.flatnonzero((part == p) & (new >= 0))
        local = new[sel] - ranges[p, 0]
        order = np.argsort(local)
        got = _read_rows(plan, *files[p], feat, local[order])
        bad = _differing_rows(got, want[sel[order]])
        if bad.size:
            i = int(bad[0])
            problems.append(
                f"part{p}: {bad.size} row(s) of {feat.kind} feature {feat.key} differ from the input "
                f"(e.g. {label} {ref.start + sel[order][i]} at local row {local[order][i]})"
            )
    return _Result(problems, ref.rows)


def _differing_rows(got: npt.NDArray[Any], want: npt.NDArray[Any]) -> Ints:
    """Indices of rows whose bytes differ (NaN equals NaN, as a copy should)."""
    n = got.shape[0]
    width = got.nbytes // n if n else 0
    if width == 0:
        return np.zeros(0, np.int64)
    a = np.ascontiguousarray(got).view(np.uint8).reshape(n, width)
    b = np.ascontiguousarray(want).view(np.uint8).reshape(n, width)
    return np.flatnonzero((a != b).any(axis=1))


# --- wiring ------------------------------------------------------------------------------


def verify_partitions(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    assignment: Mapping[str, Any] | None = None,
    storage_options: StorageOptions = None,
    scratch_dir: PathLike | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> VerifyReport:
    """Check every node, edge, ID map and feature row of an output against its input.

    Runs on the current Dask scheduler (two computes); see the module docstring for
    what is checked and the memory bound of each task.

    Parameters
    ----------
    graph
        The chunked input (object or directory).
    out_dir
        The partition output directory (holds the partition config ``metadata.json``).
    assignment
        Optional ``ntype -> partition per node`` (numpy or dask arrays) to also check
        ownership.
    storage_options
        fsspec options for ``out_dir`` (and for ``graph`` when it is a path).
    scratch_dir
        Where the staged facts go (about 16 bytes per node and 40 per edge), in a new
        directory ``dglc-verify-<token>`` removed afterwards; default the system temp
        dir. Use a location every worker reaches (a URL) when they are on several hosts.
    block_rows
        Node IDs per node-check task (and per staged block of the node map).

    Returns
    -------
    VerifyReport
        ``problems`` (each naming the partition or type and what is wrong) and
        ``checked`` counts: ``partitions``, ``nodes``, ``edges``, ``feature_rows``.

    Examples
    --------
    >>> report = verify_partitions("chunked/", "out/")  # doctest: +SKIP
    >>> report.ok, report.checked  # doctest: +SKIP
    (True, {'partitions': 2, 'nodes': 32, 'edges': 65, 'feature_rows': 157})
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    report = VerifyReport()
    config = read_partition_config(out_dir, storage_options=storage_options)
    if not _check_maps(graph, config, report):
        return report
    with _scratch(scratch_dir, graph.input_locations(), storage_options) as (scratch, scratch_options):
        plan = _make_plan(graph, config, str(out_dir), storage_options, scratch, scratch_options, block_rows)
        if not _check_config(graph, config, plan, report):
            return report
        token = tokenize(plan.out_dir, plan.scratch)
        shared = dask.delayed(plan, name=f"dglc-verify-plan-{token}")  # one copy, not one per task
        facts = dask.compute(
            *[
                dask.delayed(_partition_task, pure=False)(
                    shared, p, dask_key_name=(f"dglc-verify-partition-{token}", p)
                )
                for p in range(plan.num_parts)
            ]
        )
        for part in facts:
            report.problems += part.problems
        report.checked["partitions"] = plan.num_parts
        if any(part.fatal for part in facts):
            return report
        results = dask.compute(*_check_tasks(graph, plan, shared, list(facts), assignment, token))
    for kind, group in zip(("nodes", "edges", "feature_rows"), results, strict=True):
        for result in group:
            report.problems += result.problems[:MAX_PROBLEMS_PER_TASK]
        report.checked[kind] = sum(r.count for r in group)
    return report


@contextlib.contextmanager
def _scratch(
    scratch_dir: PathLike | None, inputs: dict[str, str], storage_options: StorageOptions
) -> Iterator[tuple[str, StorageOptions]]:
    """A new marked directory ``dglc-verify-<token>`` under ``scratch_dir`` (default
    the system temp dir), removed afterwards.

    Only that directory is written, so only it must stay clear of the chunked input;
    inside the (marked) output it verifies it is a marked child like a run's scratch.
    """
    parent = tempfile.gettempdir() if scratch_dir is None else os.fspath(scratch_dir)
    options = storage_options if fs.is_url(parent) else None
    token = run_token(parent)
    check_no_overlap({"scratch directory": fs.join(parent, f"dglc-verify-{token}")}, inputs)
    path = owned_scratch_dir(parent, "verify", token, storage_options=options)
    try:
        yield path, options
    finally:
        remove_owned(path, storage_options=options)


def _make_plan(
    graph: ChunkedGraph,
    config: PartitionConfig,
    out_dir: str,
    storage_options: StorageOptions,
    scratch: str,
    scratch_options: StorageOptions,
    block_rows: int,
) -> _Plan:
    meta = graph.metadata
    ntypes, etypes = tuple(meta.node_types), tuple(e.name for e in meta.edge_types)
    features = []
    for kind, data in (("node", meta.node_data), ("edge", meta.edge_data)):
        names = ntypes if kind == "node" else etypes
        for type_name, feats in data.items():
            for feat in feats:
                dtype, row_shape = graph.feature_info(kind, type_name, feat)  # type: ignore[arg-type]
                stored = np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)
                features.append(
                    _Feature(kind, names.index(type_name), f"{type_name}/{feat}", stored.str, tuple(row_shape))
                )
    edge_bounds = []
    for etype in etypes:
        refs = graph.edge_chunks(etype)
        edge_bounds.append(tuple([r.start for r in refs] + [refs[-1].stop if refs else 0]))
    return _Plan(
        out_dir=out_dir,
        storage_options=storage_options,
        scratch=scratch,
        scratch_options=scratch_options,
        ntypes=ntypes,
        num_nodes=tuple(meta.num_nodes_per_type),
        etypes=tuple((e.name, ntypes.index(e.src_type), ntypes.index(e.dst_type)) for e in meta.edge_types),
        edge_bounds=tuple(edge_bounds),
        node_ranges=_ranges(config.node_map, list(ntypes), config.num_parts),
        edge_ranges=_ranges(config.edge_map, list(etypes), config.num_parts),
        block_rows=int(block_rows),
        features=tuple(features),
    )


def _check_maps(graph: ChunkedGraph, config: PartitionConfig, report: VerifyReport) -> bool:
    """Every type has a map entry with one range per partition (else nothing else can run)."""
    for what, mapping, names in (
        ("node_map", config.node_map, graph.metadata.node_types),
        ("edge_map", config.edge_map, graph.metadata.edge_type_names),
    ):
        for name in names:
            ranges = mapping.get(name)
            report.expect(
                ranges is not None and len(ranges) == config.num_parts and all(len(r) == 2 for r in ranges),
                f"partition config {what}[{name!r}]: expected {config.num_parts} [start, end) ranges, found {ranges!r}",
            )
    return report.ok


def _check_config(graph: ChunkedGraph, config: PartitionConfig, plan: _Plan, report: VerifyReport) -> bool:
    ntypes, etypes = list(plan.ntypes), [e[0] for e in plan.etypes]
    report.expect(
        config.ntypes == {t: i for i, t in enumerate(ntypes)},
        f"config ntypes {config.ntypes} do not follow metadata node_type order {ntypes}",
    )
    report.expect(
        config.etypes == {e: i for i, e in enumerate(etypes)},
        f"config etypes {config.etypes} do not follow metadata edge_type order {etypes}",
    )
    _check_contiguous(plan.node_ranges, "node_map", report)
    _check_contiguous(plan.edge_ranges, "edge_map", report)
    for what, ranges, counts in (
        ("node", plan.node_ranges, plan.num_nodes),
        ("edge", plan.edge_ranges, tuple(b[-1] for b in plan.edge_bounds)),
    ):
        sizes = (ranges[:, :, 1] - ranges[:, :, 0]).sum(axis=0)
        names = ntypes if what == "node" else etypes
        for name, got, want in zip(names, sizes.tolist(), counts, strict=True):
            report.expect(got == want, f"{what}_map[{name!r}] covers {got} {what}s, the input has {want}")
    return report.ok


def _check_tasks(
    graph: ChunkedGraph,
    plan: _Plan,
    shared: Any,
    facts: list[_PartFacts],
    assignment: Mapping[str, Any] | None,
    token: str,
) -> tuple[list[Any], list[Any], list[Any]]:
    """Layers 2 and 3 as delayed tasks: node blocks, input edge files, input feature files."""
    nodes: dict[int, list[Any]] = {}
    for t, ntype in enumerate(plan.ntypes):
        nodes[t] = [
            dask.delayed(_node_block_task, pure=False)(
                shared,
                t,
                b,
                _segments(facts, "node_counts", t, b),
                None if assignment is None else assignment[ntype][b * plan.block_rows : (b + 1) * plan.block_rows],
                dask_key_name=(f"dglc-verify-nodes-{token}", t, b),
            )
            for b in range(plan.blocks(t))
        ]
    edges: dict[int, list[Any]] = {}
    for r, (etype, src_t, dst_t) in enumerate(plan.etypes):
        edges[r] = [
            dask.delayed(_edge_chunk_task, pure=False)(
                shared,
                r,
                c,
                ref,
                _segments(facts, "edge_counts", r, c),
                *nodes[src_t],
                *nodes[dst_t],
                dask_key_name=(f"dglc-verify-edges-{token}", r, c),
            )
            for c, ref in enumerate(graph.edge_chunks(etype))
        ]
    feats = []
    for i, feat in enumerate(plan.features):
        type_name, name = feat.key.rsplit("/", 1)
        refs = (
            graph.node_feature_chunks(type_name, name)
            if feat.kind == "node"
            else graph.edge_feature_chunks(type_name, name)
        )
        deps = nodes[feat.type_index] if feat.kind == "node" else edges[feat.type_index]
        files = {p: part.features[feat.key] for p, part in enumerate(facts) if feat.key in part.features}
        feats += [
            dask.delayed(_feature_chunk_task, pure=False)(
                shared, feat, ref, files, *deps, dask_key_name=(f"dglc-verify-features-{token}", i, k)
            )
            for k, ref in enumerate(refs)
        ]
    return [x for v in nodes.values() for x in v], [x for v in edges.values() for x in v], feats


def _segments(facts: list[_PartFacts], attr: str, index: int, bucket: int) -> list[tuple[int, int, int]]:
    """``(partition, start, count)`` of each partition's staged rows in one bucket."""
    out = []
    for p, part in enumerate(facts):
        counts = getattr(part, attr).get(index)
        if counts is not None and counts[bucket]:
            out.append((p, int(counts[:bucket].sum()), int(counts[bucket])))
    return out


def _ranges(mapping: Mapping[str, list[list[int]]], names: list[str], num_parts: int) -> Ints:
    out = np.zeros((num_parts, len(names), 2), np.int64)
    for t, name in enumerate(names):
        out[:, t, :] = np.asarray(mapping[name], np.int64).reshape(num_parts, 2)
    return out


def _check_contiguous(ranges: Ints, what: str, report: VerifyReport) -> None:
    flat = ranges.reshape(-1, 2)
    report.expect(
        bool(
            flat.size == 0
            or (flat[0, 0] == 0 and (flat[1:, 0] == flat[:-1, 1]).all() and (flat[:, 1] >= flat[:, 0]).all())
        ),
        f"{what} ranges are not contiguous partition-major, type-major from 0",
    )
