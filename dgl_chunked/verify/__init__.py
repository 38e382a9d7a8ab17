"""Check a finished partition output against its chunked input, out of core on Dask.

Works on any output in the chunked pipeline's layout, ours or DGL's, as long as
``orig_nids.dgl`` and ``orig_eids.dgl`` were saved (they are the only record of
which input node and edge each row is). Checked:

- the partition config: node and edge types in metadata order, ``node_map`` and
  ``edge_map`` contiguous, partition-major and type-major from 0 (:mod:`.plan`);
- per partition (``graph.dgl``, ``docs/spec/partition-config.md``): inner nodes first with
  ``_ID = start + k``, ``inner_node`` flags, HALO nodes owned elsewhere, distinct
  and exactly the non-owned sources of owned edges, node and edge ``_TYPE``
  against the maps, edge ``_ID`` contiguous, every destination an inner node,
  ``orig_*`` lengths, feature keys, row counts, dtypes and row shapes
  (:mod:`.partition_checks`, :mod:`.feature_files`);
- ``trainer_id`` data, when present (DGL's ``num_trainers_per_machine > 1``): every
  item of partition ``p`` names a trainer in ``[p*T, (p+1)*T)`` (:mod:`.trainers`);
- every input node and edge is stored exactly once, and each node sits in its
  assigned partition when ``assignment`` is given (:mod:`.id_checks`);
- every stored edge joins the input edge's endpoints (compared as new IDs: the
  ``_ID`` of its local endpoints against the new IDs of the input endpoints);
- every feature row equals the input row of its original ID, byte for byte
  (:mod:`.feature_checks`).

How it runs (:mod:`.api`: three layers of Dask tasks on the current scheduler; the
facts are staged as int64 array files (:mod:`dgl_chunked.storage.arrays`) read by row range, in a temporary local
directory unless ``scratch_dir`` is given -- pass a shared URL when workers run on
several hosts):

1. one task per partition reads ``graph.dgl`` and the orig-ID files, checks the
   partition on its own, and stages its facts sorted by original ID:
   ``(type_nid, new_nid)`` per node type and ``(type_eid, new_src, new_dst,
   new_eid)`` per edge type. Feature files are only indexed (their headers).
2. one task per block of ``block_rows`` node IDs of a type merges the partitions'
   segments of that block: every ID exactly once, the assignment, and the dense
   ``type_nid -> new_nid`` map of the block (staged);
3. one task per read task of input edge files (consecutive files of about the task
   size, :mod:`dgl_chunked.io.chunked.groups`) merges the partitions' segments of its
   ``type_eid`` range with the files' rows (endpoints looked up block by block in the
   staged node map), and one per read task of a feature's files compares its rows
   with the output rows of the same original IDs, read as byte ranges.

Memory bound per task: the partition task holds one partition's ``graph.dgl`` and
orig IDs (never its features beyond ``trainer_id``); the others hold one input
read task (or one block of ``block_rows`` IDs), its facts from all partitions (about 32
bytes per edge, 16 per node) and one staged block of the node map at a time.
Feature rows are read in coalesced runs of at most 64 MiB, so a task holds one
input feature read task plus one run. Nothing holds the whole input or a whole node-ID
space.

:func:`load_partition_output` (:mod:`.load`) is the eager counterpart: every file of
a small output read whole, for tests.
"""

from __future__ import annotations

from dgl_chunked.verify.api import DEFAULT_BLOCK_ROWS, verify_partitions
from dgl_chunked.verify.load import PartitionFiles, load_partition_output
from dgl_chunked.verify.report import VerifyCounts, VerifyReport

__all__ = [
    "DEFAULT_BLOCK_ROWS",
    "PartitionFiles",
    "VerifyCounts",
    "VerifyReport",
    "load_partition_output",
    "verify_partitions",
]
