"""Task bodies of the multilevel ``lp`` method: scratch I/O around :mod:`.coarsen_kernels`
(the purification's in :mod:`.purify_tasks`).

A level is cut into node *blocks* (its block offsets): block ``b`` of level ``L + 1``
holds the clusters named by the nodes of block ``b`` of level ``L``, in ID order, or a run
of such blocks when the level is merged (:mod:`.regroup`; ``e`` and ``w`` keep one piece
per block of level ``L``). Level 0 is read from the ``lp`` staging (:mod:`.tasks`:
entries per block, strata, owned edges, degree tiers); the other files are array files
(:mod:`dgl_chunked.storage.arrays`; ``.bin``) under ``ML = <lp root>/work/ml``, written
and read through fsspec (``ml`` is a URL), each by one task; "pieces" are the parts of
one writer's file, one per destination block (:func:`save_split`, :func:`save_entries`)::

    ML/<L>/e-<s>.bin         [3k]  piece b: entries of block b from block s of L-1, column by
                             column (k u local, k v, k w: :mod:`.entry_kernels`), in the
                             narrowest integer type holding the file's values (its header's
                             dtype: uint16 or uint32 mostly), read back as int32* (int64 also
                             when the block's weights sum to 2**31 or more)
    ML/<L>/w-<b>.bin         int64 [rows, C]  node weights of block b (L >= 1)
    ML/<L>/label-<b>.bin     int32*  cluster (a node's global ID) of every node; -1: not in the graph
    ML/<L>/cw-<b>.bin        int64 [rows, C]  weight of the cluster named by each row's node
    ML/<L>/prop-<b>.bin      int64 [k, 3 + C]  piece t: joins proposed by block b to clusters of block t
    ML/<L>/want-<b>.bin      int64 [k, 3 + C]  piece t: block b's nodes left alone, their favourite
                             cluster (of block t), connection and weight (two-hop clustering)
    ML/<L>/hop-<t>.bin       int64 [k, 3 + C]  piece s: two-hop joins to clusters of block s, as prop
    ML/<L>/acc-<t>.bin       int64 [k, 2]  piece b: joins of block b's nodes accepted by block t
    ML/<L>/left-<b>.bin      int64 [k, 1 + C]  piece t: clusters of block t left by block b's nodes
    ML/<L>/lcid-<b>.bin      int32*  coarse ID of the clusters named by block b's nodes (-1: none)
    ML/<L>/cid-<b>.bin       int32*  coarse ID (level L + 1) of every node; -1: not in the graph
    ML/0/top*-<b>.bin        int32*  coarsest-level cluster of every input node (purification rounds)
    ML/0/pcid-<b>.bin        int32*  ... after the last round: the purified coarsest level's IDs
    ML/<C>/wp-<b>.bin        int64 [k, 1 + C]  piece t: input weights of block b per cluster of block t
    ML/<L>/part-<b>.bin      int32  partition of every node (L >= 1; level 0 writes ``lp``'s)
    ML/<L>/part0-<b>.bin ... the alternate files of the coarse-level refinement
    ML/0/stream-<b>.bin      int32  the streaming assignment, kept while the multilevel one is made
    ML/0/ml<i>-<b>.bin       int32  the level-by-level assignment of the i-th cluster weight, kept for the choice
    ML/0/pure<i>-<b>.bin     int32  ... and its purified one
    ML/0/final<k>-<b>.bin    int32  the k-th finalist after settling and refining, kept for the choice

(*: int64 from 2**31 IDs, :func:`.coarsen_kernels.id_dtype`)

Memory per task: one block's entries (12 bytes each, 24 in int64; the contraction adds
about 23 per entry for its sorted keys and the file's data, measured as the peak RSS rise
over a 5.2M-entry block of the 1M-node graph, against 41 for the counting sorts it
replaced alone and 117 with the numpy steps before issue #38), its node arrays, and the
label, weight or map tables it looks up: whole under :data:`.tables.WHOLE_TABLE_BYTES`
(4 bytes per ID or weight), else one block's at a time (:mod:`.tables`). The tasks that
drop their block's entries at their end read them into :func:`.store.pooled_array`
arrays, kept per worker thread for the next block."""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray, StorageOptions
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import entry_kernels as EK
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.kernels import LOCAL_MASK, node_order, stable_order
from dgl_chunked.partition.lp.node_kernels import mover_entries
from dgl_chunked.partition.lp.pair_sums import sorted_pairs
from dgl_chunked.partition.lp.tables import WHOLE_TABLE_BYTES, lookup, whole_table
from dgl_chunked.storage.arrays import ArrayFile, read_array, write_array, write_array_parts

