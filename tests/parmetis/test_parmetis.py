"""ParMETIS round trip: export input files, import output files (numpy oracles)."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import AssignmentError, MetadataError, OutputExistsError
from dgl_chunked.io.assignment import open_assignment, read_partition_meta
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata
from dgl_chunked.parmetis import ParmetisFiles, export_parmetis, import_parmetis
from dgl_chunked.parmetis import format as pm
from dgl_chunked.parmetis.edges import dedup_edges_block
from dgl_chunked.testing import (
    GraphTruth,
    load_truth,
    make_chunked_graph,
    raise_if_dask_computes,
    write_graph_from_truth,
)
from dgl_chunked.verify import verify_partitions

MASKS = ("train_mask", "val_mask")


# --- helpers (also used by tests/realdgl/test_realdgl_parmetis.py) ---------------------


def _append(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.concatenate([array, array[rows]])


def truth_with_loops_and_duplicates(tmp_path: Path) -> GraphTruth:
    """SMALL_SPEC plus self loops, repeated edges, a reversed edge and a cross-type repeat."""
    base = load_truth(make_chunked_graph(tmp_path / "base"))
    edges = {e: (s.copy(), d.copy()) for e, (s, d) in base.edges.items()}
    edge_data = {e: dict(f) for e, f in base.edge_data.items()}
    ws, wd = edges["author:writes:paper"]
    cs, cd = edges["paper:cites:paper"]
    extra = {
        "paper:cites:paper": ([3, cs[0], cd[1], 7, 3], [3, cd[0], cs[1], 7, 3]),  # loops, repeat, reverse
        "author:writes:paper": ([ws[0], ws[0]], [wd[0], wd[0]]),  # repeated twice
        "author:reviews:paper": ([ws[1]], [wd[1]]),  # same pair as a writes edge
    }
    for etype, (src, dst) in extra.items():
        s, d = edges[etype]
        edges[etype] = (np.concatenate([s, src]).astype(np.int64), np.concatenate([d, dst]).astype(np.int64))
        for feat, array in edge_data.get(etype, {}).items():
            edge_data[etype][feat] = _append(array, np.arange(len(src)) % len(array))
    return dataclasses.replace(base, edges=edges, edge_data=edge_data)


def write_truth(truth: GraphTruth, out: Path, **kw) -> ChunkedGraphMetadata:
    return write_graph_from_truth(out, truth, **kw)


def homogeneous_edges(meta: ChunkedGraphMetadata, truth: GraphTruth) -> np.ndarray:
    """``[src_orig_nid, dst_orig_nid, type_eid, etype_id]`` of every edge, in orig_eid order."""
    off = meta.node_type_offsets
    rows = []
    for i, spec in enumerate(meta.edge_types):
        s, d = truth.edges[spec.name]
        rows.append(
            np.stack(
                [
                    s + off[meta.ntype_id(spec.src_type)],
                    d + off[meta.ntype_id(spec.dst_type)],
                    np.arange(len(s)),
                    np.full(len(s), i),
                ],
                axis=1,
            )
        )
    return np.concatenate(rows).astype(np.int64)


def expected_edges(meta: ChunkedGraphMetadata, truth: GraphTruth, unordered: bool) -> tuple[np.ndarray, int, int]:
    kept, seen, loops, dups = [], set(), 0, 0
    for row in homogeneous_edges(meta, truth):
        u, v = int(row[0]), int(row[1])
        if u == v:
            loops += 1
            continue
        key = (min(u, v), max(u, v)) if unordered else (u, v)
        if key in seen:
            dups += 1
            continue
        seen.add(key)
        kept.append(row)
    return np.array(kept), loops, dups


def expected_nodes(meta: ChunkedGraphMetadata, truth: GraphTruth, masks: tuple[str, ...]) -> np.ndarray:
    rows = []
    num_types = len(meta.node_types)
    for t, ntype in enumerate(meta.node_types):
        n = meta.num_nodes(ntype)
        cols = [np.full(n, t)] + [np.full(n, int(j == t)) for j in range(num_types)]
        feats = truth.node_data.get(ntype, {})
        cols += [np.asarray(feats[m]).astype(bool).astype(int) if m in feats else np.zeros(n, int) for m in masks]
        rows.append(np.stack([*cols, np.arange(n)], axis=1))
    return np.concatenate(rows).astype(np.int64)


def read_ints(path: str | Path) -> np.ndarray:
    return np.loadtxt(path, dtype=np.int64, ndmin=2)


def sort_edges(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort((rows[:, 2], rows[:, 3]))]


def rule(type_id: np.ndarray, type_nid: np.ndarray, num_parts: int) -> np.ndarray:
    """A deterministic stand-in for ParMETIS."""
    return (type_nid * 7 + type_id * 3 + type_nid // 5) % num_parts


def simulate_parmetis(
    nodes_path: str, out_dir: Path, name: str, num_parts: int, *, ranks: int = 2, parts_used: int | None = None
) -> list[Path]:
    """Append a partition to every input node line, shuffle the lines, split them between ranks."""
    lines = Path(nodes_path).read_text().splitlines()
    table = read_ints(nodes_path)
    parts = rule(table[:, 0], table[:, -1], parts_used or num_parts)
    out = [f"{line} {p}" for line, p in zip(lines, parts, strict=True)]
    order = np.random.default_rng(0).permutation(len(out))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(ranks):
        path = out_dir / f"p{r}-{name}_nodes.txt"
        path.write_text("".join(out[i] + "\n" for i in order[r::ranks]))
        paths.append(path)
    return paths


def intended_assignment(meta: ChunkedGraphMetadata, num_parts: int) -> dict[str, np.ndarray]:
    return {
        t: rule(np.full(meta.num_nodes(t), i), np.arange(meta.num_nodes(t)), num_parts).astype(np.int32)
        for i, t in enumerate(meta.node_types)
    }


def read_assignment(assign_dir: Path, meta: ChunkedGraphMetadata) -> dict[str, np.ndarray]:
    _, arrays = open_assignment(assign_dir, meta)
    return {t: np.asarray(a.compute()) for t, a in arrays.items()}


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test graph (read-only: tests write only under their own tmp_path)."""
    base = tmp_path_factory.mktemp("parmetis-graph")
    write_truth(truth_with_loops_and_duplicates(base), base / "chunked", edge_chunks=3)
    return base / "chunked"


