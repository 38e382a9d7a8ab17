"""Each Parquet input file is read once on S3: one request, its bytes once (counted by
the server and by a byte-counting relay in front of it: ``tests/s3relay.py``)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import s3fs  # noqa: E402

import dgl_chunked as dglc  # noqa: E402
from dgl_chunked.io.formats import get_format  # noqa: E402
from dgl_chunked.io.formats.parquet import FOOTER_READ  # noqa: E402
from dgl_chunked.synth import SynthSpec, write_synthetic_graph  # noqa: E402
from tests.s3relay import counted_s3  # noqa: E402


def _whole(fmt: Any, path: str, so: Any) -> tuple[np.ndarray, np.ndarray]:
    return fmt.read_edges(path, {}, so, False)  # type: ignore[no-any-return]


def _in_batches(fmt: Any, path: str, so: Any) -> tuple[np.ndarray, np.ndarray]:
    """The file read as ``lp``'s staging reads it: batch by batch."""
    pieces = list(fmt.iter_edges(path, {}, so, False, 7_000))
    assert len(pieces) > 1 and all(len(s) <= 7_000 for s, _ in pieces)
    return np.concatenate([s for s, _ in pieces]), np.concatenate([d for _, d in pieces])


@pytest.mark.parametrize("read", [_whole, _in_batches])
def test_each_parquet_file_is_read_with_one_request(tmp_path: Path, read: Any) -> None:
    spec = SynthSpec.homogeneous(2_000, 60_000, feat_dim=4, num_chunks=3, edge_format="parquet", seed=0)
    write_synthetic_graph(tmp_path / "g", spec)
    local = dglc.open_chunked_graph(tmp_path / "g")
    fmt = get_format("parquet")
    expected = [fmt.read_edges(p, {}, None, False) for p in local.metadata.edges["_N:_E:_N"].paths]
    bucket = "pq-whole" if read is _whole else "pq-batches"
    with counted_s3(bucket) as (so, counts):
        write_synthetic_graph(f"s3://{bucket}/g", spec, storage_options=so)
        paths = list(dglc.open_chunked_graph(f"s3://{bucket}/g", storage_options=so).metadata.edges["_N:_E:_N"].paths)
        sizes = [s3fs.S3FileSystem(**so).size(p) for p in paths]
        down0, _, first = counts.snapshot()
        got = [read(fmt, p, so) for p in paths]
        down1, _, last = counts.snapshot()
        gets = collections.Counter(r.key for r in counts.requests[first:last] if r.method == "GET")
        others = collections.Counter(r.method for r in counts.requests[first:last] if r.method != "GET")
    assert all(s > FOOTER_READ for s in sizes)  # files whose footer read was not the whole file
    for (src, dst), (want_src, want_dst) in zip(got, expected, strict=True):
        assert np.array_equal(src, want_src) and np.array_equal(dst, want_dst)
    # one read per file; besides it only the size, asked where the folder is not listed
    assert gets == {p.removeprefix("s3://"): 1 for p in paths}, gets
    assert set(others) <= {"HEAD"} and others["HEAD"] <= len(paths), others
    # every byte once: the files, and at most 1 kB of HTTP headers per request
    assert sum(sizes) <= down1 - down0 <= sum(sizes) + 1000 * (last - first)
