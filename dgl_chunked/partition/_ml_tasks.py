"""Task bodies of the multilevel ``lp`` method: scratch I/O around :mod:`._ml_kernels`.

Every level has the same number of node *blocks* ``B``: block ``b`` of level ``L + 1``
holds the clusters named by the nodes of block ``b`` of level ``L``, in ID order, so
a level is described by its block offsets alone. Level 0 is read from the ``lp``
staging (:mod:`._lp_tasks`: entries per block, strata, owned edges, degree levels);
the other files are ``.npy`` files under ``ML = <lp root>/work/ml``, written and read
through fsspec (``ml`` is a URL), each by one task::

    ML/<L>/e-<s>.npz         int64 [3, k]  member p<b>: entries of block b (u local, v, w) from block s of L-1
    ML/<L>/w-<b>.npy         int64 [rows, C]  node weights of block b (L >= 1)
    ML/<L>/label-<b>.npy     int64  cluster (a node's global ID) of every node; -1: not in the graph
    ML/<L>/cw-<b>.npy        int64 [rows, C]  weight of the cluster named by each row's node
    ML/<L>/prop-<b>.npz      int64 [3 + C, k]  member p<t>: joins proposed by block b to clusters of block t
    ML/<L>/acc-<t>.npz       int64 [2, k]  member p<b>: joins of block b's nodes accepted by block t
    ML/<L>/left-<b>.npz      int64 [1 + C, k]  member p<t>: clusters of block t left by block b's nodes
    ML/<L>/lcid-<b>.npy      int64  coarse ID of the clusters named by block b's nodes (-1: none)
    ML/<L>/cid-<b>.npy       int64  coarse ID (level L + 1) of every node; -1: not in the graph
    ML/<L>/part-<b>.npy      int32  partition of every node (L >= 1; level 0 writes ``lp``'s)

Memory per task: one block's entries (about 40 bytes each with temporaries), its node
arrays, and one other block's labels or weights at a time for lookups.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition import _lp_tasks as T
from dgl_chunked.partition import _ml_kernels as MK
from dgl_chunked.partition._lp_kernels import LOCAL_MASK, node_order

__all__: list[str] = []


@dataclass(frozen=True, kw_only=True)
class Level:
    """What a task needs to know of one level (small: block offsets and paths)."""

    index: int
    offsets: tuple[int, ...]  # B + 1 global-ID offsets of the blocks
    lp_root: str  # the ``lp`` scratch root (level 0's staging)
    ml: str  # URL of the multilevel scratch directory
    segs: tuple[tuple[tuple[int, int, int], ...], ...] = ()  # level 0: staged entry ranges per block
    num_strata: int = 1
    owned: bool = False  # a column of owned edges (balance_edges)

    @property
    def num_blocks(self) -> int:
        return len(self.offsets) - 1

    @property
    def width(self) -> int:
        return self.num_strata + int(self.owned)

    def rows(self, b: int) -> int:
        return self.offsets[b + 1] - self.offsets[b]

    def url(self, name: str, ext: str = "npy") -> str:
        return posixpath.join(self.ml, str(self.index), f"{name}.{ext}")

    def create(self) -> None:
        """Create the level's scratch directory."""
        from fsspec.core import url_to_fs

        fs, path = url_to_fs(posixpath.join(self.ml, str(self.index)))
        fs.makedirs(path, exist_ok=True)


def save(url: str, arr: npt.NDArray[Any]) -> None:
    """Write ``arr`` to ``url`` (the level's directory exists).

    No temporary name: a scratch file is read only by tasks that depend on its writer,
    and a rerun of the writer rewrites it whole before they start.
    """
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url)
    with fs.open(path, "wb") as f:
        np.save(f, np.ascontiguousarray(arr))


def load(url: str) -> npt.NDArray[Any]:
    """Read the ``.npy`` file at ``url``."""
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url)
    with fs.open(path, "rb") as f:
        return np.load(f)  # type: ignore[no-any-return]


