"""storage.output.open_output: a failed write leaves no partial file and names the file."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.storage.output_file import open_output


def test_writes_the_bytes_locally_and_to_a_url(tmp_path: Path) -> None:
    with open_output(tmp_path / "a.bin") as f:
        f.write(b"x" * 5000)  # more than one direct-I/O page, with an unaligned tail
    assert (tmp_path / "a.bin").read_bytes() == b"x" * 5000
    import fsspec

    with open_output("memory://dglc-test-output/b.bin") as f:
        f.write(b"abc")
    assert fsspec.filesystem("memory").cat("/dglc-test-output/b.bin") == b"abc"


def test_an_error_inside_removes_the_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "part.bin"
    with pytest.raises(DGLFormatError, match="bad"), open_output(path) as f:
        f.write(b"half")
        raise DGLFormatError("bad")
    assert not path.exists()


def test_an_oserror_names_the_file_and_keeps_the_errno(tmp_path: Path) -> None:
    path = tmp_path / "full.bin"
    with pytest.raises(OSError) as info, open_output(path) as f:
        f.write(b"some")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert not path.exists()


def test_an_unopenable_target_is_named(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "x.bin"
    with pytest.raises(OSError) as info, open_output(path):
        pass
    assert str(path) in str(info.value)
