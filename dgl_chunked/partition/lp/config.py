"""The ``lp`` method's tuning (:class:`LPConfig`) and one run's fixed inputs (:class:`LPPlan`).

Shared by the method (:mod:`.method`) and its drivers (:mod:`.streaming`,
:mod:`.multilevel`), which import it, not each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import AssignmentError

__all__ = ["MIN_BLOCKS", "LPConfig", "LPPlan"]

MIN_BLOCKS = 4  # default blocks per graph (when above 4096 rows each): block tasks can share the workers
_MAX_BLOCK_ROWS = 1 << 18  # default block size from 1M nodes up: per-task memory stops growing there


@dataclass(frozen=True, kw_only=True)
class LPConfig:
    """Tuning of the ``lp`` method.

    Change it for one call with ``assign_partitions(..., method="lp",
    method_config=LPConfig(...))`` (or ``PartitionOptions(method_config=...)``), or for
    every call with ``register_method("lp", LPMethod(LPConfig(...)), overwrite=True)``.

    Attributes
    ----------
    eps
        Balance tolerance: at most ``(1 + eps)`` times the even share per stratum.
    refine_passes
        Most label-propagation passes of the refinement at the input.
    refine_min_gain
        Refinement stops after the first pass whose planned moves save less than this
        fraction of the current edge cut (0: only when nothing moves). The saving is a
        lower bound per node (its priority bucket) that ignores how simultaneous moves
        interact, so it overestimates passes whose moves undo each other. Issue #38
        (h-cut): with 0.05 and 3 passes (the defaults before) the refinement of the
        purified assignment of sbm-skewed 1M nodes / 10M edges at 8 parts stopped at
        0.2031 while it was still saving 1.5-2% of the cut per pass; with 0.01 and 8
        passes (and ``refine_movers``) it ends at 0.1955 after 5 (METIS 0.1991).
    refine_movers, refine_conflicts
        Every node may move in a pass until one saves less than ``refine_conflicts``
        of its planned saving: its moves undid each other (neighbours moving towards
        each other at once, every pass seeing the assignment of the pass before);
        from then on a seeded ``refine_movers`` of the nodes may move per pass (a new
        coin each pass). On sbm-skewed 1M / 10M, 8 parts, the purified finalist: all
        nodes moving saved 34k, 27k, 16k cut edges in passes 0-2 of 169k, 159k, 130k
        planned (0.1951 after 10 passes); half of them from pass 2 on 37k, 16k, 9k of
        65k, 22k, 12k (0.1946 after 10). Halving from the start cut 0.7% more on the
        50k planted graphs at 4 parts, where passes do not conflict and converge in 2.
    refine_compare
        Passes after which the finalists (the best streaming or level-by-level and the
        best purified assignment) are compared: the one cutting fewer entries then is
        refined on, the other dropped (before issue #38's h-cut each was refined to the
        end: one more refinement per run).
    balance_rounds
        Balance rounds that bring a projected assignment within the caps before
        anything is unplaced: the nodes of every (stratum, part) over its cap propose
        the part with room where most of their neighbours are, and the move step lets
        exactly the excess leave, least loss first (KaMinPar's greedy balancer, by
        rounds; :func:`.schedule.plan_excess`). What is still over after them is
        unplaced by seeded hash and placed again by the placement rounds (the only
        repair before h-cut). On sbm-skewed 1M / 10M, 8 parts, METIS's partition of
        the purified level (4,150,922 cut entries at the input) was 8,322 nodes over:
        2 rounds moved exactly those for 4,154,058 entries, where unplacing and placing
        them again cost 4.24M.
    round_nodes
        Placement rounds merge consecutive degree tiers, from the top, until a round
        holds at least this fraction of a part's share of the nodes with neighbours
        (0: one round per tier). Nodes of one round do not see each other's choice
        (the first round's nodes, with no placed neighbour, all pick part 0), so a
        round stays well below a part's capacity. Merging costs nothing measurable on
        R-MAT graphs, whose top hubs are linked to each other, but 6% of the cut on
        the small heterogeneous test graph, whose hubs are not (0.503 against 0.474).
    gamma
        Fennel's exponent; the penalty weight is ``alpha = m P**(gamma-1) / n**gamma``.
    block_rows
        Nodes per block (None: the smallest power of two >= ``n / 4``, within 4096 and
        ``min(2**18, 2**22 // num_parts)``: smaller graphs still have blocks for every
        worker, and from 1M nodes up the block, so the memory of its tasks, stays the
        same). The output depends on it (it decides how quotas are shared), not on the
        input chunking.
    group_entries
        Staged edge entries a proposal task reads at once for its histogram.
    scratch_dir
        Parent directory of the scratch stores (None: the system temp dir), used when
        the caller passes no ``scratch_dir`` to :func:`assign_partitions`. On a
        multi-host cluster it must be a location every worker can read and write (a
        URL such as ``s3://bucket/scratch``, or a shared file system).
    coarse_nodes, coarse_entries
        The in-memory budget: coarsening stops at the first level with at most this
        many nodes and entries (both directions of every weighted edge), which one
        task then partitions with METIS. At the coarsest level that task's
        worker holds that graph: the gathered entries, their CSR (int64) and METIS's
        copy and working graphs, estimated at ``100 * coarse_entries + 200 *
        coarse_nodes`` bytes (about 0.2 GB at the defaults), whatever the graph size.
        Measured (issue #38, h-38m, ``bench_lp.py --sbm 1000000:10000000 --parts 8``,
        2 workers, load 5-8): a level of 148k nodes and 15.9M entries (budget
        ``2**24``) took the driver's worker to 2096 MB (the other 899 MB: about 75 bytes
        per entry) and METIS 15-19 s per call (``initial`` 74.9 s, ``purify`` 75.4 s for
        the four calls); and a larger budget cuts more there: the coarsening stops
        before the cluster caps grow, and METIS's partition of a level of many small
        clusters cuts more than its partition of the coarser one: cut 0.2146 at
        ``2**22`` and ``2**23`` entries (coarsest 23.5k / 27.4k nodes), 0.2116 at
        ``2**24``, against 0.2054 at the default (7.5k / 5.4k nodes). The budget is a
        fixed default, not derived from the workers' memory: the output must not
        depend on the cluster it runs on.
    cluster_rounds
        Clustering rounds per coarsening level (each lets a seeded half of the
        nodes join a neighbouring cluster). Issue #38's faster shrinkage (4 rounds,
        ``cluster_min_share`` 0.5, ``min_shrink`` 0.3, ``fit_passes`` 8; options, not
        the defaults, but ``min_shrink`` 0.3 since h-38m), in one process, sbm-skewed 1M nodes / 10M edges, 8 parts, one
        cluster weight: the first level keeps 217k nodes instead of 374k, the
        coarsening takes 6 levels and 50M entries written instead of 10 and 94M, cut
        0.2033 against 0.2058; 250k / 2.5M: 3 levels instead of 7, cut 0.1959 against
        0.2075; but on the 50k planted graphs of ``bench_partition_quality.py`` (one
        level there) skewed groups cut 0.7%, 0.8% and 1.6% more at 4, 16 and 64 parts
        (0.0969, 0.2451, 0.3882 against 0.0962, 0.2432, 0.3819), uniform ones
        0-0.4% less, so the defaults stay. Measured
        (issue #38, skewed planted communities, edge cut with 4 rounds -> 2 rounds
        and ``coarse_refine_rounds`` 4 -> 2): 250k nodes / 2.5M edges at 8 parts
        0.2006 -> 0.1953 with 25% less CPU (32.9 s -> 24.6 s in one process);
        50k / 400k at 4, 16, 64 parts 0.0967 -> 0.0962, 0.2388 -> 0.2432, 0.3864 ->
        0.3819 (uniform sizes 0.0756 -> 0.0754, 0.0947 -> 0.0952, 0.1078 -> 0.1076).
    cluster_weight
        Most weight of one cluster, in every balance column (stratum nodes, owned
        edges), as a fraction of a part's even share.
        Measured on a planted-partition graph with skewed groups (1M nodes, 8M edges,
        4 parts): 0.015 cut 0.170, 0.005 0.142, 0.0025 0.148 (METIS 0.129): small
        clusters keep the coarse levels purer (the caps grow when a level stalls).
    extra_cluster_weights
        Cluster weights of further multilevel assignments (graphs above the budget
        only); the one with the lowest cut at the input is kept (each costs one more
        coarsening and projection: about 2x the multilevel time with one). Measured
        with ``cluster_min_share`` 1.0, cut at 4 parts: SBM skewed 1M nodes 0.142 at
        0.005 and 0.170 at 0.015, SBM uniform 4M nodes 0.0965 at 0.005 and 0.0750 at
        0.015 (METIS-like): neither weight suits every graph. Re-measured with the
        purification, the balance rounds and the refinement of issue #38's h-cut
        (``assign_partitions`` on 2 threads): sbm-skewed 1M nodes / 10M edges, 8 parts,
        0.1955 with both (the 0.015 purified finalist kept), 0.1955 with 0.015 alone,
        0.1987 with 0.005 alone; sbm-skewed 1M / 8M edges, 4 parts, 0.0966 with both
        (the 0.005 purified one kept) and with 0.005 alone, 0.1141 with 0.015 alone;
        8 parts, 0.1893 with both (the 0.015 purified one kept), 0.2189 with 0.005
        alone: neither weight suits every graph still.
    cluster_min_share
        A node joins a cluster only when its connection to it is at least this fraction
        of its best connection to any cluster, full or not (0: any cluster with room).
        With 0, a node whose community's clusters are full joins another community's
        cluster with room: on the skewed planted-partition graph above the clusters'
        purity (share of nodes in their cluster's majority group) fell from 0.91 at the
        first level to 0.81 at the fifth, and the coarse partition placed small
        communities beside the largest one, which label propagation cannot undo (cut
        0.202; with 1.0, 0.170 at the same cluster weight). But with 1.0 a level stalls
        once the largest clusters fill (at 1M / 10M, 8 parts: 4 levels in a row shrank
        by 3-12%, their proposals to full clusters refused); 0.5 lets such nodes take
        a cluster with at least half that connection (cut in the ``cluster_rounds``
        measurements; 0.25: 0.2113 at 250k).
    two_hop_above
        Two-hop clustering (as KaMinPar and Mt-KaHyPar do for power-law graphs): when
        the clustering rounds of a level leave more than this fraction of its nodes as
        clusters (the caps are full), one more round lets the movers that are still
        alone because every cluster they are most connected to is full join, per
        favourite cluster, the cluster of one of them (within the caps); 1 (the
        default): never. The levels shrink faster but less purely. Measured (issue
        #38, skewed planted communities, 8 parts, one process; 1 -> 0.5): 1M nodes /
        10M edges cut 0.2054 -> 0.2211, CPU 136.7 -> 122.5 s, 12 and 11 levels -> 16
        and 7 (the nodes shrink 2x per level, the entries stay above
        ``coarse_entries``); 250k / 2.5M cut 0.1953 -> 0.2094 (0.2108 at 0.7), CPU
        25.5 -> 24.7 s, levels 8 and 6 -> 4 and 4.
    min_shrink
        A level must have at most ``1 - min_shrink`` times the nodes of the level
        before, else the cluster caps grow 4x for the next levels (up to half a part's
        share; stalled at that, see ``stall_nodes``). With 0.05 (the default before
        issue #38's h-38m) the levels of 1M / 10M shrinking 3-23% went on until one
        shrank under 5%: 12 and 11 levels per cluster weight, the entries of levels 3-7
        only 3-17% fewer each. With 0.3 the caps grow after level 4 (23%): 7 and 7
        levels, and the coarsest clusters (11.3k and 8.6k nodes) are purer for the
        purified assignment, cut 0.2031 against 0.2054 (``bench_lp.py --sbm
        1000000:10000000 --parts 8``, same run hour, load 6-7; coarsening 105.0 s
        against 90.8 s at load 7 there, so time figures from quiet runs only:
        ``benchmarks/results/lp.json``): in the same run levels 5-7 took 12.7 s
        against 26.5 s for levels 5-12 before. But at 250k / 2.5M it cuts 4.8% more
        (0.2047 against 0.1953; coarsening 19.3 s against 24.5 s, one lock hold at load
        4-7). The 50k planted graphs of ``bench_partition_quality.py`` coarsen one
        level only (unchanged).
    stall_shrink, stall_nodes, stall_entries
        The stall budget (``stall_nodes`` nodes and ``stall_entries`` entries, at least
        the in-memory budget; the driver's peak as estimated there): a coarsening that
        ends above the in-memory budget, because a level stalls at the largest clusters
        (caps of half a part) or ``max_levels`` is reached, hands its last level to
        METIS when it fits the stall budget (before issue #38's h-38m: the streaming
        placement alone); the defaults add nodes only (``2**17``: 26 MB more, the
        entries' ``2**21`` kept), so that one worker stays within the coarse budget's
        memory. A last level whose nodes fit but whose entries do not gives METIS its
        heaviest ``stall_entries`` entries (both directions of the heaviest pairs; the
        purified level's too) when no earlier cluster weight gave a multilevel
        assignment (issue #38's h-10m; before: the streaming placement alone; a later
        weight keeps that: at 10M nodes / 100M edges the second weight's, stopped at
        14,111 nodes and 2.26M entries, became a finalist and cut more after the
        refinement than the first weight's, 0.2304 against 0.2060). With ``stall_shrink``
        above 0, coarsening also stops at the first level
        that shrinks (in nodes) by less than that fraction and fits the stall budget
        (0, the default: never, since stopping early cuts more; see ``coarse_nodes``).
    fit_passes
        Passes of the acceptance of the joins to a cluster (:func:`.coarsen_kernels.accept_in_passes`):
        each accepts, highest gain first, the proposals up to the first that would
        overflow the cap; the next pass drops those that no longer fit alone and
        goes on with the rest. With 1 (the default) a heavy proposal turns away every
        lighter one after it; 8 (issue #38) kept 74k clusters at the second level of
        1M / 10M instead of 80k.
    max_levels
        Most coarsening levels (then, too, the stall budget decides).
    coarse_refine_rounds
        Label-propagation rounds on every coarse level but the coarsest while
        uncoarsening level by level (each moves a seeded half of the nodes at most;
        rounds 3 and 4 moved under 0.2% of the node weight per level on the 250k graph
        above).
    metis_ncuts, metis_max_ncuts, metis_work
        METIS's ``ncuts`` on each coarsest graph (it makes that many partitions and
        keeps the one cutting least): ``metis_ncuts``, or more, up to
        ``metis_max_ncuts``, while ``ncuts`` times the graph's entries stays within
        ``metis_work`` (small graphs get more tries in about the same time; at most
        ``metis_max_ncuts`` times METIS's time there, small beside the coarsening).
        Issue #38 (h-cut; 1 before): 4 made the 50k-200k planted graphs of
        ``bench_partition_quality.py`` cut 0-8% less (sbm-skewed-200000-1600000, 4
        parts: 0.1122 -> 0.1030); the work budget took lfr-0.1-10000 at 16 parts
        (within the in-memory budget: METIS on the whole graph, 240k entries, 16
        partitions) from 0.1831 to 0.1700 (KaMinPar 0.1737).
    purify_rounds
        Rounds moving every input node to the coarsest-level cluster it has the most
        edges to, for a second assignment per cluster weight: the coarsest level is
        rebuilt from the input under that map, partitioned with METIS and projected to
        the input in one step (0: not made). The purified assignment cutting fewest
        entries at the input and the best other one (streaming or level by level) are
        both settled and refined, and the one cutting fewer entries then is kept (one
        more settling and refinement at the input). Neither wins everywhere, and only
        the refined cut tells: alone the purified one cut 0.73x METIS's edges on SBM
        skewed 2M nodes at 4 parts (0.0960; 0.1718 level by level) but 1.48x on SBM
        uniform 1M (0.1112; 0.0750 level by level), where it cut less before the
        refinement; with the refined choice 0.0960 and 0.0750. The first levels'
        clusters are picked from tiny neighbouring clusters, about one in ten from
        another community on planted-partition graphs, and the coarsest clusters carry
        those nodes, which ties small communities to large ones. Measured on SBM skewed
        2M nodes / 16M edges, 4 parts: coarsest cluster purity 0.805, 0.936 and 0.969
        after 0, 1 and 2 rounds; METIS's cut projected to the input 0.308, 0.166, 0.130.
    multilevel_above
        The multilevel assignment is made only when the streaming placement cuts more
        than this fraction of a random assignment's expected cut (``1 - 1/P`` of the
        edges); 0: always, 1: never. Measured: the streaming placement cuts 0.20-0.56x
        random's on R-MAT graphs at 4-16 parts (0.73-0.84x at 64), where it beats
        METIS, and 0.96-1.0x on planted-partition, LFR and the heterogeneous preset,
        where the multilevel assignment cuts 2-7x less. A graph within the in-memory
        budget (``coarse_nodes``, ``coarse_entries``) always gets the METIS assignment
        too (cheap there): on les miserables at 2 parts the streaming cut was under
        the threshold and 1.62x METIS's.
    """

    eps: float = 0.05
    refine_passes: int = 8
    refine_movers: float = 0.5
    refine_conflicts: float = 0.5
    refine_compare: int = 2
    balance_rounds: int = 3
    refine_min_gain: float = 0.01
    round_nodes: float = 0.5
    gamma: float = 1.5
    block_rows: int | None = None
    group_entries: int = 1 << 21
    scratch_dir: str | None = None
    coarse_nodes: int = 1 << 15
    coarse_entries: int = 1 << 21
    cluster_rounds: int = 2
    cluster_weight: float = 0.005
    min_shrink: float = 0.3
    stall_shrink: float = 0.0
    stall_nodes: int = 1 << 17
    stall_entries: int = 1 << 21
    max_levels: int = 16
    coarse_refine_rounds: int = 2
    purify_rounds: int = 2
    metis_ncuts: int = 4
    metis_max_ncuts: int = 16
    metis_work: int = 1 << 22
    multilevel_above: float = 0.6
    cluster_min_share: float = 1.0
    two_hop_above: float = 1.0
    fit_passes: int = 1
    extra_cluster_weights: tuple[float, ...] = (0.015,)

    def __post_init__(self) -> None:
        problems = []
        if not 0 <= self.eps < 1:
            problems.append(f"eps: expected 0 <= eps < 1, found {self.eps!r}")
        if self.refine_passes < 0 or self.group_entries < 1:
            problems.append(
                f"refine_passes, group_entries: expected >= 0 and >= 1, found "
                f"{self.refine_passes!r}, {self.group_entries!r}"
            )
        if min(self.stall_nodes, self.stall_entries) < 0:
            problems.append(
                f"stall_nodes, stall_entries: expected >= 0, found {self.stall_nodes!r}, {self.stall_entries!r}"
            )
        if not 0 < self.refine_movers <= 1 or min(self.balance_rounds, self.refine_compare) < 0:
            problems.append(
                "refine_movers, balance_rounds, refine_compare: expected 0 < refine_movers <= 1 and counts >= 0, "
                f"found {self.refine_movers!r}, {self.balance_rounds!r}, {self.refine_compare!r}"
            )
        if self.purify_rounds < 0:
            problems.append(f"purify_rounds: expected >= 0, found {self.purify_rounds!r}")
        counts = (self.coarse_nodes, self.coarse_entries, self.cluster_rounds, self.max_levels, self.fit_passes)
        if min(*counts, self.metis_ncuts, self.metis_max_ncuts) < 1:
            problems.append(
                "coarse_nodes, coarse_entries, cluster_rounds, max_levels, fit_passes, metis_ncuts, metis_max_ncuts: "
                f"expected >= 1, found {self.coarse_nodes!r}, {self.coarse_entries!r}, {self.cluster_rounds!r}, "
                f"{self.max_levels!r}, {self.fit_passes!r}, {self.metis_ncuts!r}, {self.metis_max_ncuts!r}"
            )
        if not 0 <= self.cluster_min_share <= 1:
            problems.append(
                f"cluster_min_share: expected 0 <= cluster_min_share <= 1, found {self.cluster_min_share!r}"
            )
        if not all(0 < w <= 1 for w in (self.cluster_weight, *self.extra_cluster_weights)):
            problems.append(
                f"cluster_weight, extra_cluster_weights: expected weights in (0, 1], found "
                f"{self.cluster_weight!r}, {self.extra_cluster_weights!r}"
            )
        fractions = {
            "refine_min_gain": self.refine_min_gain,
            "refine_conflicts": self.refine_conflicts,
            "round_nodes": self.round_nodes,
            "min_shrink": self.min_shrink,
            "stall_shrink": self.stall_shrink,
            "multilevel_above": self.multilevel_above,
            "two_hop_above": self.two_hop_above,
        }
        problems += [
            f"{k}: expected a fraction in [0, 1], found {v!r}" for k, v in fractions.items() if not 0 <= v <= 1
        ]
        if self.block_rows is not None and not 1 <= self.block_rows < 1 << 31:
            problems.append(f"block_rows: expected 1 <= block_rows < 2**31, found {self.block_rows!r}")
        if not self.gamma > 1:
            problems.append(f"gamma: expected > 1, found {self.gamma!r}")
        if problems:
            raise AssignmentError("LPConfig: " + "; ".join(problems))

    def rows_per_block(self, num_parts: int, num_nodes: int) -> int:
        """The node block size used for ``num_parts`` partitions of ``num_nodes`` nodes."""
        if self.block_rows is not None:
            return int(self.block_rows)
        wanted = 1 << max(0, -(-num_nodes // MIN_BLOCKS) - 1).bit_length()
        return max(4096, min(wanted, _MAX_BLOCK_ROWS, (1 << 22) // num_parts))


@dataclass(frozen=True, kw_only=True)
class LPPlan:
    """What one run of the ``lp`` method is a function of (with the graph): its
    partition count, seed, balance columns, tuning, block size and scratch location."""

    num_parts: int
    seed: int
    balance_edges: bool
    config: LPConfig
    block_rows: int
    masks: tuple[tuple[int, str], ...]  # (node type ID, bool feature) to balance, in priority order
    token: str = ""
    scratch_dir: str | None = None  # parent of this run's scratch store (None: the system temp dir)
    scratch_options: StorageOptions = None  # fsspec options when scratch_dir is a URL

    def num_blocks(self, num_nodes: int) -> int:
        """The node blocks of a graph of ``num_nodes`` nodes (the last one may be short)."""
        return -(-num_nodes // self.block_rows)
