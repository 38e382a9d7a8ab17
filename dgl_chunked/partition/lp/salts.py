"""Every random-seed salt of the ``lp`` method, in one place.

Each random choice hashes ``(seed, salt, node)`` (:func:`.kernels.node_order`); the salt
tells apart the choices of one run, so no two steps rank the nodes alike. The bases are
powers of two far enough apart that the offsets added to them (a round, a level, a pass)
never reach the next base. A task that draws more than one ranking adds 1 and 2 to the
salt it is given. The values are part of the output: changing one changes the
assignment of a given seed.
"""

from __future__ import annotations

__all__ = [
    "balance",
    "coarse_refine",
    "coarsen",
    "fill",
    "movers",
    "placement",
    "purify",
    "refine",
    "retry",
    "settle",
]

_RETRY = 1 << 19  # placement rounds over all degree tiers, after the tiered ones
_FILL = 1 << 20  # the last fill of nodes no round placed (+1: the isolated nodes)
_REFINE = 1 << 21  # refinement pass i
_SETTLE = 1 << 22  # unplacing a projected assignment's excess over the caps
_BALANCE = 1 << 23  # balance round r of a projected assignment
_COARSEN = 1 << 24  # clustering round r of coarsening level L
_MOVERS = 1 << 25  # the nodes that may move in refinement pass i
_COARSE_REFINE = 1 << 26  # refinement round r on coarsening level L
_PURIFY = 1 << 27  # purification round r
_MEASURE_PASS = 63  # the refinement round that measures the streaming cut


def placement(top_tier: int) -> int:
    """A placement round over the degree tiers down to ``top_tier`` (0..63)."""
    return top_tier


def retry(i: int) -> int:
    """Placement retry ``i`` (every tier at once)."""
    return _RETRY + i


def fill(*, isolated: bool) -> int:
    """The fill of the nodes left unplaced (``isolated``: nodes without neighbours)."""
    return _FILL + int(isolated)


def refine(i: int | None = None) -> int:
    """Refinement pass ``i``; ``None``: the round measuring the streaming cut."""
    return _REFINE + (_MEASURE_PASS if i is None else i)


def settle() -> int:
    """Unplacing the excess of a projected assignment."""
    return _SETTLE


def balance(r: int) -> int:
    """Balance round ``r`` of a projected assignment (its moves' ranking)."""
    return _BALANCE + 2 * r


def movers(i: int) -> int:
    """The seeded fraction of nodes that may move in refinement pass ``i``."""
    return _MOVERS + i


def coarsen(level: int, r: int) -> int:
    """Clustering round ``r`` of coarsening level ``level``."""
    return _COARSEN + (level << 8) + 4 * r


def coarse_refine(level: int, r: int) -> int:
    """Refinement round ``r`` on coarsening level ``level``."""
    return _COARSE_REFINE + (level << 8) + 2 * r


def purify(r: int) -> int:
    """Purification round ``r``."""
    return _PURIFY + 2 * r
