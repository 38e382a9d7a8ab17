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
from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp.kernels import node_order
from dgl_chunked.partition.lp.node_kernels import (
    cut_entries,
    gather,
    mover_entries,
    part_gains,
    refinement_gains,
    sorted_by,
)
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


@pytest.mark.parametrize(("n", "rows", "parts"), [(0, 3, 2), (1, 1, 1), (500, 40, 4), (5000, 300, 8), (2000, 10, 64)])
def test_part_gains_equal_the_numpy_version(n: int, rows: int, parts: int) -> None:
    """The coarse-level refinement's best part and gain per node against the numpy steps
    it replaced (a bincount of float weights, argmax: ties to the lowest part; an
    unplaced node, -1, reads the last column)."""
    rng = np.random.default_rng(n + rows)
    u = rng.integers(0, rows, n)
    v = rng.integers(0, 3 * rows, n)
    w = rng.integers(1, 4, n)
    table = rng.integers(0, parts, 3 * rows)
    part = rng.integers(-1, parts, rows)
    hist = np.bincount(u * parts + table[v], weights=w, minlength=rows * parts).reshape(rows, parts)
    best = np.argmax(hist, axis=1)
    gain = hist[np.arange(rows), best] - hist[np.arange(rows), part]
    for dtype in (np.int64, np.int32):
        got = part_gains(*(x.astype(dtype) for x in (u, v, w, table, part)), parts)
        assert got[0].tolist() == best.tolist() and got[1].tolist() == gain.astype(np.int64).tolist()


def _old_refinement_gains(hist: np.ndarray, part: np.ndarray, stratum: np.ndarray, open_parts: np.ndarray) -> tuple:
    """kernels.propose_refinement's steps before issue #38's compiled pass (an unplaced
    node, -1, reads the last column, as numpy's indexing)."""
    idx = np.arange(hist.shape[0])
    own = hist[idx, part]
    others = np.array(hist, np.int64)
    others[idx, part] = -1
    best_any = np.argmax(others, axis=1)
    open_only = np.where(open_parts[stratum], others, -1)
    best_open = np.argmax(open_only, axis=1)
    best = np.where(open_only[idx, best_open] - own > 0, best_open, best_any)
    return best, others[idx, best] - own


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 300),
    parts=st.integers(1, 9),
    strata=st.integers(1, 4),
    top=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_refinement_gains_equal_the_numpy_version(rows: int, parts: int, strata: int, top: int, seed: int) -> None:
    """The refinement proposal's best part and gain per node: ties to the lowest part,
    full parts (one stratum with no part open at all), unplaced nodes, int32 and int64
    counts."""
    rng = np.random.default_rng(seed)
    hist = rng.integers(0, top, (rows, parts))
    part = rng.integers(-1, parts, rows)
    stratum = rng.integers(0, strata, rows).astype(np.int32)
    open_parts = rng.random((strata, parts)) < rng.random()
    open_parts[0] = False
    want = _old_refinement_gains(hist, part, stratum, open_parts)
    for dtype in (np.int32, np.int64):
        got = refinement_gains(hist.astype(dtype), part, stratum, open_parts)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def _old_neighbour_histogram(
    u_local: np.ndarray, v_part: np.ndarray, row_of: np.ndarray | None, *, num_rows: int, num_parts: int
) -> np.ndarray:
    """kernels.neighbour_histogram before issue #38: an int64 key per entry, one bincount."""
    width = num_parts + 1
    keys = (u_local & K.LOCAL_MASK).astype(np.int64)
    if row_of is not None:
        keys = row_of[keys]
    keys = keys * width + v_part + 1
    counts = np.bincount(keys, minlength=(num_rows + 1) * width)
    return counts[: num_rows * width].reshape(num_rows, width)[:, 1:]


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 3000),
    rows=st.integers(1, 400),
    parts=st.integers(1, 70),
    span=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_neighbour_histogram_equals_the_numpy_bincount(n: int, rows: int, parts: int, span: bool, seed: int) -> None:
    """Placed and unplaced (-1) neighbours, both edge directions (bit 31), all rows or a
    span's rows (the others counted nowhere), int8 and int32 partitions."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31))
    v_part = rng.integers(-1, parts, n)
    row_of, num_rows = None, rows
    if span:
        nodes = np.sort(rng.choice(rows, size=int(rng.integers(0, rows + 1)), replace=False))
        row_of, num_rows = K.rows_of(nodes, rows), nodes.size
    want = _old_neighbour_histogram(u, v_part, row_of, num_rows=num_rows, num_parts=parts)
    for part_type, dtype in ((np.int8, np.int64), (np.int32, np.int32)):
        got = K.neighbour_histogram(
            u, v_part.astype(part_type), row_of, num_rows=num_rows, num_parts=parts, dtype=dtype
        )
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        assert got.tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 2000), rows=st.integers(1, 300), parts=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_cut_entries_equal_the_numpy_count(n: int, rows: int, parts: int, seed: int) -> None:
    """The cut check's compiled count against its numpy steps (unplaced nodes, -1, count
    as cut; both edge directions, bit 31)."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, rows, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31))
    v = rng.integers(0, 3 * rows, n)
    part = rng.integers(-1, parts, rows).astype(np.int32)
    whole = rng.integers(-1, parts, 3 * rows).astype(np.int32)
    pu = part[(u & K.LOCAL_MASK).astype(np.int64)]
    want = int(((pu < 0) | (pu != whole[v])).sum())
    for dtype in (np.int32, np.int64):
        assert cut_entries(u, v.astype(dtype), part, whole) == want


@pytest.mark.parametrize("index_type", [np.uint32, np.int32, np.int64])
@pytest.mark.parametrize("table_type", [np.int8, np.int32])
def test_gather_equals_take(index_type: type, table_type: type) -> None:
    """The neighbours' partitions gathered by staged (uint32) or coarse IDs, as np.take."""
    rng = np.random.default_rng(7)
    table = rng.integers(-1, 100, 5000).astype(table_type)
    idx = rng.integers(0, 5000, 20_000).astype(index_type)
    out = np.empty(idx.size, table_type)
    assert gather(table, idx, out) is out
    assert out.tolist() == np.take(table, idx).tolist()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 500), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_sorted_by_is_numpys_stable_argsort(n: int, extent: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, extent, n)
    x, y = rng.integers(0, 1 << 31, n).astype(np.uint32), np.arange(n, dtype=np.int32)
    ox, oy = np.empty_like(x), np.empty_like(y)
    sorted_by(key, extent, x, y, ox, oy)
    order = np.argsort(key, kind="stable")
    assert ox.tolist() == x[order].tolist() and oy.tolist() == y[order].tolist()
