"""The ``lp`` method: multilevel partitioning and streaming placement, refined by label
propagation under hard balance caps, out of core on Dask.

Several initial assignments are made (the multilevel ones only when the streaming one
cuts more than ``multilevel_above`` of a random assignment's expected cut, or when the
graph fits the in-memory budget, where it is METIS alone); the one cutting fewest
staged entries among the streaming and the level-by-level ones, and the purified one
cutting fewest, are both settled and refined ``refine_compare`` passes (step 4 below),
and the one cutting fewer entries then is refined on and kept:

- the **multilevel** one (:mod:`.multilevel`, issue #14), for graphs with community
  structure (citation, social, e-commerce graphs; planted-partition and LFR graphs):

  a. *coarsening*, out of core, per node block (:mod:`.coarsen_tasks`): size-constrained
     label-propagation clustering (``cluster_rounds`` rounds; in each a seeded half
     of the nodes may join the neighbouring cluster they are most connected to, by
     edge weight, when it gains and the cluster stays within ``cluster_weight`` of a
     part's share in every balance column: nodes per stratum, and owned edges with
     ``balance_edges``; an accept stage at the cluster's block takes the best
     proposals within the cap, a release stage at the old cluster's block takes the
     leavers' weight off); optionally (``two_hop_above`` under 1, not the default: it
     costs cut), when the rounds leave more than that fraction of the level's nodes as
     clusters, one more round adds *two-hop* joins (the movers still alone because
     their best clusters are full join, per favourite cluster, one of them: KaMinPar's
     and Mt-KaHyPar's remedy for power-law graphs); then
     contraction: a group-by of ``(cluster(u), cluster(v))`` summing edge weights,
     cluster weights summed as node weights, both in array files
     (:mod:`dgl_chunked.storage.arrays`) in the scratch directory, through fsspec.
     Repeated until the graph fits the in-memory budget (``coarse_nodes`` nodes and
     ``coarse_entries`` entries); a level that shrinks by under ``min_shrink`` (30%)
     relaxes the cluster caps 4x (up to half a part); a coarsening stopped above the
     budget (stalled at those caps, or ``max_levels``) hands its last level to METIS
     when it fits the stall budget (``stall_nodes``, ``stall_entries``), or, for the
     first cluster weight to get there, when its nodes do (METIS then gets its
     heaviest ``stall_entries`` entries; ``LPConfig.stall_entries``). A level's
     clustering files are deleted once it is contracted, its entries and weights once
     it is projected to the finer level (the cluster maps stay for the purification),
     every coarse level after its cluster weight's assignments are made. A later
     cluster weight takes the first one's levels while no cap turned a join away
     in them and its caps are at least theirs: the same levels, not coarsened again
     (:mod:`.shared_levels`; at 1M nodes / 10M edges the first level);
  b. *initial partition* of the coarsest graph in one task with METIS (no GIL held:
     :mod:`dgl_chunked.partition.metis_capi`; node and edge weights; one constraint:
     nodes, plus owned edges with ``balance_edges``; the best of ``metis_ncuts``
     partitions, more on small graphs: ``metis_work``), beside the purified level's rebuild (d);
  c. *uncoarsening*: the parts are projected level by level, with
     ``coarse_refine_rounds`` weighted label-propagation rounds under the caps on
     every intermediate level, down to the input (one Dask computation, each round's
     tasks after the round before);
  d. *purification* (``purify_rounds`` rounds, per input block), for a second
     assignment per cluster weight: every input node moves to the coarsest-level
     cluster it has the most edges to (the first levels' clusters are picked from
     tiny neighbouring clusters, about one in ten from another community on
     planted-partition graphs; at the coarsest level the strongest link is the
     node's own community), the coarsest level is rebuilt from the input under that
     map, partitioned with METIS and projected to the input in one step. It wins on
     skewed planted partitions and loses on uniform ones, and only after the
     refinement does the cut tell which (see ``LPConfig.purify_rounds``). A
     finalist is *settled* first (:func:`.finalists.settle`): up to
     ``balance_rounds`` *balance rounds* let exactly each (stratum, part)'s excess
     over its cap leave, the nodes that lose least first, each to the part with room
     holding most of its neighbours (KaMinPar's greedy balancer, by rounds, in the
     move step below); what is still over then is unplaced (seeded hash order) and
     placed again by the streaming rounds below (neighbours first, only into parts
     with room);
- the **streaming** placement (steps 3 below), which wins on R-MAT-like graphs whose
  structure is carried by hubs (METIS, and any matching or clustering coarsening,
  cuts 2-4x more there).

Then all share steps 4 and 5. Every step is a map over edge read tasks (consecutive
edge files of about the graph's task size, :mod:`dgl_chunked.io.chunked.groups`) or node blocks
plus a small reduce in the driver (:mod:`.streaming`), one Dask computation per step:

1. **Stage** (one task per edge read task): read the edges, make them homogeneous
   (``orig_nid``), drop self-loops *for the partitioner only* and write both
   directions of every edge (block-local ``u``, neighbour ``v``), ordered by ``u``'s
   node block, plus the self-loops, to scratch array files (layout:
   :mod:`.store`). The graph is thus symmetrised; multi-edges are kept as weight
   (a doubled edge cut twice counts twice, as in the quality report) instead of being
   deduplicated. The input graph is never changed.
2. **Prepare** (one task per node block, in the same computation): degree, owned
   edges (in-degree plus self-loops: the ``balance_edges`` weight, counted only
   then), the degree *tier* ``floor(log2 degree)``, the balance *stratum* (node type x first
   true mask named in ``balance_ntypes``) and the block's nodes ordered by falling
   tier; then every block gathers its entries from every staging file into its own
   files, ordered by falling tier of ``u`` and by ``u`` within a tier (one task per
   block; the staging files are deleted after), so a round reads one range per block,
   whatever the number of edge files, and every pass reads a node's entries together.
3. **Streaming placement** (Fennel, by degree tier, highest first): consecutive
   tiers are merged, from the top, into rounds of at least ``round_nodes`` of a
   part's share of the nodes with neighbours (the sparse top tiers share a round;
   the bulky low ones keep their own). A round reads the staged entries of its nodes
   only and touches only its nodes (a contiguous span of each block's tier order),
   so every entry is read once over all rounds. Each block counts its round nodes'
   placed neighbours per part, reading the whole assignment (under 64 MiB, once per
   worker thread and round; else one block file at a time), and proposes the open
   part maximising
   ``neighbours[q] - c(nodes[q]) - weight * c'(owned_edges[q])`` (Fennel's marginal
   cost, ``c(x) = alpha gamma x**(gamma-1)``; the edge term only with
   ``balance_edges``). High-degree nodes go first, so hubs find each other as in a
   sequential degree-ordered stream (nodes of one round do not see each other's
   choice). Up to three retry rounds re-propose the nodes refused for lack of room,
   over the tiers of the rounds that refused some (every tier with
   ``balance_edges``); a **fill** puts any still left into the emptiest parts of their
   stratum.
4. **Refinement** (at most ``refine_passes`` label-propagation passes): every placed
   node's neighbour histogram; a node proposes the part with most neighbours when it
   beats its own (among parts with room, else a full one: reachable only by a swap).
   Once a pass saves less than ``refine_conflicts`` of its planned saving (moves
   undoing each other), only a seeded ``refine_movers`` of the nodes proposes per
   pass. The last pass is the first whose planned moves save less than
   ``refine_min_gain`` of the current cut.
5. **Isolated nodes** (no edge but self-loops) cut nothing, so they are placed last,
   by the fill: until then their share of every cap is room for the refinement.

Every proposal round ends with the **move step**: the blocks summarise their
proposals per group ``(stratum, from, to, priority)``; the driver
(:func:`.schedule.plan_moves`) pairs opposite moves into swaps, then serves groups by
priority within the room of every (stratum, part) and, with ``balance_edges``, of
every part's owned edges; quotas are shared among blocks, and each block moves its
candidates in seeded hash order within its quota. The moves run at the start of the
next round's computation, before any of its tasks. So these limits are hard: no part
gets more than ``max(ceil(n / P), floor((1 + eps) n / P))`` of a stratum's ``n``
nodes (so of every mask when the masks are disjoint, as train/val/test masks are; a
node type split into ``k`` strata may exceed its own such limit by the rounding of
its strata's, at most ``k`` nodes). The owned-edge limit holds for every move, but
the final fill ignores it, so ``balance_edges`` is best effort (the report shows it).

**Time** goes to the coarsening. Measured with ``benchmarks/bench_lp.py --sbm
1000000:10000000 --parts 8`` (skewed planted communities, 2 workers on 2 cores shared
with other jobs; issue #38; every figure in ``benchmarks/results/lp.json``). At the
defaults (2 clustering and 2 refinement rounds per level, cluster weights 0.005 and
0.015), with the clustering's proposal, contraction and purification passes compiled
(:mod:`.node_kernels`, :mod:`.pair_sums`: each node's entries walked once, the same
output bit for bit), in one run at load average 2-4: ``lp`` 79.0 s (stage 1.8,
streaming 3.5, coarsen 54.0, initial 0.5, uncoarsen 9.3, purify 6.1, refine 3.5), cut
0.2054, 953 / 1019 MB per worker; METIS 25.1 s, cut 0.1991; KaMinPar 19.5 s, cut
0.2609: ``lp`` takes 3.1x METIS's time for 1.03x its cut. The code before them, in
the runs of the same hour: ``lp`` 196.8 s (coarsen 149.8; load 5-7, METIS 27.3 s) and
248.7 s (coarsen 197.4; load 4-6, METIS 30.0 s), same cut. Back to back at load 4-5:
``lp`` 126.3 s (coarsen 84.5; 933 / 956 MB per worker; METIS 19.3 s) against 193.4 s
before (coarsen 140.9; 922 / 963 MB; METIS 23.5 s). The kernels, profiled in
one process at 250k nodes / 2.5M edges (load 5-6): 47.9 s before, 28.6-31.4 s after;
then the contraction's group-by takes 6.0 s (its counting sorts' scattered writes),
the proposals' 4.0 s, file reads and writes, renames and removals about 5 s.

Before them, at load average 4-5: ``lp`` 197.1 s (stage 3.6, streaming 6.0,
coarsen 150.3 = 98.6 + 51.7 for the two cluster weights, initial 0.6, uncoarsen 20.4,
purify 9.2, refine 6.6), cut 0.2054, 900 / 962 MB per worker; METIS 56.0 s, cut
0.1991; KaMinPar 21.2 s, cut 0.2609: ``lp`` took 3.5x METIS's time for 1.03x its cut.
Profiled in one process (synchronous scheduler, cProfile, load 5): 201 s, as long as
on the 2 workers (4 node blocks: 4 tasks per step). Per cluster weight the
coarsening makes 11-12 levels: 1M -> 374k -> 148k -> 87k -> 67k -> 59k -> 55k -> 54k
-> 28k -> 24k -> 22k -> 21k -> 7.5k nodes, the entries 20M -> 18.7M -> 15.9M -> 13.1M
... -> 3.5M -> 1.2M (107M written in all; 17 s for the first level, 5-8 s for each of
levels 3-7, which shrink 3-23%: the cluster caps are full and a node whose best
cluster is full waits; the caps grow 4x only after a level shrinks under 5%). Per task
kind over the run: clustering rounds 81 s (46 computations, 736 tasks), contraction
60 s (23, 276), coarse-level refinement 17 s, purification 13 s, cut counts 11 s;
Dask's cost per task (milliseconds) is negligible against tasks of 0.1-1 s. By
kernel: the compiled group-by of ``(node, cluster)`` pairs (:mod:`.pair_sums`) 50 s,
table lookups (random gathers of labels, cluster weights and maps) 23 s, the
proposal kernel's numpy 18 s, entry reads 11 s, file reads and writes 18 s.
Two-hop clustering (``LPConfig.two_hop_above``) halves the level count at 250k nodes
but cuts 7-8% more (0.2211 against 0.2054 at 1M for 10% less CPU), so it is off; caps
that grow sooner (``min_shrink`` 0.3) cost 5% of the cut at 250k for 25% less CPU with
4 clustering rounds and ``cluster_min_share`` 0.5 (alone, the default since h-38m, they
cut 1% less at 1M: see **Levels**).
Since this profile a level's clustering files are deleted once it is contracted and
its entries once it is projected (before: every level kept to the end, 2.8 GB in the
multilevel scratch at 1M). The second cluster weight
(``LPConfig.extra_cluster_weights``) doubles the multilevel time (without it: 79 s at
1M with 4 + 4 rounds, cut unchanged there, but 1-2% more cut on the 50k
planted-community graphs at 16 parts). At 10M / 100M with 8 edge files (12.5M edges
each; 2 + 2 rounds, load 3-11) ``lp`` did not finish within 24 minutes: stage 116.9 s,
streaming 152.1 s, the first coarsening 659.2 s, and the workers' peak RSS had reached
1547 / 1477 MB (958 / 967 MB at 1M): its staging tasks and its per-file reordering
tasks held 10x the entries of the 1M graph's (and each of those read every block's
tiers). With edge files of the 1M graph's size (1.25M edges: 80 files) and each block
gathering its own entries (step 2), in one run: stage 59.5 s, streaming 75.4 s (load
5-7), peak 476 / 498 MB per worker by then and 1069 / 1085 MB after 9 coarsening
levels (load 3-5; the same code at 1M, load 2-5: 108.7 s, stage 2.4 s, streaming
3.5 s, 995 / 1024 MB over the whole run); the run was stopped
after 14.3 minutes, in the first coarsening, with 5 GB of disk left: every coarse
level's entries (3 x int64 each, 4.4 GB at level 1) stay until the uncoarsening,
29 GB by then. Stage and streaming alone (one process, before the gathering, load
5-8): 7.3 + 7.9 s at 1M, 11.8 + 10.8 s at 2M, 18.6 + 30.4 s at 4M, 51.1 + 62.6 s at
10M (equal edge files): linear but for the random gathers, slower per entry as the
tables outgrow the caches.

**Levels** (issue #38; ``bench_lp.py`` prints a line per level: nodes, entries,
clustering rounds, joins accepted, seconds). Since h-38m the caps grow after a level
shrinking under 30% (``min_shrink``): at 1M / 10M 7 and 7 levels per cluster weight
(1M -> 374k -> 148k -> 87k -> 67k -> 37k -> 31k -> 11k nodes), cut 0.2031 (0.1955 since
h-cut's balance rounds and refinement, the same levels); a larger
in-memory budget, or stopping at the first stalled level that fits one, cuts more
(0.2116-0.2146: METIS on a level of many small clusters) and METIS's time and memory
grow with it (``LPConfig.coarse_nodes``). Before (``min_shrink`` 0.05) the first levels halve the
nodes (sbm-skewed 1M / 10M, 8 parts: 1M -> 374k -> 147k) but the entries fall only 7-17%
per level (clusters of a few nodes of 10k-100k-node communities keep nearly every edge to
a distinct cluster), and from the third level on the clustering stalls: the joins go to
each community's largest clusters, which are full, a node whose best cluster is full
waits (``cluster_min_share`` 1.0), and a cluster's acceptance turns away every proposal
after the first that overflows its cap (level 2: 34k proposals, 7.8k accepted). Levels
3-6 shrink 40%, 22%, 11%, 5% until one shrinks under 5% and the caps grow 4x: 10 levels,
94M entries written, for 1M -> 9k nodes (250k / 2.5M: 7 levels, 20M). The stall sets in
at a mean cluster size of 15-17 nodes at both sizes, so its levels hold about ``n / 16``
nodes and as many entries as the input's half: levels and entries written per input
entry grow with the graph (at 10M / 100M level 2 still held 180M of level 1's 189M
entries). The options ``cluster_rounds=4, cluster_min_share=0.5, min_shrink=0.3,
fit_passes=8`` shrink 4.6x, 3.1x, 1.8x, 1.3x, 2.7x at 1M (6 levels, 50M entries; the
second cluster weight 4 levels), lp 103.1 s (coarsen 64.2) and cut 0.2029 against METIS's
19.5 s and 0.1991 in one run at load 3-8 (main: 148.4 s, coarsen 100.6, cut 0.2054); at
3M / 30M 412.6 s (coarsen 346.8: 7 and 6 levels, level 1 139.6 s), cut 0.2069; but they
cut 0.7-1.6% more on the 50k skewed planted graph (``LPConfig.cluster_rounds``), so they
are not the defaults.

**Memory** per task: a staging task reads and orients one slice of edges at a time
(``staging.STAGE_EDGES``, 2**21 edges, about 60 bytes per edge: ``chunks.iter_edge_slices``;
at 10M / 100M its worker's peak 620 / 625 -> 550 / 506 MB). A proposal task counts its block's
histogram (``block_rows x P`` int32) one group of entries at a time, about 30 bytes per
entry with its temporaries (``group_entries``: 2**21), and holds either the
whole assignment (1 byte per node up to 127 parts, else 4, under 64 MiB: kept by the
worker thread for the round) or one block of it, and per-node arrays of its block.
``block_rows`` is at most ``2**18`` (and ``2**22 // P``), so every task stays below
about 200 MiB whatever the graph size. The largest of these arrays are kept per worker
thread between tasks (fresh pages cost as much as the work here:
:func:`.store.pooled_array`), freed before the multilevel assignments (whose tasks pool
their block's entries instead: 12 bytes per entry of the largest input block and 12 per
entry of the largest coarse one, int32 IDs; issue #38) and at the end of the run. Peak
RSS per worker measured flat: 1M nodes / 10M edges and twice that, equal edge files.
At 10M nodes / 100M edges (``bench_lp.py``, 2 workers; issue #38) the workers peaked at
946 / 1376 MB (1M / 10M: 584 / 870): pyarrow's freed read buffers (225 MB each, now
given back: :func:`.staging.release_arrow_pool`), a block's groups' histograms waiting
for its proposal task (148 MB; now counted by it) and the free heap of the driver's
METIS runs (310-380 MB; now :func:`.heap.give_back_free_heap`). Since: 647 / 802 MB
(1M: 528-543 / 678-806); 646 / 813 with the sliced staging, the peak now a proposal task
100 MB over a base of 540 (1M: 425): pools 147 MB, tables read whole under 64 MiB.
A gathering task (step 2) holds one block's staged entries (about 33 bytes per
entry with its sort: ``block_rows`` times the block's mean degree).
The driver task holds per-group tables (at most ``S x (P + 1) x P x 128`` rows, ``S``
strata), per-block tables of ``64 x S`` and the entries per block and tier.
Scratch disk: 16 bytes per edge (24 beyond 2**31 nodes; twice that while the blocks
gather their entries) and about 21 per node.
The multilevel tasks each hold one block's staged entries (about 60 bytes per entry
of the moving half with their temporaries: ``block_rows`` times the mean degree),
label and weight tables read whole under 64 MiB (else one block at a time) and
per-node arrays of the block; the METIS task holds the coarsest graph (at most
``coarse_nodes`` and ``coarse_entries``, or the stall budget's ``stall_nodes``: estimated
0.2 GB at the defaults, 100 bytes per entry and 200 per node, whatever the graph; 148k
nodes and 15.9M entries took its worker to 2.1 GB). Their scratch
keeps every coarse level's entries until the uncoarsening, each file in the narrowest
integer type of its values (:func:`.coarsen_tasks.save_entries`): 12 bytes per entry
(uint32), 6 (uint16) once a level's IDs and weights stay under 65,536, 24 (int64) from
2**32 on. At 1M / 10M (sbm-skewed, 8 parts): 18.7M entries at level 1, 224 MB (448 MB
as int64), the levels of a coarsening 0.97 GB in all (2.06 GB as int64); the whole
scratch peaked at 1.25 GB. At 10M / 100M: level 1 2.26 GB (4.53 GB as int64), the 16 levels of
the first coarsening about 14 GB (28 GB), the scratch's peak 18.9 GB.

**Determinism**: the output is a function of the graph, ``num_parts``, the seed and
:class:`LPConfig`. Histograms are exact integer sums, blocks are fixed ID ranges
(``block_rows`` depends on the node count, not on the files), rounds follow the global
tier counts and ties are broken by a seeded hash of the node ID, so the output does
not depend on the file chunking (edges or nodes), the number of workers or the
scheduler. The multilevel steps too: clustering moves are decided from sums over
(node, cluster) pairs, acceptance in (gain, seeded hash) order, coarse IDs follow
node IDs, and METIS runs with the seed on a graph built in sorted order.
"""

