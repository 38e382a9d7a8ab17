"""The compiled per-node kernels of the multilevel ``lp`` clustering against the numpy
versions they replaced (issue #38): equal outputs, element for element, on random
inputs (hypothesis), so the ``lp`` output does not change."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp.kernels import node_order
from dgl_chunked.partition.lp.node_kernels import dense_cluster_rows, mover_entries
from dgl_chunked.partition.lp.pair_sums import pair_sums

IdArray = np.ndarray

# --- the numpy versions (dgl_chunked/partition/lp/coarsen_kernels.py before issue #38) ---


def _old_joins_and_favourites(
    u: IdArray,
    c: IdArray,
    w: IdArray,
    *,
    own: IdArray,
    node_weight: IdArray,
    cluster_weight: Callable[[IdArray], IdArray],
    caps: IdArray,
    seed: int,
    salt: int,
    min_share: float = 0.0,
) -> tuple[IdArray, ...]:
    empty = np.empty(0, np.int64)
    ok = c >= 0
    home = ok & (c == own[u])
    conn_own = np.bincount(u[home], weights=w[home], minlength=own.size).astype(np.int64)
    ok &= ~home
    u, c, w = u[ok], c[ok], w[ok]
    if u.size == 0:
        return empty, empty, empty, empty, empty, empty
    u, c, conn = pair_sums(u, c, w)
    starts = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    counts = np.diff(np.concatenate([starts, [u.size]]))
    best_all = np.repeat(np.maximum.reduceat(conn, starts), counts)
    rank_all = node_order(c, seed=seed, salt=salt)
    top_all = conn == best_all
    rank = np.where(top_all, rank_all, np.iinfo(np.uint64).max)
    fav = top_all & (rank == np.repeat(np.minimum.reduceat(rank, starts), counts))
    favourites = (u[fav], c[fav], conn[fav])
    fits = np.all(cluster_weight(c) + node_weight[u] <= caps[None, :], axis=1)
    fits &= conn >= min_share * best_all
    u, c, conn, rank_all = u[fits], c[fits], conn[fits], rank_all[fits]
    if u.size == 0:
        return (empty, empty, empty, *favourites)
    starts = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    counts = np.diff(np.concatenate([starts, [u.size]]))
    top = conn == np.repeat(np.maximum.reduceat(conn, starts), counts)
    rank = np.where(top, rank_all, np.iinfo(np.uint64).max)
    pick = top & (rank == np.repeat(np.minimum.reduceat(rank, starts), counts))
    u, c, gain = u[pick], c[pick], conn[pick] - conn_own[u[pick]]
    better = gain > 0
    return (u[better], c[better], gain[better], *favourites)


def _old_strongest_clusters(u: IdArray, c: IdArray, own: IdArray, *, ids: IdArray, seed: int, salt: int) -> IdArray:
    out = np.array(own, np.int64, copy=True)
    if u.size == 0:
        return out
    u, c, conn = pair_sums(u, c, np.ones(u.size, np.int64))
    starts = np.flatnonzero(np.concatenate([[True], u[1:] != u[:-1]]))
    counts = np.diff(np.concatenate([starts, [u.size]]))
    top = conn == np.repeat(np.maximum.reduceat(conn, starts), counts)
    pair = node_order(c, seed=seed, salt=salt) ^ node_order(np.asarray(ids, np.int64)[u], seed=seed, salt=salt + 1)
    rank = np.where(top, pair, np.iinfo(np.uint64).max)
    pick = top & (rank == np.repeat(np.minimum.reduceat(rank, starts), counts))
    own_top = u[top & (c == out[u])]
    out[u[pick]] = c[pick]
    out[own_top] = own[own_top]
    return out


# --- random inputs ----------------------------------------------------------------------


@st.composite
def _clustering(draw: st.DrawFn) -> dict[str, object]:
    """A block of ``rows`` nodes, entries to ``clusters`` clusters (few: many ties and
    repeated pairs; some without a cluster), weights of 1-2 columns near the caps."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = draw(st.integers(1, 60))
    clusters = draw(st.integers(1, 40))
    n = draw(st.integers(0, 400))
    width = draw(st.integers(1, 2))
    u = rng.integers(0, rows, n)
    if draw(st.booleans()):  # hubs: most entries on a few nodes
        u = np.minimum(u, rng.integers(0, 3, n))
    c = rng.integers(-1 if draw(st.booleans()) else 0, clusters, n)
    w = rng.integers(1, draw(st.integers(1, 4)) + 1, n)
    caps = rng.integers(1, 6, width)
    return {
        "u": u.astype(np.int64),
        "c": c.astype(np.int64),
        "w": w.astype(np.int64),
        "own": rng.integers(0, clusters, rows).astype(np.int64),
        "node_weight": rng.integers(0, 3, (rows, width)).astype(np.int64),
        "table": rng.integers(0, 6, (clusters, width)).astype(np.int64),
        "caps": caps.astype(np.int64),
        "seed": seed % 1000,
        "salt": draw(st.integers(0, 50)),
        "min_share": draw(st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0])),
    }