# --- export ---------------------------------------------------------------------------


@pytest.mark.parametrize("dedup", ["unordered", "ordered"])
def test_export_is_parsed_back_exactly(tmp_path, graph_dir, dedup):
    graph = open_chunked_graph(graph_dir, node_chunk_rows=7)
    truth = load_truth(graph.metadata)
    files = export_parmetis(graph, tmp_path / "pm", balance_masks=MASKS, dedup=dedup, bucket_rows=16)
    meta = graph.metadata
    np.testing.assert_array_equal(read_ints(files.nodes_path), expected_nodes(meta, truth, MASKS))
    edges, loops, dups = expected_edges(meta, truth, unordered=dedup == "unordered")
    assert loops >= 4 and dups >= 3
    np.testing.assert_array_equal(sort_edges(read_ints(files.edges_path)), edges)
    n = sum(meta.num_nodes_per_type)
    assert Path(files.stats_path).read_text() == f"{n} {len(edges)} {len(meta.node_types) + len(MASKS)}\n"
    assert (files.num_nodes, files.num_edges, files.self_loops_dropped, files.duplicates_dropped) == (
        n,
        len(edges),
        loops,
        dups,
    )
    assert sorted(os.listdir(tmp_path / "pm")) == [
        ".dglc-owned.json",
        "small_edges.txt",
        "small_nodes.txt",
        "small_stats.txt",
    ]


def test_unordered_drops_reversed_pairs_that_ordered_keeps(tmp_path, graph_dir):
    a = export_parmetis(graph_dir, tmp_path / "a", dedup="unordered")
    b = export_parmetis(graph_dir, tmp_path / "b", dedup="ordered")
    assert a.duplicates_dropped > b.duplicates_dropped
    pairs = read_ints(a.edges_path)[:, :2]
    key = np.sort(pairs, axis=1)
    assert len(np.unique(key, axis=0)) == len(key) and not (pairs[:, 0] == pairs[:, 1]).any()


