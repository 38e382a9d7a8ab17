"""The ``lp`` driver state's snapshot/restore and the run's seed salts."""

from __future__ import annotations

import itertools

import numpy as np

from dgl_chunked.partition.lp import salts
from dgl_chunked.partition.lp.streaming import Sizes, State


def _state() -> State:
    z = np.zeros(0, np.int64)
    return State(
        plan=None,  # type: ignore[arg-type]
        root=None,  # type: ignore[arg-type]
        num_nodes=0,
        block_counts=z,
        tier_counts=np.zeros((0, 63), np.int64),
        segs=[],
        table=z,
        tier_weight=z,
        caps=z,
        wcap=None,
        alpha=1.0,
        sizes=np.array([[3, 4]], np.int64),
        wsizes=np.array([7, 8], np.int64),
        placed=np.array([[7]], np.int64),
    )


def test_snapshot_and_restore_copy_the_balance_tables() -> None:
    state = _state()
    snap = state.snapshot()
    assert isinstance(snap, Sizes)
    state.sizes[0, 0] = 99
    state.wsizes += 1
    assert snap.sizes.tolist() == [[3, 4]] and snap.wsizes.tolist() == [7, 8]
    state.restore(snap)
    assert state.sizes.tolist() == [[3, 4]] and state.wsizes.tolist() == [7, 8] and state.placed.tolist() == [[7]]
    state.placed[0, 0] = 0  # the snapshot can be restored again
    state.restore(snap)
    assert state.placed.tolist() == [[7]]


def test_salts_keep_their_values_and_never_collide() -> None:
    # the values are part of the output: a given seed's assignment depends on them
    assert (salts.placement(5), salts.retry(2), salts.fill(isolated=True), salts.refine()) == (
        5,
        (1 << 19) + 2,
        (1 << 20) + 1,
        (1 << 21) + 63,
    )
    assert (salts.settle(), salts.coarsen(3, 2), salts.coarse_refine(3, 2), salts.purify(4)) == (
        1 << 22,
        (1 << 24) + (3 << 8) + 8,
        (1 << 26) + (3 << 8) + 4,
        (1 << 27) + 8,
    )
    assert (salts.balance(2), salts.movers(5)) == ((1 << 23) + 4, (1 << 25) + 5)
    # every ranking of a run with up to 32 levels, 16 rounds and 63 passes: a coarsening
    # round draws salt, +1, +2; a coarse refinement and a purification round salt, +1
    drawn = [salts.placement(t) for t in range(64)] + [salts.retry(i) for i in range(3)]
    drawn += [salts.fill(isolated=x) for x in (False, True)] + [salts.refine(i) for i in range(63)]
    drawn += [salts.refine(), salts.settle()] + [salts.balance(r) for r in range(16)]
    drawn += [salts.movers(i) for i in range(63)]
    for level, r in itertools.product(range(32), range(16)):
        drawn += [salts.coarsen(level, r) + k for k in range(3)]
        drawn += [salts.coarse_refine(level, r) + k for k in range(2)]
    drawn += [salts.purify(r) + k for r in range(16) for k in range(2)]
    assert len(set(drawn)) == len(drawn)


def test_kept_array_is_built_once_per_key_and_released() -> None:
    from dgl_chunked.partition.lp import store

    builds: list[int] = []

    def build() -> np.ndarray:
        builds.append(1)
        return np.arange(len(builds) * 3)

    first = store.kept_array(("assignment", "r1"), build)
    assert store.kept_array(("assignment", "r1"), build) is first and len(builds) == 1
    second = store.kept_array(("assignment", "r2"), build)  # a new round: read again
    assert second.tolist() == list(range(6)) and len(builds) == 2
    store.release_pools()
    assert store.kept_array(("assignment", "r2"), build).tolist() == list(range(9)) and len(builds) == 3
    store.release_pools()
