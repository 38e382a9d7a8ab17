"""The ``torch`` format (``io/formats/torch.py``): ``torch.save`` files of plain tensors read
without torch (golden files from torch 2.2.1), whole, by index and row range, and as
``remap``'s result files through the registry."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import ChunkMismatchError, DGLFormatError
from dgl_chunked.io.formats import format_of_path, get_format, open_result
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


def test_torch_saved_results_open_through_the_registry(ser: Path) -> None:
    assert format_of_path("x/pred-0.PT", "results") == "torch" == format_of_path("m.pth", "results")
    view = open_result(str(ser / "pt_view.pt"))  # the only entry
    assert (view.format, view.key, view.rows, view.row_shape, view.dtype) == ("torch", "view", 3, (4,), np.float32)
    np.testing.assert_array_equal(view.read(0, 3), ROWS[2:5])
    np.testing.assert_array_equal(view.read(1, 2), ROWS[3:4])
    pred = open_result(str(ser / "pt_dict.pt"))  # of "ids" and "pred", the one beside the IDs
    assert pred.key == "pred"
    np.testing.assert_array_equal(pred.read(0, 3), ROWS[:3])
    ids = open_result(str(ser / "pt_dict.pt"), "ids")
    np.testing.assert_array_equal(ids.read(1, 3), [0, 2])
    bare = open_result(str(ser / "pt_tensor.pt"))
    assert bare.key is None and bare.describe() == str(ser / "pt_tensor.pt")
    np.testing.assert_array_equal(bare.read(2, 5), [2, 3, 4])
    nested = open_result(str(ser / "pt_nested.pt"), "outer/inner")
    assert nested.read(0, 1).tolist() == [7] and nested.read(0, 1).dtype == np.int16
    shipped = pickle.loads(pickle.dumps(pred))  # tasks carry the file to the workers
    np.testing.assert_array_equal(shipped.read(2, 3), ROWS[2:3])


def test_written_tensors_round_trip_through_the_registry(tmp_path: Path) -> None:
    emb = np.arange(35, dtype=np.float64).reshape(7, 5) - 17.5
    ids = np.array([6, 0, 5, 1, 4, 2, 3], dtype=np.int64)
    path = str(tmp_path / "res.pth")
    write_torch_tensors(path, {"ids": ids, "emb": emb})
    fmt = get_format("torch")
    assert "results" in fmt.roles and fmt.extensions == (".pt", ".pth")
    rows = fmt.open_result(path, None, None)
    assert (rows.key, rows.rows, rows.row_shape, rows.dtype) == ("emb", 7, (5,), np.float64)
    got = np.concatenate([rows.read(lo, min(lo + 3, 7)) for lo in range(0, 7, 3)])
    np.testing.assert_array_equal(got, emb)
    np.testing.assert_array_equal(open_result(path, "ids").read(0, 7), ids)


def test_result_errors_name_the_file_and_entry(ser: Path) -> None:
    with pytest.raises(ChunkMismatchError, match=r"pt_dict.pt: has no entry 'nope'; found \['ids', 'pred'\]"):
        open_result(str(ser / "pt_dict.pt"), "nope")
    with pytest.raises(ChunkMismatchError, match=r"pt_list.pt: holds 2 entries \['0', '1'\]; name the one"):
        open_result(str(ser / "pt_list.pt"))
    with pytest.raises(DGLFormatError, match="not contiguous"):
        open_result(str(ser / "pt_strided.pt"))