__all__ = ["CLUSTERING_FILES", "WHOLE_TABLE_BYTES", "lookup", "whole_table"]


@dataclass(frozen=True, kw_only=True)
class Level:
    """What a task needs to know of one level (small: block offsets and paths)."""

    index: int
    offsets: tuple[int, ...]  # B + 1 global-ID offsets of the blocks
    lp_root: S.ScratchRoot  # the ``lp`` scratch root (level 0's staging)
    ml: str  # path or URL of the multilevel scratch directory (under ``lp_root``)
    segs: tuple[tuple[tuple[int, int, int], ...], ...] = ()  # level 0: staged entry ranges per block
    num_strata: int = 1
    owned: bool = False  # a column of owned edges (balance_edges)
    writers: int = 0  # entry files e-<s> (the finer level's blocks); 0: one per block
    pieces: tuple[int, ...] = ()  # merged blocks (:mod:`.regroup`): the offsets the writers' pieces follow
    groups: tuple[int, ...] = ()  # ... and the pieces of each block, groups[b] to groups[b + 1]
    weight: int | None = None  # the entries' weight sum, where known: below 2**31, no block's is checked

    @property
    def num_blocks(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_writers(self) -> int:
        return self.writers or self.num_blocks

    def piece_range(self, b: int) -> range:
        """The writers' pieces (of ``e-`` and ``w-`` files) that block ``b`` holds."""
        return range(self.groups[b], self.groups[b + 1]) if self.groups else range(b, b + 1)

    @property
    def width(self) -> int:
        return self.num_strata + int(self.owned)

    def rows(self, b: int) -> int:
        return self.offsets[b + 1] - self.offsets[b]

    def url(self, name: str, ext: str = "bin") -> ScratchFile:
        return ScratchFile(posixpath.join(self.ml, str(self.index), f"{name}.{ext}"), self.lp_root.storage_options)

    def create(self) -> None:
        """Create the level's scratch directory."""
        self.lp_root.makedirs(posixpath.join(self.ml, str(self.index)))

    def block_files(self, b: int, names: Sequence[str]) -> list[str]:
        """The paths (or URLs) of block ``b``'s files ``name-<b>.bin``."""
        return [self.url(f"{name}-{b}").url for name in names]

    def remove(self, *names: str) -> None:
        """Delete the level's files ``name-<b>.bin`` of every block (no name: the whole
        level directory), once no later step reads them."""
        if not names:
            self.lp_root.remove(posixpath.join(self.ml, str(self.index)))
            return
        for b in range(self.num_blocks):
            S.remove_files_task(self.lp_root, self.block_files(b, names))


class ScratchFile(NamedTuple):
    """A multilevel scratch file: its path or URL and the fsspec options to reach it."""

    url: str
    storage_options: StorageOptions


def save(url: ScratchFile, arr: npt.NDArray[Any]) -> None:
    """Write ``arr`` (1-D, or 2-D with one row per node) to ``url``; the level's directory exists."""
    write_array(url.url, arr, storage_options=url.storage_options)


def load(url: ScratchFile) -> npt.NDArray[Any]:
    """Read the array :func:`save` wrote at ``url``."""
    return read_array(url.url, storage_options=url.storage_options)


def save_split(url: ScratchFile, rows: npt.NDArray[Any], block: IdArray, num_blocks: int) -> None:
    """Write the columns of ``rows`` (``[r, k]``) grouped by destination ``block`` into one
    file; a reader reads its own piece only (:func:`load_piece`)."""
    if block.size > 1 and not np.all(block[1:] >= block[:-1]):
        order = stable_order(block, num_blocks)
        block, rows = block[order], rows[:, order]
    bounds = np.searchsorted(block, np.arange(num_blocks + 1)).astype(np.int64)
    write_array(url.url, rows.T, bounds=bounds, storage_options=url.storage_options)


def save_entries(url: ScratchFile, u: IdArray, v: IdArray, w: IdArray, offsets: IdArray) -> IdArray:
    """Write the entries ``(u, v, w)`` (``u`` global, of the level of block ``offsets``)
    as an entry file: piece ``t`` holds block ``t``'s, column by column, in the narrowest
    integer type of every value (:func:`.entry_kernels.split_entries`; the file's header
    records it), for :func:`read_entries`. Returns the blocks' bounds in it."""
    data, bounds = EK.split_entries(u, v, w, offsets)
    write_array(url.url, data, bounds=3 * bounds, storage_options=url.storage_options)
    return bounds


def load_piece(url: ScratchFile, t: int) -> npt.NDArray[Any]:
    """Piece ``t`` of a :func:`save_split` file, as ``[r, k_t]``."""
    return read_array(url.url, piece=t, storage_options=url.storage_options).T


CLUSTERING_FILES = ("label", "cw", "prop", "want", "hop", "acc", "left", "lcid")
"""A level's files that only its clustering and contraction read (deleted after them)."""


def read_entries(level: Level, b: int, *, pooled: bool = False) -> tuple[IdArray, IdArray, IdArray]:
    """Entries ``(u local, v global, w)`` of block ``b``: int32 when the IDs and the
    block's weight sum fit (:func:`.coarsen_kernels.id_dtype`), else int64 (in
    :func:`.store.pooled_array` arrays with ``pooled``: the caller's task must not let
    them outlive it)."""
    ids = CK.id_dtype(level.offsets[-1])
    if level.index == 0:
        return _staged_entries(level, b, ids, pooled)
    heads, starts = [], level.pieces or level.offsets  # each writer's pieces: file, type, rows, ID shift
    for s in range(level.num_writers):
        with ArrayFile(level.url(f"e-{s}").url, level.lp_root.storage_options) as f:
            for j in level.piece_range(b):
                lo, hi = int(f.header.bounds[j]), int(f.header.bounds[j + 1])
                heads.append((f.path, f.header.dtype, lo, hi, starts[j] - level.offsets[b]))
    n = sum(h[3] - h[2] for h in heads) // 3
    wide = ids if all(h[1].itemsize <= 4 for h in heads) else np.dtype(np.int64)
    e = _read_pieces(level, heads, n, np.dtype(wide), pooled)
    if e.dtype == np.int32 and (level.weight or CK.ID_LIMIT) >= CK.ID_LIMIT and _weight_sum_at_least(e[2], CK.ID_LIMIT):
        e = _read_pieces(level, heads, n, np.dtype(np.int64), pooled)  # every sum of the weights must fit: int64
    return e[0], e[1], e[2]


def _weight_sum_at_least(w: npt.NDArray[np.int32], limit: int) -> bool:
    """Whether the int32 weights ``w`` (>= 0) sum to ``limit`` or more: summed only when
    their count times the largest could reach it (the sum widens every weight to
    int64, 0.8 s of thread time per run at 1M nodes / 10M edges, issue #38)."""
    w = w.view(np.uint32)
    if w.size == 0 or w.size * int(w.max()) < limit:
        return False
    return int(w.sum(dtype=np.int64)) >= limit


def _read_pieces(
    level: Level, heads: list[tuple[str, np.dtype[Any], int, int, int]], n: int, wide: np.dtype[Any], pooled: bool
) -> npt.NDArray[Any]:
    """The pieces ``heads`` of entry files (column by column, each writer's narrow type;
    one open per writer) as one ``[3, n]`` array of type ``wide``: read straight into it
    where the file's type has ``wide``'s size (uint32 holds int32's values: IDs and
    weights below 2**31), else through a buffer and widened; local IDs shifted to the
    block's start (a merged block's pieces, :mod:`.regroup`)."""
    e = (S.pooled_array("entries", 3 * n, wide) if pooled else np.empty(3 * n, wide)).reshape(3, n)
    pos = 0
    for path, pieces in itertools.groupby((h for h in heads if h[3] > h[2]), key=lambda h: h[0]):
        with ArrayFile(path, level.lp_root.storage_options) as f:  # a writer's pieces follow one another
            for _, dtype, lo, hi, shift in pieces:
                k = (hi - lo) // 3
                if dtype.itemsize == wide.itemsize:
                    f.read_parts(lo, hi, [e[0, pos : pos + k], e[1, pos : pos + k], e[2, pos : pos + k]])
                else:
                    raw = f.read(lo, hi, out=S.pooled_array("entry-piece", 3 * k, dtype) if pooled else None)
                    e[:, pos : pos + k] = raw.reshape(3, k)
                if shift:
                    e[0, pos : pos + k] += shift
                pos += k
    return e


def _staged_entries(level: Level, b: int, ids: type[np.integer[Any]], pooled: bool) -> tuple[IdArray, IdArray, IdArray]:
    """Level 0's entries of block ``b``: the ``lp`` staging's, weight 1."""
    segs = list(level.segs[b])
    if not segs:
        empty = np.empty(0, ids)
        return empty, empty, empty
    u = S.read_segments(level.lp_root, segs, "u", pooled=pooled)  # uint32, bit 31 the edge's direction
    np.bitwise_and(u, LOCAL_MASK, out=u)
    v = S.read_segments(level.lp_root, segs, "v", pooled=pooled).astype(ids, copy=False)
    w = S.pooled_array("ones", u.size, CK.id_dtype(u.size)) if pooled else np.empty(u.size, CK.id_dtype(u.size))
    w.fill(1)
    return (u.view(np.int32) if ids == np.int32 else u.astype(ids)), v, w


def node_weights(level: Level, b: int) -> tuple[IdArray, npt.NDArray[np.bool_]]:
    """``[rows, C]`` weights of block ``b``'s nodes and which are in the graph."""
    if level.index > 0:  # a cluster every node left in the purification weighs nothing: not in the graph
        pieces = [load(level.url(f"w-{j}")) for j in level.piece_range(b)]
        w = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        return w, CK.weighted_rows(w)
    stratum = S.read_block(level.lp_root, b, "stratum").astype(np.int64)
    w = np.zeros((stratum.size, level.width), np.int64)
    w[np.arange(stratum.size), stratum] = 1
    if level.owned:
        w[:, -1] = S.read_block(level.lp_root, b, "weight")
    active = S.read_block(level.lp_root, b, "tier") >= 0
    w[~active] = 0
    return w, active


def init_task(level: Level, b: int) -> tuple[int, IdArray]:
    """Every node its own cluster; return the nodes in the graph and their weight sums."""
    w, active = node_weights(level, b)
    ids = np.arange(level.offsets[b], level.offsets[b + 1], dtype=CK.id_dtype(level.offsets[-1]))
    label = np.where(active, ids, -1)
    save(level.url(f"label-{b}"), label)
    save(level.url(f"cw-{b}"), w)
    return int(active.sum()), w.sum(axis=0)


def propose_task(
    level: Level, b: int, *, seed: int, salt: int, caps: IdArray, min_share: float = 0.0, two_hop: bool = False
) -> tuple[int, int]:
    """Movers of block ``b`` (a seeded half of its nodes) propose to join the cluster
    they are most connected to when it beats their own and has room; proposals go to
    the cluster's block. With ``two_hop``, the movers still alone in their cluster that
    propose nothing (their best clusters are full) send their favourite cluster to its
    block (file ``want``, :func:`two_hop_task`). Returns the number of proposals, and
    of the clusters without room that a mover would have proposed to (0: larger caps
    propose the same)."""
    lo = level.offsets[b]
    label = load(level.url(f"label-{b}"))
    w, _ = node_weights(level, b)
    ids = np.arange(lo, level.offsets[b + 1], dtype=np.int64)
    movers = (label >= 0) & CK.active_bit(ids, seed=seed, salt=salt)
    u, v, ew = read_entries(level, b, pooled=True) if movers.any() else (np.empty(0, np.int64),) * 3
    labels = whole_table(level, "label") if v.size else None
    if labels is not None:  # select and look up in one compiled pass
        u, c, ew = mover_entries(u, v, ew, movers, labels)
    else:
        keep = movers[u]
        u, v, ew = u[keep], v[keep], ew[keep]
        c = lookup(level, "label", v) if v.size else np.empty(0, np.int64)
    del v, labels  # not held beside the weight table (this task is a 10M graph's largest)
    table = whole_table(level, "cw")  # indexed in the kernel, instead of gathered per entry
    node, cluster, gain, fnode, fcluster, fconn, blocked = CK.joins_and_favourites(
        u,
        c,
        ew,
        own=label,
        node_weight=w,
        cluster_weight=table if table is not None else (lambda ids: lookup(level, "cw", ids)),
        caps=caps,
        seed=seed,
        salt=salt + 1,
        min_share=min_share,
    )
    offsets = np.asarray(level.offsets, np.int64)
    block = np.searchsorted(offsets, cluster, side="right") - 1
    rows = np.vstack([node + lo, cluster, gain, w[node].T]) if node.size else np.empty((3 + level.width, 0), np.int64)
    save_split(level.url(f"prop-{b}", "bin"), rows, block, level.num_blocks)
    if two_hop:
        alone = (label == ids) & np.all(load(level.url(f"cw-{b}")) == w, axis=1)
        stuck = alone[fnode] & ~np.isin(fnode, node)
        fnode, fcluster, fconn = fnode[stuck], fcluster[stuck], fconn[stuck]
        rows = np.vstack([fnode + lo, fcluster, fconn, w[fnode].T])
        save_split(level.url(f"want-{b}"), rows, np.searchsorted(offsets, fcluster, side="right") - 1, level.num_blocks)
    return int(node.size), blocked


def two_hop_task(level: Level, t: int, *, seed: int, salt: int) -> int:
    """Two-hop clustering of the nodes whose favourite is one of block ``t``'s clusters
    (files ``want``): the nodes of one favourite propose to join the cluster of one of
    them (:func:`.coarsen_kernels.two_hop_joins`), in file ``hop`` for the leader's
    block, where :func:`accept_task` takes them within the caps. Returns their number."""
    want = np.concatenate([load_piece(level.url(f"want-{b}"), t) for b in range(level.num_blocks)], axis=1)
    member, leader = CK.two_hop_joins(want[0], want[1], seed=seed, salt=salt)
    order = np.argsort(want[0], kind="stable")  # each node wants once
    row = order[np.searchsorted(want[0][order], member)]
    rows = np.vstack([member, leader, want[2][row], want[3:, row]])
    block = np.searchsorted(np.asarray(level.offsets, np.int64), leader, side="right") - 1
    save_split(level.url(f"hop-{t}"), rows, block, level.num_blocks)
    return int(member.size)


def accept_task(
    level: Level, t: int, *, seed: int, salt: int, caps: IdArray, two_hop: bool = False, fit_passes: int = 1
) -> tuple[int, int]:
    """Accept the joins to block ``t``'s clusters within the caps (highest gain first;
    with ``two_hop`` the two-hop ones too, file ``hop``); add their weights and tell
    each mover's block, in up to ``fit_passes`` passes
    (:func:`.coarsen_kernels.accept_in_passes`). Returns the numbers accepted: all,
    two-hop."""
    names = ("prop", "hop") if two_hop else ("prop",)
    pieces = [load_piece(level.url(f"{n}-{b}", "bin"), t) for n in names for b in range(level.num_blocks)]
    hops = sum(p.shape[1] for p in pieces[level.num_blocks :])  # the two-hop joins come last
    props = np.concatenate(pieces, axis=1)
    cw = load(level.url(f"cw-{t}"))
    u, c, gain, nw = props[0], props[1], props[2], props[3:].T
    local = c - level.offsets[t]
    rank = node_order(u, seed=seed, salt=salt + 2)
    accept = CK.accept_in_passes(local, gain, rank, nw, cw, caps, passes=fit_passes)  # adds to cw
    save(level.url(f"cw-{t}"), cw)
    block = np.searchsorted(np.asarray(level.offsets, np.int64), u, side="right") - 1
    save_split(level.url(f"acc-{t}", "bin"), np.vstack([u[accept], c[accept]]), block[accept], level.num_blocks)
    return int(accept.sum()), int(accept[accept.size - hops :].sum()) if hops else 0


def apply_task(level: Level, b: int) -> None:
    """Move block ``b``'s accepted joiners to their new clusters; send their weights to
    the blocks of the clusters they leave."""
    acc = np.concatenate([load_piece(level.url(f"acc-{t}", "bin"), b) for t in range(level.num_blocks)], axis=1)
    label = load(level.url(f"label-{b}"))
    local = acc[0] - level.offsets[b]
    old = label[local]
    w, _ = node_weights(level, b)
    label[local] = acc[1]
    if local.size:
        save(level.url(f"label-{b}"), label)
    block = np.searchsorted(np.asarray(level.offsets, np.int64), old, side="right") - 1
    save_split(level.url(f"left-{b}", "bin"), np.vstack([old, w[local].T]), block, level.num_blocks)


def release_task(level: Level, t: int) -> int:
    """Take the weight of the nodes that left block ``t``'s clusters off those clusters.
    Returns the clusters then named by block ``t``'s nodes (:func:`leaders_task`'s
    count, so the last round needs no layer of its own for it)."""
    cw = load(level.url(f"cw-{t}"))
    if accumulate_pieces(cw, np.subtract, level, "left", t, first=level.offsets[t]):
        save(level.url(f"cw-{t}"), cw)
    return CK.named_clusters(cw)


def accumulate_pieces(
    out: IdArray, op: np.ufunc, level: Level, name: str, t: int, *, first: int = 0, writers: int | None = None
) -> int:
    """Apply ``op`` (``np.add``, ``np.subtract``) to the rows ``id - first`` of ``out``
    with the weights of every writer's piece ``t`` of files ``name`` (``writers`` of
    them, default one per block of ``level``), one piece in memory at a time (one block
    may get most of the input's rows, a large community's; issue #38). Exact in any
    order: integer weights. Returns the rows read."""
    rows = 0
    for b in range(level.num_blocks if writers is None else writers):
        got = load_piece(level.url(f"{name}-{b}", "bin"), t)
        op.at(out, got[0] - first, got[1:].T)
        rows += got.shape[1]
    return rows


def leaders_task(level: Level, b: int) -> int:
    """Number of clusters (labels in use) named by block ``b``'s nodes."""
    return CK.named_clusters(load(level.url(f"cw-{b}")))


def number_task(level: Level, b: int, coarse: Level) -> None:
    """Coarse IDs of the clusters named by block ``b``'s nodes (in ID order) and the
    coarse node weights."""
    cw = load(level.url(f"cw-{b}"))
    lead = CK.weighted_rows(cw)
    lcid = np.full(lead.size, -1, CK.id_dtype(coarse.offsets[-1]))
    lcid[lead] = coarse.offsets[b] + np.arange(int(lead.sum()))
    save(level.url(f"lcid-{b}"), lcid)
    save(coarse.url(f"w-{b}"), cw[lead])


def map_task(level: Level, b: int) -> None:
    """Coarse ID of every node of block ``b``: its cluster's."""
    label = load(level.url(f"label-{b}"))
    cid = np.full(label.size, -1, CK.id_dtype(level.offsets[-1]))  # coarse IDs are fewer
    pos = label >= 0
    cid[pos] = lookup(level, "lcid", label[pos])
    save(level.url(f"cid-{b}"), cid)


def contract_task(
    level: Level, b: int, coarse: Level, cid_name: str = "cid", *, few_pairs: bool = False
) -> tuple[int, int, IdArray]:
    """Block ``b``'s entries between clusters (the coarse IDs in files ``cid_name``),
    summed per cluster pair, written to the blocks of the coarse level. Returns their
    number, weight and bounds per coarse block (in entries). ``few_pairs``: a few
    clusters hold most entries (the purified level; :func:`.pair_sums.sorted_pairs` sums
    them in a hash table first)."""
    u, v, w = read_entries(level, b, pooled=True)
    cid = load(level.url(f"{cid_name}-{b}"))
    table = whole_table(level, cid_name)
    offsets = np.asarray(coarse.offsets, np.int64)
    if table is not None:  # mapped in the compiled group-by, written from its sorted keys a column at a time
        got = EK.pair_pieces(sorted_pairs(u, v, w, cid, table, few=few_pairs), offsets)
        url, rows = coarse.url(f"e-{b}"), 3 * int(got.bounds[-1])
        write_array_parts(
            url.url, got.parts, dtype=got.dtype, rows=rows, bounds=3 * got.bounds, storage_options=url.storage_options
        )
        return int(got.bounds[-1]), got.weight, got.bounds
    cv = lookup(level, cid_name, v) if v.size else np.empty(0, np.int64)
    cu, cv, w = CK.contract_entries(cid[u], cv, w)
    per_block = save_entries(coarse.url(f"e-{b}"), cu, cv, w, offsets)
    return int(cu.size), int(w.sum()), per_block
