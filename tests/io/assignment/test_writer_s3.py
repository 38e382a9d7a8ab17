"""Joining the assignment's text pieces on S3 (moto behind ``tests/s3relay.py``'s
byte-counting relay): where S3's part sizes allow, the store joins them
(``UploadPartCopy``) and no piece crosses the link again; otherwise the client
streams them (``concat_files``)."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import pytest

from dgl_chunked.io.assignment import write_assignment
from dgl_chunked.io.assignment.writer import piece_rows
from dgl_chunked.storage import fs

MIB = 1 << 20


class _FakeFs:
    def __init__(self, protocol: str | tuple[str, ...]) -> None:
        self.protocol = protocol


@pytest.mark.parametrize(
    ("protocol", "sizes", "expected"),
    [
        (("s3", "s3a"), [5 * MIB, 6 * MIB, 1], True),
        ("s3", [3], True),  # one piece: the last part has no minimum
        ("s3", [5 * MIB - 1, 6 * MIB], False),  # a part but the last below 5 MiB
        ("s3", [], False),
        ("s3", [5 << 30, 1], True),
        ("s3", [(5 << 30) + 1], False),  # above S3's largest part
        ("s3", [5 * MIB] * 10_001, False),  # above S3's most parts
        ("memory", [6 * MIB, 1], False),
        ("file", [6 * MIB, 1], False),
    ],
)
def test_server_side_joinable(protocol: Any, sizes: list[int], expected: bool) -> None:
    assert fs.server_side_joinable(_FakeFs(protocol), sizes) is expected


def test_piece_rows_reach_s3s_smallest_part() -> None:
    assert piece_rows(1 << 21, on_s3=False) == 1 << 21
    assert piece_rows(1 << 21, on_s3=True) == 2 << 21  # 4 MiB of text per block -> two blocks a piece
    assert piece_rows(1 << 20, on_s3=True) == 3 << 20
    assert piece_rows(3 << 20, on_s3=True) == 3 << 20  # 6 MiB already
    assert piece_rows(7, on_s3=True) * 2 >= fs.MIN_PART_BYTES > (piece_rows(7, on_s3=True) - 7) * 2


def _piece_gets(counts: Any) -> list[Any]:
    return [r for r in counts.requests if r.method == "GET" and ".dglc-tmp/" in r.key and r.key.endswith(".txt")]


def _copies(counts: Any) -> list[Any]:
    return [r for r in counts.requests if r.method == "PUT" and "partNumber" in r.query]


def test_small_assignment_on_s3_is_joined_by_the_store() -> None:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from tests.s3relay import counted_s3

    rng = np.random.default_rng(0)
    truth = {"a": rng.integers(0, 4, 1000), "b": rng.integers(0, 37, 500)}
    with counted_s3("join-small") as (options, counts):
        out = "s3://join-small/assign"
        parts = {t: da.from_array(v, chunks=64) for t, v in truth.items()}
        write_assignment(out, parts, num_parts=37, algo_name="random", storage_options=options, binary=False)
        assert len(_copies(counts)) == 2  # the 64-row blocks made one piece per type, copied by the store
        assert _piece_gets(counts) == []  # no piece read back
        for ntype, values in truth.items():
            with fs.open_file(f"{out}/{ntype}.txt", "rb", options) as f:
                assert f.read() == "".join(f"{v}\n" for v in values).encode()
        assert not fs.exists(f"{out}/.dglc-tmp", options)

        # pieces too small for S3's parts: streamed through the client, in order
        s3, _ = fs.filesystem(out, options)
        s3.pipe({"join-small/p/0": b"1\n2\n", "join-small/p/1": b"3\n"})
        before = len(counts.requests)
        joined = fs.join_files(["s3://join-small/p/0", "s3://join-small/p/1"], [4, 2], f"{out}/c.txt", options)
        assert joined is False
        assert not [r for r in counts.requests[before:] if r.method == "PUT" and "partNumber" in r.query]
        assert s3.cat("join-small/assign/c.txt") == b"1\n2\n3\n"

        # a join that fails (a piece is missing) raises and leaves no upload behind
        with pytest.raises(FileNotFoundError):
            fs.join_files(["s3://join-small/p/9"], [2], f"{out}/d.txt", options)
        assert not s3.exists("join-small/assign/d.txt")
        assert s3.call_s3("list_multipart_uploads", Bucket="join-small").get("Uploads", []) == []


def test_real_size_pieces_are_joined_without_crossing_the_link() -> None:
    """Three pieces (6, 6 and ~0 MiB of text) joined by the store: the relay carries the
    text up once and nothing of it down."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from tests.s3relay import counted_s3

    n = 2 * (3 << 20) + 1000
    values = (np.arange(n) % 3).astype(np.int8)
    with counted_s3("join-big") as (options, counts):
        out = "s3://join-big/assign"
        write_assignment(
            out, {"a": da.from_array(values, chunks=1 << 20)}, num_parts=3, algo_name="random",
            storage_options=options, binary=False,
        )  # fmt: skip
        down, up, _ = counts.snapshot()
        assert len(_copies(counts)) == 3 and _piece_gets(counts) == []
        assert 2 * n <= up < 2 * n + 1_000_000  # the text went up once
        assert down < 1_000_000  # and never came back
        s3, _ = fs.filesystem(out, options)
        assert s3.size("join-big/assign/a.txt") == 2 * n
        expected = np.full(2 * n, 10, np.uint8)
        expected[0::2] = values.astype(np.uint8) + 48
        assert s3.cat("join-big/assign/a.txt") == expected.tobytes()
