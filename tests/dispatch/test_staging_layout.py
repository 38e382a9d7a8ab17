"""The Zarr layout of the staging: what is staged, the chunk sizes of the per-node arrays,
and the bytes they lead to."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest
import zarr

import dgl_chunked as dglc
from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.dispatch import staging as staging_module
from dgl_chunked.dispatch.staging import NODE_ZARR_CHUNK_ROWS, node_zarr_chunk_rows
from dgl_chunked.synth import SynthSpec
from dgl_chunked.testing import make_chunked_graph

from .helpers import output_files


@pytest.mark.parametrize(
    ("block_rows", "num_nodes", "expected"),
    [
        (1 << 21, 30_000_000, NODE_ZARR_CHUNK_ROWS),  # the default block: chunks of 2^18 rows
        (1 << 21, 1_000_000, NODE_ZARR_CHUNK_ROWS),
        (3 << 18, 10**9, NODE_ZARR_CHUNK_ROWS),
        (1 << 21, 1000, 1000),  # never more rows than nodes
        (300_000, 30_000_000, 300_000),  # 2^18 does not divide the block: the block
        (100, 1000, 100),
        (1 << 18, 5, 5),
        (7, 0, 1),
    ],
)
def test_node_zarr_chunk_rows(block_rows: int, num_nodes: int, expected: int) -> None:
    rows = node_zarr_chunk_rows(block_rows, num_nodes)
    assert rows == expected
    # a task writing one block writes whole chunks only (or the one short array)
    assert block_rows % rows == 0 or rows >= num_nodes


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("layout")
    chunked, assign = root / "chunked", root / "assign"
    argv = ["synth", "--out-dir", str(chunked), "--preset", "homogeneous", "--num-nodes", "3000"]
    assert main([*argv, "--num-edges", "20000", "--num-chunks", "3", "--feat-dim", "4"]) == 0
    assert main(["partition", "--in-dir", str(chunked), "--out-dir", str(assign), "--num-parts", "3"]) == 0
    return chunked, assign


def test_chunks_smaller_than_a_block_give_the_same_bytes(
    small_graph: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked, assign = small_graph
    options = DispatchOptions(block_rows=1024, keep_staging=True, save_orig_nids=True)
    with dask.config.set(scheduler="synchronous"):
        dispatch(chunked, assign, tmp_path / "whole", options=options)  # 1024 rows: one chunk per block
        monkeypatch.setattr(staging_module, "NODE_ZARR_CHUNK_ROWS", 256)
        dispatch(chunked, assign, tmp_path / "split", options=options)  # four chunks per block
    for name, rows in (("whole", 1024), ("split", 256)):
        nodes = zarr.open_group(str(tmp_path / name / "_staging"), mode="r")["nodes"]
        ntype = next(iter(nodes.group_keys()))
        for what in ("part", "new_nid", "sorted_type_nid"):
            array = nodes[ntype][what]
            assert array.chunks == (rows,), (name, what)
            assert array.shape == (3000,)
    split = zarr.open_group(str(tmp_path / "split" / "_staging"), mode="r")["nodes"]
    whole = zarr.open_group(str(tmp_path / "whole" / "_staging"), mode="r")["nodes"]
    for what in ("part", "new_nid", "sorted_type_nid"):
        ntype = next(iter(whole.group_keys()))
        np.testing.assert_array_equal(split[ntype][what][:], whole[ntype][what][:])
    assert output_files(tmp_path / "split") == output_files(tmp_path / "whole")


def _staged(staging: Path) -> set[str]:
    """The arrays of a staging directory, as ``nodes/<t>/<what>`` and ``edges/<r>/<what>``."""
    out = set()
    for meta in staging.rglob("zarr.json"):
        parts = meta.parent.relative_to(staging).parts
        if parts and parts[0] == "nodes" and len(parts) == 3:
            out.add("/".join(parts))
        elif parts and parts[0] == "edges" and len(parts) == 4:
            out.add(f"edges/{parts[1]}/{parts[3]}")
    return out


def test_staging_holds_only_what_the_output_reads(tmp_path: Path) -> None:
    meta = make_chunked_graph(tmp_path, spec=SynthSpec.heterogeneous(), num_edge_chunks=2, num_node_chunks=2)
    graph = dglc.open_chunked_graph(tmp_path / "chunked")
    parts = dglc.assign_partitions(graph, 3, method="random", seed=1)
    dglc.write_assignment(tmp_path / "assign", parts, num_parts=3, algo_name="random")
    lean = DispatchOptions(keep_staging=True)
    full = DispatchOptions(keep_staging=True, save_orig_nids=True, save_orig_eids=True)
    with dask.config.set(scheduler="synchronous"):
        dispatch(graph, tmp_path / "assign", tmp_path / "lean", options=lean)
        dispatch(graph, tmp_path / "assign", tmp_path / "full", options=full)
    with_features = {etype for etype, feats in meta.edge_data.items() if feats}
    assert with_features and set(meta.edges) - with_features  # both kinds of edge type
    per_node = {f"nodes/{t}/{what}" for t in meta.node_types for what in ("part", "new_nid")}
    endpoints = {f"edges/{r}/{what}" for r in meta.edges for what in ("new_src", "new_dst")}
    lean_staged = _staged(tmp_path / "lean" / "_staging")
    assert lean_staged == per_node | endpoints | {f"edges/{r}/owner" for r in with_features}
    full_staged = _staged(tmp_path / "full" / "_staging")
    sorted_ids = {f"nodes/{t}/sorted_type_nid" for t in meta.node_types}
    assert full_staged == per_node | endpoints | sorted_ids | {f"edges/{r}/owner" for r in meta.edges}
    lean_files, full_files = output_files(tmp_path / "lean"), output_files(tmp_path / "full")
    extra = {name for name in full_files if name.endswith(("orig_nids.dgl", "orig_eids.dgl"))}
    assert len(extra) == 6  # both files in each of the 3 partitions
    assert {name: full_files[name] for name in set(full_files) - extra} == lean_files
