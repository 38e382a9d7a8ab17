"""Compiled per-node kernels of the multilevel ``lp`` clustering (numba; no Dask, no I/O).

Each kernel groups its entries by node with one counting sort (linear: the nodes are
one block's local IDs) and then walks every node's entries once: the weights per
neighbouring cluster are summed (in an array indexed by cluster), and the best,
favourite and fitting clusters are picked in the same loop, ties by the seeded hash of
:func:`.kernels.node_order` (SplitMix64 of ``id + key``). They replace chains of numpy
passes over the ``(node, cluster)`` pairs (grouping, ``reduceat``, ``repeat``, hashing,
gathering the cluster weights of every pair: 18 s of numpy and most of the 50 s of
grouping in issue #38's profile at 1M nodes / 10M edges) and give the same results,
bit for bit (integer sums; ``tests/partition/lp/test_node_kernels.py`` compares them with
the numpy versions on random inputs).

The purification's kernel (:func:`_strongest`) counts a node's entries per cluster in
one array indexed by cluster (the coarsest level's IDs: few); the join proposals
(:func:`_joins`) sum them in an array of as many rows as the cluster table they get
(:func:`_count_merge`): the level's whole table, or the rows of the clusters the block's
entries name (:func:`.coarsen_kernels.joins_and_favourites`). The rounds' and the refinements'
kernels are in :mod:`.round_kernels`. Every kernel
keeps int32 inputs in int32 buffers (:func:`ints`): the scratch files' entries, labels and
cluster maps are int32 below 2**31 IDs (:mod:`.coarsen_tasks`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dgl_chunked.partition.lp.jit import HostKernel, compiled
from dgl_chunked.partition.random import splitmix64

__all__ = [
    "counting_offsets",
    "dense_cluster_rows",
    "hash_key",
    "ints",
    "joins_kernel",
    "mover_entries",
    "strongest_kernel",
]


def ints(x: Any) -> Any:
    """``x`` as a contiguous int32 array when it is one, else int64: the two integer types
    the kernels are compiled for (int32 halves the entries' memory, issue #38)."""
    return np.ascontiguousarray(x, np.int32 if np.asarray(x).dtype == np.int32 else np.int64)


def hash_key(seed: int, salt: int) -> np.uint64:
    """The key of :func:`.kernels.node_order`: ``node_order(x) == splitmix64(x + key)``."""
    return np.uint64(splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(salt))))


def _mix(x: Any) -> Any:  # pragma: no cover - compiled; SplitMix64, as splitmix64
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def counting_offsets(key: Any, lo: int, extent: int) -> Any:  # pragma: no cover - compiled
    """Start of each key's run in a counting sort of ``key`` (``lo`` to ``lo + extent - 1``)."""
    start = np.zeros(extent + 1, np.int64)
    for i in range(key.size):
        start[key[i] - lo + 1] += 1
    for k in range(extent):
        start[k + 1] += start[k]
    return start


def _count_merge(bc: Any, bw: Any, s: int, e: int, acc: Any) -> int:  # pragma: no cover - compiled
    """Sum ``bw[s:e]`` per cluster ``bc`` in place (the distinct clusters in order of
    first sight), through ``acc`` (indexed by cluster, -1 where unseen, and left so:
    weights are >= 0); return the end of the distinct ones. Linear in the node's
    entries (a shell sort per node, as before issue #38's h-10m, was not: the coarse
    levels' nodes have hundreds). Resetting the node's clusters replaced an array of
    per-node stamps as long as the table (15 MB more at 10M nodes' level 1, and a
    second random access per entry)."""
    nd = s
    for i in range(s, e):
        ci = bc[i]
        if acc[ci] < 0:
            acc[ci] = 0
            bc[nd] = ci
            nd += 1
        acc[ci] += bw[i]
    for i in range(s, nd):
        ci = bc[i]
        bw[i] = acc[ci]
        acc[ci] = -1
    return nd


