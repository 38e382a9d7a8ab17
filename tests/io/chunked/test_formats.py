"""Tests for the per-chunk kernels in dgl_chunked.io.chunked.formats (no Dask)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dgl_chunked.errors import (
    ChunkMismatchError,
    ChunkReadError,
    UnsupportedFormatError,
)
from dgl_chunked.io.chunked.formats import (
    count_edge_rows,
    feature_chunk_info,
    normalize_options,
    read_edge_chunk,
    read_feature_chunk,
    supported_formats,
    write_edge_chunk,
    write_feature_chunk,
)
from dgl_chunked.io.formats.csv_rows import first_bad_integer
from dgl_chunked.io.formats.parquet import read_footer

CSV = {"delimiter": " "}


def _edges(path: Path, text: str | bytes, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return read_edge_chunk(str(path), fmt="csv", options={**CSV, **options})


# --- CSV edges ------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    ids=hnp.arrays(
        np.int64,
        st.tuples(st.integers(1, 40), st.just(2)),
        elements=st.integers(0, 2**40),
    ),
    delimiter=st.sampled_from([" ", ",", "\t", "|", ";"]),
    fmt=st.sampled_from(["csv", "parquet"]),
)
def test_edge_round_trip(tmp_path_factory: pytest.TempPathFactory, ids: np.ndarray, delimiter: str, fmt: str) -> None:
    path = str(tmp_path_factory.mktemp("e") / f"edges.{fmt}")
    options = {"delimiter": delimiter} if fmt == "csv" else {}
    write_edge_chunk(path, ids[:, 0], ids[:, 1], fmt=fmt, options=options)
    src, dst = read_edge_chunk(path, fmt=fmt, options=options)
    assert src.dtype == np.int64 and dst.dtype == np.int64
    np.testing.assert_array_equal(src, ids[:, 0])
    np.testing.assert_array_equal(dst, ids[:, 1])
    assert count_edge_rows(path, fmt=fmt, options=options) == len(ids)


def test_golden_csv_matches_numpy(tiny_chunked: Path) -> None:
    path = tiny_chunked / "edge_index" / "paper:cites:paper0.txt"
    src, dst = read_edge_chunk(str(path), fmt="csv", options=CSV)
    truth = np.loadtxt(path, dtype=np.int64, ndmin=2)
    np.testing.assert_array_equal(src, truth[:, 0])
    np.testing.assert_array_equal(dst, truth[:, 1])


def test_csv_extra_columns_ignored_and_no_trailing_newline(tmp_path: Path) -> None:
    src, dst = _edges(tmp_path / "a.txt", "1 2 9.5\n3 4 x\n5 6 7")
    np.testing.assert_array_equal(src, [1, 3, 5])
    np.testing.assert_array_equal(dst, [2, 4, 6])


def test_csv_header_option_and_default_delimiter(tmp_path: Path) -> None:
    src, dst = _edges(tmp_path / "h.txt", "src dst\n1 2\n3 4\n", header=True)
    np.testing.assert_array_equal(src, [1, 3])
    assert count_edge_rows(str(tmp_path / "h.txt"), fmt="csv", options={**CSV, "header": True}) == 2
    (tmp_path / "c.csv").write_text("7,8\n9,10\n")
    src, dst = read_edge_chunk(str(tmp_path / "c.csv"), fmt="csv", options={})  # DGL's default ","
    np.testing.assert_array_equal(dst, [8, 10])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1 2\n3 4\n5 x\n", r"row 3, column 1: expected an integer node ID, found 'x'"),
        ("1 2\n3.5 4\n", r"row 2, column 0: expected an integer node ID, found '3.5'"),
        ("src dst\n1 2\n", r"row 1, column 0: .*'src'; it looks like a header row"),
        ("1 2\n3 4 5\n6 7\n", r"row 2: expected 2 columns separated by ' '.*found 3"),
        ("1 2\n3\n", r"row 2: expected 2 columns .*found 1"),
        ("1 2\n3 \n", r"row 2, column 1: expected an integer node ID, found ''"),
        (
            "1,2\n3,4\n",
            r"expected at least 2 columns .* found 1; check format.delimiter",
        ),
        ("1 99999999999999999999\n", r"row 1, column 1: expected an int64 node ID, found '99999999999999999999'"),
        ("1 2\n3 4\n+5 6\n", r"row 3, column 0: expected an integer node ID, found '\+5'$"),
    ],
)
def test_csv_errors_name_file_and_row(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.txt"
    with pytest.raises(ChunkMismatchError, match=match) as info:
        _edges(path, text)
    assert str(path) in str(info.value)


def test_csv_empty_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    with pytest.raises(ChunkReadError, match="empty file") as info:
        _edges(path, "")
    assert str(path) in str(info.value)
    src, dst = read_edge_chunk(str(path), fmt="csv", options=CSV, allow_empty=True)
    assert src.shape == (0,) and dst.dtype == np.int64
    assert count_edge_rows(str(path), fmt="csv", options=CSV) == 0
    with pytest.raises(ChunkReadError, match="does not exist"):
        read_edge_chunk(str(tmp_path / "nope.txt"), fmt="csv", options=CSV)


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        ("1 2\n3 4\n", 2),
        ("1 2\n3 4", 2),
        ("1 2\r\n3 4\r\n", 2),
        ("1 2\n\n3 4\n\n", 2),
        ("\n", 0),
        ("5 6", 1),
    ],
)
def test_count_csv_rows_agrees_with_reader(tmp_path: Path, text: str, rows: int) -> None:
    path = tmp_path / "e.txt"
    path.write_text(text, newline="")
    assert count_edge_rows(str(path), fmt="csv", options=CSV) == rows
    if rows:
        assert len(read_edge_chunk(str(path), fmt="csv", options=CSV)[0]) == rows


# --- Parquet edges --------------------------------------------------------------


def test_parquet_edges_any_names_int32_and_extra_columns(tmp_path: Path) -> None:
    path = str(tmp_path / "e.parquet")
    table = pa.table(
        {
            "a": pa.array([1, 2], pa.int32()),
            "b": pa.array([3, 4], pa.uint16()),
            "c": ["x", "y"],
        }
    )
    pq.write_table(table, path)
    src, dst = read_edge_chunk(path, fmt="parquet", options={})
    assert src.dtype == np.int64
    np.testing.assert_array_equal(src, [1, 2])
    np.testing.assert_array_equal(dst, [3, 4])
    src, dst = read_edge_chunk(path, fmt="parquet", options={"columns": ["b", "a"]})
    np.testing.assert_array_equal(src, [3, 4])
    assert count_edge_rows(path, fmt="parquet", options={}) == 2


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (
            pa.table({"s": [1.0, 2.0], "d": [1, 2]}),
            r"column 's': expected integer node IDs, found type double",
        ),
        (
            pa.table({"s": [1, None], "d": [1, 2]}),
            r"row 2, column 's': expected a node ID, found null",
        ),
        (pa.table({"s": [1, 2]}), r"expected 2 columns"),
        (pa.table({"s": pa.array([2**63], pa.uint64()), "d": [1]}), r"column 's'"),
    ],
)
def test_parquet_edge_errors(tmp_path: Path, table: pa.Table, match: str) -> None:
    path = str(tmp_path / "bad.parquet")
    pq.write_table(table, path)
    with pytest.raises(ChunkMismatchError, match=match):
        read_edge_chunk(path, fmt="parquet", options={})


def test_parquet_edges_of_many_row_groups_equal_one_read_and_name_the_file_row(tmp_path: Path) -> None:
    """Decoded row group by row group (uint16 and int32 columns, a last short group): the
    same arrays as the whole table, and a null in the third group named by its file row."""
    path = str(tmp_path / "e.parquet")
    src = np.arange(23, dtype=np.int32) * 3
    dst = (np.arange(23) % 7).astype(np.uint16)
    pq.write_table(pa.table({"s": src, "d": dst}), path, row_group_size=5)
    assert pq.ParquetFile(path).metadata.num_row_groups == 5
    got = read_edge_chunk(path, fmt="parquet", options={})
    assert [a.dtype for a in got] == [np.int64, np.int64]
    np.testing.assert_array_equal(got[0], src)
    np.testing.assert_array_equal(got[1], dst)
    nulls = pa.array([*range(12), None, *range(13, 23)], pa.int64())  # file row 13: group 2, row 2 of it
    pq.write_table(pa.table({"s": nulls, "d": dst}), path, row_group_size=5)
    with pytest.raises(ChunkMismatchError, match=r"row 13, column 's': expected a node ID, found null"):
        read_edge_chunk(path, fmt="parquet", options={})
    pq.write_table(pa.table({"s": src, "d": dst}), path, row_group_size=5, compression="snappy")
    column = pq.ParquetFile(path).metadata.row_group(3).column(0)
    data = bytearray(Path(path).read_bytes())
    data[column.data_page_offset : column.data_page_offset + 16] = b"\xff" * 16  # row group 3's first page header
    Path(path).write_bytes(bytes(data))
    with pytest.raises(ChunkReadError, match=r"e\.parquet': row group 3 \(rows 16-20, .*the file is damaged"):
        read_edge_chunk(path, fmt="parquet", options={})


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(ChunkReadError, match="not a readable Parquet file"):
        read_edge_chunk(str(path), fmt="parquet", options={})
    with pytest.raises(ChunkReadError, match="not a readable Parquet file"):
        feature_chunk_info(str(path), fmt="parquet", options={})


# --- features -------------------------------------------------------------------

DTYPES = [
    "float16",
    "float32",
    "float64",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
]


@settings(max_examples=25, deadline=None)
@given(
    array=st.sampled_from(DTYPES).flatmap(
        lambda dt: hnp.arrays(
            np.dtype(dt),
            st.one_of(
                st.tuples(st.integers(0, 9)),
                st.tuples(st.integers(0, 9), st.integers(1, 5)),
            ),
        )
    ),
    fmt=st.sampled_from(["numpy", "parquet"]),
    layout=st.sampled_from(["columns", "list"]),
)
def test_feature_round_trip(tmp_path_factory: pytest.TempPathFactory, array: np.ndarray, fmt: str, layout: str) -> None:
    path = str(tmp_path_factory.mktemp("f") / f"x.{fmt}")
    write_feature_chunk(path, array, fmt=fmt, parquet_layout=layout)  # type: ignore[arg-type]
    back = read_feature_chunk(path, fmt=fmt, options={})
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)
    rows, row_shape, dtype = feature_chunk_info(path, fmt=fmt, options={})
    assert (rows, row_shape, dtype) == (array.shape[0], array.shape[1:], array.dtype)


def test_npy_is_memory_mapped_locally(tmp_path: Path) -> None:
    path = str(tmp_path / "a.npy")
    np.save(path, np.arange(12, dtype=np.float32).reshape(4, 3))
    assert isinstance(read_feature_chunk(path, fmt="numpy", options={}), np.memmap)
    assert not isinstance(read_feature_chunk(path, fmt="numpy", options={}, mmap=False), np.memmap)


def test_truncated_and_corrupt_npy(tmp_path: Path) -> None:
    path = tmp_path / "t.npy"
    np.save(path, np.ones((10, 4), np.float32))
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(ChunkReadError, match=r"truncated: header promises shape \(10, 4\) float32"):
        feature_chunk_info(str(path), fmt="numpy", options={})
    with pytest.raises(ChunkReadError, match="not a valid .npy file or is truncated"):
        read_feature_chunk(str(path), fmt="numpy", options={})
    path.write_bytes(b"garbage")
    with pytest.raises(ChunkReadError, match="no valid .npy header"):
        feature_chunk_info(str(path), fmt="numpy", options={})


def test_parquet_variable_list_column_is_2d(tmp_path: Path) -> None:
    path = str(tmp_path / "v.parquet")
    pq.write_table(
        pa.table({"vec": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float32()))}),
        path,
    )
    array = read_feature_chunk(path, fmt="parquet", options={})
    np.testing.assert_array_equal(array, np.array([[1, 2], [3, 4], [5, 6]], np.float32))
    assert feature_chunk_info(path, fmt="parquet", options={}) == (
        3,
        (2,),
        np.dtype(np.float32),
    )
    pq.write_table(pa.table({"vec": pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float64()))}), path)
    with pytest.raises(ChunkMismatchError, match="vectors of one length"):
        read_feature_chunk(path, fmt="parquet", options={})


def test_parquet_flat_columns_shape_metadata_and_selection(tmp_path: Path) -> None:
    path = str(tmp_path / "f.parquet")
    table = pa.table({"a": [1, 2], "b": [3, 4], "name": ["x", "y"]})
    pq.write_table(table, path)
    np.testing.assert_array_equal(
        read_feature_chunk(path, fmt="parquet", options={"columns": ["a", "b"]}),
        [[1, 3], [2, 4]],
    )
    # one column is (rows, 1), as DGL 2.1.0's ParquetArrayParser reads it (to_pandas().to_numpy())
    np.testing.assert_array_equal(read_feature_chunk(path, fmt="parquet", options={"columns": ["b"]}), [[3], [4]])
    assert feature_chunk_info(path, fmt="parquet", options={"columns": ["a", "b"]}) == (
        2,
        (2,),
        np.dtype(np.int64),
    )
    with pytest.raises(ChunkMismatchError, match="column 'name': expected a numeric or bool type"):
        read_feature_chunk(path, fmt="parquet", options={})
    # DGL writer style: flat columns plus the shape of the original array
    flat = pa.table({str(i): np.arange(2, dtype=np.float32) + i for i in range(6)})
    pq.write_table(flat.replace_schema_metadata({"shape": "(2, 6)"}), path)
    assert read_feature_chunk(path, fmt="parquet", options={}).shape == (2, 6)
    pq.write_table(flat.replace_schema_metadata({"shape": "(3, 4)"}), path)
    with pytest.raises(ChunkMismatchError, match="shape"):
        feature_chunk_info(path, fmt="parquet", options={})


def test_readers_work_on_fsspec_urls(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/fmt/e.txt", b"1 2\n3 4\n")
    src, dst = read_edge_chunk("memory://fmt/e.txt", fmt="csv", options=CSV)
    np.testing.assert_array_equal(dst, [2, 4])
    assert count_edge_rows("memory://fmt/e.txt", fmt="csv", options=CSV) == 2
    array = np.arange(6, dtype=np.int16).reshape(3, 2)
    for fmt in ("numpy", "parquet"):
        write_feature_chunk(f"memory://fmt/x.{fmt}", array, fmt=fmt)
        np.testing.assert_array_equal(read_feature_chunk(f"memory://fmt/x.{fmt}", fmt=fmt, options={}), array)
        assert feature_chunk_info(f"memory://fmt/x.{fmt}", fmt=fmt, options={})[0] == 3
    write_edge_chunk("memory://fmt/e.parquet", [5], [6], fmt="parquet")
    assert count_edge_rows("memory://fmt/e.parquet", fmt="parquet", options={}) == 1
    fs.rm("/fmt", recursive=True)


# --- registry -------------------------------------------------------------------


def test_registry_and_option_checks() -> None:
    # registration order; formats added later (ORC: tests/io/formats/test_orc.py) come after these
    assert supported_formats("edges")[:2] == ("csv", "parquet") and "numpy" not in supported_formats("edges")
    assert supported_formats("features")[:2] == ("parquet", "numpy") and "csv" not in supported_formats("features")
    assert normalize_options("csv", {"delimiter": "\t"}, role="edges", where="w") == {"delimiter": "\t"}
    cases = [
        ("hdf5", {}, "edges", "expected one of"),
        ("numpy", {}, "edges", "expected one of"),
        ("csv", {}, "features", "expected one of"),
        ("csv", {"quote": "'"}, "edges", "found 'quote'"),
        ("csv", {"delimiter": 1}, "edges", "expected str"),
        ("csv", {"delimiter": "ab"}, "edges", "single character"),
    ]
    # binary formats: options DGL's dispatch drops are dropped too, and named
    ignored: list[str] = []
    assert normalize_options("numpy", {"delimiter": " "}, role="features", where="w", ignored=ignored) == {}
    assert normalize_options(
        "parquet", {"delimiter": "", "columns": ["a"]}, role="edges", where="e", ignored=ignored
    ) == {"columns": ["a"]}
    assert ignored == ["w.format.delimiter", "e.format.delimiter"]
    for fmt, options, role, match in cases:
        with pytest.raises(UnsupportedFormatError, match=match):
            normalize_options(fmt, options, role=role, where='edges["a:b:c"]')  # type: ignore[arg-type]


@pytest.mark.parametrize("url", [False, True])
def test_single_line_without_newline(tmp_path: Path, url: bool) -> None:
    """pyarrow cannot infer columns from one unterminated line; we retry in memory."""
    fs = fsspec.filesystem("memory")
    path = "memory://one/e.txt" if url else str(tmp_path / "e.txt")
    with fsspec.open(path, "wb") as f:
        f.write(b"5 6")
    np.testing.assert_array_equal(read_edge_chunk(path, fmt="csv", options=CSV)[1], [6])
    with fsspec.open(path, "wb") as f:
        f.write(b"5 x")
    with pytest.raises(ChunkMismatchError, match="row 1, column 1"):
        read_edge_chunk(path, fmt="csv", options=CSV)
    with fsspec.open(path, "wb") as f:
        f.write(b"src dst")
    assert len(read_edge_chunk(path, fmt="csv", options={**CSV, "header": True})[0]) == 0
    if url:
        fs.rm("/one", recursive=True)


def test_csv_diagnosis_accepts_what_pyarrow_parses(tmp_path: Path) -> None:
    # blanks around a number parse (as pyarrow parses them), so the bad row is row 3
    with pytest.raises(ChunkMismatchError, match=r"row 3, column 1: expected an integer node ID, found ' y'$"):
        _edges(tmp_path / "c.csv", "1,2\n 3 , 4\n5, y\n", delimiter=",")


def test_first_bad_integer_matches_what_pyarrow_parses() -> None:
    column = pa.chunked_array([["1", " 2 ", "-3", "9223372036854775807"], ["-9223372036854775808", "x"]])
    assert first_bad_integer(column) == (5, "x", "an integer")
    assert first_bad_integer(pa.chunked_array([["1", "9223372036854775808"]])) == (1, "9223372036854775808", "an int64")
    assert first_bad_integer(pa.chunked_array([[1, None]])) == (1, None, "an integer")
    assert first_bad_integer(pa.chunked_array([[4, 5]])) is None


def test_parquet_footer_is_read_once_for_every_user(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table({"a": np.arange(10, dtype=np.int32), "b": np.ones(10)})
    pq.write_table(table, path, row_group_size=4)
    footer = read_footer(str(path))
    assert footer.rows == 10 and footer.row_groups == (4, 4, 2)
    assert footer.schema.names == ["a", "b"] and footer.schema.types == [pa.int32(), pa.float64()]
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ChunkReadError, match=r"^chunk file '.*bad.parquet' is not a readable Parquet file"):
        read_footer(str(tmp_path / "bad.parquet"))
    with pytest.raises(ChunkReadError, match=r"^edges\.source: '.*bad.parquet' is not a readable Parquet file"):
        read_footer(str(tmp_path / "bad.parquet"), where="edges.source")
    with pytest.raises(ChunkReadError, match="does not exist"):
        read_footer(str(tmp_path / "missing.parquet"))
