"""HALO nodes and edges of a partition, in memory bounded by a budget.

- :mod:`.bitmap`: a set of node IDs as one bit per ID of a range, with ranks
  (:class:`HaloBitmap`).
- :mod:`.ranges`: a partition writer's HALO set and local source IDs, one bitmap or
  range by range when the bitmap does not fit the budget.
- :mod:`.edges`: multi-hop HALO, the in-edges of HALO nodes (``halo_hops > 1`` or
  kept HALO edges).
"""

from __future__ import annotations

from dgl_chunked.dispatch.halo.bitmap import HaloBitmap
from dgl_chunked.dispatch.halo.edges import HaloEdges, collect_halo_edges

__all__ = ["HaloBitmap", "HaloEdges", "collect_halo_edges"]
