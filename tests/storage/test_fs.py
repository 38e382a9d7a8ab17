"""storage/fs.py: concat_files (streamed, atomic) and list_files (globs, directories)."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from dgl_chunked.storage import fs


def _pieces(tmp_path: Path, *contents: bytes) -> list[str]:
    paths = []
    for i, data in enumerate(contents):
        path = tmp_path / f"piece{i}.txt"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def test_concat_files_joins_bytes_in_order_and_keeps_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(fs, "COPY_BYTES", 3)  # pieces longer than the buffer are streamed in parts
    contents = (b"0 1\n2 3\n", b"", b"4 5\n", bytes(range(256)))
    pieces = _pieces(tmp_path, *contents)
    target = tmp_path / "out" / "all.txt"
    target.parent.mkdir()
    fs.concat_files(pieces, str(target))
    assert target.read_bytes() == b"".join(contents)
    assert sorted(p.name for p in target.parent.iterdir()) == ["all.txt"]  # no temporary left
    assert [Path(p).read_bytes() for p in pieces] == list(contents)


def test_concat_files_without_pieces_writes_an_empty_file(tmp_path):
    target = tmp_path / "empty.txt"
    fs.concat_files([], str(target))
    assert target.read_bytes() == b""


def test_concat_files_replaces_an_old_target(tmp_path):
    target = tmp_path / "t.txt"
    target.write_bytes(b"old content that is longer")
    fs.concat_files(_pieces(tmp_path, b"new"), str(target))
    assert target.read_bytes() == b"new"


def test_concat_files_failure_leaves_no_complete_looking_file(tmp_path):
    pieces = [*_pieces(tmp_path, b"1 2\n"), str(tmp_path / "missing.txt")]
    target = tmp_path / "t.txt"
    with pytest.raises(FileNotFoundError):
        fs.concat_files(pieces, str(target))
    assert not target.exists()
    assert not (tmp_path / "t.txt.tmp-dglc").exists()
    target.write_bytes(b"kept")
    with pytest.raises(FileNotFoundError):
        fs.concat_files(pieces, str(target))
    assert target.read_bytes() == b"kept"  # the old file is untouched until the rename


def test_concat_files_on_an_fsspec_url():
    mem = fsspec.filesystem("memory")
    mem.pipe({"/fs-concat/a": b"a\n", "/fs-concat/b": b"b\n"})
    fs.concat_files(["memory://fs-concat/a", "memory://fs-concat/b"], "memory://fs-concat/out/ab")
    assert mem.cat("/fs-concat/out/ab") == b"a\nb\n"
    assert not mem.exists("/fs-concat/out/ab.tmp-dglc")


def test_list_files_glob_and_directory_skip_hidden_and_sort(tmp_path):
    d = tmp_path / "edges"
    d.mkdir()
    for name in ("part-2.parquet", "part-10.parquet", "part-1.parquet", "_SUCCESS", ".part-1.crc"):
        (d / name).write_bytes(b"x")
    (d / "sub").mkdir()
    want = [str(d / n) for n in ("part-1.parquet", "part-10.parquet", "part-2.parquet")]
    assert fs.list_files(str(d), glob=False) == want
    assert fs.list_files(str(d) + "/", glob=False) == want
    assert fs.list_files(str(d / "part-*.parquet"), glob=True) == want
    assert fs.list_files(str(d / "nothing-*.npy"), glob=True) == []
    assert fs.list_files(str(tmp_path / "no-such-dir"), glob=False) == []


def test_list_files_keeps_the_protocol_of_urls():
    mem = fsspec.filesystem("memory")
    mem.pipe({"/fs-list/d/b.npy": b"1", "/fs-list/d/a.npy": b"2", "/fs-list/d/_meta": b"3"})
    assert fs.list_files("memory://fs-list/d", glob=False) == ["memory:///fs-list/d/a.npy", "memory:///fs-list/d/b.npy"]
    assert fs.list_files("memory://fs-list/d/*.npy", glob=True) == [
        "memory:///fs-list/d/a.npy",
        "memory:///fs-list/d/b.npy",
    ]
