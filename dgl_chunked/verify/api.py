"""``verify_partitions``: the three layers of verify tasks wired on the current Dask scheduler."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import dask
from dask.base import tokenize

from dgl_chunked._dask import run_token
from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.compute import compute_settled
from dgl_chunked.errors import OptionError
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.io.chunked.node_id_features import parse_node_id_features
from dgl_chunked.io.dgl import read_partition_config
from dgl_chunked.storage import fs
from dgl_chunked.storage.owned import check_no_overlap, make_scratch_dir, remove_owned
from dgl_chunked.verify.feature_checks import feature_chunk_task
from dgl_chunked.verify.id_checks import PartSlices, edge_chunk_task, node_block_task
from dgl_chunked.verify.partition_checks import PartFacts, partition_task
from dgl_chunked.verify.plan import Plan, check_config, check_maps, make_plan
from dgl_chunked.verify.report import MAX_PROBLEMS_PER_TASK, VerifyReport
from dgl_chunked.verify.trainers import check_trainer_spans

__all__ = ["DEFAULT_BLOCK_ROWS", "verify_partitions"]

DEFAULT_BLOCK_ROWS = 1 << 20
"""Node IDs per node-check task and per staged block of the node map."""


def verify_partitions(
    graph: ChunkedGraph | PathLike,
    out_dir: PathLike,
    *,
    assignment: Mapping[str, Any] | None = None,
    storage_options: StorageOptions = None,
    scratch_dir: PathLike | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    num_trainers_per_machine: int | None = None,
    node_id_features: Iterable[str] | Mapping[str, str | None] = (),
) -> VerifyReport:
    """Check every node, edge, ID map and feature row of an output against its input.

    Runs on the current Dask scheduler (two computes); see :mod:`dgl_chunked.verify`
    for what is checked and the memory bound of each task.

    Parameters
    ----------
    graph
        The chunked input (object or directory).
    out_dir
        The partition output directory (holds the partition config ``metadata.json``).
    assignment
        Optional ``ntype -> partition per node`` (numpy or dask arrays) to also check
        ownership.
    storage_options
        fsspec options for ``out_dir`` (and for ``graph`` when it is a path).
    scratch_dir
        Where the staged facts go (about 16 bytes per node and 40 per edge), in a new
        directory ``dglc-verify-<token>`` removed afterwards; default the system temp
        dir. Use a location every worker reaches (a URL) when they are on several hosts.
    block_rows
        Node IDs per node-check task (and per staged block of the node map).
    num_trainers_per_machine
        ``T`` of an output with ``trainer_id`` data: partition ``p``'s items must name
        trainers in ``[p*T, (p+1)*T)``. None: the least ``T`` that fits the largest
        trainer IDs (a ``T`` that fits them all exists, or a problem says where not).
    node_id_features
        The features ``dispatch`` translated with the same ``node_id_features``
        (``"TYPE/FEATURE[=NTYPE]"`` strings or a mapping, see
        :mod:`dgl_chunked.io.chunked.node_id_features`): their rows must hold the
        per-type new IDs of the input's values.

    Returns
    -------
    VerifyReport
        ``problems`` (each naming the partition or type and what is wrong) and
        ``checked``, a :class:`~dgl_chunked.verify.VerifyCounts`: partitions, and
        nodes, edges and feature rows found, per type and in total.

    Raises
    ------
    OptionError
        ``num_trainers_per_machine`` below 1.

    Examples
    --------
    >>> report = verify_partitions("chunked/", "out/")  # doctest: +SKIP
    >>> report.ok, report.checked.summary()  # doctest: +SKIP
    (True, '65 edges, 97 feature rows, 32 nodes, 2 partitions')
    >>> report.checked.nodes_per_type  # doctest: +SKIP
    {'author': 12, 'institution': 5, 'paper': 15}
    """
    if num_trainers_per_machine is not None and num_trainers_per_machine < 1:
        raise OptionError(f"num_trainers_per_machine must be >= 1 or None (infer it), found {num_trainers_per_machine}")
    if not isinstance(graph, ChunkedGraph):
        graph = open_chunked_graph(graph, storage_options=storage_options)
    id_features = {f.key: f.ntype for f in parse_node_id_features(graph, node_id_features)}
    report = VerifyReport()
    config = read_partition_config(out_dir, storage_options=storage_options)
    if not check_maps(graph, config, report):
        return report
    with _scratch(scratch_dir, graph.input_locations(), storage_options) as scratch:
        plan = make_plan(
            graph,
            config,
            str(out_dir),
            scratch,
            storage_options=storage_options,
            block_rows=block_rows,
            node_id_features=id_features,
        )
        if not check_config(config, plan, report):
            return report
        token = tokenize(plan.out_dir, plan.scratch)
        shared = dask.delayed(plan, name=f"dglc-verify-plan-{token}")  # one copy, not one per task
        facts = compute_settled(
            *[
                dask.delayed(partition_task, pure=False)(shared, p, dask_key_name=(f"dglc-verify-partition-{token}", p))
                for p in range(plan.num_parts)
            ]
        )
        for part in facts:
            report.problems += part.problems
        report.checked.partitions = plan.num_parts
        report.problems += check_trainer_spans(
            [s for part in facts for s in part.trainers], plan.num_parts, num_trainers_per_machine
        )
        if any(part.fatal for part in facts):
            return report
        results = compute_settled(*_check_tasks(graph, plan, shared, list(facts), assignment, token))
    for counts, group in zip(
        (
            report.checked.nodes_per_type,
            report.checked.edges_per_type,
            report.checked.node_feature_rows,
            report.checked.edge_feature_rows,
        ),
        results,
        strict=True,
    ):
        for key, tasks in group.items():
            for result in tasks:
                report.problems += result.problems[:MAX_PROBLEMS_PER_TASK]
            counts[key] = sum(r.count for r in tasks)
    return report


@contextlib.contextmanager
def _scratch(
    scratch_dir: PathLike | None, inputs: dict[str, str], storage_options: StorageOptions
) -> Iterator[tuple[str, StorageOptions]]:
    """A new marked directory ``dglc-verify-<token>`` under ``scratch_dir`` (default
    the system temp dir) and its storage options, removed afterwards.

    Only that directory is written, so only it must stay clear of the chunked input;
    inside the (marked) output it verifies it is a marked child like a run's scratch.
    """
    parent = tempfile.gettempdir() if scratch_dir is None else os.fspath(scratch_dir)
    options = storage_options if fs.is_url(parent) else None
    token = run_token(parent)
    check_no_overlap({"scratch directory": fs.join(parent, f"dglc-verify-{token}")}, inputs)
    path = make_scratch_dir(parent, "verify", token, storage_options=options)
    try:
        yield path, options
    finally:
        remove_owned(path, storage_options=options)


Tasks = dict[str, list[Any]]


def _check_tasks(
    graph: ChunkedGraph,
    plan: Plan,
    shared: Any,
    facts: list[PartFacts],
    assignment: Mapping[str, Any] | None,
    token: str,
) -> tuple[Tasks, Tasks, Tasks, Tasks]:
    """Layers 2 and 3 as delayed tasks: node blocks per node type, input edge files per
    edge type, input feature files per node feature and per edge feature."""
    nodes: Tasks = {}
    for t, ntype in enumerate(plan.ntypes):
        nodes[ntype] = [
            dask.delayed(node_block_task, pure=False)(
                shared,
                t,
                b,
                _segments(facts, "node_counts", t, b),
                None if assignment is None else assignment[ntype][b * plan.block_rows : (b + 1) * plan.block_rows],
                dask_key_name=(f"dglc-verify-nodes-{token}", t, b),
            )
            for b in range(plan.blocks(t))
        ]
    edges: Tasks = {}
    for r, (etype, src_t, dst_t) in enumerate(plan.etypes):
        edges[etype] = [
            dask.delayed(edge_chunk_task, pure=False)(
                shared,
                r,
                c,
                ref,
                _segments(facts, "edge_counts", r, c),
                *nodes[plan.ntypes[src_t]],
                *nodes[plan.ntypes[dst_t]],
                dask_key_name=(f"dglc-verify-edges-{token}", r, c),
            )
            for c, ref in enumerate(graph.edge_groups(etype))
        ]
    feats: dict[str, Tasks] = {"node": {}, "edge": {}}
    for i, feat in enumerate(plan.features):
        type_name, name = feat.key.rsplit("/", 1)
        refs = graph.feature_groups(feat.kind, type_name, name)  # type: ignore[arg-type]
        deps = nodes[type_name] if feat.kind == "node" else edges[type_name]
        if feat.id_ntype >= 0:  # its values are looked up in that type's staged node map (orig2new)
            deps = deps + nodes[plan.ntypes[feat.id_ntype]]
        files = {p: part.features[feat.key] for p, part in enumerate(facts) if feat.key in part.features}
        feats[feat.kind][feat.key] = [
            dask.delayed(feature_chunk_task, pure=False)(
                shared, feat, ref, files, *deps, dask_key_name=(f"dglc-verify-features-{token}", i, k)
            )
            for k, ref in enumerate(refs)
        ]
    return nodes, edges, feats["node"], feats["edge"]


def _segments(facts: list[PartFacts], attr: str, index: int, bucket: int) -> PartSlices:
    """``(partition, start, count)`` of each partition's staged rows in one bucket."""
    out = []
    for p, part in enumerate(facts):
        counts = getattr(part, attr).get(index)
        if counts is not None and counts[bucket]:
            out.append((p, int(counts[:bucket].sum()), int(counts[bucket])))
    return out
