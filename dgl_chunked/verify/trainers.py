"""``trainer_id`` data: with ``T`` trainers per machine, partition ``p``'s items name trainers ``[p*T, (p+1)*T)``.

DGL's ``partition_graph`` with ``num_trainers_per_machine = T > 1`` (and our
``run --num-trainers-per-machine``) partitions into ``P*T`` parts, stores each node's
part as ``<ntype>/trainer_id`` in ``node_feat.dgl`` (DGL also stores each edge's, the
trainer of its destination, as ``<etype>/trainer_id`` in ``edge_feat.dgl``) and then
merges parts ``[p*T, (p+1)*T)`` into partition ``p``. A ``trainer_id`` in the node
data of ``graph.dgl`` is checked the same way, each node against its owner.

Partition tasks reduce what they read to :class:`TrainerSpan` (smallest and largest
trainer of the items one partition owns, per file); :func:`check_trainer_spans`
then checks every span against ``T``: the one given, else the least ``T`` that
holds the largest trainer IDs (no larger ``T`` can fit if that one does not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dgl_chunked._typing import IdArray

__all__ = ["TrainerSpan", "check_trainer_spans", "trainer_spans"]


@dataclass(frozen=True)
class TrainerSpan:
    """Trainer IDs ``[lo, hi]`` that partition ``part``'s ``where`` gives items owned by ``owner``."""

    part: int
    owner: int
    where: str
    lo: int
    hi: int


def trainer_spans(part: int, where: str, trainers: IdArray, owners: IdArray) -> list[TrainerSpan]:
    """One span per owner partition of the items whose trainers are ``trainers``."""
    spans = []
    for q in np.unique(owners).tolist():
        values = trainers[owners == q]
        spans.append(TrainerSpan(part, int(q), where, int(values.min()), int(values.max())))
    return spans


def check_trainer_spans(spans: Sequence[TrainerSpan], num_parts: int, per_machine: int | None) -> list[str]:
    """Problems of spans outside their owner's trainers (``per_machine`` None: infer it)."""
    if not spans:
        return []
    t = per_machine if per_machine is not None else max(1, *(-(-(s.hi + 1) // (s.owner + 1)) for s in spans))
    how = "" if per_machine is not None else " (the least number that fits the largest trainer IDs)"
    problems = []
    for s in spans:
        lo, hi = s.owner * t, (s.owner + 1) * t
        if s.lo < lo or s.hi >= hi:
            problems.append(
                f"part{s.part}: {s.where} names trainers {s.lo}..{s.hi} for items of part{s.owner}; "
                f"with {t} trainers per machine{how} part{s.owner}'s trainers are [{lo}, {hi})"
            )
    return problems