def _top(bc: Any, bw: Any, s: int, e: int, key: Any, node_hash: Any, own: int, hid: Any) -> Any:  # pragma: no cover
    """Of the merged clusters ``bc[s:e]`` (weights ``bw``): the highest weight, the index
    of the tied cluster of lowest hash ``_mix(ID + key) ^ node_hash`` (``ID``: the
    cluster's, ``hid[cluster]`` when ``hid`` is not empty), and whether ``own`` is
    among the tied."""
    best = bw[s]
    for i in range(s + 1, e):
        if bw[i] > best:
            best = bw[i]
    pick = -1
    pick_rank = np.uint64(0)
    own_top = False
    for i in range(s, e):
        if bw[i] != best:
            continue
        if bc[i] == own:
            own_top = True
        r = _mix(np.uint64(hid[bc[i]] if hid.size else bc[i]) + key) ^ node_hash
        if pick < 0 or r < pick_rank:
            pick, pick_rank = i, r
    return best, pick, own_top


def _fits(cw: Any, row: int, nw: Any, k: int, caps: Any) -> bool:  # pragma: no cover - compiled
    """Whether node ``k`` (weights ``nw[k]``) fits cluster row ``row`` of ``cw`` under ``caps``."""
    for col in range(caps.size):  # noqa: SIM110 - numba compiles no generator in all()
        if cw[row, col] + nw[k, col] > caps[col]:
            return False
    return True


def _joins(
    u: Any, c: Any, hid: Any, w: Any, own: Any, key: Any, cw: Any, nw: Any, caps: Any, min_share: float
) -> Any:  # pragma: no cover - compiled
    """See :func:`.coarsen_kernels.joins_and_favourites`: the clusters ``c`` index the
    rows of ``cw``; their IDs (hashed for ties) are ``hid[c]``, or ``c`` when ``hid`` is
    empty. The weights per neighbouring cluster are summed in an array of ``cw``'s rows."""
    rows = own.size
    start = np.zeros(rows + 1, np.int64)
    conn_own = np.zeros(rows, np.int64)
    for i in range(u.size):  # entries to the own cluster summed, to other ones counted
        if c[i] >= 0:
            if c[i] == own[u[i]]:
                conn_own[u[i]] += w[i]
            else:
                start[u[i] + 1] += 1
    for k in range(rows):
        start[k + 1] += start[k]
    pos = start[:-1].copy()
    m = start[rows]
    bc = np.empty(m, c.dtype)  # the entries' types (int32 where the IDs and sums allow)
    bw = np.empty(m, w.dtype)
    for i in range(u.size):
        ci = c[i]
        if ci < 0:
            continue
        k = u[i]
        if ci != own[k]:
            p = pos[k]
            bc[p] = ci
            bw[p] = w[i]
            pos[k] = p + 1
    # sums per cluster in an array as long as the table (the order of the merged
    # clusters does not matter: picks go by weight, then by distinct hashes)
    acc = np.full(cw.shape[0], -1, bw.dtype)
    jn = np.empty(rows, np.int64)
    jc = np.empty(rows, np.int64)
    jg = np.empty(rows, np.int64)
    fn = np.empty(rows, np.int64)
    fc = np.empty(rows, np.int64)
    fconn = np.empty(rows, np.int64)
    nj = 0
    nf = 0
    blocked = 0  # clusters that would have won without room: with larger caps the joins could differ
    for k in range(rows):
        s = start[k]
        e = start[k + 1]
        if e == s:
            continue
        e = _count_merge(bc, bw, s, e, acc)
        # the favourite: most connected other cluster, full or not; ties: lowest hash
        best_all, fav, _ = _top(bc, bw, s, e, key, np.uint64(0), -1, hid)
        fn[nf] = k
        fc[nf] = bc[fav]
        fconn[nf] = best_all
        nf += 1
        # the join: most connected cluster with room, at least min_share of the best (ties:
        # lowest hash, as the favourite); the favourite when it has room, else a scan that
        # checks the room of a cluster only when it would win (each check is a random
        # read of the table: as many as a node's tied clusters on level 0, where every
        # cluster weighs 1)
        floor = min_share * best_all
        pick = -1
        pick_rank = np.uint64(0)
        if bw[fav] >= floor and _fits(cw, bc[fav], nw, k, caps):
            pick = fav
        else:
            if bw[fav] >= floor:
                blocked += 1
            for i in range(s, e):
                if i == fav or not bw[i] >= floor:
                    continue
                if pick >= 0 and bw[i] < bw[pick]:
                    continue
                row = bc[i]
                r = _mix(np.uint64(hid[row] if hid.size else row) + key)
                if pick >= 0 and bw[i] == bw[pick] and r > pick_rank:
                    continue
                if not _fits(cw, row, nw, k, caps):
                    blocked += 1
                    continue
                pick, pick_rank = i, r
        if pick >= 0 and bw[pick] - conn_own[k] > 0:
            jn[nj] = k
            jc[nj] = bc[pick]
            jg[nj] = bw[pick] - conn_own[k]
            nj += 1
    return jn[:nj], jc[:nj], jg[:nj], fn[:nf], fc[:nf], fconn[:nf], blocked


