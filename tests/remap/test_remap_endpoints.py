"""remap's edge tables: ``src_nid`` and ``dst_nid`` hold each edge's endpoints under their user IDs.

The value of every result row is its edge's original ID (row ``i`` of the result file,
new ID ``i``, holds ``orig_eids[i]``), so a table row's ``type_eid`` and value agree, and
its ``src_nid`` / ``dst_nid`` must be the user IDs (numpy truth: ``ids[src[e]]``) of the
endpoints that row ``e`` of the chunked graph's edge files names.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import dgl_chunked as dglc
from dgl_chunked.io.chunked.chunks import ChunkGroup, read_edge_group
from dgl_chunked.remap import RemapError, RemapResult, ResultSource, remap_results
from dgl_chunked.remap import endpoints as endpoints_module
from dgl_chunked.remap.tables import write_table

from .conftest import Parts
from .gsp_mappings import int_ids, string_ids, write_mapping
from .shuffled_parts import orig_ids, shuffle_orig_ids


def _edges(chunked: Path, etype: str) -> tuple[np.ndarray, np.ndarray]:
    graph = dglc.open_chunked_graph(chunked)
    return read_edge_group(ChunkGroup(tuple(graph.edge_chunks(etype))))


def _mappings(hetero: Parts, root: Path, types: tuple[str, ...] = ("author", "paper")) -> dict[str, np.ndarray]:
    graph = dglc.open_chunked_graph(hetero.chunked)
    ids = {"author": string_ids(graph.num_nodes("author"), 11), "paper": int_ids(graph.num_nodes("paper"), 12)}
    for i, ntype in enumerate(types):
        write_mapping(root, ntype, ids[ntype], files=4, seed=20 + i)
    return ids


def _result(out: Path, tmp: Path, etype: str) -> Path:
    """Row i = the original ID of new edge ID i (the partitions' orig_eids, in whatever order they hold)."""
    path = tmp / f"{etype.replace(':', '_')}.npy"
    np.save(path, orig_ids(out, "e", etype))
    return path


def _remap_to_parquet(hetero: Parts, tmp: Path, etype: str) -> RemapResult:
    """remap of the results of ``etype`` (:func:`_result`, key "writes") to Parquet under
    ``tmp/out``, user IDs from ``tmp/maps``, in blocks of 3000 bytes."""
    return remap_results(
        hetero.out,
        {"writes": str(_result(hetero.out, tmp, etype))},
        tmp / "out",
        graph=hetero.chunked,
        id_mappings=tmp / "maps",
        format="parquet",
        block_bytes=3000,
    )


@pytest.fixture(autouse=True)
def small_node_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many node blocks, so that the join crosses blocks."""
    monkeypatch.setattr(endpoints_module, "NODE_BLOCK", 101)


def test_parquet_edges_carry_string_and_integer_user_ids(hetero: Parts, tmp_path: Path) -> None:
    ids = _mappings(hetero, tmp_path / "maps")
    etype = "author:writes:paper"
    result = _remap_to_parquet(hetero, tmp_path, etype)
    files = sorted((tmp_path / "out" / "edges" / etype).glob("part-*.parquet"))
    assert len(files) > 2
    table = pq.read_table(tmp_path / "out" / "edges" / etype)
    assert table.column_names == ["value", "src_nid", "dst_nid", "type_eid"]
    assert str(table.schema.field("src_nid").type) == "string" and str(table.schema.field("dst_nid").type) == "int64"
    src, dst = _edges(hetero.chunked, etype)
    eid = table.column("type_eid").to_numpy()
    np.testing.assert_array_equal(eid, np.arange(src.size))
    np.testing.assert_array_equal(table.column("value").to_numpy(), eid)
    assert table.column("src_nid").to_pylist() == ids["author"][src].tolist()
    np.testing.assert_array_equal(table.column("dst_nid").to_numpy(), ids["paper"][dst])
    summary = result.types[f"edge/{etype}"]
    assert summary.columns == ("value", "src_nid", "dst_nid", "type_eid")
    assert summary.user_ids is not None and "maps/author" in summary.user_ids and "maps/paper" in summary.user_ids


def test_orig_eids_in_any_order_same_type_ends_and_a_subset_in_csv(hetero: Parts, tmp_path: Path) -> None:
    """Partitions as DGL's pipeline numbers them (orig_eids permuted), both ends one type, pairs for some edges."""
    shuffled = shuffle_orig_ids(hetero.out, tmp_path / "shuffled", seed=4)
    ids = _mappings(hetero, tmp_path / "maps")
    etype = "paper:cites:paper"
    orig = orig_ids(shuffled, "e", etype)
    chosen = np.random.default_rng(2).permutation(orig.size)[: orig.size // 3]  # new IDs with a result
    np.save(tmp_path / "ids.npy", chosen)
    np.save(tmp_path / "rows.npy", orig[chosen])
    source = ResultSource.pairs(str(tmp_path / "rows.npy"), str(tmp_path / "ids.npy"))
    remap_results(
        shuffled,
        {etype: source},
        tmp_path / "out",
        graph=hetero.chunked,
        id_mappings=tmp_path / "maps",
        format="csv",
        column_names={"value": "pred", "src_nid": "from"},
        delimiter="|",
        block_bytes=6000,
    )
    files = sorted((tmp_path / "out" / "edges" / etype).glob("part-*.csv"))
    assert len(files) > 2
    texts = [f.read_text() for f in files]
    assert all(t.startswith("pred|from|dst_nid|type_eid\n") for t in texts)
    frame = pd.concat([pd.read_csv(io.StringIO(t), sep="|") for t in texts], ignore_index=True)
    src, dst = _edges(hetero.chunked, etype)
    want = np.sort(orig[chosen])
    np.testing.assert_array_equal(frame["type_eid"], want)
    np.testing.assert_array_equal(frame["pred"], want)
    np.testing.assert_array_equal(frame["from"], ids["paper"][src[want]])
    np.testing.assert_array_equal(frame["dst_nid"], ids["paper"][dst[want]])
    # the bytes are those of GraphStorm's writer (pandas' to_csv of the same columns)
    first = frame.iloc[: len(pd.read_csv(io.StringIO(texts[0]), sep="|"))]
    assert texts[0] == first.to_csv(index=False, sep="|")


def test_an_end_type_without_user_ids_gets_original_ids(hetero: Parts, tmp_path: Path) -> None:
    ids = _mappings(hetero, tmp_path / "maps", types=("author",))
    etype = "author:writes:paper"
    result = _remap_to_parquet(hetero, tmp_path, etype)
    table = pq.read_table(tmp_path / "out" / "edges" / etype)
    src, dst = _edges(hetero.chunked, etype)
    assert table.column("src_nid").to_pylist() == ids["author"][src].tolist()
    np.testing.assert_array_equal(table.column("dst_nid").to_numpy(), dst)
    assert "original IDs of 'paper'" in str(result.types[f"edge/{etype}"].user_ids)


def test_homogeneous_graph_with_chunk_keys_gives_the_users_edge_table_back(
    keyed: tuple[Parts, dict[str, Path]], tmp_path: Path
) -> None:
    parts, raw = keyed
    etype = "account:links:account"
    remap_results(
        parts.out,
        {etype: str(_result(parts.out, tmp_path, etype))},
        tmp_path / "out",
        graph=parts.chunked,
        format="parquet",
        block_bytes=4000,
    )
    table = pd.read_parquet(tmp_path / "out" / "edges" / etype)
    users = pd.read_parquet(raw["edges"])
    assert list(table.columns) == ["value", "src_nid", "dst_nid", "type_eid"] and len(table) == len(users)
    # every edge of the user's table, under the user's keys, once
    got = sorted(zip(table["src_nid"], table["dst_nid"], strict=True))
    assert got == sorted(zip(users["src"], users["dst"], strict=True))
    np.testing.assert_array_equal(table["value"], np.arange(len(table)))


def test_edge_tables_need_the_chunked_graph(hetero: Parts, tmp_path: Path) -> None:
    np.save(tmp_path / "r.npy", np.zeros(len(orig_ids(hetero.out, "e", "author:writes:paper"))))
    with pytest.raises(RemapError, match=r"src_nid, dst_nid.*--in-dir CHUNKED"):
        remap_results(hetero.out, {"writes": str(tmp_path / "r.npy")}, tmp_path / "o", format="csv")


def test_write_table_keeps_the_column_order(tmp_path: Path) -> None:
    """A 2-D value in CSV is ``;``-joined, as GraphStorm's write_data_csv_file writes it."""
    import pyarrow as pa

    names = ["pred", "src_nid", "dst_nid", "type_eid"]
    arrays = [np.array([[0.5, 1.0], [2.0, 3.25]]), pa.array(["a", "b"]), pa.array([7, 8]), np.array([0, 1])]
    write_table(str(tmp_path / "t.csv"), "csv", names, arrays, ",", None)
    assert (tmp_path / "t.csv").read_text() == "pred,src_nid,dst_nid,type_eid\n0.5;1.0,a,7,0\n2.0;3.25,b,8,1\n"
