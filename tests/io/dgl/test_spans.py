"""``io/dgl/spans.py``: the span factory's name, and its deprecated name ``blocks``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.io.dgl import ArraySpans, read_tensor_dict, write_tensor_dict
from dgl_chunked.io.dgl.spans import as_stream


def _halves(arr: np.ndarray):  # type: ignore[no-untyped-def]
    return lambda: iter([arr[:3], arr[3:]])


def test_spans_keyword_and_deprecated_blocks_write_the_same_bytes(tmp_path: Path) -> None:
    arr = np.arange(14, dtype=np.int64).reshape(7, 2)
    write_tensor_dict(tmp_path / "new.dgl", {"x": ArraySpans(arr.shape, arr.dtype, spans=_halves(arr))})
    with pytest.deprecated_call(match="spans"):
        old = ArraySpans(arr.shape, arr.dtype, blocks=_halves(arr))
    write_tensor_dict(tmp_path / "old.dgl", {"x": old})
    assert (tmp_path / "old.dgl").read_bytes() == (tmp_path / "new.dgl").read_bytes()
    np.testing.assert_array_equal(read_tensor_dict(tmp_path / "new.dgl")["x"], arr)
    with pytest.deprecated_call(match="ArraySpans.spans"):
        assert [s.tolist() for s in old.blocks()] == [arr[:3].tolist(), arr[3:].tolist()]


def test_spans_and_blocks_together_or_neither_are_refused() -> None:
    arr = np.zeros(2)
    with pytest.raises(TypeError, match="not both"), pytest.deprecated_call():
        ArraySpans(arr.shape, arr.dtype, _halves(arr), blocks=_halves(arr))
    with pytest.raises(TypeError, match="missing"):
        ArraySpans(arr.shape, arr.dtype)


def test_a_stream_yields_its_spans_and_has_no_blocks() -> None:
    arr = np.arange(5, dtype=np.int32)
    stream = as_stream(ArraySpans(arr.shape, arr.dtype, _halves(arr)), "x")
    assert [s.tolist() for s in stream.spans()] == [[0, 1, 2], [3, 4]]
    assert not hasattr(stream, "blocks")
