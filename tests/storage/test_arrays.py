"""Array files (storage/arrays.py): written once, read back by row ranges, local or URL."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
import zarr

from dgl_chunked.storage import fs
from dgl_chunked.storage.arrays import ArrayFile, read_array, write_array, write_array_parts, zarr_store

ARRAYS = [
    np.arange(7, dtype=np.int64),
    np.arange(-6, 6, dtype=np.int8).reshape(4, 3),
    np.arange(10, dtype=np.uint32) * 3,
    np.empty(0, np.int32),
    np.empty((0, 5), np.float32),
    np.empty((4, 0), np.int64),
]


@pytest.fixture(params=["local", "memory"])
def base(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return tmp_path.as_posix() if request.param == "local" else f"memory://arrays-{uuid.uuid4().hex}"


@pytest.mark.parametrize("arr", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}")
def test_round_trip_and_row_ranges(base: str, arr: np.ndarray) -> None:
    path = f"{base}/a.bin"
    write_array(path, arr)
    got = read_array(path)
    assert got.dtype == arr.dtype and got.shape == arr.shape and got.flags.writeable
    np.testing.assert_array_equal(got, arr)
    n = arr.shape[0]
    for lo, hi in [(0, n), (1, max(n - 1, 1)), (n, n), (2, n + 5)]:  # as a slice: hi past the end stops there
        np.testing.assert_array_equal(read_array(path, lo, hi), arr[lo:hi])


def test_pieces_and_reading_into_a_given_array(base: str) -> None:
    path = f"{base}/p.bin"
    arr = np.arange(20, dtype=np.int64).reshape(10, 2)
    write_array(path, arr, bounds=np.array([0, 3, 3, 10]))
    with ArrayFile(path) as f:
        assert (f.header.rows, f.header.cols, f.header.bounds.tolist()) == (10, 2, [0, 3, 3, 10])
        np.testing.assert_array_equal(f.piece(0), arr[:3])
        assert f.piece(1).shape == (0, 2)
        np.testing.assert_array_equal(f.piece(2), arr[3:])
        out = np.full((4, 2), -1, np.int64)
        assert f.read(5, 9, out=out) is out
        np.testing.assert_array_equal(out, arr[5:9])
    np.testing.assert_array_equal(read_array(path, piece=2), arr[3:])


def test_read_parts_fills_several_arrays_in_turn(base: str) -> None:
    """A piece stored column by column (``lp``'s entry files) read straight into one
    array per column, of another type of the same size; sizes that do not add up refused."""
    path = f"{base}/c.bin"
    arr = np.arange(12, dtype=np.uint32) * 7
    write_array(path, arr, bounds=np.array([0, 3, 12]))
    with ArrayFile(path) as f:
        outs = [np.full(3, -1, np.int32) for _ in range(3)]
        f.read_parts(3, 12, outs)
        assert [o.tolist() for o in outs] == [arr[3:6].tolist(), arr[6:9].tolist(), arr[9:12].tolist()]
        f.read_parts(3, 3, [])
        with pytest.raises(ValueError, match=r"c\.bin: rows \[3, 12\) do not fill"):
            f.read_parts(3, 12, outs[:2])


def test_parts_written_one_after_another_make_the_same_file(base: str) -> None:
    """``write_array_parts``: the bytes of ``write_array`` of the joined parts, written
    from one reused buffer (each part is written before the next is made)."""
    arr = np.arange(12, dtype=np.uint16) * 5
    bounds = np.array([0, 3, 12])
    write_array(f"{base}/whole.bin", arr, bounds=bounds)

    def parts():
        buf = np.empty(4, np.uint16)
        for lo in range(0, 12, 4):
            buf[:] = arr[lo : lo + 4]
            yield buf

    write_array_parts(f"{base}/parts.bin", parts(), dtype=np.dtype(np.uint16), rows=12, bounds=bounds)
    with fs.open_file(f"{base}/whole.bin") as a, fs.open_file(f"{base}/parts.bin") as b:
        assert a.read() == b.read()
    with ArrayFile(f"{base}/parts.bin") as f:
        assert f.header.bounds.tolist() == [0, 3, 12] and f.piece(1).tolist() == arr[3:].tolist()


@pytest.mark.parametrize("rows", [11, 13])
def test_parts_that_do_not_add_up_leave_no_file(base: str, rows: int) -> None:
    """Parts short of or past the header's rows: a clear error naming the file, and
    nothing at its path (no temporary file either)."""
    path = f"{base}/bad.bin"
    with pytest.raises(ValueError, match=r"bad\.bin: the parts hold 24 bytes, the header " + str(2 * rows)):
        write_array_parts(
            path, iter([np.arange(12, dtype=np.int16)]), dtype=np.dtype(np.int16), rows=rows, bounds=np.array([0, rows])
        )
    assert not fs.exists(path)
    if not fs.is_url(base):
        assert list(Path(base).iterdir()) == []


def test_rewrite_replaces_the_file_whole(tmp_path: Path) -> None:
    path = (tmp_path / "r.bin").as_posix()
    write_array(path, np.arange(100, dtype=np.int64))
    write_array(path, np.arange(3, dtype=np.int16))
    np.testing.assert_array_equal(read_array(path), np.arange(3, dtype=np.int16))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.bin"]  # no temporary file left


def test_damaged_files_are_named(tmp_path: Path) -> None:
    path = tmp_path / "d.bin"
    write_array(path.as_posix(), np.arange(8, dtype=np.int64))
    data = path.read_bytes()
    path.write_bytes(data[:-8])
    with pytest.raises(ValueError, match=r"d\.bin: truncated"):
        read_array(path.as_posix())
    path.write_bytes(b"NOTMAGIC" + data[8:])
    with pytest.raises(ValueError, match=r"d\.bin: not an array file"):
        read_array(path.as_posix())
    path.write_bytes(data[:20])
    with pytest.raises(ValueError, match=r"d\.bin: truncated"):
        read_array(path.as_posix())


def test_zarr_store_opens_local_paths_and_urls(tmp_path: Path) -> None:
    for where in (tmp_path.as_posix() + "/z.zarr", f"memory://z-{uuid.uuid4().hex}"):
        arr = zarr.create_array(store=zarr_store(where), shape=(5,), dtype="int32", chunks=(2,))
        arr[:] = np.arange(5, dtype=np.int32)
        again = zarr.open_array(store=zarr_store(where, read_only=True), mode="r")
        np.testing.assert_array_equal(again[:], np.arange(5, dtype=np.int32))
