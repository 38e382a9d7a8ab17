"""GraphBolt graph files without torch: bytes as torch writes them, round trips, strict reading."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.binary import ArraySpans, HomogeneousGraph
from dgl_chunked.io.formats import torch_zip
from dgl_chunked.io.graphbolt.csc import CscSorter, GraphBoltOptions, min_dtype, write_graphbolt_partition
from dgl_chunked.io.graphbolt.graph_file import describe_graphbolt_file, read_graphbolt_graph, write_graphbolt_graph

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "graphbolt" / "torch221_hetero.pt"


def _reference_graph(path: Path) -> None:
    write_graphbolt_graph(
        path,
        indptr=np.array([0, 2, 5, 7, 8], np.int32),
        indices=np.array([1, 3, 0, 1, 2, 0, 3, 2], np.int32),
        type_per_edge=np.array([0, 1, 0, 1, 1, 0, 0, 0], np.int8),
        node_type_to_id={"n1": 0, "n2": 1},
        edge_type_to_id={"n1:e1:n2": 0, "n2:e2:n1": 1},
        node_attributes={"_ID": np.arange(4, dtype=np.int64), "inner_node": np.array([1, 1, 0, 1], np.uint8)},
        edge_attributes={"_ID": np.arange(8, dtype=np.int64)},
    )


def _serialization_id_span(data: bytes) -> range:
    z = zipfile.ZipFile(__import__("io").BytesIO(data))
    info = z.getinfo("hetero/.data/serialization_id")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra or b"")
    # local extra differs from the central one: read the local header's lengths
    nlen, elen = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + nlen + elen
    return range(start, start + 40 + 16)  # the digits and their data descriptor (CRC)


def test_our_file_equals_torch_save_except_the_random_serialization_id(tmp_path):
    ours_path = tmp_path / "hetero.pt"
    _reference_graph(ours_path)
    ours, theirs = ours_path.read_bytes(), REFERENCE.read_bytes()
    assert len(ours) == len(theirs)
    skip = set(_serialization_id_span(theirs))
    differ = [i for i in range(len(ours)) if ours[i] != theirs[i] and i not in skip]
    # the central directory repeats the serialization id's CRC: 4 bytes may differ there
    eocd = theirs.rfind(b"PK\x05\x06")
    cd_start = struct.unpack_from("<I", theirs, eocd + 16)[0]
    assert all(i >= cd_start for i in differ) and len(differ) <= 4, differ
    assert zipfile.ZipFile(ours_path).testzip() is None  # every CRC right


def test_reader_reads_torch_written_file():
    g = read_graphbolt_graph(REFERENCE)
    np.testing.assert_array_equal(g.indptr, [0, 2, 5, 7, 8])
    assert g.indptr.dtype == np.int32 and g.type_per_edge.dtype == np.int8
    assert g.node_type_to_id == {"n1": 0, "n2": 1}
    assert g.edge_type_to_id == {"n1:e1:n2": 0, "n2:e2:n1": 1}
    assert list(g.node_attributes) == ["_ID", "inner_node"]
    assert g.node_attributes["inner_node"].dtype == np.uint8
    np.testing.assert_array_equal(g.edge_attributes["_ID"], np.arange(8))
    text = describe_graphbolt_file(REFERENCE, values=3)
    assert "nodes: 4  edges: 8" in text and "type_per_edge: int8 [8] [0, 1, 0]" in text


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64", "bool"])
def test_round_trip_every_dtype_in_spans(tmp_path, dtype):
    values = (np.arange(30) % 7).astype(dtype).reshape(10, 3)
    spans = ArraySpans(values.shape, values.dtype, lambda: iter([values[:4], values[4:4], values[4:]]))
    path = tmp_path / "g.pt"
    write_graphbolt_graph(
        path,
        indptr=np.arange(11, dtype=np.int64),
        indices=np.arange(10, dtype=np.int64)[::-1].copy(),
        node_attributes={"feat": spans},
        edge_attributes=None,
    )
    g = read_graphbolt_graph(path)
    assert g.edge_attributes is None
    got = g.node_attributes["feat"]
    assert got.dtype == values.dtype and got.shape == (10, 3)
    np.testing.assert_array_equal(got, values)


def test_zip64_records_and_offsets(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_zip, "ZIP64_LIMIT", 100)  # every offset and the large records go zip64
    path = tmp_path / "hetero.pt"
    _reference_graph(path)
    z = zipfile.ZipFile(path)
    assert z.testzip() is None
    assert z.read("hetero/data/1") == np.array([0, 2, 5, 7, 8], np.int32).tobytes()
    g = read_graphbolt_graph(path)
    np.testing.assert_array_equal(g.edge_attributes["_ID"], np.arange(8))


def test_alignment_of_every_record(tmp_path):
    path = tmp_path / "hetero.pt"
    _reference_graph(path)
    data = path.read_bytes()
    for info in zipfile.ZipFile(path).infolist():
        nlen, elen = struct.unpack_from("<HH", data, info.header_offset + 26)
        assert (info.header_offset + 30 + nlen + elen) % 64 == 0, info.filename


def _corrupt_cases(good: bytes) -> dict[str, bytes]:
    data_pkl = good.index(b"\x80\x02")
    version = good.index(b"\x37\x18\x00\x00\x00\x00\x00\x00")  # 6199 as int64
    return {
        "truncated-tail": good[:-10],
        "truncated-half": good[: len(good) // 2],
        "empty": b"",
        "not-zip": b"\x00" * 200,
        "flipped-data-byte": good[:version] + b"\x38" + good[version + 1 :],
        "flipped-pickle-byte": good[: data_pkl + 5] + b"\xff" + good[data_pkl + 6 :],
        "foreign-global": good.replace(b"torch\nScriptObject", b"posix\nsystemObject"),
    }


@pytest.mark.parametrize("case", list(_corrupt_cases(REFERENCE.read_bytes())))
def test_corrupt_or_truncated_file_is_rejected_clearly(tmp_path, case):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(_corrupt_cases(REFERENCE.read_bytes())[case])
    with pytest.raises(DGLFormatError, match="bad.pt"):
        read_graphbolt_graph(bad)


def test_wrong_version_number_rejected(tmp_path):
    path = tmp_path / "v.pt"
    import dgl_chunked.io.graphbolt.graph_file as gbmod

    original = gbmod.PICKLE_VERSION
    gbmod.PICKLE_VERSION = 1
    try:
        _reference_graph(path)
    finally:
        gbmod.PICKLE_VERSION = original
    with pytest.raises(DGLFormatError, match="version_number"):
        read_graphbolt_graph(path)


def test_min_dtype_follows_dgl_strict_bound():
    assert min_dtype(2**31 - 2) == np.int32
    assert min_dtype(2**31 - 1) == np.int64  # DGL casts when predicate < iinfo.max
    assert min_dtype(126, (np.int8, np.int16)) == np.int8
    assert min_dtype(127, (np.int8, np.int16)) == np.int16


def _random_graph(n: int, e: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, e), rng.integers(0, n, e)


@pytest.mark.parametrize("sort_bytes", [1 << 30, 32 * 7, 32])
def test_csc_sort_in_ranges_equals_stable_sort(sort_bytes):
    src, dst = _random_graph(50, 400)
    split = lambda a: ArraySpans(a.shape, a.dtype, lambda: iter([a[:123], a[123:300], a[300:]]))  # noqa: E731
    from dgl_chunked.io.dgl.spans import as_stream

    sorter = CscSorter(50, as_stream(split(dst), "dst"), sort_bytes)
    assert (len(sorter.ranges) == 1) == (sort_bytes == 1 << 30)
    order = np.argsort(dst, kind="stable")
    got = np.concatenate(list(sorter.column(as_stream(split(src), "src"), np.int32).spans()))
    np.testing.assert_array_equal(got, src[order].astype(np.int32))
    np.testing.assert_array_equal(sorter.indptr(), np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=50))]))


@pytest.mark.parametrize("sort_bytes", [1 << 30, 64])
def test_partition_writer_fields(tmp_path, sort_bytes):
    src, dst = _random_graph(30, 200, seed=3)
    n = 30
    graph = HomogeneousGraph(
        num_nodes=n,
        src=src,
        dst=dst,
        ndata={"_ID": np.arange(100, 100 + n), "inner_node": (np.arange(n) < 20).astype(np.uint8)},
        edata={
            "_ID": np.arange(1000, 1200),
            "_TYPE": (np.arange(200) % 3).astype(np.int32),
            "inner_edge": np.ones(200, np.uint8),
        },
    )
    path = tmp_path / "fused_csc_sampling_graph.pt"
    opts = GraphBoltOptions(store_eids=True, store_inner_node=True, store_inner_edge=True, sort_bytes=sort_bytes)
    write_graphbolt_partition(
        path, graph, ntypes={"a": 0, "b": 1}, etypes={"a:x:b": 0, "b:y:a": 1, "a:z:a": 2}, options=opts
    )
    g = read_graphbolt_graph(path)
    order = np.argsort(dst, kind="stable")
    np.testing.assert_array_equal(g.indices, src[order])
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int32 and g.type_per_edge.dtype == np.int8
    np.testing.assert_array_equal(g.type_per_edge, (np.arange(200) % 3)[order])
    np.testing.assert_array_equal(g.edge_attributes["_ID"], np.arange(1000, 1200)[order])
    assert g.node_type_to_id == {"a": 0, "b": 1} and g.edge_type_to_id == {"a:x:b": 0, "b:y:a": 1, "a:z:a": 2}
    assert set(g.node_attributes) == {"_ID", "inner_node"} and g.node_attributes["_ID"].dtype == np.int64


def test_empty_partition(tmp_path):
    graph = HomogeneousGraph(
        num_nodes=0, src=np.zeros(0, np.int64), dst=np.zeros(0, np.int64), ndata={"_ID": np.zeros(0, np.int64)}
    )
    path = tmp_path / "fused_csc_sampling_graph.pt"
    dgl21 = GraphBoltOptions(store_eids=False, graph_formats=("csc",))  # no edge _ID to store
    write_graphbolt_partition(path, graph, ntypes={"_N": 0}, etypes={"_N:_E:_N": 0}, options=dgl21)
    g = read_graphbolt_graph(path)
    assert g.total_num_nodes == 0 and g.total_num_edges == 0 and g.type_per_edge is None
    assert g.node_type_to_id is None and g.edge_attributes == {}


def test_partition_writer_rejects_ids_out_of_range(tmp_path):
    graph = HomogeneousGraph(
        num_nodes=3, src=np.array([0, 3]), dst=np.array([1, 2]), ndata={"_ID": np.arange(3, dtype=np.int64)}
    )
    path = tmp_path / "fused_csc_sampling_graph.pt"
    with pytest.raises(DGLFormatError, match=r"src: node ids must lie in \[0, 3\)"):
        options = GraphBoltOptions(store_eids=False)  # the graph has no edge _ID
        write_graphbolt_partition(path, graph, ntypes={"_N": 0}, etypes={"_N:_E:_N": 0}, options=options)
    assert not path.exists()  # the partial file is removed
