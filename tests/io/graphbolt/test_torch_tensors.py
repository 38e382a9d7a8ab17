"""Our writer of ``torch.save`` files of plain tensors, read back by the ``torch`` format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.formats.torch import read_torch_file
from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors

ROWS = np.arange(24, dtype=np.float32).reshape(6, 4) / 4


def test_writer_round_trip_streams_spans(tmp_path: Path) -> None:
    from dgl_chunked.io.dgl import ArraySpans

    rows = np.arange(30, dtype=np.int64)
    spans = ArraySpans((30,), np.int64, lambda: (rows[i : i + 7] for i in range(0, 30, 7)))
    tensors = {"nids": spans, "label": ROWS, "mask": np.array([True, False, True])}
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