from __future__ import annotations

import atexit
import logging
import tempfile
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import AssignmentError, DglChunkedError
from dgl_chunked.partition._base import check_seed, import_partitioner, input_stamp, mask_features
from dgl_chunked.partition.lp import heap
from dgl_chunked.partition.lp import store as S
from dgl_chunked.partition.lp.config import LPConfig, LPPlan
from dgl_chunked.partition.lp.multilevel import phase, run_multilevel
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import create_owned_dir, make_scratch_dir, remove_owned

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph
    from dgl_chunked.partition._base import PartitionOptions

__all__ = ["LPConfig", "LPMethod", "run_lp"]

_RESULTS: dict[str, S.ScratchRoot] = {}  # token -> result root in this process (a recompute reuses it)


class LPMethod:
    """The ``lp`` method (DGL ``algo_name`` "random": DGL knows only random and metis).

    Parameters
    ----------
    config
        Tuning; None uses the :class:`LPConfig` defaults. One call can use another
        (``assign_partitions(..., method="lp", method_config=LPConfig(...))``).

    Examples
    --------
    >>> parts = assign_partitions(graph, 8, method="lp", balance_ntypes=["train_mask"])  # doctest: +SKIP
    """

    name = "lp"
    dgl_algo_name = "random"

    def __init__(self, config: LPConfig | None = None) -> None:
        self.config = config or LPConfig()

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        """Lazy int32 arrays chunked like ``graph.node_chunks(ntype)``; never computes.

        One driver task (:func:`run_lp`) runs the algorithm when the arrays are
        computed: it submits its own Dask computations (through ``worker_client`` on a
        distributed worker, else on the current scheduler) and leaves the result in a
        scratch directory (one array file per node block) that the output chunks
        read. ``balance_ntypes`` may name node types (always balanced) and boolean node
        features (one stratum per first true one).

        Raises
        ------
        MissingPackageError
            pymetis is missing (:func:`require_pymetis`).
        """
        import dask
        from dask.base import tokenize

        require_pymetis()
        md = graph.metadata
        config = self.config if options.method_config is None else options.method_config
        if not isinstance(config, LPConfig):
            raise AssignmentError(f"method_config: lp expects an LPConfig, found {type(config).__name__}")
        scratch = options.scratch_dir or config.scratch_dir
        plan = LPPlan(
            num_parts=num_parts,
            seed=check_seed(options.seed),
            balance_edges=options.balance_edges,
            config=config,
            block_rows=config.rows_per_block(num_parts, int(md.node_type_offsets[-1])),
            masks=tuple(mask_features(graph, options.balance_ntypes)),
            scratch_dir=None if scratch is None else str(scratch),
            scratch_options=options.storage_options if scratch is not None and fs.is_url(scratch) else None,
        )
        # the plan holds the scratch location: jobs writing elsewhere never share keys,
        # and a rerun into the same place keeps its keys (a resumed dispatch matches)
        token = tokenize(plan, md.fingerprint(), input_stamp(graph, plan.masks))
        plan = replace(plan, token=token)
        driver = dask.delayed(run_lp, pure=True)(graph, plan, dask_key_name=f"dglc-assign-lp-driver-{token}")
        offsets = md.node_type_offsets
        return {
            t: _type_view(
                driver, int(offsets[i]), tuple(graph.node_chunks(t)), f"dglc-assign-lp-{t}-{token}", plan.block_rows
            )
            for i, t in enumerate(md.node_types)
        }