@settings(max_examples=300, deadline=None)
@given(_clustering())
def test_joins_and_favourites_equal_the_numpy_version(case: dict[str, object]) -> None:
    table = case.pop("table")
    assert isinstance(table, np.ndarray)
    u, c, w = case.pop("u"), case.pop("c"), case.pop("w")
    want = _old_joins_and_favourites(u, c, w, cluster_weight=lambda ids: table[ids], **case)  # type: ignore[arg-type]
    for cluster_weight in (table, lambda ids: table[ids]):  # the whole table, or a lookup
        *got, _ = CK.joins_and_favourites(u, c, w, cluster_weight=cluster_weight, **case)  # type: ignore[arg-type]
        assert [x.tolist() for x in got] == [x.tolist() for x in want]
        assert all(x.dtype == np.int64 for x in got)
    with pytest.MonkeyPatch.context() as mp:  # the lookup's rows numbered by np.unique (IDs above the dense limit)
        mp.setattr(CK, "DENSE_ROW_IDS", 0)
        *got, _ = CK.joins_and_favourites(u, c, w, cluster_weight=lambda ids: table[ids], **case)  # type: ignore[arg-type]
        assert [x.tolist() for x in got] == [x.tolist() for x in want]
    narrow = {k: v.astype(np.int32) if k == "own" else v for k, v in case.items()}  # the scratch files' int32
    *got, _ = CK.joins_and_favourites(*(x.astype(np.int32) for x in (u, c, w)), cluster_weight=table, **narrow)  # type: ignore[arg-type, union-attr]
    assert [x.tolist() for x in got] == [x.tolist() for x in want]


@settings(max_examples=300, deadline=None)
@given(_clustering(), st.integers(0, 3))
def test_joins_turned_away_by_no_cap_stay_the_same_under_larger_caps(case: dict[str, object], more: int) -> None:
    """The count of clusters without room decides whether a coarsening step is the same
    for a larger cluster weight (:mod:`.shared_levels`): 0 means any larger caps give
    the same joins and favourites; larger caps never turn away more."""
    table = case.pop("table")
    assert isinstance(table, np.ndarray)
    u, c, w = case.pop("u"), case.pop("c"), case.pop("w")
    *got, blocked = CK.joins_and_favourites(u, c, w, cluster_weight=table, **case)  # type: ignore[arg-type]
    caps = case.pop("caps")
    assert isinstance(caps, np.ndarray)
    larger = caps + more
    *wider, blocked_wider = CK.joins_and_favourites(u, c, w, cluster_weight=table, caps=larger, **case)  # type: ignore[arg-type]
    free = {**case, "caps": np.full_like(caps, 1 << 40)}
    *unlimited, none = CK.joins_and_favourites(u, c, w, cluster_weight=table, **free)  # type: ignore[arg-type]
    assert none == 0 and blocked >= blocked_wider >= 0
    if blocked == 0:
        assert [x.tolist() for x in wider] == [x.tolist() for x in got]
        assert [x.tolist() for x in unlimited] == [x.tolist() for x in got]
    want = _old_joins_and_favourites(u, c, w, cluster_weight=lambda ids: table[ids], caps=caps, **case)  # type: ignore[arg-type]
    assert [x.tolist() for x in got] == [x.tolist() for x in want]


@pytest.mark.parametrize("salt", range(6))
def test_full_clusters_that_would_not_win_are_not_counted_as_turned_away(salt: int) -> None:
    """A node tied to three clusters joins its favourite when that has room, whether the
    other two are full or not: nothing was turned away (0), so a larger cluster weight
    may share the level; with the favourite full, it joins the next one, and that one
    full cluster is what the caps turned away (1)."""
    u, c, w = np.zeros(3, np.int64), np.array([1, 2, 3]), np.ones(3, np.int64)
    kw = {"own": np.array([0]), "node_weight": np.array([[1]]), "seed": 7, "salt": salt}
    free = CK.joins_and_favourites(u, c, w, cluster_weight=np.zeros((4, 1), np.int64), caps=np.array([5]), **kw)
    fav = int(free[4][0])
    assert free[1].tolist() == [fav] and free[6] == 0
    others = [x for x in (1, 2, 3) if x != fav]
    full_others = np.zeros((4, 1), np.int64)
    full_others[others] = 5
    got = CK.joins_and_favourites(u, c, w, cluster_weight=full_others, caps=np.array([5]), **kw)
    assert got[1].tolist() == [fav] and got[6] == 0
    full_fav = np.zeros((4, 1), np.int64)
    full_fav[fav] = 5
    got = CK.joins_and_favourites(u, c, w, cluster_weight=full_fav, caps=np.array([5]), **kw)
    second = min(others, key=lambda x: int(node_order(np.array([x]), seed=7, salt=salt)[0]))
    assert got[1].tolist() == [second] and got[4].tolist() == [fav] and got[6] == 1


