"""Layer 1: one task per partition checks it on its own and stages its facts.

The task reads the partition's ``graph.dgl`` (or GraphBolt ``.pt``) and orig-ID
files, checks what one partition can show (``docs/spec/partition-config.md``, "The
partition graph": inner nodes first with ``_ID = start + k``, ``inner_node`` flags,
HALO nodes owned elsewhere, distinct and exactly the non-owned sources of owned
edges, ``_TYPE`` against the maps, edge ``_ID`` contiguous, destinations inner,
``orig_*`` lengths), indexes
the feature files by their headers, and stages its facts sorted by original ID:
``(type_nid, new_nid)`` per node type and ``(type_eid, new_src, new_dst, new_eid)``
per edge type. It holds one partition's graph and orig IDs, never its features.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.partition_graph import read_partition_graph
from dgl_chunked.storage import fs
from dgl_chunked.verify.feature_files import index_feature_file, read_rows
from dgl_chunked.verify.load import read_optional_tensors
from dgl_chunked.verify.plan import TRAINER_ID, Feature, Plan, stage
from dgl_chunked.verify.trainers import TrainerSpan, trainer_spans

__all__ = ["PartFacts", "partition_task"]


@dataclass
class PartFacts:
    """What a partition task returns: problems, staged segment counts, feature index."""

    problems: list[str] = field(default_factory=list)
    fatal: bool = False
    node_counts: dict[int, IdArray] = field(default_factory=dict)  # type -> per node block
    edge_counts: dict[int, IdArray] = field(default_factory=dict)  # etype -> per input edge file
    features: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (file, payload offset)
    trainers: list[TrainerSpan] = field(default_factory=list)


def partition_task(plan: Plan, p: int) -> PartFacts:
    """Check partition ``p`` on its own and stage its node and edge facts."""
    out = PartFacts()
    base = fs.join(plan.out_dir, f"part{p}")
    try:
        lo, hi = int(plan.node_ranges[p, 0, 0]), int(plan.node_ranges[p, -1, 1])
        g = read_partition_graph(base, node_range=(lo, hi), storage_options=plan.storage_options)
        orig = {
            name: read_optional_tensors(fs.join(base, f"{name}.dgl"), plan.storage_options)
            for name in ("orig_nids", "orig_eids")
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
        _edge_facts(plan, p, orig["orig_eids"], (nid, src, dst), out)  # type: ignore[arg-type]
    if TRAINER_ID in ndata:
        _graph_trainers(plan, p, nid, ndata[TRAINER_ID], out)
    for kind in ("node", "edge"):
        _feature_file(plan, p, kind, fs.join(base, f"{kind}_feat.dgl"), out)
    return out


def _type_of(new_ids: IdArray, ranges: IdArray) -> npt.NDArray[np.int32]:
    """Type index of each new ID from the (partition, type) block holding it."""
    block = np.searchsorted(ranges[:, :, 0].ravel(), new_ids, side="right") - 1
    return np.asarray(block % ranges.shape[1], dtype=np.int32)


def _check_nodes(plan: Plan, p: int, nid: IdArray, ndata: Mapping[str, Any], problems: list[str]) -> None:
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
    plan: Plan, p: int, nid: IdArray, src: IdArray, dst: IdArray, edata: Mapping[str, Any], problems: list[str]
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
    p: int, what: str, name: str, ids: IdArray, limit: int, expected: int, problems: list[str]
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


def _node_facts(plan: Plan, p: int, orig_nids: Mapping[str, Any], out: PartFacts) -> None:
    for t, ntype in enumerate(plan.ntypes):
        s, e = (int(x) for x in plan.node_ranges[p, t])
        ids = np.asarray(orig_nids.get(ntype, np.zeros(0, np.int64)), np.int64)
        order = _sorted_facts(p, "orig_nids", ntype, ids, plan.num_nodes[t], e - s, out.problems)
        if order is None:
            continue
        facts = np.stack([ids[order], s + order.astype(np.int64)], axis=1)
        stage(plan, f"nodes-{t}-{p}", facts)
        out.node_counts[t] = np.bincount(facts[:, 0] // plan.block_rows, minlength=plan.blocks(t)).astype(np.int64)


def _edge_facts(
    plan: Plan, p: int, orig_eids: Mapping[str, Any], graph: tuple[IdArray, IdArray, IdArray], out: PartFacts
) -> None:
    """Stage ``(type_eid, new_src, new_dst, new_eid)``; ``graph`` is the local ``(_ID, src, dst)``."""
    nid, src, dst = graph
    e_lo = int(plan.edge_ranges[p, 0, 0])
    for r, (etype, _, _) in enumerate(plan.etypes):
        s, e = (int(x) for x in plan.edge_ranges[p, r])
        bounds = np.asarray(plan.edge_bounds[r], np.int64)
        ids = np.asarray(orig_eids.get(etype, np.zeros(0, np.int64)), np.int64)
        order = _sorted_facts(p, "orig_eids", etype, ids, int(bounds[-1]), e - s, out.problems)
        if order is None:
            continue
        local = s - e_lo + order
        facts = np.stack([ids[order], nid[src[local]], nid[dst[local]], s + order.astype(np.int64)], axis=1)
        stage(plan, f"edges-{r}-{p}", facts)
        out.edge_counts[r] = np.diff(np.searchsorted(facts[:, 0], bounds)).astype(np.int64)


def _feature_file(plan: Plan, p: int, kind: str, path: str, out: PartFacts) -> None:
    """Index one feature file; read its ``trainer_id`` tensors (one integer per owned item)."""
    index = index_feature_file(plan, p, kind, path)
    out.problems += index.problems
    out.features.update(index.features)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    for key, payload in index.trainers.items():
        rows = np.arange(payload.shape[0], dtype=np.int64)
        values = read_rows(plan, path, payload.offset, Feature(kind, -1, key, payload.dtype, ()), rows)
        owners = np.full(rows.shape[0], p, np.int64)
        out.trainers += trainer_spans(p, f"{name} {key}", values.astype(np.int64), owners)


def _graph_trainers(plan: Plan, p: int, nid: IdArray, trainers: Any, out: PartFacts) -> None:
    """A ``trainer_id`` in the partition graph's node data: one integer per local node."""
    values = np.asarray(trainers)
    if values.shape != nid.shape or values.dtype.kind not in "iu":
        out.problems.append(
            f"part{p}: ndata {TRAINER_ID}: expected shape {nid.shape} of integers, found {values.shape} {values.dtype}"
        )
        return
    known = (nid >= 0) & (nid < plan.node_ranges[-1, -1, 1])  # a HALO _ID outside is reported already
    owners = np.searchsorted(plan.node_ranges[:, 0, 0], nid[known], side="right") - 1
    out.trainers += trainer_spans(p, f"ndata {TRAINER_ID}", values[known].astype(np.int64), owners)
