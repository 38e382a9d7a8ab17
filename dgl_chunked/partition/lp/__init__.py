"""The ``lp`` partitioning method, one file per part (see :mod:`.method` for the algorithm).

- :mod:`.config`: the tuning (:class:`LPConfig`) and one run's fixed inputs.
- :mod:`.store`: the scratch store (where a run's files live, how tasks read them).
- :mod:`.taskgraph`: the small task graph every round submits.
- :mod:`.staging`: the edge files staged as entries (both directions, block-major).
- :mod:`.streaming`, :mod:`.tasks`, :mod:`.kernels`, :mod:`.schedule`: streaming
  placement and label-propagation refinement (driver, Dask tasks, numpy kernels, the
  driver's move schedule); :mod:`.round_kernels`: the compiled passes of the rounds
  and refinements (histograms, gains, the cut check, the staging's gathering by node).
- :mod:`.multilevel`, :mod:`.clustering` (one coarsening step: a level's clustering
  rounds in one computation, its contraction), :mod:`.coarsen_tasks`, :mod:`.coarsen_kernels` (with
  :mod:`.pair_sums`, its compiled group-by, :mod:`.node_kernels`, its compiled
  per-node proposal and purification passes, and :mod:`.entry_kernels`, the compiled
  writer of the coarse levels' entry files; :mod:`.jit` compiles them once per
  machine), :mod:`.tables` (the levels' tables looked up by ID), :mod:`.coarsest` (METIS on the coarsest level),
  :mod:`.projection`: multilevel coarsening, initial partition and projection.
- :mod:`.finalists`: the choice between the initial assignments kept for the refinement.
- :mod:`.salts`: every random-seed salt of a run.
- :mod:`.method`: :class:`LPMethod`, the registered method, and :func:`run_lp`.
"""

from __future__ import annotations

from dgl_chunked.partition.lp.config import LPConfig
from dgl_chunked.partition.lp.method import LPMethod, run_lp

__all__ = ["LPConfig", "LPMethod", "run_lp"]
