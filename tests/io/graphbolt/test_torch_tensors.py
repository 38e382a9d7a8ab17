"""torch.save files of plain tensors without torch: golden files from torch 2.2.1, and our writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.io.formats.tensor_rows import read_payload_rows
from dgl_chunked.io.formats.torch import index_torch_file, read_torch_file
from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors

ROWS = np.arange(24, dtype=np.float32).reshape(6, 4) / 4


@pytest.fixture
def ser(golden_dir: Path) -> Path:
    return golden_dir / "serialization"


def test_reads_what_torch_saved(ser: Path) -> None:
    np.testing.assert_array_equal(read_torch_file(ser / "pt_tensor.pt")[""], np.arange(5))
    d = read_torch_file(ser / "pt_dict.pt")
    assert list(d) == ["ids", "pred"]
    np.testing.assert_array_equal(d["ids"], [4, 0, 2])
    np.testing.assert_array_equal(d["pred"], ROWS[:3])
    np.testing.assert_array_equal(read_torch_file(ser / "pt_view.pt")["view"], ROWS[2:5])
    listed = read_torch_file(ser / "pt_list.pt")
    assert listed["0"].dtype == np.bool_ and listed["0"].tolist() == [True, False]
    assert listed["1"].dtype == np.float64 and listed["1"].tolist() == [1.0, 1.0]  # an nn.Parameter
    nested = read_torch_file(ser / "pt_nested.pt")
    assert nested["outer/inner"].dtype == np.int16 and nested["outer/inner"].tolist() == [7]


def test_row_ranges_from_the_index_match(ser: Path) -> None:
    index = index_torch_file(ser / "pt_view.pt")
    payload = index["view"]
    assert payload.shape == (3, 4) and payload.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(read_payload_rows(ser / "pt_view.pt", payload, 1, 3), ROWS[3:5])
    np.testing.assert_array_equal(read_payload_rows(ser / "pt_view.pt", payload, 2, 2), np.empty((0, 4)))
    with pytest.raises(DGLFormatError, match=r"rows \[2, 4\) are outside"):
        read_payload_rows(ser / "pt_view.pt", payload, 2, 4)


@pytest.mark.parametrize(
    ("name", "message"),
    [("pt_strided.pt", "not contiguous"), ("pt_module.pt", "not a file of plain tensors")],
)
def test_refuses_what_is_not_plain_contiguous_tensors(ser: Path, name: str, message: str) -> None:
    with pytest.raises(DGLFormatError, match=message) as err:
        index_torch_file(ser / name)
    assert str(err.value).startswith(str(ser / name))


def test_refuses_a_file_that_is_not_torch_zip(tmp_path: Path, ser: Path) -> None:
    bad = tmp_path / "x.pt"
    bad.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(DGLFormatError, match=str(bad)):
        index_torch_file(bad)
    cut = tmp_path / "cut.pt"
    cut.write_bytes((ser / "pt_dict.pt").read_bytes()[:700])
    with pytest.raises(DGLFormatError, match=str(cut)):
        read_torch_file(cut)


def test_writer_round_trip_streams_blocks(tmp_path: Path) -> None:
    from dgl_chunked.io.dgl import ArraySpans

    rows = np.arange(30, dtype=np.int64)
    blocks = ArraySpans((30,), np.int64, lambda: (rows[i : i + 7] for i in range(0, 30, 7)))
    tensors = {"nids": blocks, "label": ROWS, "mask": np.array([True, False, True])}
    write_torch_tensors(tmp_path / "w.pt", tensors)
    got = read_torch_file(tmp_path / "w.pt")
    assert list(got) == ["nids", "label", "mask"]
    np.testing.assert_array_equal(got["nids"], rows)
    np.testing.assert_array_equal(got["label"], ROWS)
    assert got["mask"].dtype == np.bool_ and got["mask"].tolist() == [True, False, True]
    write_torch_tensors(tmp_path / "one.pt", {"x": np.zeros((0, 3), np.float32)})
    assert read_torch_file(tmp_path / "one.pt")["x"].shape == (0, 3)


def test_writer_refuses_dtypes_torch_lacks(tmp_path: Path) -> None:
    with pytest.raises(DGLFormatError, match="uint16"):
        write_torch_tensors(tmp_path / "u.pt", {"x": np.zeros(3, np.uint16)})
    assert not (tmp_path / "u.pt").exists()


def test_tensor_dict_index_matches_the_reader(golden_dir: Path) -> None:
    from dgl_chunked import read_tensor_dict

    path = golden_dir / "serialization" / "t_two.dgl"
    index = index_tensor_dict(path)
    whole = read_tensor_dict(path)
    for name, payload in index.items():
        np.testing.assert_array_equal(read_payload_rows(path, payload, 0, payload.rows), whole[name])