def test_export_bytes_do_not_depend_on_chunking(tmp_path):
    truth = truth_with_loops_and_duplicates(tmp_path)
    write_truth(truth, tmp_path / "c1", edge_chunks=1)
    write_truth(truth, tmp_path / "c2", edge_chunks=5, edge_format="parquet", feature_chunks=3)
    out = {}
    for key, rows in (("c1", 100), ("c2", 4)):
        graph = open_chunked_graph(tmp_path / key, node_chunk_rows=rows)
        files = export_parmetis(graph, tmp_path / f"pm-{key}", balance_masks=["train_mask"], bucket_rows=20)
        out[key] = [Path(p).read_bytes() for p in (files.nodes_path, files.edges_path, files.stats_path)]
    assert out["c1"] == out["c2"]


def test_export_is_lazy_with_compute_false(tmp_path, graph_dir):
    graph = open_chunked_graph(graph_dir)
    with raise_if_dask_computes():
        task = export_parmetis(graph, tmp_path / "pm", name="g", compute=False)
    assert not (tmp_path / "pm" / "g_stats.txt").exists()
    files = task.compute()
    assert isinstance(files, ParmetisFiles) and Path(files.stats_path).name == "g_stats.txt"


def test_export_refuses_unknown_mask_and_existing_files(tmp_path, graph_dir):
    with pytest.raises(MetadataError, match="'nope'.*known node features"):
        export_parmetis(graph_dir, tmp_path / "pm", balance_masks=["nope"])
    export_parmetis(graph_dir, tmp_path / "pm")
    with pytest.raises(OutputExistsError, match="small_nodes.txt"):
        export_parmetis(graph_dir, tmp_path / "pm")
    export_parmetis(graph_dir, tmp_path / "pm", overwrite=True)


def test_dedup_kernel_keeps_smallest_orig_eid_in_its_direction():
    u = np.array([5, 1, 2, 2, 1, 3], np.int64)
    v = np.array([5, 2, 1, 1, 2, 4], np.int64)
    eid = np.array([10, 14, 11, 12, 13, 15], np.int64)
    rows, loops, dups = dedup_edges_block(u, v, eid, unordered=True)
    assert (loops, dups) == (1, 3) and eid[rows].tolist() == [11, 15] and u[rows].tolist() == [2, 3]
    rows, loops, dups = dedup_edges_block(u, v, eid, unordered=False)
    assert (loops, dups) == (1, 2) and eid[rows].tolist() == [11, 13, 15]


@pytest.mark.parametrize("data", [b"", b"a\n", b"ab\ncd\n", b"\n\nx\n", b"abc", b"a\nb"])
def test_line_starts_count_every_line_once_at_any_block_size(data):
    starts = [0] + [i + 1 for i, c in enumerate(data) if c == 10 and i + 1 < len(data)] if data else []
    for size in (1, 2, 3, 100):
        for start in range(0, len(data), size):
            first, count = pm.line_starts(data[max(start - 1, 0) : start + size], start=start)
            inside = [e for e in starts if start <= e < start + size]
            assert (first, count) == ((inside[0], len(inside)) if inside else (-1, 0))


# --- import ---------------------------------------------------------------------------


def _exported(tmp_path: Path, graph_dir: Path) -> tuple[ChunkedGraphMetadata, ParmetisFiles]:
    files = export_parmetis(graph_dir, tmp_path / "pm", balance_masks=["train_mask"])
    return open_chunked_graph(graph_dir).metadata, files


