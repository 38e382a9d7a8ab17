"""The ``partition`` command's workflow as one call: assign, write, report; retract on failure."""

from __future__ import annotations

from dataclasses import replace

from dask.base import tokenize

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.io.assignment import open_assignment, retract_assignment, write_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition.assign import PartitionOptions, assign_partitions
from dgl_chunked.partition.lp.heap import give_back_free_heap
from dgl_chunked.partition.report import PartitionReport, compute_partition_report
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, make_scratch_dir, remove_owned

__all__ = ["REPORT_NAME", "make_assignment"]

REPORT_NAME = "report.json"
"""The report :func:`make_assignment` writes into the assignment directory."""


def make_assignment(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    options: PartitionOptions | None = None,
    overwrite: bool = False,
    scratch_dir: PathLike | None = None,
    storage_options: StorageOptions = None,
) -> PartitionReport:
    """Partition ``graph`` and write the assignment directory ``out_dir`` with its report.

    The ``dgl-chunked partition`` command: :func:`~dgl_chunked.partition.assign_partitions`,
    :func:`~dgl_chunked.io.assignment.write_assignment`, then
    :func:`~dgl_chunked.partition.compute_partition_report` of the assignment as written
    (read back, so the report measures what ``dispatch`` will read), saved as
    ``out_dir/report.json``. A failure after the assignment was written (the report
    reads every edge, so a bad edge file fails there) retracts it: a failed call never
    leaves an assignment that looks complete.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` or a chunked graph directory.
    out_dir
        The assignment directory to write (``<ntype>.txt``, ``partition_meta.json``,
        ``dglc_partition.json``, ``report.json``); local path or fsspec URL.
    num_parts
        Number of partitions (>= 1).
    method
        A registered partition method (:func:`~dgl_chunked.partition.available_methods`).
    options
        Seed, balance and memory options (:class:`~dgl_chunked.partition.PartitionOptions`);
        its ``scratch_dir`` and ``storage_options`` are replaced by this call's scratch.
        The seed and balance options are recorded in ``dglc_partition.json``.
    overwrite
        Replace an assignment this package wrote in ``out_dir``.
    scratch_dir
        Parent of this call's scratch directory ``dglc-partition-<token>`` (the methods'
        and the report's intermediate data), removed at the end; default ``out_dir``.
        Local or a URL (with ``storage_options``): every worker must reach it.
    storage_options
        fsspec options for ``out_dir`` (and a ``scratch_dir`` URL).

    Returns
    -------
    PartitionReport
        Edge cut, balance and HALO counts of the written assignment (also in ``report.json``).

    Raises
    ------
    OverlapError
        ``out_dir`` or the scratch directory overlaps an input file; nothing is created.
    DglChunkedError
        Bad input or options, as for the functions above.

    Examples
    --------
    >>> import dgl_chunked as dglc                              # doctest: +SKIP
    >>> report = dglc.make_assignment("chunked/", "assign/", num_parts=4, method="lp")  # doctest: +SKIP
    >>> print(report.to_table())                                # doctest: +SKIP
    """
    so = storage_options
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=so)
    out = str(out_dir)
    parent = out if scratch_dir is None else str(scratch_dir)
    token = tokenize(parent, "partition")[:16]  # named after where it goes: a rerun finds the same scratch
    inputs = graph.input_locations()
    check_no_overlap(  # before anything (the scratch first) is created
        {"--out-dir": out, "scratch directory": fs.join(parent, f"dglc-partition-{token}")},
        inputs,
        storage_options=so,
    )
    scratch_so = so if fs.is_url(parent) else None
    scratch = make_scratch_dir(parent, "partition", token, storage_options=scratch_so)
    try:
        return _assign_write_report(
            graph, out, num_parts, method, options or PartitionOptions(), overwrite, scratch, scratch_so, so
        )
    finally:
        remove_owned(scratch, storage_options=scratch_so)


def _assign_write_report(
    graph: ChunkedGraph,
    out: str,
    num_parts: int,
    method: str,
    options: PartitionOptions,
    overwrite: bool,
    scratch: str,
    scratch_so: StorageOptions,
    so: StorageOptions,
) -> PartitionReport:
    """:func:`make_assignment`'s steps, inside its scratch directory."""
    parts = assign_partitions(
        graph, num_parts, method=method, options=replace(options, scratch_dir=scratch, storage_options=scratch_so)
    )
    balance = None if options.balance_ntypes is None else list(options.balance_ntypes)
    write_assignment(
        out,
        parts,
        num_parts=num_parts,
        algo_name=method,
        overwrite=overwrite,
        provenance={"seed": options.seed, "balance_ntypes": balance, "balance_edges": options.balance_edges},
        storage_options=so,
        inputs=graph.input_locations(),
    )
    # the partitioner's free heap back to the system before the report reads every edge
    # (as typed, both run in this process: lp at 10M nodes leaves about 0.3 GB of it)
    give_back_free_heap()
    try:  # the report reads every edge: a bad input fails here, after the assignment
        _, written = open_assignment(
            out,
            graph.metadata,
            num_parts=num_parts,
            storage_options=so,
            chunks={t: graph.node_chunks(t) for t in graph.node_types},
        )
        report = compute_partition_report(graph, written, num_parts, scratch_dir=scratch, storage_options=scratch_so)
        report.to_json(fs.join(out, REPORT_NAME), storage_options=so)
    except BaseException:
        retract_assignment(out, storage_options=so)  # a failed call leaves nothing complete
        raise
    return report
