"""What :func:`~dgl_chunked.verify.verify_partitions` returns: the problems and the counts checked."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_PROBLEMS_PER_TASK", "VerifyCounts", "VerifyReport"]

MAX_PROBLEMS_PER_TASK = 5
"""At most this many problems are reported per node-block, edge-file or feature-file task."""


@dataclass
class VerifyCounts:
    """What was checked: partitions, and input nodes, edges and feature rows found in the output.

    Per-type counts are keyed by the type name as in the input's ``metadata.json``
    (edge types as ``"src:rel:dst"``), feature rows by the output key
    ``"<type>/<feature>"`` (the key in ``node_feat.dgl`` / ``edge_feat.dgl``). A count
    is the number of input IDs stored in some partition, so it equals the input's size
    only when the report is ok. Counts that were never reached (verification stopped
    early) stay 0 / absent.
    """

    partitions: int = 0
    nodes_per_type: dict[str, int] = field(default_factory=dict)
    edges_per_type: dict[str, int] = field(default_factory=dict)
    node_feature_rows: dict[str, int] = field(default_factory=dict)
    edge_feature_rows: dict[str, int] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        """Input nodes found, all types."""
        return sum(self.nodes_per_type.values())

    @property
    def edges(self) -> int:
        """Input edges found, all types."""
        return sum(self.edges_per_type.values())

    @property
    def feature_rows(self) -> int:
        """Feature rows compared, node and edge features together."""
        return sum(self.node_feature_rows.values()) + sum(self.edge_feature_rows.values())

    def summary(self) -> str:
        """One line for people, e.g. ``"65 edges, 97 feature rows, 32 nodes, 2 partitions"``."""
        totals = {"edges": self.edges, "feature rows": self.feature_rows, "nodes": self.nodes}
        return ", ".join([*(f"{v} {k}" for k, v in totals.items()), f"{self.partitions} partitions"])


@dataclass
class VerifyReport:
    """Problems found (empty when the output is correct) and what was checked."""

    problems: list[str] = field(default_factory=list)
    checked: VerifyCounts = field(default_factory=VerifyCounts)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def expect(self, condition: bool, message: str) -> bool:
        """Record ``message`` as a problem unless ``condition`` holds; return ``condition``."""
        if not condition:
            self.problems.append(message)
        return condition
