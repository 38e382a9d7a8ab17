"""Piece readers: CSV byte ranges aligned to lines, npy row ranges, Parquet row groups, layouts."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.chunk import chunk_graph
from dgl_chunked.io.formats import FileInfo, Piece, inspect_file, split_pieces
from dgl_chunked.io.formats.csv import read_csv_piece
from dgl_chunked.io.formats.npy import npy_header, read_npy_rows
from dgl_chunked.io.formats.parquet import read_parquet_piece
from tests.chunk.helpers import read_output


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.integers(0, 10**12), min_size=0, max_size=40),
    cuts=st.lists(st.integers(0, 2000), max_size=6),
    header=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
)
def test_csv_pieces_read_every_line_exactly_once(tmp_path, values, cuts, header, crlf, final_newline):
    end = "\r\n" if crlf else "\n"
    text = ("a,b" + end if header else "") + "".join(f"{v},{v % 7}{end}" for v in values)
    text = text if final_newline else text.removesuffix(end)
    path = tmp_path / "e.csv"
    path.write_bytes(text.encode())
    size = len(text.encode())
    bounds = sorted({0, size, *[c % (size + 1) for c in cuts]})
    got = []
    for lo, hi in itertools.pairwise(bounds):
        _, table = read_csv_piece(
            Piece(path=str(path), start=lo, stop=hi),
            where="w",
            delimiter=",",
            header=header,
            columns=[0, 1],
            types=[pa.int64(), pa.int64()],
        )
        got.extend(table.column(0).to_pylist())
    assert got == values


def test_split_pieces_spans_files_and_covers_every_row():
    infos = [FileInfo(path=f"f{i}", size=0, rows=n) for i, n in enumerate([5, 0, 3, 9])]
    blocks = split_pieces(infos, 4, by_bytes=False)
    assert len(blocks) == 4
    seen = [(p.path, r) for block in blocks for p in block for r in range(p.start, p.stop)]
    assert seen == [(f"f{i}", r) for i, n in enumerate([5, 0, 3, 9]) for r in range(n)]
    assert split_pieces(infos[:2], 9, by_bytes=False) != [()]
    assert split_pieces([FileInfo(path="x", size=0, rows=0)], 3, by_bytes=False) == [()]


def test_npy_row_ranges_match_a_memmap(tmp_path):
    array = np.arange(7 * 5 * 3, dtype=np.float32).reshape(7, 5, 3)
    np.save(tmp_path / "a.npy", array)
    info = npy_header(str(tmp_path / "a.npy"), "w")
    for start, stop in [(0, 7), (2, 3), (6, 7), (4, 4)]:
        np.testing.assert_array_equal(read_npy_rows(str(tmp_path / "a.npy"), info, start, stop), array[start:stop])


def test_truncated_npy_is_reported(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((100, 4)))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(data[:-50])
    with pytest.raises(OSError, match="truncated"):
        npy_header(str(tmp_path / "a.npy"), "spec key")


def test_parquet_pieces_read_only_overlapping_row_groups(tmp_path):
    values = np.arange(100)
    pq.write_table(pa.table({"x": values}), tmp_path / "t.parquet", row_group_size=16)
    info = inspect_file(str(tmp_path / "t.parquet"), "parquet", "w")
    assert info.row_groups == (16,) * 6 + (4,)
    for start, stop in [(0, 100), (15, 17), (95, 100), (40, 40), (3, 61)]:
        for batch_rows in (5, 1 << 16):
            table = read_parquet_piece(
                Piece(path=info.path, start=start, stop=stop), info, ["x"], batch_rows=batch_rows
            )
            np.testing.assert_array_equal(table.column("x").to_numpy(), values[start:stop])


@pytest.mark.parametrize("shape", ["2xE", "Ex2"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_edge_layouts_and_orders(tmp_path, shape, order):
    src, dst = np.arange(11) % 4, (np.arange(11) * 3) % 4
    pair = np.stack([src, dst]) if shape == "2xE" else np.stack([src, dst], axis=1)
    np.save(tmp_path / "e.npy", np.asarray(pair, order=order))
    spec = {"base_dir": str(tmp_path), "node_types": {"n": {"count": 4}}, "edge_types": {"n:e:n": {"source": "e.npy"}}}
    chunk_graph(spec, tmp_path / "out", num_chunks=3)
    got = read_output(tmp_path / "out").edges["n:e:n"]
    np.testing.assert_array_equal(got[0], src)
    np.testing.assert_array_equal(got[1], dst)


def test_square_npy_edges_need_a_layout(tmp_path):
    np.save(tmp_path / "e.npy", np.array([[0, 1], [1, 0]]))
    spec = {"base_dir": str(tmp_path), "node_types": {"n": {"count": 2}}, "edge_types": {"n:e:n": {"source": "e.npy"}}}
    with pytest.raises(ValueError, match="layout"):
        chunk_graph(spec, tmp_path / "out", num_chunks=1)
    spec["edge_types"]["n:e:n"]["source"] = {"path": "e.npy", "layout": "Ex2"}
    chunk_graph(spec, tmp_path / "out2", num_chunks=1)
    np.testing.assert_array_equal(read_output(tmp_path / "out2").edges["n:e:n"][0], [0, 1])
