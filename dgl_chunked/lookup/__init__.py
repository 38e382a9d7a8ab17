"""Seeds into partitions: original IDs or keys -> the new IDs a trainer loads (``dgl-chunked lookup``).

:func:`lookup_ids` takes original IDs or keys (a column of a Parquet/CSV file, an
``.npy`` file, or an array or DataFrame) plus label columns, and writes per
partition the new IDs a trainer passes to ``DistNodeDataLoader``, with the labels
aligned (``.npy`` files and a ``torch.save`` dict; the layout is in
:mod:`~dgl_chunked.lookup.api`). It runs out of core on Dask, one block of original
IDs (or hash bucket of keys) per task.

The map between original and new IDs is :mod:`dgl_chunked.remap`'s, the direction
``dgl-chunked remap`` reads it in: the partitions' ``orig_*ids.dgl``, else our
assignment with the chunked graph (:mod:`~dgl_chunked.remap.plan`), keys from
``node_keys/`` or GSProcessing's ``raw_id_mappings/``
(:mod:`~dgl_chunked.remap.id_mappings`). This package imports those; ``remap``
never imports ``lookup``. Modules: :mod:`.queries` (the queries, inspected and cut
into pieces), :mod:`.tasks` (the task kernels: stage, join, place, write per
partition), :mod:`.api` (:func:`lookup_ids`, the Dask wiring).
"""

from __future__ import annotations

from dgl_chunked.lookup.api import LookupResult, lookup_ids

__all__ = ["LookupResult", "lookup_ids"]