def test_import_rank_files_dispatches_and_verifies(tmp_path, graph_dir):
    meta, files = _exported(tmp_path, graph_dir)
    simulate_parmetis(files.nodes_path, tmp_path / "pm", "small", 3)
    graph = open_chunked_graph(graph_dir, node_chunk_rows=6)
    result = import_parmetis(tmp_path / "pm", graph, tmp_path / "assign", num_parts=3, blocksize=64)
    assert (result.num_parts, result.algo_name) == (3, "metis")
    intended = intended_assignment(meta, 3)
    got = read_assignment(tmp_path / "assign", meta)
    for t in meta.node_types:
        np.testing.assert_array_equal(got[t], intended[t])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny types may leave a partition without nodes of a type
        dispatch(
            graph,
            tmp_path / "assign",
            tmp_path / "out",
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    report = verify_partitions(graph, tmp_path / "out", assignment=intended)
    assert report.ok, report.problems
    assert report.checked.edges == sum(graph.num_edges(e) for e in graph.edge_types)  # loops kept
    sidecar = json.loads((tmp_path / "assign" / "dglc_partition.json").read_text())
    assert sidecar["partitioner"] == "parmetis" and len(sidecar["parmetis_output"]) == 2


def test_import_gnid_files_from_a_glob_and_num_parts_not_inferred(tmp_path, graph_dir):
    meta, files = _exported(tmp_path, graph_dir)
    table = read_ints(files.nodes_path)
    orig = meta.node_type_offsets[table[:, 0]] + table[:, -1]
    parts = rule(table[:, 0], table[:, -1], 2)  # only partitions 0 and 1 are used
    (tmp_path / "res").mkdir()
    for r in range(3):
        rows = np.arange(r, len(orig), 3)[::-1]
        np.savetxt(tmp_path / "res" / f"part.{r}", np.stack([orig[rows], parts[rows]], 1), fmt="%d")
    import_parmetis(str(tmp_path / "res" / "part.*"), graph_dir, tmp_path / "assign", num_parts=5)
    assert read_partition_meta(tmp_path / "assign").num_parts == 5
    got = read_assignment(tmp_path / "assign", meta)
    for t, want in intended_assignment(meta, 2).items():
        np.testing.assert_array_equal(got[t], want)


def test_import_dgl_assignment_directory_with_a_corrected_num_parts(tmp_path, graph_dir):
    meta = open_chunked_graph(graph_dir).metadata
    dgl_dir = tmp_path / "dgl"
    dgl_dir.mkdir()
    intended = intended_assignment(meta, 2)
    for t, values in intended.items():
        (dgl_dir / f"{t}.txt").write_text("".join(f"{v}\n" for v in values))
    (dgl_dir / "partition_meta.json").write_text('{"algo_name": "metis", "num_parts": 2, "version": "1.0.0"}')
    import_parmetis(dgl_dir, graph_dir, tmp_path / "assign", num_parts=4)
    assert read_partition_meta(tmp_path / "assign").num_parts == 4
    assert all((read_assignment(tmp_path / "assign", meta)[t] == v).all() for t, v in intended.items())


def _corrupt(path: Path, kind: str) -> tuple[str, str]:
    """Damage the rank file; return (match, why)."""
    lines = path.read_text().splitlines()
    k = 7  # 0-based line index to damage
    if kind == "missing":
        ntype, type_nid = int(lines[k].split()[0]), int(lines[k].split()[-2])
        del lines[k]
        name = ["author", "institution", "paper"][ntype]
        match = rf"p1-small_nodes.txt.*no line for node '{name}' {type_nid} "
    elif kind == "duplicate":
        lines.append(lines[k])
        match = rf"p1-small_nodes.txt: line {len(lines)}: .*again \(first at .*p1-small_nodes.txt: line {k + 1}\)"
    elif kind == "part-too-big":
        lines[k] = lines[k].rsplit(" ", 1)[0] + " 3"
        match = rf"p1-small_nodes.txt: line {k + 1}: expected a partition ID in \[0, 3\).*found 3"
    elif kind == "non-integer":
        lines[k] = lines[k].replace(" ", " x", 1)
        match = rf"p1-small_nodes.txt: line {k + 1}: expected integers"
    elif kind == "bad-type-nid":
        parts = lines[k].split()
        parts[-2] = "999"
        lines[k] = " ".join(parts)
        match = rf"p1-small_nodes.txt: line {k + 1}: expected a type_nid in \[0, \d+\).*found 999"
    else:  # "columns"
        lines[k] = lines[k] + " 0"
        match = rf"p1-small_nodes.txt: line {k + 1}: expected \d+ columns"
    path.write_text("\n".join(lines) + "\n")
    return match, kind


@pytest.mark.parametrize("kind", ["missing", "duplicate", "part-too-big", "non-integer", "bad-type-nid", "columns"])
def test_bad_output_names_file_and_line(tmp_path, graph_dir, kind):
    _, files = _exported(tmp_path, graph_dir)
    paths = simulate_parmetis(files.nodes_path, tmp_path / "pm", "small", 3)
    match, _ = _corrupt(paths[1], kind)
    with pytest.raises(AssignmentError, match=match):
        import_parmetis(paths, graph_dir, tmp_path / "assign", num_parts=3, blocksize=40)
    left = os.listdir(tmp_path / "assign") if (tmp_path / "assign").exists() else []
    assert not [n for n in left if n.endswith((".txt", ".json"))], left  # nothing looks complete


def test_import_refuses_missing_paths_empty_dirs_and_existing_output(tmp_path, graph_dir):
    with pytest.raises(AssignmentError, match="no such path"):
        import_parmetis(tmp_path / "nope.txt", graph_dir, tmp_path / "a", num_parts=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(AssignmentError, match=r"p<rank>-<name>_nodes.txt, found none"):
        import_parmetis(tmp_path / "empty", graph_dir, tmp_path / "a", num_parts=2)
    _, files = _exported(tmp_path, graph_dir)
    simulate_parmetis(files.nodes_path, tmp_path / "pm", "small", 2)
    import_parmetis(tmp_path / "pm", graph_dir, tmp_path / "a", num_parts=2)
    with pytest.raises(OutputExistsError):
        import_parmetis(tmp_path / "pm", graph_dir, tmp_path / "a", num_parts=2)
    import_parmetis(tmp_path / "pm", graph_dir, tmp_path / "a", num_parts=2, overwrite=True)


# --- CLI ------------------------------------------------------------------------------


def test_cli_export_then_import(tmp_path, graph_dir, capsys):
    from dgl_chunked.cli import main

    assert (
        main(
            [
                "parmetis-export",
                "--in-dir",
                str(graph_dir),
                "--out-dir",
                str(tmp_path / "pm"),
                "--balance-masks",
                "train_mask,val_mask",
                "--name",
                "g",
            ]
        )
        == 0
    )
    assert "self loop(s)" in capsys.readouterr().out
    stats = (tmp_path / "pm" / "g_stats.txt").read_text().split()
    assert stats[2] == "5"
    p0, p1 = simulate_parmetis(str(tmp_path / "pm" / "g_nodes.txt"), tmp_path / "pm", "g", 2)
    assert (
        main(
            [
                "parmetis-import",
                "--in-dir",
                str(graph_dir),
                "--parmetis-output",
                str(p0),
                str(p1),
                "--out-dir",
                str(tmp_path / "assign"),
                "--num-parts",
                "2",
            ]
        )
        == 0
    )
    assert "2 partitions" in capsys.readouterr().out
    lines = p1.read_text().splitlines()
    p1.write_text("\n".join([lines[0].rsplit(" ", 1)[0] + " 9", *lines[1:]]) + "\n")
    assert (
        main(
            [
                "parmetis-import",
                "--in-dir",
                str(graph_dir),
                "--parmetis-output",
                str(tmp_path / "pm"),
                "--out-dir",
                str(tmp_path / "assign2"),
                "--num-parts",
                "2",
            ]
        )
        == 1
    )
    assert "p1-g_nodes.txt: line 1: expected a partition ID in [0, 2)" in capsys.readouterr().err


@pytest.mark.distributed
def test_round_trip_on_process_cluster_matches_synchronous(tmp_path, graph_dir, process_client):
    """Kernels and task arguments pickle; the files equal those of the synchronous scheduler."""
    import dask

    files = export_parmetis(graph_dir, tmp_path / "cluster", balance_masks=MASKS, bucket_rows=16)
    simulate_parmetis(files.nodes_path, tmp_path / "cluster", "small", 3)
    import_parmetis(tmp_path / "cluster", graph_dir, tmp_path / "assign-cluster", num_parts=3, blocksize=64)
    # the shuffle method is picked when the graph is built: p2p needs the Client's workers
    with dask.config.set({"scheduler": "synchronous", "dataframe.shuffle.method": "tasks"}):
        sync = export_parmetis(graph_dir, tmp_path / "sync", balance_masks=MASKS, bucket_rows=16)
        simulate_parmetis(sync.nodes_path, tmp_path / "sync", "small", 3)
        import_parmetis(tmp_path / "sync", graph_dir, tmp_path / "assign-sync", num_parts=3, blocksize=64)
    for name in ("small_nodes.txt", "small_edges.txt", "small_stats.txt"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "sync" / name).read_bytes()
    for t in ("author", "institution", "paper"):
        assert (tmp_path / "assign-cluster" / f"{t}.txt").read_bytes() == (
            tmp_path / "assign-sync" / f"{t}.txt"
        ).read_bytes()
