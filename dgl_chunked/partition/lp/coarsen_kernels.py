"""Kernels of the multilevel ``lp`` method (no Dask, no I/O): numpy, around the compiled
group-by (:mod:`.pair_sums`) and per-node passes (:mod:`.node_kernels`).

Vocabulary (see :mod:`dgl_chunked.partition.lp`):

- a *level* is a graph: level 0 is the input (homogeneous, symmetrised, self-loops
  dropped, isolated nodes left out), level ``L + 1`` the contraction of level ``L``'s
  clustering;
- an *entry* is one direction of one weighted edge: ``(u, v, w)``, ``u`` block-local,
  ``v`` a global ID of the same level;
- a node's *weight* is a vector of ``C`` counts: one column per balance stratum (node
  type x first true mask) and, with ``balance_edges``, one of owned edges;
- a *cluster* is a label: the ID of one node of the level (which may itself have
  moved on since); its weight is kept at that ID's row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp.kernels import node_order
from dgl_chunked.partition.lp.node_kernels import dense_cluster_rows, hash_key, ints, joins_kernel, strongest_kernel
from dgl_chunked.partition.lp.pair_sums import pair_sums

__all__ = [
    "DENSE_ROW_IDS",
    "ID_LIMIT",
    "accept_in_passes",
    "accept_joins",
    "active_bit",
    "cluster_caps",
    "contract_entries",
    "id_dtype",
    "joins_and_favourites",
    "named_clusters",
    "strongest_clusters",
    "two_hop_joins",
    "weighted_rows",
    "weighted_csr",
]


ID_LIMIT = 1 << 31
"""IDs and weight sums below this are held as int32 (entries, labels, cluster maps)."""


def id_dtype(limit: int) -> type[np.integer[Any]]:
    """int32 for values below ``limit`` < :data:`ID_LIMIT`, else int64."""
    return np.int32 if limit < ID_LIMIT else np.int64


def active_bit(ids: IdArray, *, seed: int, salt: int) -> npt.NDArray[np.bool_]:
    """Whether each node is a *mover* this round (else a *target*): a seeded coin per ID."""
    return (node_order(np.asarray(ids, np.int64), seed=seed, salt=salt) & np.uint64(1)).astype(bool)


def cluster_caps(totals: IdArray, num_parts: int, fraction: float) -> IdArray:
    """Most weight one cluster may hold per column: ``fraction`` of a part's even share (>= 1)."""
    totals = np.asarray(totals, np.int64)
    return np.maximum(1, np.floor(totals * fraction / num_parts)).astype(np.int64)


def named_clusters(cw: IdArray) -> int:
    """The clusters of a block's cluster weights ``[rows, C]`` that hold a node (a weight
    in some column)."""
    return int(weighted_rows(cw).sum())


_COLUMN_PASSES = 8
"""Most columns :func:`weighted_rows` reads one pass each (a pass reads the whole
block's cache lines: on 262144 rows, 6.6 ms at 8 columns against ``any``'s 10.2, but
26.4 ms at 16 against 12.7)."""


def weighted_rows(w: IdArray) -> npt.NDArray[np.bool_]:
    """Which rows of the weights ``w`` (``[rows, C]``) are not all zero: column by
    column for up to :data:`_COLUMN_PASSES` columns (numpy's ``any(axis=1)`` reduces each
    row of a few columns on its own: 4.3x slower on a level's 262144 x 4 block, issue
    #38), else by ``any(axis=1)`` (a graph of many strata)."""
    if w.shape[1] > _COLUMN_PASSES:
        return np.asarray(w.any(axis=1), bool)
    rows = np.zeros(w.shape[0], bool)
    for j in range(w.shape[1]):
        rows |= w[:, j] != 0
    return rows