def _strongest(u: Any, c: Any, own: Any, ids: Any, key: Any, key2: Any, table: Any) -> Any:  # pragma: no cover
    """Per node, the cluster it has the most entries to: counted in one array indexed by
    cluster (the coarsest level's IDs: as many as its nodes, which METIS holds in memory
    anyway), not sorted per node; ties as :func:`_top` (equal hashes: the lowest ID).
    With ``table`` (not empty), ``c`` holds the neighbours and ``table`` their
    clusters; entries without a cluster (-1) are left out. The entries are grouped by
    node before their clusters are known (those left out leave gaps at the ends of
    their nodes' runs): one random read of the table per entry, not two. Issue #38, 10M
    nodes / 100M edges on 2 workers: the purification phase 20.8 -> 17.0 s."""
    rows = own.size
    looked_up = table.size > 0
    start = np.zeros(rows + 1, np.int64)
    for i in range(u.size):
        if looked_up or c[i] >= 0:
            start[u[i] + 1] += 1
    for k in range(rows):
        start[k + 1] += start[k]
    pos = start[:-1].copy()  # then the end of each node's clusters
    bc = np.empty(start[rows], table.dtype)
    top = -1
    for i in range(u.size):
        ci = table[c[i]] if looked_up else c[i]
        if ci < 0:
            continue
        k = u[i]
        p = pos[k]
        bc[p] = ci
        pos[k] = p + 1
        top = max(top, ci)
    count = np.zeros(top + 1, np.int32)  # entries per node: fewer than 2**31
    out = own.copy()
    for k in range(rows):
        s = start[k]
        e = pos[k]
        best = 0
        for i in range(s, e):
            count[bc[i]] += 1
            if count[bc[i]] > best:
                best = count[bc[i]]
        node_hash = _mix(np.uint64(ids[k]) + key2)
        pick = -1
        pick_rank = np.uint64(0)
        own_top = False
        for i in range(s, e):
            if count[bc[i]] != best:
                continue
            if bc[i] == own[k]:
                own_top = True
            r = _mix(np.uint64(bc[i]) + key) ^ node_hash
            if pick < 0 or r < pick_rank or (r == pick_rank and bc[i] < pick):
                pick, pick_rank = bc[i], r
        for i in range(s, e):
            count[bc[i]] = 0
        if e > s and not own_top:
            out[k] = pick
    return out


def _movers(u: Any, v: Any, w: Any, movers: Any, label: Any) -> Any:  # pragma: no cover - compiled
    n = u.size
    m = 0
    for i in range(n):  # counted first: the arrays hold the movers' entries only (about half)
        if movers[u[i]]:
            m += 1
    ou = np.empty(m + 1, u.dtype)  # one more: every entry is written, a mover's kept
    oc = np.empty(m + 1, label.dtype)
    ow = np.empty(m + 1, w.dtype)
    m = 0
    for i in range(n):  # no branch: a branch on movers[k] around the gather cancels the
        k = u[i]  # reads in flight when mispredicted (a random read of a 40 MB table at 10M)
        ou[m] = k
        oc[m] = v[i]  # below label.size: fits label's type
        ow[m] = w[i]
        m += movers[k]
    for j in range(m):  # the labels in a loop of independent reads
        oc[j] = label[oc[j]]
    return ou[:m], oc[:m], ow[:m]