def save_split(url: str, rows: npt.NDArray[Any], block: IdArray, num_blocks: int) -> None:
    """Write the columns of ``rows`` per destination ``block`` as the members of one
    ``.npz`` file (a reader reads its own member only)."""
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url)
    order = np.argsort(block, kind="stable")
    bounds = np.searchsorted(block[order], np.arange(num_blocks + 1))
    rows = rows[:, order]
    with fs.open(path, "wb") as f:
        np.savez(f, **{f"p{t}": rows[:, bounds[t] : bounds[t + 1]] for t in range(num_blocks)})


def load_piece(url: str, t: int) -> npt.NDArray[Any]:
    """Member ``t`` of a :func:`save_split` file."""
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(url)
    with fs.open(path, "rb") as f, np.load(f) as z:
        return z[f"p{t}"]  # type: ignore[no-any-return]


WHOLE_TABLE_BYTES = 1 << 26
"""A lookup reads every block of a table at once below this size, else one at a time."""


def lookup(level: Level, name: str, ids: IdArray) -> npt.NDArray[Any]:
    """Rows ``ids`` (global, >= 0) of the per-block arrays ``name-<b>``: the whole table
    when under :data:`WHOLE_TABLE_BYTES` (8 bytes per column per node), else one block
    in memory at a time."""
    ids = np.asarray(ids, np.int64)
    width = level.width if name in ("cw", "w") else 1
    if ids.size == 0:
        return np.empty((0, level.width) if width > 1 else 0, np.int64)
    if level.offsets[-1] * 8 * width <= WHOLE_TABLE_BYTES:
        table = np.concatenate([load(level.url(f"{name}-{b}")) for b in range(level.num_blocks)])
        return table[ids]  # type: ignore[no-any-return]
    block = np.searchsorted(np.asarray(level.offsets, np.int64), ids, side="right") - 1
    out: npt.NDArray[Any] | None = None
    for b in np.unique(block).tolist():
        arr = load(level.url(f"{name}-{b}"))
        if out is None:
            out = np.empty((ids.size, *arr.shape[1:]), arr.dtype)
        sel = np.flatnonzero(block == b)
        out[sel] = arr[ids[sel] - level.offsets[b]]
    assert out is not None
    return out


def read_entries(level: Level, b: int) -> tuple[IdArray, IdArray, IdArray]:
    """Entries ``(u local, v global, w)`` of block ``b``."""
    if level.index == 0:
        segs = list(level.segs[b])
        if not segs:
            empty = np.empty(0, np.int64)
            return empty, empty, empty
        u = (T._read_segments(level.lp_root, segs, "u") & LOCAL_MASK).astype(np.int64)
        v = T._read_segments(level.lp_root, segs, "v").astype(np.int64)
        return u, v, np.ones(u.size, np.int64)
    parts = [load_piece(level.url(f"e-{s}", "npz"), b) for s in range(level.num_blocks)]
    e = np.concatenate(parts, axis=1) if parts else np.empty((3, 0), np.int64)
    return e[0], e[1], e[2]


def node_weights(level: Level, b: int) -> tuple[IdArray, npt.NDArray[np.bool_]]:
    """``[rows, C]`` weights of block ``b``'s nodes and which are in the graph."""
    if level.index > 0:
        w = load(level.url(f"w-{b}"))
        return w, np.ones(w.shape[0], bool)
    stratum = T.read_block(level.lp_root, b, "stratum").astype(np.int64)
    w = np.zeros((stratum.size, level.width), np.int64)
    w[np.arange(stratum.size), stratum] = 1
    if level.owned:
        w[:, -1] = T.read_block(level.lp_root, b, "weight")
    active = T.read_block(level.lp_root, b, "level") >= 0
    w[~active] = 0
    return w, active


def init_task(level: Level, b: int) -> tuple[int, IdArray]:
    """Every node its own cluster; return the nodes in the graph and their weight sums."""
    w, active = node_weights(level, b)
    label = np.where(active, np.arange(level.offsets[b], level.offsets[b + 1], dtype=np.int64), -1)
    save(level.url(f"label-{b}"), label)
    save(level.url(f"cw-{b}"), w)
    return int(active.sum()), w.sum(axis=0)


