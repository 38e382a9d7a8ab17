"""Parquet feature files read as DGL 2.1.0's ``ParquetArrayParser`` reads them.

The oracle is DGL's own reader, its ``read`` method's lines as they stand in
``tools/distpartitioning/array_readwriter/parquet.py`` at v2.1.0 (the file is not in
DGL's wheel, so it is restated here, nothing changed but the logging):
``table.to_pandas().to_numpy()``, a single ``pyarrow.ListType`` column stacked as vectors,
then ``reshape`` to the ``b"shape"`` schema metadata when present.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dgl_chunked.errors import ChunkMismatchError
from dgl_chunked.io.chunked.formats import feature_chunk_info, read_feature_chunk, write_feature_chunk


def dgl_read(path: str) -> np.ndarray:
    """DGL 2.1.0's ``ParquetArrayParser.read`` (array_readwriter/parquet.py), verbatim but the logging."""
    metadata = pq.read_metadata(path)
    metadata = metadata.schema.to_arrow_schema().metadata
    if metadata:  # noqa: SIM108 (DGL's lines as they are)
        shape = metadata.get(b"shape", None)
    else:
        shape = None
    table = pq.read_table(path, memory_map=True)
    data_types = table.schema.types
    if len(data_types) == 1 and isinstance(data_types[0], pa.ListType):
        arr = np.array(table.to_pandas().iloc[:, 0].to_list())
    else:
        arr = table.to_pandas().to_numpy()
    shape = tuple(eval(shape.decode())) if shape else arr.shape
    return arr.reshape(shape)


CASES = {
    "float scalar": pa.table({"age": pa.array([0.25, 0.5, 0.75], pa.float64())}),
    "float32 scalar": pa.table({"rate": pa.array([1, 2.5, 3], pa.float32())}),
    "int64 scalar": pa.table({"year": pa.array([1999, 2001, 2024], pa.int64())}),
    "int8 scalar": pa.table({"m": pa.array([0, 1, 1], pa.int8())}),
    "bool scalar": pa.table({"b": pa.array([True, False, True])}),
    "int64 with nulls": pa.table({"label": pa.array([3, None, 1], pa.int64())}),
    "float with nulls": pa.table({"label": pa.array([3.5, None, 1.0], pa.float32())}),
    "float with NaN": pa.table({"label": pa.array([np.nan, 2.0, 1.0], pa.float64())}),
    "two int columns": pa.table({"a": pa.array([1, 2, 3], pa.int8()), "b": pa.array([4, 5, 6], pa.int16())}),
    "int and float": pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": pa.array([4, 5, 6], pa.float32())}),
    "uint8 and int8": pa.table({"a": pa.array([1, 2, 3], pa.uint8()), "b": pa.array([-1, 5, 6], pa.int8())}),
    "int with a null beside int": pa.table(
        {"a": pa.array([1, 2, 3], pa.int8()), "b": pa.array([4, None, 6], pa.int16())}
    ),
    "list float32": pa.table({"v": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.float32()))}),
    "list int8": pa.table({"v": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int8()))}),
    "list int with null items": pa.table({"v": pa.array([[1, None], [3, 4], [5, 6]], pa.list_(pa.int64()))}),
    "list float with null items": pa.table({"v": pa.array([[1, None], [3, 4], [5, 6]], pa.list_(pa.float32()))}),
}
"""Every column layout GSProcessing (Spark and pyarrow) and DGL's own writer produce."""

