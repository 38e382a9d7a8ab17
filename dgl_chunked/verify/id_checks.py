"""Layer 2: every input node and edge stored exactly once, and every stored edge the input's.

- one task per block of ``block_rows`` node IDs of a type merges the partitions'
  staged ``(type_nid, new_nid)`` segments of that block: every ID exactly once, each
  in its assigned partition (when an assignment is given), and stages the dense
  ``type_nid -> new_nid`` map of the block;
- one task per read task of input edge files (consecutive files of about the task
  size, :mod:`dgl_chunked.io.chunked.groups`) merges the partitions' ``(type_eid, new_src,
  new_dst, new_eid)`` segments of its ``type_eid`` range with the file's rows: every
  edge once, and the stored endpoints' ``_ID`` equal the new IDs of the input
  endpoints (looked up block by block in the staged node map). It stages the dense
  ``type_eid -> new_eid`` map of the file for the feature checks.

A task holds one input chunk (or block), its facts from all partitions (about 32
bytes per edge, 16 per node) and one staged block of the node map at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.chunks import group_id_problems, read_edge_group
from dgl_chunked.io.chunked.graph import ChunkGroup
from dgl_chunked.verify.plan import Plan, orig2new, stage, staged_rows

__all__ = ["PartSlices", "TaskResult", "edge_chunk_task", "node_block_task"]

PartSlices = list[tuple[int, int, int]]
"""``(partition, start row, rows)`` of each partition's staged facts in one block or file."""


@dataclass
class TaskResult:
    """What a layer-2 or layer-3 task returns: its problems and how many input IDs it found."""

    problems: list[str] = field(default_factory=list)
    count: int = 0


def _gather(
    plan: Plan, kind: str, index: int, segments: PartSlices, width: int
) -> tuple[IdArray, npt.NDArray[np.int32]]:
    """The partitions' staged segments as columns; each row's partition."""
    pieces = [staged_rows(plan, f"{kind}-{index}-{p}", width, lo, lo + n) for p, lo, n in segments]
    parts = [np.full(n, p, np.int32) for p, _, n in segments]
    facts = np.concatenate(pieces) if pieces else np.zeros((0, width), np.int64)
    return facts.T, (np.concatenate(parts) if parts else np.zeros(0, np.int32))


def _coverage(
    ids: IdArray, parts: npt.NDArray[np.int32], span: tuple[int, int], what: str, label: str, source: str
) -> list[str]:
    """Messages for IDs of ``span = [lo, hi)`` missing or stored more than once."""
    lo, hi = span
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
    return out


def node_block_task(plan: Plan, t: int, b: int, segments: PartSlices, assigned: Any) -> TaskResult:
    """Every node of one block exactly once; its partition; stage its new IDs."""
    lo, hi = b * plan.block_rows, min(plan.num_nodes[t], (b + 1) * plan.block_rows)
    facts, parts = _gather(plan, "nodes", t, segments, 2)
    what = f"node type {plan.ntypes[t]!r}"
    problems = _coverage(facts[0], parts, (lo, hi), what, "type_nid", "orig_nids")
    new_nid = np.full(hi - lo, -1, np.int64)
    new_nid[facts[0] - lo] = facts[1]
    stage(plan, f"orig2new-{t}-{b}", new_nid)
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
    return TaskResult(problems, int(facts.shape[1]))


def edge_chunk_task(plan: Plan, r: int, c: int, ref: ChunkGroup, segments: PartSlices, *node_blocks: Any) -> TaskResult:
    """One read task of input edge files against the stored edges that name its type_eids.

    ``node_blocks`` are the node-block tasks of both endpoint types (only waited on:
    their staged node maps are read here).
    """
    etype, src_t, dst_t = plan.etypes[r]
    src, dst = read_edge_group(ref)
    bad = group_id_problems(ref, src, dst, num_src=plan.num_nodes[src_t], num_dst=plan.num_nodes[dst_t])
    if bad:
        raise ChunkMismatchError("; ".join(bad))
    facts, parts = _gather(plan, "edges", r, segments, 4)
    eid, new_src, new_dst, new_eid = facts
    problems = _coverage(eid, parts, (ref.start, ref.stop), f"edge type {etype!r}", "type_eid", "orig_eids")
    k = eid - ref.start
    want_src = orig2new(plan, src_t, src[k])
    want_dst = orig2new(plan, dst_t, dst[k])
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
    stage(plan, f"eorig2new-{r}-{c}", dense)
    return TaskResult(problems, int(eid.shape[0]))
