"""Task bodies of the ``lp`` method: the scratch store (:mod:`.store`) around the
kernels (:mod:`.kernels`).

A round's node *span* is either ``(start, stop)``, positions in the block's tier order
(the nodes of a run of degree tiers), or ``None``: every node of the block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray
from dgl_chunked.partition.lp import kernels as K
from dgl_chunked.partition.lp import schedule
from dgl_chunked.partition.lp.round_kernels import gather, sorted_by
from dgl_chunked.partition.lp.staging import staged_files
from dgl_chunked.partition.lp.store import (
    ScratchRoot,
    Segments,
    edges_file,
    kept_array,
    node_file,
    pooled_array,
    read_block,
    read_segments,
    save,
    write_block,
)

__all__ = [
    "FULL_READ_BYTES",
    "Span",
    "apply_task",
    "fill_task",
    "prepare_task",
    "propose_task",
    "restage_task",
]

FULL_READ_BYTES = 1 << 26
"""A proposal task reads the whole assignment at once below this size, else block by block."""
_PREPARE_ENTRIES = 1 << 22  # staged entries read at once when counting degrees

Span = tuple[int, int] | None


def prepare_task(
    stratum: npt.NDArray[Any],
    *staged: list[tuple[IdArray, IdArray]],
    root: ScratchRoot,
    b: int,
    block_rows: int,
    num_strata: int,
    owned: bool,
) -> tuple[IdArray, IdArray]:
    """Degree, tier, stratum, owned edges (with ``owned``), tier order and empty
    assignment of block ``b``; ``staged`` holds every staged file's entries and
    self-loops per block (what the :func:`stage_task` s return).

    Returns the nodes per (tier + 1, stratum) ``[64, S]`` and the owned edges per
    tier + 1 ``[64]``.
    """
    rows, lo = stratum.size, b * block_rows
    files = staged_files(staged)
    num_blocks = files[0][0].size if files else 0
    segs = _block_segments([f[0] for f in files], b) if num_blocks else []
    loop_segs = _block_segments([f[1] for f in files], b) if num_blocks else []
    stratum = stratum.astype(np.int32)
    degree, weight = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    for seg in schedule.group_segments(segs, _PREPARE_ENTRIES):
        d, w = K.block_degrees([read_segments(root, seg, "su")], np.empty(0, np.int64), rows=rows, owned=owned)
        degree += d
        weight += w
    if owned and loop_segs:
        weight += np.bincount(read_segments(root, loop_segs, "loops") - lo, minlength=rows)
    tier = K.degree_tiers(degree)
    for name, arr in (
        ("tier", tier),
        ("stratum", stratum),
        ("weight", weight),
        ("order", K.node_tier_order(tier)),
        ("part", np.full(rows, -1, np.int32)),
    ):
        write_block(root, b, name, arr)
    index = tier.astype(np.int64) + 1
    table = np.bincount(index * num_strata + stratum, minlength=K.NUM_TIERS * num_strata)
    weights = np.bincount(index, weights=weight, minlength=K.NUM_TIERS) if owned else np.zeros(K.NUM_TIERS)
    return table.reshape(K.NUM_TIERS, num_strata).astype(np.int64), np.rint(weights).astype(np.int64)


def restage_task(*staged: list[tuple[IdArray, IdArray]], root: ScratchRoot, b: int) -> IdArray:
    """Gather block ``b``'s staged entries from every read task's files into the block's
    own files (``edges/<b>-u.bin``, ``-v.bin``), ordered by falling tier of ``u`` and,
    within a tier, by ``u`` (read file order within a node), once the block's tiers are
    written; ``staged`` holds what every :func:`stage_task` returned. Returns the entries
    per tier ``[63]``.

    A round then reads one contiguous range per block, instead of one per read task and
    block (read tasks x blocks tiny reads per round on large graphs), and no task reads
    another block's tiers. Grouped by node, the entries of a level-0 block are read in
    node order by every pass over them (the clustering's, the contraction's, the
    purification's and the rounds' kernels, which group them by node: issue #38), not
    scattered over the block's node arrays. Every one of those passes is exact in any
    order of the entries: the assignment does not change.
    """
    max_tier = K.NUM_TIERS - 2
    files = staged_files(staged)
    num_blocks = files[0][0].size if files else 0
    segs = _block_segments([f[0] for f in files], b) if num_blocks else []
    entries = sum(hi - lo for _, lo, hi in segs)
    if entries == 0:  # no files: the block's segments are empty
        return np.zeros(max_tier + 1, np.int64)
    u, v = (read_segments(root, segs, name, pooled=True) for name in ("su", "sv"))
    node_tier = read_block(root, b, "tier")
    key = pooled_array("tier", entries, np.int64)
    np.bitwise_and(u, K.LOCAL_MASK, out=key)
    degree = np.bincount(key, minlength=node_tier.size)
    rank = np.empty(node_tier.size, np.int64)  # each node's place: by falling tier, then by ID
    rank[K.node_tier_order(node_tier)] = np.arange(node_tier.size)
    np.take(rank, key, out=key)
    u_out, v_out = pooled_array("u_out", entries, u.dtype), pooled_array("v_out", entries, v.dtype)
    sorted_by(key, rank.size, u, v, u_out, v_out)
    save(root, edges_file(root, b, "u"), u_out)
    save(root, edges_file(root, b, "v"), v_out)
    linked = degree > 0  # their tier is >= 0
    tiers = node_tier[linked].astype(np.int64)
    return np.bincount(tiers, weights=degree[linked], minlength=max_tier + 1).astype(np.int64)


def _block_segments(counts: list[IdArray], b: int) -> Segments:
    """Block ``b``'s ``(file, start, stop)`` ranges in files whose entries are block-major."""
    starts = [int(c[:b].sum()) for c in counts]
    return [(c, lo, lo + int(n[b])) for c, (lo, n) in enumerate(zip(starts, counts, strict=True)) if n[b]]


def _span_nodes(root: ScratchRoot, b: int, rows: int, span: Span) -> npt.NDArray[Any]:
    """Block-local IDs of the nodes of ``span``, in histogram-row order."""
    if span is None:
        return np.arange(rows, dtype=np.int32)
    return root.load(node_file(root, b, "order"), span[0], span[1])


def _parts_table(
    root: ScratchRoot, blocks: range, block_rows: int, num_nodes: int, num_parts: int, *, pooled: bool = True
) -> npt.NDArray[np.integer[Any]]:
    """The assignment of ``blocks`` (a :func:`pooled_array` array with ``pooled``); int8
    when the parts fit (a 4x smaller table stays in cache for the random gather)."""
    lo = blocks.start * block_rows
    size = min(blocks.stop * block_rows, num_nodes) - lo
    dtype: type[np.integer[Any]] = np.int8 if num_parts <= 127 else np.int32
    table: npt.NDArray[np.integer[Any]] = pooled_array("table", size, dtype) if pooled else np.empty(size, dtype)
    for b in blocks:
        part = read_block(root, b, "part", pooled=True)
        np.copyto(table[b * block_rows - lo : b * block_rows - lo + part.size], part, casting="unsafe")
    return table


def _neighbour_parts(
    root: ScratchRoot,
    v: npt.NDArray[Any],
    *,
    block_rows: int,
    num_nodes: int,
    num_parts: int,
    round_key: str | None = None,
) -> npt.NDArray[np.integer[Any]]:
    """The current partition of every ``v`` (a :func:`pooled_array` array): from the whole
    assignment when small, else block by block (one block in memory at a time).

    With ``round_key`` (one per round's computation, whose moves all run before its
    proposal tasks, so the assignment does not change during them) the whole
    assignment is read once per worker thread and round (:func:`.store.kept_array`),
    not once per task: per round the reads cost workers x nodes, not tasks x nodes.
    """
    num_blocks = -(-num_nodes // block_rows)
    if num_nodes * 4 <= FULL_READ_BYTES:
        whole = range(num_blocks)
        if round_key is None:
            table = _parts_table(root, whole, block_rows, num_nodes, num_parts)
        else:
            table = kept_array(
                ("assignment", root.path, round_key),
                lambda: _parts_table(root, whole, block_rows, num_nodes, num_parts, pooled=False),
            )
        parts: npt.NDArray[np.integer[Any]] = gather(table, v, pooled_array("v_part", v.size, table.dtype))
        return parts
    out = pooled_array("v_part", v.size, np.int32)
    for b, sel in K.rows_by_block(v // block_rows, num_blocks):
        out[sel] = _parts_table(root, range(b, b + 1), block_rows, num_nodes, num_parts)[v[sel] - b * block_rows]
    return out


def _histogram(
    root: ScratchRoot,
    b: int,
    rows: int,
    groups: list[Segments],
    span: Span,
    *,
    num_parts: int,
    block_rows: int,
    num_nodes: int,
    round_key: str | None,
) -> npt.NDArray[np.int32]:
    """Neighbours per partition of ``span``'s nodes over the entries of ``groups``,
    ``[nodes, P]``: counted one group (about ``LPConfig.group_entries`` entries) at a
    time into one table.

    One task per block, not one per group: issue #38 measured the groups' own tasks at
    10M nodes / 100M edges (39 blocks): their histograms (up to ``block_rows x P``
    int32 each) waited in the workers' memory for their blocks' proposal tasks, 148 MB
    of them at once in one worker, and the heap they left (freed, not given back)
    stayed with that worker for the rest of the run.
    """
    row_of = (
        None
        if span is None
        else K.rows_of(_span_nodes(root, b, rows, span), rows, out=pooled_array("row_of", rows, np.int64))
    )
    num_rows = rows if span is None else span[1] - span[0]
    out = np.zeros((num_rows, num_parts), np.int32)
    for segs in groups:
        if not segs:
            continue
        u = read_segments(root, segs, "u", pooled=True)
        v_part = _neighbour_parts(
            root,
            read_segments(root, segs, "v", pooled=True),
            block_rows=block_rows,
            num_nodes=num_nodes,
            num_parts=num_parts,
            round_key=round_key,
        )
        K.neighbour_histogram(u, v_part, row_of, num_rows=num_rows, num_parts=num_parts, out=out)
    return out


def _candidates(
    root: ScratchRoot, b: int, part: npt.NDArray[np.int32], span: Span, mode: str
) -> tuple[IdArray, IdArray]:
    """Histogram rows and block-local IDs of the round's candidates (unplaced nodes of
    the span for ``place``, placed ones for ``refine`` and ``balance``)."""
    if span is not None:
        nodes = _span_nodes(root, b, part.size, span)
        pos = np.flatnonzero(part[nodes] < 0)
        return pos, nodes[pos].astype(np.int64)
    if mode in ("refine", "balance"):
        local = np.flatnonzero(part >= 0)
    else:
        local = np.flatnonzero((part < 0) & (read_block(root, b, "tier") >= 0))
    return local, local


def propose_task(
    *,
    root: ScratchRoot,
    b: int,
    block_rows: int,
    rows: int,
    num_nodes: int,
    groups: list[Segments],
    span: Span,
    mode: str,
    penalties: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    open_parts: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]],
    num_parts: int,
    round_key: str | None = None,
    movers: tuple[int, int, float] | None = None,
    over: npt.NDArray[np.bool_] | None = None,
) -> tuple[IdArray, IdArray, IdArray, int]:
    """Propose targets for block ``b``'s candidates; return them summarised per group
    (:data:`.schedule.Groups`) and, when refining, the candidates' neighbours in other parts
    (their share of the current cut, counted from both ends of an edge).

    ``mode``: ``place`` (unplaced nodes: Fennel), ``refine`` (placed nodes: label
    propagation; with ``movers`` ``(seed, salt, fraction)`` only that seeded fraction
    of them proposes, after the cut is counted over all) or ``balance`` (placed nodes of
    the (stratum, part) pairs ``over`` ``[S, P]`` marks: where they would leave to,
    least loss first, :func:`.kernels.propose_balance`).

    The histogram is counted here over the block's entries, ``groups`` of about
    ``LPConfig.group_entries`` each, one at a time (:func:`_histogram`; ``round_key``:
    see :func:`_neighbour_parts`).
    ``penalties`` are Fennel's per-node and per-unit-of-weight penalties per part;
    ``open_parts`` whether parts have node room ``[S, P]`` and weight room ``[P]``.
    The proposals wait in the block's ``moves`` file for :func:`apply_task` (moving
    here would change what other blocks' histograms of this round see).
    """
    hist = _histogram(
        root,
        b,
        rows,
        groups,
        span,
        num_parts=num_parts,
        block_rows=block_rows,
        num_nodes=num_nodes,
        round_key=round_key,
    )
    part = read_block(root, b, "part", pooled=True)
    row, local = _candidates(root, b, part, span, mode)
    hist = hist[row]
    stratum = read_block(root, b, "stratum", pooled=True)[local]
    weight = read_block(root, b, "weight", pooled=True)[local]
    cut = 0
    if mode == "place":
        target, prio = K.propose_placement(
            hist,
            stratum,
            weight,
            penalty=penalties[0],
            weight_penalty=penalties[1],
            open_parts=open_parts[0],
            weight_open=open_parts[1],
        )
        src = np.full(local.size, num_parts, np.int64)
    elif mode == "balance":
        src = part[local].astype(np.int64)
        if over is not None:  # only the nodes of an over-cap (stratum, part)
            keep = over[stratum, src]
            hist, src, stratum, weight, local = hist[keep], src[keep], stratum[keep], weight[keep], local[keep]
        target, prio = K.propose_balance(hist, src, stratum, open_parts=open_parts[0])
    else:
        src = part[local].astype(np.int64)
        target, prio = K.propose_refinement(hist, src, stratum, open_parts=open_parts[0])
        cut = int(hist.sum()) - int(hist[np.arange(src.size), src].sum())
        if movers is not None:
            seed, salt, fraction = movers
            target = np.where(K.movers(b * block_rows + local, seed=seed, salt=salt, fraction=fraction), target, -1)
    ok = target >= 0
    local, target, weight = local[ok], target[ok], weight[ok]
    keys = K.group_key(stratum[ok], src[ok], target, prio[ok], num_parts=num_parts)
    write_block(root, b, "moves", np.stack([local, target, keys, weight]))
    return (*K.summarise_groups(keys, weight), cut)


def apply_task(
    quota: schedule.Groups,
    *,
    root: ScratchRoot,
    b: int,
    block_rows: int,
    rows: int,
    num_nodes: int,
    seed: int,
    salt: int,
) -> schedule.Groups:
    """Move block ``b``'s proposals within its quotas; return the moves per group."""
    local, target, keys, weight = read_block(root, b, "moves")
    rank = K.node_order(b * block_rows + local, seed=seed, salt=salt)
    take, mk, mc, mw = K.apply_quotas(keys, weight, rank, *quota)
    if take.any():
        part = read_block(root, b, "part", pooled=True)
        part[local[take]] = target[take]
        write_block(root, b, "part", part)
    return mk, mc, mw


def fill_task(
    fill: schedule.Groups,
    *,
    root: ScratchRoot,
    b: int,
    block_rows: int,
    rows: int,
    num_nodes: int,
    seed: int,
    salt: int,
    num_parts: int,
    isolated: bool,
) -> schedule.Groups:
    """Place block ``b``'s unplaced (isolated, or other) nodes as ``fill`` says; return the
    moves per group."""
    part = read_block(root, b, "part")
    local = np.flatnonzero((part < 0) & ((read_block(root, b, "tier") < 0) == isolated))
    stratum = read_block(root, b, "stratum")[local]
    new = K.fill_block(stratum, K.node_order(b * block_rows + local, seed=seed, salt=salt), *fill)
    part[local] = new
    write_block(root, b, "part", part)
    keys = K.group_key(
        stratum, np.full(local.size, num_parts), new, np.zeros(local.size, np.int64), num_parts=num_parts
    )
    return K.summarise_groups(keys, read_block(root, b, "weight")[local])