def joins_and_favourites(
    u: IdArray,
    c: IdArray,
    w: IdArray,
    *,
    own: IdArray,
    node_weight: IdArray,
    cluster_weight: IdArray | Callable[[IdArray], IdArray],
    caps: IdArray,
    seed: int,
    salt: int,
    min_share: float = 0.0,
) -> tuple[IdArray, IdArray, IdArray, IdArray, IdArray, IdArray, int]:
    """The cluster each node would join: the one it is most connected to among the
    other clusters that still have room for it, when that beats its own cluster; and
    every node's *favourite* cluster (one compiled pass over the entries,
    :func:`.node_kernels.joins_kernel`).

    Parameters
    ----------
    u, c, w
        Per entry of the movers: block-local node, its neighbour's cluster (-1: none)
        and the edge weight.
    own
        Per block-local node: its current cluster.
    node_weight
        ``[rows, C]`` weight of every block-local node.
    cluster_weight
        Weights ``[k, C]`` of the clusters at the start of the round: the whole table,
        indexed by cluster ID, or a function returning the rows of given cluster IDs
        (called once, with the distinct clusters of the entries, ascending).
    caps
        ``[C]`` most weight per cluster.
    min_share
        A node joins only a cluster it is connected to by at least this fraction of
        its best connection to any other cluster, full or not (0: any with room).
    seed, salt
        Ties go to the cluster of lowest seeded hash (:func:`.kernels.node_order`).

    Returns
    -------
    (node, cluster, gain) per proposing node, sorted by node; the gain is the
    connection to the new cluster minus the connection to the own one (> 0); then
    ``(node, cluster, connection)`` of the other cluster each node
    is most connected to, full or not (ties: lowest seeded hash, as the joins), sorted
    by node; the two-hop clustering (:func:`two_hop_joins`) groups the nodes that
    could not join it; last, how many clusters a node would have joined but for the
    caps (each beat every cluster with room weighed before it): 0 means that any larger
    ``caps`` give the same joins (a cluster weight shares such levels with the larger
    ones, :mod:`.shared_levels`), and larger caps never count more. A cluster's room is
    checked only when it would win: the favourite first, the one picked when it has room
    (issue #38: a random read of the cluster table per check; on level 0 of the 1M-node
    graph, where a node's clusters tie at weight 1, checking each tied cluster took the
    kernel 144 / 260 ms on two captured blocks, 104 / 132 ms since).
    """
    u, c, w = (ints(x) for x in (u, c, w))
    own = np.ascontiguousarray(own, np.int64)
    hid = np.empty(0, np.int64)
    if callable(cluster_weight):  # the rows of the clusters named, in ID order
        hid, c, own = _cluster_rows(c, own)
        table = ints(cluster_weight(hid))
    else:
        table = ints(cluster_weight)  # int32 stays int32 (whole tables)
    caps = np.ascontiguousarray(caps, np.int64)
    *got, blocked = joins_kernel(
        u,
        c,
        hid,
        w,
        own,
        hash_key(seed, salt),
        table.reshape(-1, caps.size),
        np.ascontiguousarray(node_weight, np.int64).reshape(-1, caps.size),
        caps,
        float(min_share),
    )
    node, cluster, gain, fnode, fcluster, fconn = got
    if hid.size:
        cluster, fcluster = hid[cluster], hid[fcluster]
    return node, cluster, gain, fnode, fcluster, fconn, int(blocked)


DENSE_ROW_IDS = 1 << 28
"""The most cluster IDs numbered through a bitmap (2 bits per ID with its counts: 64 MiB,
as large as a table read whole, :data:`.tables.WHOLE_TABLE_BYTES`); above, ``np.unique``."""


