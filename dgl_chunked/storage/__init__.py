"""Storage, below every format: fsspec paths, direct I/O, Zarr lookups, owned directories.

Nothing here knows a file format or imports Dask. Every path in dgl_chunked is a
local path or an fsspec URL (:mod:`.fs`); large local writes bypass the page cache
(:mod:`.direct_io`); edge read tasks look up node IDs in big 1-D Zarr arrays one Zarr chunk
at a time (:mod:`.zarr_lookup`) and read row ranges of them without whole Zarr chunks
(:mod:`.zarr_rows`); and every directory the package writes carries a
marker so that cleanup only ever touches what it wrote (:mod:`.owned`). There is
one ``.npy`` reader (:mod:`.npy`, thread-safe), one way to write an output file
that never leaves a partial file behind (:mod:`.output_file`), and one form of the
intermediate arrays a computation writes once and reads back by row ranges, with the
one way to open a Zarr store (:mod:`.arrays`), and one form of the intermediate files
whose rows are sorted out by bucket for later tasks (:mod:`.buckets`).
"""

from __future__ import annotations

from dgl_chunked.storage import arrays, buckets, direct_io, fs, npy, output_file, owned, zarr_lookup, zarr_rows

__all__ = ["arrays", "buckets", "direct_io", "fs", "npy", "output_file", "owned", "zarr_lookup", "zarr_rows"]
