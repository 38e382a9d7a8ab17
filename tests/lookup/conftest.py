"""The partitions lookup runs on: remap's fixtures (a heterogeneous synthetic graph, a keyed planted graph,
a graph with GSProcessing's raw_id_mappings, partitions with orig_*ids.dgl in random order)."""

from __future__ import annotations

from tests.remap.conftest import Parts, hetero, keyed
from tests.remap.gsp_mappings import gsp
from tests.remap.shuffled_parts import shuffled

__all__ = ["Parts", "gsp", "hetero", "keyed", "shuffled"]
