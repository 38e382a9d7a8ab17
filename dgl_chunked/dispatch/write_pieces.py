"""How many tasks write each file of dispatch's write step: one, unless threads would idle.

A file written by several tasks (:mod:`~dgl_chunked.dispatch.graph_split`,
:mod:`~dgl_chunked.dispatch.feature_split`) costs more than the one-task writer: a skeleton
and a rename task, the HALO sets handed between tasks, writes at scattered offsets. It
pays only where threads would otherwise idle: the step has one task per file, so with at
least as many files to write as the cluster has worker threads every thread is busy
already (2 partitions x 3 files on 2 workers wrote in 7.2-7.5 s as one task per file and
in 11.9-15.2 s split, issue 37). So a file is split only when the cluster has more
threads than the step has files, and then into no more pieces than the idle threads can
take: the spare threads go one at a time to the splittable file with the most bytes per
piece (:func:`file_pieces`). The count is decided once per step, on the client, from the
cluster's threads (:func:`cluster_threads`).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Sequence
from typing import Any

from dgl_chunked._dask import current_client

__all__ = ["cluster_threads", "file_kinds", "file_pieces"]


def cluster_threads(client: Any = None) -> int:
    """The threads that run tasks: a ``distributed`` cluster's worker threads, else the local scheduler's.

    ``client`` as :func:`~dgl_chunked._dask.current_client` takes it (None: Dask's scheduler in
    use). Dask's synchronous scheduler runs one task at a time; its threaded and process ones
    use ``dask.config`` ``num_workers`` or a thread per CPU, as Dask does.
    """
    distributed = current_client(client)
    if distributed is not None:
        return max(1, int(sum(distributed.nthreads().values())))
    import dask
    import dask.local
    from dask.base import get_scheduler

    if get_scheduler() is dask.local.get_sync:
        return 1
    return max(1, int(dask.config.get("num_workers", None) or os.cpu_count() or 1))


def file_pieces(files: Sequence[tuple[int, int]], threads: int) -> list[int]:
    """Tasks for each file of a step (its pieces), given ``(bytes, most pieces)`` per file.

    Every file gets one piece. Only where ``threads`` exceed the number of files, the spare
    threads are handed out one at a time to the file with the most bytes per piece that may
    take another (``most pieces``: 1 for a file that is never split).

    Examples
    --------
    >>> file_pieces([(100, 8), (10, 4), (50, 1)], 2)
    [1, 1, 1]
    >>> file_pieces([(100, 8), (10, 4), (50, 1)], 8)
    [6, 1, 1]
    >>> file_pieces([(100, 8), (60, 4), (50, 1)], 8)
    [4, 3, 1]
    >>> file_pieces([(100, 2), (10, 1)], 16)
    [2, 1]
    """
    pieces = [1] * len(files)
    spare = threads - len(files)
    heap = [(-float(size), i) for i, (size, most) in enumerate(files) if most > 1]
    heapq.heapify(heap)
    while spare > 0 and heap:
        _, i = heapq.heappop(heap)
        pieces[i] += 1
        spare -= 1
        size, most = files[i]
        if pieces[i] < most:
            heapq.heappush(heap, (-(size / pieces[i]), i))
    return pieces


def file_kinds(orig_nids: bool, orig_eids: bool) -> tuple[str, ...]:
    """The files of a partition, in the write step's order (the graph first): ``graph``,
    ``node_feat``, ``edge_feat``, then ``orig_nids`` / ``orig_eids`` where they are kept
    (:func:`~dgl_chunked.dispatch.finalize.partition_files` of a run's plan)."""
    return ("graph", "node_feat", "edge_feat") + ("orig_nids",) * orig_nids + ("orig_eids",) * orig_eids