def _popcount(x: Any) -> Any:  # pragma: no cover - compiled; the set bits of a uint64 (SWAR)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


def _rank(bits: Any, before: Any, x: int) -> Any:  # pragma: no cover - compiled
    """The row of ID ``x`` (its bit set): the set bits below it."""
    below = (np.uint64(1) << np.uint64(x & 63)) - np.uint64(1)
    return before[x >> 6] + _popcount(bits[x >> 6] & below)


def _dense_rows(c: Any, own: Any, extent: int) -> Any:  # pragma: no cover - compiled
    """See :func:`dense_cluster_rows`: one bit per ID below ``extent``, set in one pass
    over ``c``; an ID's row is the count of set bits below it (the bits of its word, the
    words' counts summed before it: 2 bits of memory per ID)."""
    words = (extent + 63) >> 6
    bits = np.zeros(words, np.uint64)
    for i in range(c.size):
        if c[i] >= 0:
            bits[c[i] >> 6] |= np.uint64(1) << np.uint64(c[i] & 63)
    before = np.empty(words, np.int64)
    m = 0
    for k in range(words):
        before[k] = m
        m += _popcount(bits[k])
    ids = np.empty(m, np.int64)
    m = 0
    for k in range(words):
        word, at = bits[k], k * 64
        while word:
            if word & np.uint64(1):
                ids[m] = at
                m += 1
            word, at = word >> np.uint64(1), at + 1
    rows = np.empty(c.size, c.dtype)
    for i in range(c.size):
        rows[i] = _rank(bits, before, c[i]) if c[i] >= 0 else -1
    own_rows = np.full(own.size, -1, np.int64)
    for k in range(own.size):
        if own[k] >= 0 and (bits[own[k] >> 6] >> np.uint64(own[k] & 63)) & np.uint64(1):
            own_rows[k] = _rank(bits, before, own[k])
    return ids, rows, own_rows


_HELPERS = ("_mix", "_count_merge", "_top", "_fits", "counting_offsets", "_popcount", "_rank")
_KERNELS = {"joins": "_joins", "strongest": "_strongest", "movers": "_movers", "rows": "_dense_rows"}


@functools.cache
def _compiled(name: str) -> HostKernel:
    """The compiled kernel ``name`` (:func:`.jit.compiled`)."""
    return compiled(globals(), _HELPERS, _KERNELS[name])


def joins_kernel(*args: Any) -> Any:
    """The compiled :func:`_joins` (arguments: see :func:`.coarsen_kernels.joins_and_favourites`)."""
    return _compiled("joins")(*args)


def mover_entries(u: Any, v: Any, w: Any, movers: Any, label: Any) -> tuple[Any, Any, Any]:
    """The entries ``(u, label[v], w)`` of the nodes ``u`` with ``movers[u]``, in one
    compiled pass (instead of a mask, three copies and a gather); int32 arrays stay int32."""
    u, v, w, label = (ints(x) for x in (u, v, w, label))
    out: tuple[Any, Any, Any] = _compiled("movers")(u, v, w, np.ascontiguousarray(movers, np.bool_), label)
    return out


def strongest_kernel(*args: Any) -> Any:
    """The compiled :func:`_strongest` (arguments: see :func:`.coarsen_kernels.strongest_clusters`)."""
    return _compiled("strongest")(*args)


def dense_cluster_rows(c: Any, own: Any, extent: int) -> tuple[Any, Any, Any]:
    """The distinct clusters ``c`` names (>= 0, ascending; every ID in ``c`` and ``own``
    below ``extent``), and ``c`` and ``own`` as rows of them (-1: none; an own cluster
    no entry names is none), for :func:`.coarsen_kernels.joins_and_favourites`: through
    a bitmap of ``extent`` bits and a count per 64 of them (no sort).

    Issue #38: an int32 row per ID instead took 20x the memory (40 MB per task at 10M
    IDs, the largest array of level 0's join proposals at 10M nodes / 100M edges) and
    2.4x the time (a block of 5.2M random IDs below 10M: 163 -> 68 ms)."""
    c, own = ints(c), np.ascontiguousarray(own, np.int64)
    out: tuple[Any, Any, Any] = _compiled("rows")(c, own, int(extent))
    return out
