"""Results back under the original IDs and keys: ``remap``, and the map between the two ID spaces.

DGL's partitions renumber nodes and edges: a ``DistGraph`` trainer sees type-wise
*new* IDs (partition by partition), while the user's tables know the *original*
type-wise IDs of the chunked graph, or the keys ``dgl-chunked chunk`` turned into
them (``node_keys/``), or GSProcessing's ``raw_id_mappings/``
(:mod:`~dgl_chunked.remap.id_mappings`). This package goes from new IDs back to
original ones; :mod:`dgl_chunked.lookup` goes the other way and builds on the map this
package holds. Both are joins over arrays as large as the graph and run out of core on
Dask, one block of original IDs per task:

- :func:`remap_results` (``dgl-chunked remap``): results indexed by new IDs (one
  array, row-range files per rank, or ``(new IDs, rows)`` pairs per rank; ``.npy``,
  Parquet, Zarr, ``torch.save`` ``.pt`` or ``.dgl`` files) -> rows in original-ID
  order (``.npy``, Zarr, or Parquet / CSV tables with the user's ID beside the value,
  as GraphStorm's ``remap_result`` writes them);
- :func:`~dgl_chunked.lookup.lookup_ids` (``dgl-chunked lookup``, in
  :mod:`dgl_chunked.lookup`): original IDs or keys -> per partition the new IDs a
  trainer passes to ``DistNodeDataLoader``.

Shared by both, and kept here (``lookup`` imports them, never the reverse): the
type's new-ID space (:mod:`.spaces`), the map's sources and blocks (:mod:`.mapping`,
:mod:`.plan`, :mod:`.tasks`, :mod:`.kernels`), the shuffle route (:mod:`.shuffled`),
user IDs (:mod:`.keys`, :mod:`.id_mappings`) and :class:`RemapError`.

The map between the two ID spaces comes from the partitions' ``orig_nids.dgl`` /
``orig_eids.dgl`` when written (``--save-orig-nids`` / ``--save-orig-eids``), in any
order (DGL's pipeline keeps none inside a type), else, for partitions dgl_chunked
wrote (its mark), from the assignment directory and the chunked graph (our numbering
is deterministic); otherwise one error says which flag was missing. Keys are used
only where the chunked graph says what they are.
"""

from __future__ import annotations

from dgl_chunked.remap.api import RemapResult, TypeSummary, remap_results
from dgl_chunked.remap.model import RemapError, ResultFile, ResultSource

__all__ = [
    "RemapError",
    "RemapResult",
    "ResultFile",
    "ResultSource",
    "TypeSummary",
    "remap_results",
]
