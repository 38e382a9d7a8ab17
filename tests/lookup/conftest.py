"""The partitions lookup runs on: remap's fixtures (a heterogeneous synthetic graph, a keyed planted graph)."""

from __future__ import annotations

from tests.remap.conftest import Parts, hetero, keyed

__all__ = ["Parts", "hetero", "keyed"]