def require_pymetis() -> Any:
    """The ``pymetis`` module, which partitions the coarsest level (a dependency of
    dgl_chunked: without it ``lp`` refuses, instead of falling back to the streaming
    placement alone, which cuts 8x more on community graphs).

    Raises
    ------
    MissingPackageError
        pymetis is not installed (the message says what to install).
    """
    return import_partitioner(
        "pymetis", "lp", install="pip install pymetis (a dependency of dgl_chunked, missing from this environment)"
    )


def _type_view(driver: Any, offset: int, chunks: tuple[int, ...], name: str, block_rows: int) -> da.Array:
    """Blocks ``chunks`` of the result starting at ``orig_nid`` ``offset``, after ``driver``."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    bounds = np.concatenate([[0], np.cumsum(chunks)]).astype(int) + offset
    layer: dict[Any, Any] = {
        (name, i): (S.read_result, driver.key, int(bounds[i]), int(bounds[i + 1]), block_rows)
        for i in range(len(chunks))
    }
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[driver])
    return da.Array(graph, name, (chunks,), meta=np.empty(0, np.int32))


def _remove_quietly(root: str, storage_options: StorageOptions = None) -> None:
    try:
        remove_owned(root, storage_options=storage_options)
    except (OSError, DglChunkedError) as err:  # at exit: say what is left, never raise
        logger.warning("could not remove the lp scratch %s: %s", root, err)


def run_lp(graph: ChunkedGraph, plan: LPPlan) -> S.ScratchRoot:
    """The driver task: run every round; return the root of the result files.

    The work arrays (staged edges, degrees, proposals) are deleted at the end. The
    result (``4 x num_nodes`` bytes) stays in the scratch store for the output chunks
    to read: in a temporary local directory until this process exits, else under
    ``plan.scratch_dir`` until the caller removes that. Computing the same arrays
    again in this process reuses it.
    """
    known = _RESULTS.get(plan.token)
    if known is not None and known.exists():
        return known
    root = _new_root(plan)
    if not graph.metadata.node_type_offsets[-1]:
        return root  # no nodes: every output chunk is empty and reads nothing
    so = root.storage_options
    try:
        work = create_owned_dir(root.join("work"), "lp-work", storage_options=so)
        with heap.on_the_workers():  # its tasks' arrays reuse heap pages, not fresh maps
            run_multilevel(graph, plan, root)
    except BaseException:
        _remove_quietly(root.path, so)
        raise
    with phase("cleanup"):  # the work files: the result stays
        S.remove_work(root, work, plan.num_blocks(int(graph.metadata.node_type_offsets[-1])))
    _RESULTS[plan.token] = root
    return root


def _new_root(plan: LPPlan) -> S.ScratchRoot:
    """The run's scratch store, a marked ``dglc-lp-<token>`` directory under
    ``plan.scratch_dir`` (local or URL: every worker must reach it), or under the
    system temp dir (removed at exit) without one. A rerun of the driver (a worker
    died) gets a new one; the caller removes them all with ``scratch_dir``."""
    # one store per execution: a driver rerun while the first still runs must not share it
    name = f"{plan.token[:16]}-{uuid.uuid4().hex[:16]}"
    if plan.scratch_dir is None:
        path = make_scratch_dir(tempfile.gettempdir(), "lp", name)
        atexit.register(_remove_quietly, path)
        return S.ScratchRoot(path)
    path = make_scratch_dir(plan.scratch_dir, "lp", name, storage_options=plan.scratch_options)
    return S.ScratchRoot(path, plan.scratch_options)
