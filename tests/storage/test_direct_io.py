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


def _positioned(path: str, buffer_pages: int = 2) -> direct_io.PositionedWriter:
    """A PositionedWriter (skips where the filesystem refuses O_DIRECT)."""
    writer = direct_io.PositionedWriter(path, buffer_bytes=buffer_pages * direct_io.ALIGN)
    if not writer.direct:
        writer.close()
        pytest.skip("this filesystem refuses O_DIRECT")
    return writer


@settings(max_examples=30, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 6 * direct_io.ALIGN), min_size=1, max_size=12),
    buffer_pages=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_positioned_writes_in_any_order_give_the_file(tmp_path_factory, cuts, buffer_pages, seed):
    """Byte ranges of any sizes and offsets, written in a random order by two writers (as two
    tasks would), leave exactly the bytes written; the ones spanning whole pages go direct."""
    path = str(tmp_path_factory.mktemp("p") / "f.bin")
    rng = np.random.default_rng(seed)
    want = rng.integers(0, 256, sum(cuts) + 100, dtype=np.uint8)
    with open(path, "wb") as f:  # a skeleton: the first 100 bytes, the rest a hole
        f.write(want[:100].tobytes())
    bounds = np.cumsum([100, *cuts])
    order = rng.permutation(len(cuts))
    direct_writes = {"n": 0}
    real = direct_io.PositionedWriter._write_direct

    def counting(self, chunk, offset):
        assert offset % direct_io.ALIGN == 0 and chunk.nbytes % direct_io.ALIGN == 0
        direct_writes["n"] += 1
        return real(self, chunk, offset)

    direct_io.PositionedWriter._write_direct = counting
    try:
        with _positioned(path, buffer_pages) as a, _positioned(path, buffer_pages) as b:
            for k, i in enumerate(order):
                lo, hi = int(bounds[i]), int(bounds[i + 1])
                assert (a if k % 2 else b).pwrite(want[lo:hi], lo) == hi - lo
    finally:
        direct_io.PositionedWriter._write_direct = real
    with open(path, "rb") as g:
        assert g.read() == want.tobytes()
    whole_pages = any((-int(lo) % direct_io.ALIGN) + direct_io.ALIGN <= c for lo, c in zip(bounds, cuts, strict=False))
    assert (direct_writes["n"] > 0) == whole_pages


def test_positioned_writes_fall_back_to_buffered(tmp_path, monkeypatch):
    """A filesystem that takes the flag but refuses the write (EINVAL) still gets the bytes,
    and the writer goes on buffered."""
    path = str(tmp_path / "f.bin")
    open(path, "wb").close()
    writer = _positioned(path, 1)
    real_pwrite = os.pwrite
    calls = {"direct": 0}

    def pwrite(fd, data, offset):
        if fd == writer._direct_fd:
            calls["direct"] += 1
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_pwrite(fd, data, offset)

    data = np.arange(5 * direct_io.ALIGN + 7, dtype=np.uint8) % 251
    monkeypatch.setattr(direct_io.os, "pwrite", pwrite)
    with writer:
        writer.pwrite(data, 3)
        assert not writer.direct and calls["direct"] == 1
        writer.pwrite(data, 3 + data.nbytes)
    monkeypatch.undo()
    with open(path, "rb") as check:
        assert check.read() == b"\0" * 3 + data.tobytes() * 2


def test_positioned_writes_buffered_when_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv("DGLC_DIRECT_IO", "0")
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    with direct_io.PositionedWriter(str(path)) as writer:
        assert not writer.direct
        writer.pwrite(b"abc", 4)
    assert path.read_bytes() == b"xxxxabcxxx"