def propose_task(level: Level, b: int, *, seed: int, salt: int, caps: IdArray) -> int:
    """Movers of block ``b`` (a seeded half of its nodes) propose to join the cluster
    they are most connected to when it beats their own and has room; proposals go to
    the cluster's block. Returns their number."""
    lo = level.offsets[b]
    label = load(level.url(f"label-{b}"))
    w, _ = node_weights(level, b)
    ids = np.arange(lo, level.offsets[b + 1], dtype=np.int64)
    movers = (label >= 0) & MK.active_bit(ids, seed=seed, salt=salt)
    u, v, ew = read_entries(level, b) if movers.any() else (np.empty(0, np.int64),) * 3
    keep = movers[u]
    u, v, ew = u[keep], v[keep], ew[keep]
    c = lookup(level, "label", v) if v.size else np.empty(0, np.int64)
    del v
    node, cluster, gain = MK.propose_joins(
        u,
        c,
        ew,
        own=label,
        node_weight=w,
        cluster_weight=lambda ids: lookup(level, "cw", ids),
        caps=caps,
        seed=seed,
        salt=salt + 1,
    )
    block = np.searchsorted(np.asarray(level.offsets, np.int64), cluster, side="right") - 1
    rows = np.vstack([node + lo, cluster, gain, w[node].T]) if node.size else np.empty((3 + level.width, 0), np.int64)
    save_split(level.url(f"prop-{b}", "npz"), rows, block, level.num_blocks)
    return int(node.size)


def accept_task(level: Level, t: int, *, seed: int, salt: int, caps: IdArray) -> int:
    """Accept the joins to block ``t``'s clusters within the caps (highest gain first);
    add their weights and tell each mover's block. Returns the number accepted."""
    props = np.concatenate([load_piece(level.url(f"prop-{b}", "npz"), t) for b in range(level.num_blocks)], axis=1)
    cw = load(level.url(f"cw-{t}"))
    u, c, gain, nw = props[0], props[1], props[2], props[3:].T
    local = c - level.offsets[t]
    accept = MK.accept_joins(c, gain, node_order(u, seed=seed, salt=salt + 2), nw, cw[local], caps)
    np.add.at(cw, local[accept], nw[accept])
    save(level.url(f"cw-{t}"), cw)
    block = np.searchsorted(np.asarray(level.offsets, np.int64), u, side="right") - 1
    save_split(level.url(f"acc-{t}", "npz"), np.vstack([u[accept], c[accept]]), block[accept], level.num_blocks)
    return int(accept.sum())


def apply_task(level: Level, b: int) -> None:
    """Move block ``b``'s accepted joiners to their new clusters; send their weights to
    the blocks of the clusters they leave."""
    acc = np.concatenate([load_piece(level.url(f"acc-{t}", "npz"), b) for t in range(level.num_blocks)], axis=1)
    label = load(level.url(f"label-{b}"))
    local = acc[0] - level.offsets[b]
    old = label[local]
    w, _ = node_weights(level, b)
    label[local] = acc[1]
    if local.size:
        save(level.url(f"label-{b}"), label)
    block = np.searchsorted(np.asarray(level.offsets, np.int64), old, side="right") - 1
    save_split(level.url(f"left-{b}", "npz"), np.vstack([old, w[local].T]), block, level.num_blocks)


def release_task(level: Level, t: int) -> None:
    """Take the weight of the nodes that left block ``t``'s clusters off those clusters."""
    left = np.concatenate([load_piece(level.url(f"left-{b}", "npz"), t) for b in range(level.num_blocks)], axis=1)
    if left.shape[1] == 0:
        return
    cw = load(level.url(f"cw-{t}"))
    np.subtract.at(cw, left[0] - level.offsets[t], left[1:].T)
    save(level.url(f"cw-{t}"), cw)


def leaders_task(level: Level, b: int) -> int:
    """Number of clusters (labels in use) named by block ``b``'s nodes."""
    return int(load(level.url(f"cw-{b}")).any(axis=1).sum())


def number_task(level: Level, b: int, coarse: Level) -> None:
    """Coarse IDs of the clusters named by block ``b``'s nodes (in ID order) and the
    coarse node weights."""
    cw = load(level.url(f"cw-{b}"))
    lead = cw.any(axis=1)
    lcid = np.full(lead.size, -1, np.int64)
    lcid[lead] = coarse.offsets[b] + np.arange(int(lead.sum()))
    save(level.url(f"lcid-{b}"), lcid)
    save(coarse.url(f"w-{b}"), cw[lead])


