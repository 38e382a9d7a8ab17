"""Task bodies of the ``lp`` method's purification (:mod:`.multilevel`, step d of
:mod:`.method`): every input node moved to the coarsest-level cluster it has the most
edges to, then the coarsest level's node weights summed again under that map. Files
as in :mod:`.coarsen_tasks` (``ML/0/top*``, ``ML/0/pcid``, ``ML/<C>/wp``, ``ML/<C>/w``).
"""

from __future__ import annotations

import numpy as np

from dgl_chunked.partition.lp import coarsen_kernels as CK
from dgl_chunked.partition.lp.coarsen_tasks import (
    Level,
    accumulate_pieces,
    load,
    node_weights,
    read_entries,
    save,
    save_split,
)
from dgl_chunked.partition.lp.tables import lookup, whole_table

__all__ = ["coarse_weights_task", "purify_task", "top_task", "weight_pieces_task"]


def top_task(level: Level, b: int, levels: tuple[Level, ...]) -> None:
    """The coarsest-level cluster of every node of block ``b`` of level 0 (``levels``:
    level 0 to the coarsest): its coarse IDs chained through the levels (file ``top``)."""
    cid = load(level.url(f"cid-{b}"))
    for lv in levels[1:-1]:
        pos = cid >= 0
        cid[pos] = lookup(lv, "cid", cid[pos])
    save(level.url(f"top-{b}"), cid)


def purify_task(level: Level, b: int, src: str, dst: str, *, seed: int, salt: int) -> int:
    """Move every node of block ``b`` of level 0 to the coarsest cluster it has the most
    edges to (files ``src`` of every block, written to ``dst``). Returns the nodes moved."""
    own = load(level.url(f"{src}-{b}"))
    u, v, _ = read_entries(level, b, pooled=True)
    ids = np.arange(level.offsets[b], level.offsets[b + 1], dtype=np.int64)
    table = whole_table(level, src) if v.size else None
    if table is not None:  # looked up in the kernel, without arrays per entry
        out = CK.strongest_clusters(u, v, own, ids=ids, seed=seed, salt=salt, table=table)
    else:
        c = lookup(level, src, v) if v.size else np.empty(0, np.int64)
        ok = c >= 0
        out = CK.strongest_clusters(u[ok], c[ok], own, ids=ids, seed=seed, salt=salt)
    save(level.url(f"{dst}-{b}"), out)
    return int((out != own).sum())


def weight_pieces_task(level: Level, b: int, coarse: Level, cid_name: str) -> None:
    """Send the weights of block ``b``'s level-0 nodes to the blocks of their coarsest
    clusters (files ``cid_name``)."""
    cid = load(level.url(f"{cid_name}-{b}"))
    w, _ = node_weights(level, b)
    pos = cid >= 0
    block = np.searchsorted(np.asarray(coarse.offsets, np.int64), cid[pos], side="right") - 1
    rows = np.vstack([cid[pos] - np.asarray(coarse.offsets, np.int64)[block], w[pos].T])
    save_split(coarse.url(f"wp-{b}"), rows, block, coarse.num_blocks)


def coarse_weights_task(coarse: Level, t: int) -> None:
    """The node weights of block ``t`` of the coarsest level: its pieces summed
    (:func:`.coarsen_tasks.accumulate_pieces`)."""
    w = np.zeros((coarse.rows(t), coarse.width), np.int64)
    accumulate_pieces(w, np.add, coarse, "wp", t, writers=coarse.num_writers)
    save(coarse.url(f"w-{t}"), w)