SHAPES = {
    "none": None,
    "flat": lambda t: f"({t.num_rows},)",  # repartition_files.py's labels and masks
    "empty": lambda t: "",  # DGL: `if not shape` -> the array's own shape
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", CASES)
def test_read_as_dgl_reads(tmp_path: Path, case: str, shape: str) -> None:
    table = CASES[case]
    make = SHAPES[shape]
    if make is not None:
        if shape == "flat" and (table.num_columns > 1 or isinstance(table.schema.types[0], pa.ListType)):
            pytest.skip("(rows,) fits one scalar column only")
        table = table.replace_schema_metadata({"shape": make(table)})
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path)
    want = dgl_read(path)
    got = read_feature_chunk(path, fmt="parquet", options={})
    assert (got.dtype, got.shape) == (want.dtype, want.shape), case
    np.testing.assert_array_equal(got, want)  # NaN equal to NaN
    rows, row_shape, dtype = feature_chunk_info(path, fmt="parquet", options={})
    assert (rows, row_shape, dtype) == (want.shape[0], want.shape[1:], want.dtype)


def test_multi_row_group_and_multi_column_shape_metadata(tmp_path: Path) -> None:
    """DGL's own writer: flat columns and the original array's shape; row groups of any size."""
    table = pa.table({str(i): np.arange(8, dtype=np.float32) * 10 + i for i in range(6)})
    path = str(tmp_path / "f.parquet")
    pq.write_table(table.replace_schema_metadata({"shape": "(8, 6)"}), path, row_group_size=3)
    np.testing.assert_array_equal(read_feature_chunk(path, fmt="parquet", options={}), dgl_read(path))
    labels = pa.table({"y": pa.array([1, None, 2, None, 3, 4, 5, None], pa.int64())})
    pq.write_table(labels, path, row_group_size=3)
    assert feature_chunk_info(path, fmt="parquet", options={}) == (8, (1,), np.dtype(np.float64))
    np.testing.assert_array_equal(read_feature_chunk(path, fmt="parquet", options={}), dgl_read(path))


def test_nulls_found_without_statistics(tmp_path: Path) -> None:
    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"y": pa.array([1, None, 2], pa.int32())}), path, write_statistics=False)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).statistics is None
    assert feature_chunk_info(path, fmt="parquet", options={})[2] == np.dtype(np.float64)
    pq.write_table(pa.table({"y": pa.array([1, 3, 2], pa.int32())}), path, write_statistics=False)
    assert feature_chunk_info(path, fmt="parquet", options={})[2] == np.dtype(np.int32)


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (pa.table({"a": pa.array([1, 2], pa.int8()), "b": pa.array([True, False])}), "mix bool"),
        (pa.table({"b": pa.array([True, None])}), "bool values with 1 nulls"),
        (pa.table({"v": pa.array([[1.0], None], pa.list_(pa.float32()))}), "row 2, column 'v': found a null vector"),
    ],
)
def test_what_dgl_reads_as_python_objects_is_refused(tmp_path: Path, table: pa.Table, match: str) -> None:
    """DGL's reader makes object arrays of these (torch.from_numpy fails on them) or fails itself."""
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path)
    with contextlib.suppress(ValueError):  # numpy: "inhomogeneous shape" for a null vector
        assert dgl_read(path).dtype == object
    with pytest.raises(ChunkMismatchError, match=match):
        read_feature_chunk(path, fmt="parquet", options={})


@pytest.mark.parametrize("layout", ["columns", "list"])
@pytest.mark.parametrize("shape", [(5,), (5, 1), (5, 3), (0, 2)])
def test_chunk_writes_files_dgl_reads_with_their_shape(tmp_path: Path, layout: str, shape: tuple[int, ...]) -> None:
    """``write_feature_chunk`` (``chunk``, ``synth``): DGL's reader gives the array back,
    1-D arrays included (the ``shape`` metadata), list layout included (an Arrow list)."""
    array = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    path = str(tmp_path / "f.parquet")
    write_feature_chunk(path, array, fmt="parquet", parquet_layout=layout)  # type: ignore[arg-type]
    back = dgl_read(path)
    assert back.shape == array.shape
    if array.size:
        assert back.dtype == array.dtype
        np.testing.assert_array_equal(back, array)
    got = read_feature_chunk(path, fmt="parquet", options={})
    assert (got.dtype, got.shape) == (array.dtype, array.shape)