def map_task(level: Level, b: int) -> None:
    """Coarse ID of every node of block ``b``: its cluster's."""
    label = load(level.url(f"label-{b}"))
    cid = np.full(label.size, -1, np.int64)
    pos = label >= 0
    cid[pos] = lookup(level, "lcid", label[pos])
    save(level.url(f"cid-{b}"), cid)


def contract_task(level: Level, b: int, coarse: Level) -> tuple[int, int]:
    """Block ``b``'s entries between clusters, summed per cluster pair, written to the
    blocks of the coarse level. Returns their number and weight."""
    u, v, w = read_entries(level, b)
    cid = load(level.url(f"cid-{b}"))
    cu = cid[u]
    cv = lookup(level, "cid", v) if v.size else np.empty(0, np.int64)
    cu, cv, w = MK.contract_entries(cu, cv, w)
    block = np.searchsorted(np.asarray(coarse.offsets, np.int64), cu, side="right") - 1
    local = cu - np.asarray(coarse.offsets, np.int64)[block]
    save_split(coarse.url(f"e-{b}", "npz"), np.vstack([local, cv, w]), block, coarse.num_blocks)
    return int(cu.size), int(w.sum())


def gather_task(level: Level, b: int) -> tuple[IdArray, IdArray, IdArray, IdArray, npt.NDArray[np.bool_]]:
    """Block ``b`` of the coarsest level for the in-memory partitioner: global ``u``,
    ``v``, ``w`` of its entries, its node weights and which nodes are in the graph."""
    u, v, w = read_entries(level, b)
    nw, active = node_weights(level, b)
    return u + level.offsets[b], v, w, nw, active


def write_parts(level: Level, b: int, part: npt.NDArray[np.int32], num_parts: int) -> tuple[IdArray, IdArray]:
    """Store block ``b``'s partitions; at level 0 into ``lp``'s result, returning the
    nodes per (stratum, part) ``[S, P]`` and owned edges per part ``[P]``."""
    if level.index > 0:
        save(level.url(f"part-{b}"), part)
        w, _ = node_weights(level, b)
        return part_weights(part, w, num_parts), np.empty(0, np.int64)
    T.write_block(level.lp_root, b, "part", part.astype(np.int32))
    placed = part >= 0
    stratum = T.read_block(level.lp_root, b, "stratum").astype(np.int64)[placed]
    sizes = np.bincount(stratum * num_parts + part[placed], minlength=level.num_strata * num_parts)
    weight = T.read_block(level.lp_root, b, "weight")[placed]
    wsizes = np.bincount(part[placed], weights=weight, minlength=num_parts)
    return sizes.reshape(level.num_strata, num_parts).astype(np.int64), np.rint(wsizes).astype(np.int64)


def project_task(level: Level, b: int, coarse: Level, num_parts: int, name: str) -> tuple[IdArray, IdArray]:
    """Partitions of block ``b``: those of their clusters at the coarse level (files ``name``)."""
    cid = load(level.url(f"cid-{b}"))
    part = np.full(cid.size, -1, np.int32)
    pos = cid >= 0
    part[pos] = lookup(coarse, name, cid[pos])
    return write_parts(level, b, part, num_parts)


def unplace_task(lp_root: str, b: int, lo: int, quota: IdArray, *, seed: int, salt: int) -> tuple[IdArray, IdArray]:
    """Unplace ``quota[s, p]`` nodes of stratum ``s`` from part ``p`` (seeded hash order)
    in block ``b`` (first ``orig_nid`` ``lo``); return the nodes ``[S]`` and owned edges ``[P]`` taken away."""
    part = T.read_block(lp_root, b, "part")
    stratum = T.read_block(lp_root, b, "stratum")
    weight = T.read_block(lp_root, b, "weight")
    num_strata, num_parts = quota.shape
    rank = node_order(np.arange(lo, lo + part.size, dtype=np.int64), seed=seed, salt=salt)
    gone_n, gone_w = np.zeros(num_strata, np.int64), np.zeros(num_parts, np.int64)
    for s, p in zip(*np.nonzero(quota), strict=True):
        nodes = np.flatnonzero((part == p) & (stratum == s))
        nodes = nodes[np.argsort(rank[nodes], kind="stable")][: int(quota[s, p])]
        part[nodes] = -1
        gone_n[s] += nodes.size
        gone_w[p] += int(weight[nodes].sum())
    T.write_block(lp_root, b, "part", part)
    return gone_n, gone_w