def _cluster_rows(c: IdArray, own: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """The distinct clusters ``c`` names (>= 0, ascending) and ``c`` and ``own`` as rows
    of them (-1: none; an own cluster no entry names is none).

    Issue #38 (h-10m): the cluster weights of a level too large to hold whole (10M nodes
    x 4 columns) were gathered once per entry, and the kernel sorted every node's
    entries by cluster: at 10M nodes / 100M edges the gather (random reads across the
    table's blocks) and the sorts took 49% and 30% of the first level's clustering. The
    distinct clusters are read one block after another, and the kernel sums per row.

    Below :data:`DENSE_ROW_IDS` cluster IDs the rows are numbered through a bitmap of the
    IDs (:func:`.node_kernels.dense_cluster_rows`) instead of ``np.unique``'s sort: at
    10M nodes / 100M edges, ``np.unique`` and its ``searchsorted`` took 19% of the first
    level's thread time (a block of 5.2M random IDs below 10M: 541 -> 68 ms).
    """
    extent = max(int(c.max()), int(own.max())) + 1 if c.size and own.size else 0
    if 0 < extent <= DENSE_ROW_IDS:
        return dense_cluster_rows(c, own, extent)  # the rows in c's type (ints)
    ids, rows = np.unique(c, return_inverse=True)
    rows = rows.reshape(-1)
    if ids.size and ids[0] < 0:  # entries without a cluster stay -1
        ids, rows = ids[1:], rows - 1
    at = np.minimum(np.searchsorted(ids, own), max(ids.size - 1, 0))
    named = (own >= 0) & (ids[at] == own) if ids.size else np.zeros(own.size, bool)
    return ids.astype(np.int64), ints(rows.astype(c.dtype, copy=False)), np.where(named, at, -1).astype(np.int64)


def two_hop_joins(node: IdArray, favourite: IdArray, *, seed: int, salt: int) -> tuple[IdArray, IdArray]:
    """Two-hop clustering (as KaMinPar's and Mt-KaHyPar's for nodes left alone): nodes
    with the same favourite cluster join one of them, the *leader* (lowest seeded hash
    of its ID). Returns ``(member, leader)`` for every node but the leaders (groups of
    one give nothing); the caller puts them through the cluster caps."""
    node, favourite = np.asarray(node, np.int64), np.asarray(favourite, np.int64)
    if node.size < 2:
        empty = np.empty(0, np.int64)
        return empty, empty
    rank = node_order(node, seed=seed, salt=salt)
    order = np.lexsort((rank, favourite))
    node, favourite = node[order], favourite[order]
    first = np.concatenate([[True], favourite[1:] != favourite[:-1]])
    leader = node[np.flatnonzero(first)][np.cumsum(first) - 1]
    member = ~first
    return node[member], leader[member]


def accept_joins(
    c: IdArray,
    conn: IdArray,
    rank: npt.NDArray[np.uint64],
    node_weight: IdArray,
    cluster_weight: IdArray,
    caps: IdArray,
) -> npt.NDArray[np.bool_]:
    """Which proposals to a cluster are accepted: most connected first (then ``rank``),
    while the cluster's weight plus the accepted ones stays within ``caps`` in every column.

    ``c``, ``conn``, ``rank`` and ``node_weight`` (``[k, C]``) have one row per proposal;
    ``cluster_weight`` (``[k, C]``) is the weight of each proposal's cluster.
    """
    accept = np.zeros(c.size, bool)
    if c.size == 0:
        return accept
    order = np.lexsort((rank, -conn, c))
    cs, nw = c[order], node_weight[order]
    starts = np.flatnonzero(np.concatenate([[True], cs[1:] != cs[:-1]]))
    first = np.repeat(starts, np.diff(np.concatenate([starts, [cs.size]])))
    csum = np.cumsum(nw, axis=0)
    cum = csum - csum[first] + nw[first]  # running weight within each cluster's group
    fits = np.all(cluster_weight[order] + cum <= caps[None, :], axis=1)
    # weights are >= 0, so the fitting proposals of a cluster form a prefix of its group
    accept[order] = fits
    return accept


def contract_entries(cu: IdArray, cv: IdArray, w: IdArray) -> tuple[IdArray, IdArray, IdArray]:
    """Entries between clusters: drop the internal ones, sum the weights of equal
    ``(cu, cv)`` pairs; sorted by ``(cu, cv)``."""
    keep = cu != cv
    cu, cv, w = cu[keep], cv[keep], w[keep]
    if cu.size == 0:
        return cu, cv, w
    return pair_sums(cu, cv, w)


def weighted_csr(u: IdArray, v: IdArray, w: IdArray, num_nodes: int) -> tuple[IdArray, IdArray, IdArray]:
    """Symmetric weighted CSR ``(xadj, adjncy, eweights)`` of entries given in both
    directions (equal pairs summed, self-loops dropped). ``adjncy`` and ``eweights`` are
    int32 when ``u``, ``v`` and ``w`` all are (each pair's sum must fit ``w``'s type),
    else int64; ``xadj`` is int64."""
    same = np.int32 if all(np.asarray(x).dtype == np.int32 for x in (u, v, w)) else np.int64
    cu, cv, cw = contract_entries(np.asarray(u, same), np.asarray(v, same), np.asarray(w, same))
    xadj = np.searchsorted(cu, np.arange(num_nodes + 1, dtype=np.int64)).astype(np.int64)
    return xadj, cv, cw


def strongest_clusters(
    u: IdArray, c: IdArray, own: IdArray, *, ids: IdArray, seed: int, salt: int, table: IdArray | None = None
) -> IdArray:
    """Per node, the cluster it has the most entries to (``u`` block-local, ``c`` the
    neighbour's cluster, -1: none, left out): its own ``own`` on a tie, else the one of
    lowest seeded hash of the pair (node ``ids``, cluster), so that tied nodes do not all
    pick one cluster; ``own`` when it has no entry (:func:`.node_kernels.strongest_kernel`).
    With ``table`` (every node's cluster, by global ID), ``c`` holds the neighbours
    and the kernel looks their clusters up (no array per entry)."""
    c = ints(c)
    out: IdArray = strongest_kernel(
        ints(u),
        c,
        ints(own),
        np.ascontiguousarray(ids, np.int64),
        hash_key(seed, salt),
        hash_key(seed, salt + 1),
        np.empty(0, c.dtype) if table is None else ints(table),
    )
    return out


def accept_in_passes(
    c: IdArray,
    conn: IdArray,
    rank: npt.NDArray[np.uint64],
    node_weight: IdArray,
    cluster_weight: IdArray,
    caps: IdArray,
    *,
    passes: int,
) -> npt.NDArray[np.bool_]:
    """:func:`accept_joins` in up to ``passes`` passes, adding the accepted weights to
    ``cluster_weight`` (indexed by ``c``, updated in place): after a pass, the
    proposals that no longer fit alone are dropped and the next pass takes the rest in
    the same order, so a heavy proposal does not turn away the lighter ones after it
    (one pass: :func:`accept_joins` alone). Issue #38: at 1M nodes / 10M edges the
    second coarse level kept 80k clusters with one pass, 74k with eight."""
    accept = np.zeros(c.size, bool)
    todo = np.arange(c.size)
    for left in range(passes - 1, -1, -1):
        got = todo[accept_joins(c[todo], conn[todo], rank[todo], node_weight[todo], cluster_weight[c[todo]], caps)]
        accept[got] = True
        np.add.at(cluster_weight, c[got], node_weight[got])
        if left == 0:  # the last pass: no next one to prune for
            break
        todo = todo[~accept[todo]]
        todo = todo[np.all(cluster_weight[c[todo]] + node_weight[todo] <= caps[None, :], axis=1)]
        if todo.size == 0:
            break
    return accept
