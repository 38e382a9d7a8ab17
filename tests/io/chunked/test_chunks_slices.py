"""Tests for :func:`dgl_chunked.io.chunked.chunks.iter_edge_slices`: a group's edges in
slices of a fixed size, read piece by piece (a Parquet file batch by batch), with the
errors of a whole read (no Dask)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.errors import ChunkMismatchError, ChunkReadError
from dgl_chunked.io.chunked.chunks import (
    ChunkGroup,
    ChunkRef,
    group_id_problems,
    iter_edge_slices,
    read_edge_file,
    read_edge_group,
)
from dgl_chunked.io.chunked.formats import iter_edge_chunk, write_edge_chunk

NUM_NODES = 1000


def _group(folder: Path, sizes: list[int], fmts: list[str], seed: int = 0) -> ChunkGroup:
    """Edge files of ``sizes`` rows (formats in turn) as one group; Parquet files get
    row groups of 7 rows, so that batches and slices do not line up with them."""
    rng = np.random.default_rng(seed)
    refs, start = [], 0
    for i, rows in enumerate(sizes):
        fmt = fmts[i % len(fmts)]
        path = str(folder / f"e{i}.{fmt}")
        src, dst = rng.integers(0, NUM_NODES, rows), rng.integers(0, NUM_NODES, rows)
        if fmt == "parquet":
            pq.write_table(pa.table({"src": src, "dst": dst}), path, row_group_size=7)
        else:
            write_edge_chunk(path, src, dst, fmt=fmt, options={"delimiter": " "} if fmt == "csv" else {})
        options = {"delimiter": " "} if fmt == "csv" else {}
        refs.append(ChunkRef(path=path, fmt=fmt, options=options, start=start, stop=start + rows))
        start += rows
    return ChunkGroup(refs)


def _slices(group: ChunkGroup, rows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(iter_edge_slices(group, rows, num_src=NUM_NODES, num_dst=NUM_NODES))


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    rows=st.integers(1, 50),
    fmts=st.sampled_from([["parquet"], ["csv"], ["orc"], ["parquet", "csv", "orc"]]),
)
def test_the_slices_are_the_whole_read_cut_every_rows_edges(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], rows: int, fmts: list[str]
) -> None:
    group = _group(tmp_path_factory.mktemp("g"), sizes, fmts)
    src, dst = read_edge_group(group)
    slices = _slices(group, rows)
    assert len(slices) == -(-src.size // rows)
    assert [len(s) for s, _ in slices[:-1]] == [rows] * (len(slices) - 1)
    for i, (s, d) in enumerate(slices):
        assert s.dtype == d.dtype == np.int64
        np.testing.assert_array_equal(s, src[i * rows : (i + 1) * rows])
        np.testing.assert_array_equal(d, dst[i * rows : (i + 1) * rows])


def test_a_parquet_file_is_decoded_batch_by_batch(tmp_path: Path) -> None:
    """The pieces are at most ``rows`` edges, and the first ones come before a damaged
    row group further on is decoded (a whole read would fail before any)."""
    group = _group(tmp_path, [70], ["parquet"])
    path = group.refs[0].path
    whole = read_edge_file(group.refs[0])
    pieces = list(iter_edge_chunk(path, fmt="parquet", options={}, rows=10))
    assert all(1 <= len(s) <= 10 for s, _ in pieces)
    np.testing.assert_array_equal(np.concatenate([s for s, _ in pieces]), whole[0])

    meta = pq.ParquetFile(path).metadata
    last = meta.row_group(meta.num_row_groups - 1).column(0)
    data = bytearray(Path(path).read_bytes())
    at = int(last.data_page_offset)
    data[at : at + 16] = b"\xff" * 16  # the last row group's first page header
    Path(path).write_bytes(bytes(data))
    with pytest.raises(ChunkReadError):
        read_edge_file(group.refs[0])
    got = []
    with pytest.raises(ChunkReadError, match=r"row group \d+ \(rows 64-70"):
        for s, _ in iter_edge_chunk(path, fmt="parquet", options={}, rows=7):
            got.append(s)
    assert len(got) >= 1
    np.testing.assert_array_equal(np.concatenate(got), whole[0][: sum(map(len, got))])


def test_an_out_of_range_id_gives_the_whole_read_error(tmp_path: Path) -> None:
    group = _group(tmp_path, [30, 30], ["parquet", "csv"])
    bad = group.refs[1]
    src, dst = (a.copy() for a in read_edge_file(bad))
    dst[[12, 20]] = NUM_NODES + 5
    write_edge_chunk(bad.path, src, dst, fmt="csv", options={"delimiter": " "})
    whole = read_edge_group(group)
    expected = "; ".join(group_id_problems(group, *whole, num_src=NUM_NODES, num_dst=NUM_NODES))
    assert "row 13: dst ID 1005" in expected and "(2 such rows)" in expected
    with pytest.raises(ChunkMismatchError) as err:
        _slices(group, 8)
    assert str(err.value) == expected


@pytest.mark.parametrize("metadata_rows", [25, 35])
def test_a_wrong_row_count_gives_the_whole_read_error(tmp_path: Path, metadata_rows: int) -> None:
    group = _group(tmp_path, [30], ["parquet"])
    wrong = ChunkGroup([ChunkRef(path=group.refs[0].path, fmt="parquet", options={}, start=0, stop=metadata_rows)])
    with pytest.raises(ChunkMismatchError) as whole:
        read_edge_group(wrong)
    assert f"expected {metadata_rows} rows" in str(whole.value)
    with pytest.raises(ChunkMismatchError) as sliced:
        _slices(wrong, 8)
    assert str(sliced.value) == str(whole.value)


def test_a_null_in_a_later_batch_names_its_row_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    src = pa.array([1] * 25 + [None] + [2] * 4, pa.int64())
    pq.write_table(pa.table({"src": src, "dst": pa.array([3] * 30, pa.int64())}), path, row_group_size=7)
    ref = ChunkRef(path=str(path), fmt="parquet", options={}, start=0, stop=30)
    with pytest.raises(ChunkMismatchError, match=r"row 26, column 'src': expected a node ID, found null"):
        _slices(ChunkGroup([ref]), 10)
