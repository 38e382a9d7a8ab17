"""The ``dgl`` format (``io/formats/dgl.py``): DGL tensor dicts (golden files from DGL 2.1.0)
indexed from their headers and read by row range, and as ``remap``'s result files
through the registry."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import ChunkMismatchError, DGLFormatError
from dgl_chunked.io.dgl import read_tensor_dict, write_tensor_dict
from dgl_chunked.io.formats import format_of_path, get_format, open_result
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.io.formats.tensor_rows import read_payload_rows


def test_tensor_dict_index_matches_the_reader(golden_dir: Path) -> None:
    path = golden_dir / "serialization" / "t_two.dgl"
    index = index_tensor_dict(path)
    whole = read_tensor_dict(path)
    for name, payload in index.items():
        np.testing.assert_array_equal(read_payload_rows(path, payload, 0, payload.rows), whole[name])


def test_every_golden_tensor_dict_opens_through_the_registry(golden_dir: Path) -> None:
    for path in sorted((golden_dir / "serialization").glob("t_*.dgl")):
        whole = read_tensor_dict(path)
        for name, values in whole.items():
            if not values.shape:
                continue
            rows = open_result(str(path), name)
            assert (rows.format, rows.key, rows.rows, rows.dtype) == ("dgl", name, values.shape[0], values.dtype)
            np.testing.assert_array_equal(rows.read(0, rows.rows), values)


def test_written_tensor_dict_round_trips_through_the_registry(tmp_path: Path) -> None:
    feat = (np.arange(40, dtype=np.float32).reshape(10, 4) - 7) / 3
    nids = np.arange(10, dtype=np.int64)[::-1].copy()
    path = str(tmp_path / "pred.DGL")
    write_tensor_dict(path, {"_ID": nids, "feat": feat})
    assert format_of_path(path, "results") == "dgl"
    fmt = get_format("dgl")
    assert "results" in fmt.roles and fmt.extensions == (".dgl",)
    rows = open_result(path)  # of "_ID" and "feat", the one beside the IDs
    assert (rows.key, rows.rows, rows.row_shape, rows.dtype) == ("feat", 10, (4,), np.float32)
    np.testing.assert_array_equal(np.concatenate([rows.read(0, 4), rows.read(4, 9), rows.read(9, 10)]), feat)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(rows)).read(3, 6), feat[3:6])
    np.testing.assert_array_equal(fmt.open_result(path, "_ID", None).read(0, 10), nids)
    with pytest.raises(DGLFormatError, match=r"rows \[8, 11\) are outside the tensor's 10 rows"):
        rows.read(8, 11)
    with pytest.raises(ChunkMismatchError, match=r"pred.DGL: has no entry 'x'"):
        open_result(path, "x")


def test_a_truncated_tensor_dict_is_named(tmp_path: Path, golden_dir: Path) -> None:
    cut = tmp_path / "cut.dgl"
    cut.write_bytes((golden_dir / "serialization" / "t_two.dgl").read_bytes()[:60])
    with pytest.raises(DGLFormatError, match=str(cut)):
        open_result(str(cut))


def test_a_0d_tensor_is_not_a_result(golden_dir: Path) -> None:
    path = golden_dir / "serialization" / "t_types.dgl"  # DGL 2.1.0 saved a 0-d "scalar" there
    with pytest.raises(ChunkMismatchError, match=r"t_types.dgl: 'scalar' is a 0-d tensor; expected one row per ID"):
        open_result(str(path), "scalar")
