"""The ``lp`` balance repair of a projected assignment (the balance rounds: least loss
first, exactly the excess, never over a cap) and the refinement's movers."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition.lp import finalists as F
from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp import multilevel as ML
from dgl_chunked.partition.lp import projection as P
from dgl_chunked.partition.lp import schedule
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp import streaming as D
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.testing import GraphTruth, write_graph_from_truth


def test_signed_priority_is_monotone_and_in_range() -> None:
    gains = np.arange(-5000, 5000)
    prio = K.signed_priority(gains)
    assert prio.min() >= 0 and prio.max() < K.NUM_PRIORITIES
    assert (np.diff(prio) >= 0).all()
    # a gain never ranks below a loss, and the first steps are told apart
    assert K.signed_priority(np.array([-2, -1, 0, 1])).tolist() == [55, 63, 64, 72]


def test_propose_balance_matches_a_direct_rule() -> None:
    rng = np.random.default_rng(3)
    hist = rng.integers(0, 5, (300, 4))
    part = rng.integers(0, 4, 300)
    open_parts = np.array([[True, False, True, False], [False, False, False, False], [True, True, True, True]])
    stratum = rng.integers(0, 3, 300).astype(np.int32)
    target, prio = K.propose_balance(hist, part, stratum, open_parts=open_parts)
    for i in range(300):
        room = [q for q in range(4) if q != part[i] and open_parts[stratum[i], q]]
        if not room:
            assert target[i] == -1 and prio[i] == 0, i
            continue
        best = max(room, key=lambda q: (hist[i, q], -q))
        assert target[i] == best, i
        assert prio[i] == K.signed_priority(np.array([hist[i, best] - hist[i, part[i]]]))[0], i


def test_movers_are_a_seeded_fraction_of_the_nodes() -> None:
    ids = np.arange(100_000)
    half = K.movers(ids, seed=1, salt=5, fraction=0.5)
    assert 0.49 < half.mean() < 0.51
    np.testing.assert_array_equal(half, K.movers(ids, seed=1, salt=5, fraction=0.5))  # a function of the ID
    assert (half != K.movers(ids, seed=1, salt=6, fraction=0.5)).mean() > 0.4  # a new coin per salt
    assert K.movers(ids, seed=1, salt=5, fraction=1.0).all()
    quarter = K.movers(ids, seed=1, salt=5, fraction=0.25)
    assert 0.24 < quarter.mean() < 0.26 and not (quarter & ~half).any()  # nested: the lowest hashes


def _plan_excess(keys: np.ndarray, counts: np.ndarray, sizes: np.ndarray, caps: np.ndarray, parts: int) -> np.ndarray:
    acc_n, acc_w = schedule.plan_excess(
        keys,
        counts,
        np.zeros(keys.size, np.int64),
        sizes=sizes,
        caps=caps,
        wsizes=np.zeros(parts, np.int64),
        wcap=None,
        num_parts=parts,
    )
    assert (acc_w == 0).all()
    return acc_n


def test_plan_excess_moves_the_least_loss_first_and_exactly_the_excess() -> None:
    # stratum 0, 3 parts, cap 10: part 0 holds 14 (4 over), part 1 8 (room 2), part 2 9 (room 1)
    keys = K.group_key(
        np.zeros(4), np.zeros(4), np.array([1, 1, 2, 2]), K.signed_priority(np.array([-3, 2, 0, -1])), num_parts=3
    )
    acc = _plan_excess(keys, np.array([5, 1, 5, 5]), np.array([[14, 8, 9]]), np.array([10]), 3)
    # by priority: gain 2 (1 node to part 1), gain 0 (1 to part 2: its room), loss 1
    # (part 2 full now: none), loss 3 (1 more to part 1, whose room is then spent)
    assert dict(zip(K.split_group_key(keys, num_parts=3)[3].tolist(), acc.tolist(), strict=True)) == {
        int(K.signed_priority(np.array([2]))[0]): 1,
        int(K.signed_priority(np.array([0]))[0]): 1,
        int(K.signed_priority(np.array([-1]))[0]): 0,
        int(K.signed_priority(np.array([-3]))[0]): 1,
    }
    # part 0 is still 1 over: a later round finds no room left anywhere (caps x parts >= n)


def test_plan_excess_never_exceeds_a_cap_nor_the_excess() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        strata, parts = int(rng.integers(1, 4)), int(rng.integers(2, 7))
        caps = rng.integers(5, 30, strata)
        sizes = np.clip(caps[:, None] + rng.integers(-8, 8, (strata, parts)), 0, None)
        g = 40
        s, p, q = rng.integers(0, strata, g), rng.integers(0, parts, g), rng.integers(0, parts, g)
        keep = p != q
        keys, idx = np.unique(
            K.group_key(s[keep], p[keep], q[keep], rng.integers(0, 128, keep.sum()), num_parts=parts),
            return_index=True,
        )
        counts = rng.integers(1, 6, keys.size)
        acc = _plan_excess(keys, counts, sizes, caps, parts)
        ss, pp, qq, prio = K.split_group_key(keys, num_parts=parts)
        after = sizes.copy()
        np.add.at(after, (ss, qq), acc)
        np.subtract.at(after, (ss, pp), acc)
        excess = np.clip(sizes - caps[:, None], 0, None)
        assert (acc <= counts).all()
        # no part goes over a cap it was within, and an over-cap one ends at or above its cap
        assert (
            after[sizes <= caps[:, None]] <= np.broadcast_to(caps[:, None], sizes.shape)[sizes <= caps[:, None]]
        ).all()
        left = np.zeros_like(sizes)
        np.add.at(left, (ss, pp), acc)
        assert (left <= excess).all()
        # least loss first: a group got nothing only when its pair's excess or its target's room was spent
        for i in np.flatnonzero(acc < counts):
            done = left[ss[i], pp[i]] == excess[ss[i], pp[i]]
            full = after[ss[i], qq[i]] >= caps[ss[i]]
            assert done or full, i


def _graph(tmp_path: Path, n: int, edges: list[tuple[int, int]]) -> object:
    src, dst = (np.array(x, np.int64) for x in zip(*edges, strict=True))
    truth = GraphTruth(graph_name="g", num_nodes={"_N": n}, edges={"_N:_E:_N": (src, dst)}, node_data={}, edge_data={})
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=2, feature_chunks=1)
    return open_chunked_graph(tmp_path / "g" / "metadata.json")


def _settle(
    tmp_path: Path, graph: object, part: np.ndarray, parts: int, block_rows: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[np.ndarray, int]:
    """Settle ``part`` as a projected assignment; return the result and the number of
    unplacing tasks run (0: the balance rounds did it all)."""
    config = LPConfig(block_rows=block_rows)
    plan = LPPlan(num_parts=parts, seed=0, balance_edges=False, config=config, block_rows=block_rows, masks=())
    root = S.ScratchRoot(str(tmp_path / "scratch"))
    unplaced: list[int] = []
    real = P.unplace_task

    def counted(*args: object, **kw: object) -> object:
        unplaced.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(P, "unplace_task", counted)
    with dask.config.set(scheduler="synchronous"):
        state = D.prepare(graph, plan, root)  # type: ignore[arg-type]
        level = ML._level0(state, root)
        level.create()
        off = level.offsets
        counts = [P.write_parts(level, b, part[off[b] : off[b + 1]], parts) for b in range(level.num_blocks)]
        F.settle(state, counts, int(state.linked.sum()))
        out = np.concatenate([S.read_block(root, b, "part") for b in range(level.num_blocks)])
    return out, len(unplaced)


def test_settle_moves_the_nodes_that_lose_least(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two parts of 8 nodes (cap 4): part 0 holds 0-5, two over. Nodes 4 and 5 have
    two neighbours in part 1 and one in part 0 (a gain); the clique 0-3 would lose 3-4
    each. Exactly 4 and 5 move, in the balance rounds (nothing unplaced)."""
    clique = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    edges = clique + [(4, 0), (4, 6), (4, 7), (5, 1), (5, 6), (5, 7), (6, 7)]
    graph = _graph(tmp_path, 8, edges)
    part = np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int32)
    got, unplaced = _settle(tmp_path, graph, part, 2, 4, monkeypatch)
    assert got.tolist() == [0, 0, 0, 0, 1, 1, 1, 1] and unplaced == 0


