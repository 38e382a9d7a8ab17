"""Both steps in one call: assign partitions, then dispatch."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.dispatch.api import DispatchOptions, DispatchResult, dispatch, staging_location
from dgl_chunked.dispatch.forecast import forecast_run
from dgl_chunked.dispatch.forecast.network import ASSIGNMENT_STEP
from dgl_chunked.errors import DglChunkedError, OptionError
from dgl_chunked.io.assignment import retract_assignment, write_assignment
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import PartitionOptions, assign_partitions
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, make_scratch_dir, remove_owned

__all__ = ["run"]


logger = logging.getLogger(__name__)


def run(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    num_parts: int,
    method: str = "random",
    seed: int = 0,
    balance_ntypes: Sequence[str] | None = None,
    balance_edges: bool = False,
    partitions_dir: PathLike | None = None,
    num_trainers_per_machine: int = 1,
    options: DispatchOptions | None = None,
    storage_options: StorageOptions = None,
    client: Any = None,
    scratch_dir: PathLike | None = None,
    method_config: Any = None,
    partition_options: PartitionOptions | None = None,
) -> DispatchResult:
    """Partition ``graph`` with ``method`` and write DGL partitions to ``out_dir``.

    Parameters
    ----------
    graph
        A :class:`~dgl_chunked.io.chunked.graph.ChunkedGraph` or a chunked graph directory.
    out_dir
        Output directory for ``metadata.json`` and ``part<i>/``.
    num_parts, method, seed, balance_ntypes, balance_edges
        Passed to :func:`~dgl_chunked.partition.assign_partitions`.
    partitions_dir
        Also keep the assignment there, in DGL's layout (``<ntype>.txt``).
    num_trainers_per_machine
        As in DGL's ``partition_graph``: assign ``num_parts * T`` parts, store each
        node's part as node data ``trainer_id`` (``node_feat.dgl`` key
        ``<ntype>/trainer_id``), and coalesce parts ``[p*T, (p+1)*T)`` into partition ``p``.
    options, storage_options, client
        As for :func:`~dgl_chunked.dispatch.dispatch`.
    scratch_dir
        Parent of this run's scratch directory ``dglc-run-<token>`` (partitioner
        data, e.g. ``lp``'s), removed at the end; default ``out_dir``. Local or a URL
        (with ``storage_options``): every worker must reach it.
    method_config
        The method's tuning for this run (:class:`~dgl_chunked.partition.LPConfig` for
        ``lp``), as for :func:`~dgl_chunked.partition.assign_partitions`.
    partition_options
        ``seed``, ``balance_ntypes``, ``balance_edges`` and ``method_config`` as one
        :class:`~dgl_chunked.partition.PartitionOptions` (as the CLI passes them; those
        keywords then keep their defaults). Its scratch directory is this run's.

    Returns
    -------
    DispatchResult
    """
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    loose = PartitionOptions(
        seed=seed,
        balance_ntypes=None
        if balance_ntypes is None
        else tuple(n for n in balance_ntypes.split(",") if n)
        if isinstance(balance_ntypes, str)
        else tuple(balance_ntypes),
        balance_edges=balance_edges,
        method_config=method_config,
    )
    if partition_options is not None and loose != PartitionOptions():
        raise OptionError("partition_options: pass either a PartitionOptions or the keyword arguments it replaces")
    part_options = partition_options or loose
    parent = str(out_dir if scratch_dir is None else scratch_dir)
    # named after the output: a rerun (resume) finds the same scratch, so the same task keys
    scratch_name = f"dglc-run-{tokenize(str(out_dir), parent)[:16]}"
    trainers = num_trainers_per_machine
    if trainers < 1:
        raise OptionError(f"num_trainers_per_machine must be >= 1, found {trainers}")
    # the run's one check of every location it writes, and of the space, before anything
    # (the scratch first) is written; its dispatch checks neither again
    _check_locations(graph, out_dir, fs.join(parent, scratch_name), partitions_dir, options, storage_options)
    if (options or DispatchOptions()).check_space:
        _check_space(graph, out_dir, num_parts, method, trainers, options, storage_options)
    so = storage_options if fs.is_url(parent) else None
    scratch = make_scratch_dir(parent, "run", scratch_name.removeprefix("dglc-run-"), storage_options=so)
    try:
        return _run(
            graph,
            out_dir,
            scratch,
            so,
            num_parts=num_parts,
            method=method,
            part_options=part_options,
            partitions_dir=partitions_dir,
            trainers=trainers,
            options=options,
            storage_options=storage_options,
            client=client,
        )
    finally:
        remove_owned(scratch, storage_options=so)


def _check_locations(
    graph: ChunkedGraph,
    out_dir: PathLike,
    scratch: str,
    partitions_dir: PathLike | None,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
) -> None:
    """Refuse an output, scratch, staging or assignment location that overlaps an input
    (the assignment: also the output and the staging, which dispatch reads it beside)."""
    inputs = graph.input_locations()
    out = str(out_dir)
    staging = staging_location(out, (options or DispatchOptions()).staging_dir, storage_options)
    check_no_overlap(
        {"--out-dir": out, "scratch directory": scratch, "staging directory": staging},
        inputs,
        storage_options=storage_options,
    )
    if partitions_dir is not None:
        check_no_overlap(
            {"--partitions-dir": str(partitions_dir)},
            {**inputs, "--out-dir": out, "staging directory": staging},
            storage_options=storage_options,
        )


def _check_space(
    graph: ChunkedGraph,
    out_dir: PathLike,
    num_parts: int,
    method: str,
    trainers: int,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
) -> None:
    """Refuse a run the disks cannot hold; input the forecast cannot read is left to the run."""
    try:
        forecast = forecast_run(
            graph,
            out_dir,
            num_parts=num_parts,
            method=method,
            workers=1,
            num_trainers_per_machine=trainers,
            options=options,
            storage_options=storage_options,
        )
    except (DglChunkedError, OSError):
        return
    forecast.check_space()


def _run(
    graph: ChunkedGraph,
    out_dir: PathLike,
    scratch: str,
    scratch_options: StorageOptions,
    *,
    num_parts: int,
    method: str,
    part_options: PartitionOptions,
    partitions_dir: PathLike | None,
    trainers: int,
    options: DispatchOptions | None,
    storage_options: StorageOptions,
    client: Any,
) -> DispatchResult:
    parts = assign_partitions(
        graph,
        num_parts * trainers,
        method=method,
        options=replace(part_options, scratch_dir=scratch, storage_options=scratch_options),
    )
    extra: dict[str, dict[str, da.Array]] = {}
    if trainers > 1:
        # Like DGL's partition_graph: partition per trainer, keep the trainer in node data
        # "trainer_id", then coalesce each machine's trainers into one partition.
        extra = {t: {"trainer_id": p.astype(np.int64)} for t, p in parts.items()}
        parts = {t: (p // trainers).astype(np.int32) for t, p in parts.items()}
    keep: Any = None
    if partitions_dir is not None:
        # written from what dispatch staged: the partitioner's result is computed once,
        # and dispatch never reads it back from text (nor from a Zarr copy)
        def keep(staged: dict[str, da.Array]) -> None:
            # a step line of its own, so that its time and bytes are told apart (plan forecasts it)
            tasks = sum(a.numblocks[0] for a in staged.values())
            logger.info("run step: %s (%d tasks)", ASSIGNMENT_STEP, tasks)
            write_assignment(
                partitions_dir,
                staged,
                num_parts=num_parts,
                algo_name=method,
                storage_options=storage_options,
                overwrite=True,
                binary=False,
            )

    opts = options or DispatchOptions()
    if opts.part_method is None:
        opts = replace(opts, part_method=method)
    try:
        return dispatch(
            graph,
            parts,
            out_dir,
            num_parts=num_parts,
            options=opts,
            storage_options=storage_options,
            client=client,
            extra_node_data=extra,
            on_assignment=keep,
            prechecked=True,  # the run checked its locations and space (run above)
        )
    except BaseException:
        if partitions_dir is not None:  # a failed run leaves no complete-looking assignment
            retract_assignment(partitions_dir, storage_options=storage_options)
        raise
