"""The ``lp`` staging tasks: every read task of edge files oriented into staged entries
(both directions of every non-self-loop edge, block-major, :func:`.kernels.orient_edges`),
one set of staged files per slice of :data:`STAGE_EDGES` edges; the prepare and
restage tasks (:mod:`.tasks`) then gather every block's entries from them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from dgl_chunked._dask import on_worker
from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp.store import ScratchRoot, edges_file, save

__all__ = ["STAGE_EDGES", "release_arrow_pool", "stage_pieces", "stage_task", "staged_files"]


STAGE_EDGES = 1 << 21
"""Edges oriented and staged at once by a staging task: a read task of more edges (a
large edge file) writes one set of staged files per slice of this many, in order."""


def stage_pieces(rows: int) -> int:
    """The staged files (slices of :data:`STAGE_EDGES` edges) of a read task of ``rows`` edges."""
    return max(1, -(-rows // STAGE_EDGES))


def stage_task(
    ref: Any,
    *,
    root: ScratchRoot,
    c: int,
    offsets: tuple[int, int],
    bounds: tuple[int, int],
    block_rows: int,
    num_blocks: int,
    v_dtype: str,
) -> list[tuple[IdArray, IdArray]]:
    """Stage read task ``ref`` (a group of edge files) as the staged files ``c``,
    ``c + 1``, ... (one per slice of :data:`STAGE_EDGES` edges, :func:`stage_pieces`);
    return each one's entries and self-loops per node block.

    The slices are the files a finer chunking of the same edges would give, so the
    output does not change (it does not depend on the chunking); a task holds one
    slice's edges and entries with their sort, not the group's: the files are read
    slice by slice (:func:`~dgl_chunked.io.chunked.chunks.iter_edge_slices`; a
    Parquet file in batches). Issue #38 measured a staging task of one 12.5M-edge
    file (10M nodes / 100M edges in 8 files) at 1.3 GB above the worker's base when
    it was read as a DataFrame and oriented whole, and still 542 MB at the worker's
    peak with the group's edges (16 bytes per edge) read whole and staged by slices.
    """
    from dgl_chunked.io.chunked.chunks import iter_edge_slices

    slices = iter_edge_slices(ref, STAGE_EDGES, num_src=bounds[0], num_dst=bounds[1])
    empty = np.empty(0, np.int64)
    try:
        out = [
            _stage_slice(src, dst, root, c + i, offsets, block_rows, num_blocks, v_dtype)
            for i, (src, dst) in enumerate(slices)
        ]  # a group of no edges still has its one staged file (stage_pieces)
        return out or [_stage_slice(empty, empty, root, c, offsets, block_rows, num_blocks, v_dtype)]
    finally:
        release_arrow_pool()
        _release_on_the_main_thread()


def _release_on_the_main_thread() -> None:
    """On a ``distributed`` worker, :func:`release_arrow_pool` on its main thread (its
    event loop: a callback, run once the loop gets to it), so that the next tasks of
    the staging computation do not run beside the read buffers Arrow's threads freed
    (issue #38: at 10M nodes / 100M edges the peak of the worker not running the
    driver, 698 MB, came in the gathering tasks after the staging, 225 MB of it these
    buffers)."""
    if not on_worker():
        return
    from distributed import get_worker

    get_worker().loop.add_callback(release_arrow_pool)


def release_arrow_pool() -> bool:
    """Give pyarrow's freed buffers back to the system (when pyarrow read the files);
    returns whether this ran on the process's main thread.

    Its memory pool (mimalloc) keeps them for later reads: after staging one 12.5M-edge
    Parquet file (10M nodes / 100M edges in 8 files) a process held 395 MB, 147 MB
    once they were released, and a worker kept that for the rest of the ``lp`` run
    (issue #38, h-10m). A release on a worker thread only gives back the buffers that
    thread allocated: a file over
    :data:`dgl_chunked.io.formats.parquet.THREADED_READ_BYTES` is decoded by Arrow's own
    threads, and only a release on the main thread gives those back (one 12.5M-edge
    file read on a thread: 226 MB kept after a release there or on another thread,
    3 MB after one on the main thread). So the driver also calls it on every worker's
    main thread after each staging task and once the staging is done
    (:func:`.streaming.release_arrow_pools`)."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    return threading.current_thread() is threading.main_thread()


def _stage_slice(
    src: IdArray,
    dst: IdArray,
    root: ScratchRoot,
    c: int,
    offsets: tuple[int, int],
    block_rows: int,
    num_blocks: int,
    v_dtype: str,
) -> tuple[IdArray, IdArray]:
    """Orient and write one slice of edges as staged file ``c``; its entries and
    self-loops per node block."""
    src, dst = (x + off if off else x for x, off in ((src, offsets[0]), (dst, offsets[1])))
    u, v, counts, loops = K.orient_edges(
        src, dst, block_rows=block_rows, num_blocks=num_blocks, v_dtype=np.dtype(v_dtype).type
    )
    del src, dst
    loops = np.sort(loops)
    for name, arr in (("su", u), ("sv", v), ("loops", loops)):
        save(root, edges_file(root, c, name), arr)
    return counts, np.bincount(loops // block_rows, minlength=num_blocks).astype(np.int64)


def staged_files(staged: tuple[list[tuple[IdArray, IdArray]], ...]) -> list[tuple[IdArray, IdArray]]:
    """What every staged file holds per block (entries, self-loops), in file order,
    from what the :func:`stage_task` s returned."""
    return [piece for task in staged for piece in task]
