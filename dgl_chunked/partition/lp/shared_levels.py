"""Coarse levels that the cluster weights of the multilevel ``lp`` method share.

The caps (a cluster weight's most weight per cluster, :func:`.coarsen_kernels.cluster_caps`)
change a coarsening step only through the joins they turn away: a cluster with no
room for a mover in :func:`.coarsen_tasks.propose_task`, a proposal refused in
:func:`.coarsen_tasks.accept_task`. A step that turned none away under caps ``C`` gives
the same coarse level under any caps of at least ``C`` in every column (its seeds and
salts depend on the level and round only). The first cluster weight's steps from
level 0 up to the first one that turned a join away are kept on scratch
(:class:`SharedLevels`), and a later cluster weight takes them, level by level, while
its caps are at least theirs, instead of coarsening again: the output does not change.

Measured (issue #38, ``bench_lp.py --sbm 1000000:10000000 --parts 8``): the first level
(1M -> 374k nodes, 18.7M entries) comes out the same for the cluster weights 0.005 and
0.015; the second differs (148k and 144k nodes).

A later cluster weight that takes every step of the first one ends at its coarsest
level (the budget that stops the coarsening does not depend on the caps) and would
repeat its METIS call, projection and purification, bit for bit: it takes the first
weight's assignments instead (:meth:`SharedLevels.same_as_first`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp import coarsen_tasks as C
from dgl_chunked.partition.lp import finalists as F

__all__ = ["SharedLevels", "Step"]


@dataclass(frozen=True, kw_only=True)
class Step:
    """One coarsening step: the level ``coarse`` made from the level before it."""

    coarse: C.Level
    nodes: int
    entries: int
    rounds: int
    moved: int  # joins accepted
    totals: IdArray  # the weight of the level's nodes per column, the caps' base
    caps: IdArray
    capped: bool  # the caps turned a join away: larger ones may give another level

    @property
    def between(self) -> int:
        """The entries' weight (the coarse level's, :attr:`.coarsen_tasks.Level.weight`)."""
        assert self.coarse.weight is not None, "a step's level knows its weight"
        return self.coarse.weight

    def fits(self, fraction: float, num_parts: int) -> bool:
        """Whether this step gives the same level under the caps of ``fraction``."""
        caps = CK.cluster_caps(self.totals, num_parts, fraction)
        return not self.capped and bool(np.all(caps >= self.caps))


@dataclass
class SharedLevels:
    """The first cluster weight's uncapped steps from level 0, on scratch for the next
    ones; ``level0`` keeps its cluster map (``cid``) while a step is kept."""

    level0: C.Level
    steps: list[Step] = field(default_factory=list)
    first_levels: tuple[int, ...] | None = None  # the first cluster weight's level indices
    first_candidates: list[F.Candidate] = field(default_factory=list)  # ... and its assignments

    @property
    def deepest(self) -> int:
        """The index of the deepest kept level (0: none kept)."""
        return self.steps[-1].coarse.index if self.steps else 0

    def take(self, level: C.Level, fraction: float, num_parts: int) -> Step | None:
        """The kept step from ``level`` when the caps of ``fraction`` give the same level;
        else None, and the kept levels coarser than ``level``, which the caller's
        coarsening of ``level`` makes stale, are removed."""
        if level.index < len(self.steps) and self.steps[level.index].fits(fraction, num_parts):
            return self.steps[level.index]
        self.drop_below(level.index)
        return None

    def drop_below(self, index: int) -> None:
        """Remove the kept levels coarser than level ``index`` (those after its step)."""
        while len(self.steps) > index:
            self.steps.pop().coarse.remove()

    def record(self, steps: list[Step]) -> None:
        """Keep the first cluster weight's steps (every step it made, in order) up to
        the first capped one; later calls change nothing. The levels not kept are the
        caller's to remove."""
        if self.first_levels is not None:
            return
        uncapped = next((i for i, s in enumerate(steps) if s.capped), len(steps))
        self.steps = steps[:uncapped]
        self.first_levels = tuple(s.coarse.index for s in steps)

    def same_as_first(self, taken: list[Step]) -> list[F.Candidate] | None:
        """The first cluster weight's assignments when a later one took all of its steps
        (``taken``, computing none: the same levels give the same assignments); else None."""
        if not taken or not self.first_candidates:
            return None
        return self.first_candidates if tuple(s.coarse.index for s in taken) == self.first_levels else None

    def remove(self) -> None:
        """Remove every kept level and level 0's cluster map (after the last cluster weight)."""
        self.drop_below(0)
        self.level0.remove("cid")