def _lp_parts(level: Level, ids: IdArray) -> npt.NDArray[np.int32]:
    """The level-0 assignment (``lp``'s result files) of ``ids``, one block at a time."""
    block = np.searchsorted(np.asarray(level.offsets, np.int64), ids, side="right") - 1
    out = np.empty(ids.size, np.int32)
    for b in np.unique(block).tolist():
        sel = block == b
        out[sel] = T.read_block(level.lp_root, b, "part")[ids[sel] - level.offsets[b]]
    return out


def cut_task(level: Level, b: int, save: str | None) -> int:
    """Cut entries of block ``b`` under the current level-0 assignment (unplaced nodes
    count as cut); with ``save``, keep a copy of the block's assignment under that name."""
    part = T.read_block(level.lp_root, b, "part")
    if save is not None:
        save_(level.url(f"{save}-{b}"), part)
    u, v, w = read_entries(level, b)
    if u.size == 0:
        return 0
    pu = part[u]
    return int(w[(pu < 0) | (pu != _lp_parts(level, v))].sum())


def restore_task(level: Level, b: int, name: str | None) -> None:
    """Put back the saved assignment ``name`` of block ``b`` (None: nothing placed)."""
    if name is None:
        T.write_block(level.lp_root, b, "part", np.full(level.rows(b), -1, np.int32))
    else:
        T.write_block(level.lp_root, b, "part", load(level.url(f"{name}-{b}")))


save_ = save  # ``save`` is a parameter name in cut_task


def part_weights(part: npt.NDArray[np.integer[Any]], w: IdArray, num_parts: int) -> IdArray:
    """Weight per part ``[P, C]`` of nodes with partitions ``part`` (-1: none) and weights ``w``."""
    out = np.zeros((num_parts, w.shape[1]), np.int64)
    placed = part >= 0
    np.add.at(out, part[placed], w[placed])
    return out


def refine_task(
    level: Level, b: int, *, src: str, dst: str, num_parts: int, seed: int, salt: int, room: IdArray
) -> IdArray:
    """One label-propagation pass over block ``b`` of a coarse level: a seeded half of
    the nodes may move to the part they are most connected to (by edge weight) when
    that beats their own, best gain first, within this block's share of every part's
    room ``[P, C]``. Reads the partitions ``src-<b>`` (every block's), writes ``dst-<b>``.
    Returns the weight moved ``[P, C]`` (+ into, - out of a part)."""
    part = load(level.url(f"{src}-{b}"))
    w, _ = node_weights(level, b)
    u, v, ew = read_entries(level, b)
    delta = np.zeros((num_parts, level.width), np.int64)
    pv = lookup(level, src, v).astype(np.int64)
    rows = part.size
    hist = np.bincount(u * num_parts + pv, weights=ew, minlength=rows * num_parts).reshape(rows, num_parts)
    idx = np.arange(rows)
    best = np.argmax(hist, axis=1)
    gain = hist[idx, best] - hist[idx, part]
    ids = np.arange(level.offsets[b], level.offsets[b + 1], dtype=np.int64)
    cand = np.flatnonzero((gain > 0) & (best != part) & MK.active_bit(ids, seed=seed, salt=salt))
    target = best[cand]
    accept = MK.accept_joins(
        target,
        gain[cand].astype(np.int64),
        node_order(ids[cand], seed=seed, salt=salt + 1),
        w[cand],
        -room[target],
        np.zeros(level.width, np.int64),
    )
    moved = cand[accept]
    np.add.at(delta, target[accept], w[moved])
    np.subtract.at(delta, part[moved], w[moved])
    part[moved] = target[accept]
    save(level.url(f"{dst}-{b}"), part)
    return delta