@settings(max_examples=300, deadline=None)
@given(_clustering())
def test_strongest_clusters_equal_the_numpy_version(case: dict[str, object]) -> None:
    u, c, own = case["u"], case["c"], case["own"]
    assert isinstance(u, np.ndarray) and isinstance(c, np.ndarray) and isinstance(own, np.ndarray)
    ok = c >= 0  # the purification passes the entries with a cluster only
    ids = np.arange(own.size, dtype=np.int64) * 7 + 1000
    kw = {"ids": ids, "seed": case["seed"], "salt": case["salt"]}
    want = _old_strongest_clusters(u[ok], c[ok], own, **kw)  # type: ignore[arg-type]
    got = CK.strongest_clusters(u[ok], c[ok], own, **kw)  # type: ignore[arg-type]
    assert got.tolist() == want.tolist()
    assert got is not own
    assert CK.strongest_clusters(u, c, own, **kw).tolist() == want.tolist()  # -1 entries: gaps in the kernel
    narrow = CK.strongest_clusters(u[ok].astype(np.int32), c[ok].astype(np.int32), own.astype(np.int32), **kw)  # type: ignore[arg-type, union-attr]
    assert narrow.dtype == np.int32 and narrow.tolist() == want.tolist()
    # the clusters looked up in the kernel: entry i's neighbour is a node whose cluster is c[i]
    rng = np.random.default_rng(u.size)
    v = rng.permutation(u.size) + 5
    table = np.full(u.size + 5, -1, np.int64)
    table[v] = c
    for dtype in (np.int64, np.int32):
        got = CK.strongest_clusters(
            u.astype(dtype), v.astype(dtype), own.astype(dtype), table=table.astype(dtype), **kw
        )  # type: ignore[arg-type]
        assert got.dtype == np.dtype(dtype) and got.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(_clustering())
def test_mover_entries_equal_the_numpy_selection(case: dict[str, object]) -> None:
    """The proposal's first step: the movers' entries with their neighbours' labels."""
    u, own = case["u"], case["own"]
    assert isinstance(u, np.ndarray) and isinstance(own, np.ndarray)
    rng = np.random.default_rng(u.size)
    v = rng.integers(0, 50, u.size)
    label = rng.integers(-1, 30, 50)
    movers = rng.random(own.size) < 0.5
    keep = movers[u]
    got = mover_entries(u, v, u * 3 + 1, movers, label)
    assert [x.tolist() for x in got] == [u[keep].tolist(), label[v[keep]].tolist(), (u * 3 + 1)[keep].tolist()]
    narrow = mover_entries(*(x.astype(np.int32) for x in (u, v, u * 3 + 1)), movers, label.astype(np.int32))
    assert [x.dtype for x in narrow] == [np.dtype(np.int32)] * 3
    assert [x.tolist() for x in narrow] == [x.tolist() for x in got]


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_mover_entries_of_none_some_and_every_node(share: float, dtype: type) -> None:
    """No mover, some and all (the kernel writes every entry and keeps a mover's): the
    movers' entries in order, no more, with their neighbours' labels."""
    rng = np.random.default_rng(7)
    u = np.sort(rng.integers(0, 1000, 20_000))
    v = rng.integers(0, 50_000, u.size)
    label = rng.integers(-1, 40_000, 50_000)
    movers = rng.random(1000) < share if 0 < share < 1 else np.full(1000, bool(share))
    keep = movers[u]
    got = mover_entries(*(x.astype(dtype) for x in (u, v, v + 1)), movers, label.astype(dtype))
    assert [x.tolist() for x in got] == [u[keep].tolist(), label[v[keep]].tolist(), (v + 1)[keep].tolist()]
    assert [x.dtype for x in got] == [np.dtype(dtype)] * 3


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(1, 400), st.booleans())
def test_dense_cluster_rows_number_the_clusters_as_unique_does(seed: int, n: int, ids: int, narrow: bool) -> None:
    """Rows of the distinct clusters in ID order, as ``np.unique``'s inverse gives them;
    -1 for entries without a cluster and for own clusters no entry names (IDs across
    several 64-bit words of the bitmap)."""
    rng = np.random.default_rng(seed)
    c = rng.integers(-1, ids, n).astype(np.int32 if narrow else np.int64)
    own = rng.integers(-1, ids, 20)
    named, c_rows, own_rows = dense_cluster_rows(c, own, ids)
    want = np.unique(c[c >= 0])
    assert named.tolist() == want.tolist() and named.dtype == np.int64
    assert c_rows.dtype == c.dtype
    assert c_rows.tolist() == [int(np.searchsorted(want, x)) if x >= 0 else -1 for x in c]
    assert own_rows.tolist() == [int(np.searchsorted(want, x)) if x in set(want.tolist()) else -1 for x in own]