def test_settle_keeps_every_cap_on_a_random_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A skewed projected assignment of a random graph (everything in part 0): the
    balance rounds bring every part within its cap, moving exactly the excess."""
    rng = np.random.default_rng(0)
    n, parts = 600, 4
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    graph = _graph(tmp_path, n, list(zip(src.tolist(), dst.tolist(), strict=True)))
    part = np.where(rng.random(n) < 0.6, 0, rng.integers(0, parts, n)).astype(np.int32)
    got, unplaced = _settle(tmp_path, graph, part, parts, 256, monkeypatch)
    cap = max(-(-n // parts), int(1.05 * n / parts))
    sizes, before = np.bincount(got, minlength=parts), np.bincount(part, minlength=parts)
    assert sizes.max() <= cap and got.min() >= 0
    assert int((got != part).sum()) == int(np.clip(before - cap, 0, None).sum()) and unplaced == 0


@pytest.mark.parametrize("fraction", [0.0, 1.5])
def test_refine_movers_is_a_fraction(fraction: float) -> None:
    from dgl_chunked.errors import AssignmentError

    with pytest.raises(AssignmentError, match="refine_movers"):
        LPConfig(refine_movers=fraction)


def test_metis_cuts_grow_on_small_coarsest_graphs() -> None:
    cfg = LPConfig(metis_ncuts=4, metis_max_ncuts=16, metis_work=1 << 22)
    assert ML.metis_cuts(cfg, 1 << 21) == 4  # budget for 2 only: the floor
    assert ML.metis_cuts(cfg, 1 << 19) == 8
    assert ML.metis_cuts(cfg, 1000) == 16 and ML.metis_cuts(cfg, 0) == 16  # the ceiling
    assert ML.metis_cuts(LPConfig(metis_ncuts=1, metis_max_ncuts=1), 10) == 1
