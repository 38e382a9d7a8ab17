"""Direct (O_DIRECT) writes produce exactly the bytes written, whatever the sizes."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgl_chunked.storage import direct_io

pytestmark = pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT on this platform")


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 40_000), max_size=12), buffer_pages=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_direct_file_writes_exactly_the_concatenation(tmp_path_factory, sizes, buffer_pages, seed):
    path = str(tmp_path_factory.mktemp("d") / "f.bin")
    rng = np.random.default_rng(seed)
    pieces = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    try:
        f = direct_io.DirectFile(path, buffer_bytes=buffer_pages * direct_io.ALIGN)
    except OSError:
        pytest.skip("this filesystem refuses O_DIRECT")
    with f:
        for piece in pieces:
            assert f.write(piece) == piece.nbytes
        f.write(b"tail")
    want = b"".join(p.tobytes() for p in pieces) + b"tail"
    with open(path, "rb") as g:
        assert g.read() == want


def _failing_write(failing_call: int, code: int):
    """An ``os.write`` whose ``failing_call``-th call raises ``OSError(code)``; the others write."""
    real_write = os.write
    calls = {"n": 0}

    def write(fd, data):
        calls["n"] += 1
        if calls["n"] == failing_call:
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    return write


def _one_page_file(path: str) -> direct_io.DirectFile:
    """A DirectFile with buffers of one page (skips where the filesystem refuses O_DIRECT)."""
    try:
        return direct_io.DirectFile(path, buffer_bytes=direct_io.ALIGN)
    except OSError:
        pytest.skip("this filesystem refuses O_DIRECT")


def test_rejected_direct_writes_fall_back_to_buffered(tmp_path, monkeypatch):
    """A filesystem that takes the flag but refuses the write (EINVAL) still gets the bytes."""
    path = str(tmp_path / "f.bin")
    f = _one_page_file(path)
    monkeypatch.setattr(direct_io.os, "write", _failing_write(1, errno.EINVAL))
    data = np.arange(3 * direct_io.ALIGN + 5, dtype=np.uint8) % 251
    with f:
        f.write(data)
    monkeypatch.undo()
    with open(path, "rb") as check:
        assert check.read() == data.tobytes()


def test_disabled_by_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DGLC_DIRECT_IO", "0")
    f = direct_io.open_for_writing(str(tmp_path / "f.bin"))
    assert not isinstance(f, direct_io.DirectFile)
    f.close()


def test_a_failed_background_write_is_raised_and_the_file_closed(tmp_path, monkeypatch):
    """The error of a buffer written in the background (a full disk) reaches the writer."""
    path = str(tmp_path / "f.bin")
    f = _one_page_file(path)
    monkeypatch.setattr(direct_io.os, "write", _failing_write(2, errno.ENOSPC))
    data = np.zeros(2 * direct_io.ALIGN, dtype=np.uint8)
    f.write(data)  # the first buffer goes out; the second is handed over and fails
    with pytest.raises(OSError) as err:
        f.write(data)  # needs the failed buffer back
        f.close()
    assert err.value.errno == errno.ENOSPC
    f.close()  # closing again after the failure is a no-op
    assert f.closed
    monkeypatch.undo()
    with open(path, "rb") as check:
        assert len(check.read()) == direct_io.ALIGN  # only the first buffer reached the file
