"""Corrupt and truncated DGL files raise DGLFormatError, and nothing else.

Structural fields are located with ``annotate_dgl_file`` on valid files, then
truncated or flipped. Corrupt bytes go through an fsspec ``memory://`` file
(Hypothesis forbids function-scoped tmp_path), the explicit cases through local files.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl.binary import (
    HomogeneousGraph,
    annotate_dgl_file,
    dgl_file_kind,
    read_graphs,
    read_tensor_dict,
    write_graph,
)
from tests.conftest import GOLDEN

FILES = [
    "serialization/t_two.dgl",
    "serialization/g_default.dgl",
    "serialization/g_all.dgl",
    "serialization/g_int32.dgl",
    "serialization/g_feat.dgl",
    "serialization/hg.dgl",
    "serialization/multi.dgl",
    "tiny-pipeline/pipeline_out_csc/part0/graph.dgl",
    "tiny-pipeline/pipeline_out_none/part1/node_feat.dgl",
]
_STRUCTURAL = {
    "magic",
    "magic(ImmutableGraph)",
    "magic(CSR)",
    "magic(COO)",
    "magic(UnitGraph)",
    "device_type",
    "ndim",
    "bits",
    "lanes",
    "nbytes",
    "count",
    "len",
    "num_cols",
    "num_rows",
    "version",
    "graph_type",
    "num_graphs",
    "gdata_start_pos",
    "dict_size",
    "count(ntypes)",
    "count(etypes)",
    "blob_len(string length)",
    "blob_len(again)",
}
_TENSOR_VALUE = re.compile(r"(entries|labels|_tensors\[\d+\])\[\d+\]\.value")


def _structural_ranges(path: Path) -> list[tuple[int, int, str]]:
    """(offset, size, field) of every field whose change DGL or we must detect.

    Excluded: payloads, reserved words, device ids, names, sorted flags, the
    allowed-formats word and the stored-formats word (their flips can give other
    valid files), dtype codes of feature tensors (int8 <-> uint8 is still valid)
    and dtype fields of empty arrays (an int32 null array is as valid as int64).
    """
    rows = annotate_dgl_file(path)
    nbytes = {name.rsplit(".", 1)[0]: value for _, _, name, value in rows if name.endswith(".nbytes")}
    out = []
    for offset, size, name, _ in rows:
        record, _, last = name.rpartition(".")
        if last in ("code", "bits"):
            record = record.rsplit(".", 1)[0]  # strip "dtype"
            if nbytes.get(record) == "0" or (last == "code" and _TENSOR_VALUE.search(name)):
                continue
            out.append((offset, size, name))
        elif last in _STRUCTURAL or last.startswith(("shape[", "graph_indices[", "num_verts_per_type[")):
            out.append((offset, size, name))
    return out


VALID = {rel: (GOLDEN / rel).read_bytes() for rel in FILES}
RANGES = {rel: _structural_ranges(GOLDEN / rel) for rel in FILES}


def _read_any(data: bytes, kind: str) -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    MemoryFileSystem().pipe("/dglc-corrupt/f.dgl", data)
    if kind == "tensors":
        read_tensor_dict("memory:///dglc-corrupt/f.dgl")
    else:
        read_graphs("memory:///dglc-corrupt/f.dgl")


def _kind(rel: str) -> str:
    return dgl_file_kind(GOLDEN / rel)


def test_valid_files_parse_through_memory_fs() -> None:
    for rel, data in VALID.items():
        _read_any(data, _kind(rel))
        assert len(RANGES[rel]) >= 20


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rel=st.sampled_from(FILES), data=st.data())
def test_truncation_always_detected(rel: str, data: st.DataObject) -> None:
    full = VALID[rel]
    cut = data.draw(st.integers(0, len(full) - 1), label="cut")
    with pytest.raises(DGLFormatError):
        _read_any(full[:cut], _kind(rel))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rel=st.sampled_from(FILES), data=st.data())
def test_structural_flips_always_detected(rel: str, data: st.DataObject) -> None:
    buf = bytearray(VALID[rel])
    fields = []
    for _ in range(data.draw(st.integers(1, 3), label="flips")):
        offset, size, name = data.draw(st.sampled_from(RANGES[rel]), label="field")
        pos = offset + data.draw(st.integers(0, size - 1), label="byte")
        buf[pos] ^= data.draw(st.integers(1, 255), label="xor")
        fields.append(name)
    if bytes(buf) == VALID[rel]:  # two flips cancelled out
        return
    with pytest.raises(DGLFormatError):
        _read_any(bytes(buf), _kind(rel))


# --- explicit cases through local files -------------------------------------------------------


def _patched(tmp_path: Path, rel: str, field: str, fmt: str, value: int) -> Path:
    src = GOLDEN / rel
    (offset,) = [o for o, _, n, _ in annotate_dgl_file(src) if n == field]
    data = bytearray(src.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    out = tmp_path / Path(rel).name
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize(
    ("rel", "field", "fmt", "value", "message"),
    [
        ("serialization/t_two.dgl", "file.magic", "<Q", 0x1234, "expected magic"),
        ("serialization/t_two.dgl", "entries[0].value.device_type", "<i", 2, "device_type"),
        ("serialization/t_two.dgl", "entries[0].value.dtype.code", "<B", 3, "unknown DGL dtype"),
        ("serialization/t_two.dgl", "entries[0].value.dtype.lanes", "<H", 4, "lanes"),
        ("serialization/t_two.dgl", "entries[1].value.shape[0]", "<q", -3, "expected a size >= 0"),
        ("serialization/t_two.dgl", "entries[1].value.nbytes", "<q", 16, "nbytes"),
        ("serialization/t_two.dgl", "entries[0].value.ndim", "<i", -1, "ndim"),
        ("serialization/t_two.dgl", "entries.count", "<Q", 2**62, "count"),
        ("serialization/t_two.dgl", "file.dict_size", "<Q", 3, "dict_size"),
        ("serialization/t_two.dgl", "entries[0].name.len", "<Q", 2**63, "needs"),
        ("serialization/g_default.dgl", "file.version", "<Q", 1, "legacy"),
        ("serialization/g_default.dgl", "file.graph_type", "<Q", 1, "graph_type"),
        ("serialization/g_default.dgl", "file.num_graphs", "<Q", 2**40, "num_graphs"),
        ("serialization/g_default.dgl", "rel[0].save_formats(|1<<32)", "<q", 1 << 32, "bitmask"),
        ("serialization/g_default.dgl", "rel[0].save_formats(|1<<32)", "<q", 8 | 1 << 32, "bitmask"),
        ("serialization/g_default.dgl", "rel[0].save_formats(|1<<32)", "<q", 4, "legacy code"),
        ("serialization/g_default.dgl", "rel[0].save_formats(|1<<32)", "<q", 1 | 2 << 32, "legacy code"),
        ("serialization/g_default.dgl", "rel[0].allowed_formats(|1<<32)", "<q", 1 << 32, "bitmask"),
        ("serialization/g_default.dgl", "rel[0].allowed_formats(|1<<32)", "<q", 9, "legacy code"),
        ("serialization/g_default.dgl", "rel[0].coo.adj.num_rows", "<q", 5, "node counts"),
        ("serialization/g_default.dgl", "rel[0].coo.adj.num_cols", "<q", -1, "negative"),
        ("serialization/g_default.dgl", "num_verts_per_type[0]", "<q", 3, "node counts"),
        ("serialization/g_default.dgl", "rel[0].coo.adj.row_sorted", "<B", 7, "bool byte"),
        ("serialization/g_default.dgl", "trailer.graph_indices[0]", "<Q", 4113, "graph_indices"),
        ("serialization/g_default.dgl", "gdata_start_pos", "<Q", 4120, "gdata_start_pos"),
        ("serialization/g_default.dgl", "rel[0].coo.adj.col.data", "<q", 4, "ids must lie in"),
        ("serialization/g_all.dgl", "rel[0].csr.adj.data.data", "<q", 1, "permutation"),
        ("serialization/g_all.dgl", "rel[0].csr.adj.indptr.data", "<q", 1, "CSR row pointer"),
        ("serialization/g_feat.dgl", "edge_tensors[0][0].value.shape[0]", "<q", 2, "nbytes"),
        ("serialization/hg.dgl", "metagraph.csr.num_cols", "<q", 3, "square"),
        ("serialization/hg.dgl", "rel[0].coo.metagraph.csr.indices.data", "<q", 0, "relation metagraph"),
    ],
)
def test_corrupt_field(tmp_path: Path, rel: str, field: str, fmt: str, value: int, message: str) -> None:
    path = _patched(tmp_path, rel, field, fmt, value)
    with pytest.raises(DGLFormatError, match=re.escape(message)) as info:
        if _kind(rel) == "tensors":
            read_tensor_dict(path)
        else:
            read_graphs(path)
    text = str(info.value)
    assert str(path) in text and "byte offset" in text


def test_error_names_file_offset_and_field(tmp_path: Path) -> None:
    path = _patched(tmp_path, "serialization/t_two.dgl", "entries[1].value.device_type", "<i", 2)
    with pytest.raises(DGLFormatError) as info:
        read_tensor_dict(path)
    assert (
        f"{path}: corrupt or unsupported DGL file at byte offset 131, field 'entries[1].value.device_type (1 = CPU)'"
        in str(info.value)
    )


def test_frame_rows_must_match(tmp_path: Path) -> None:
    # a valid NDArray of the wrong length in ndata: shape, nbytes and payload patched together
    path = tmp_path / "g.dgl"
    write_graph(path, HomogeneousGraph(num_nodes=2, src=[0], dst=[1], ndata={"x": np.array([1, 2], np.int8)}))
    rows = {n: o for o, _, n, _ in annotate_dgl_file(path)}
    data = bytearray(path.read_bytes())
    struct.pack_into("<q", data, rows["node_tensors[0][0].value.shape[0]"], 1)
    struct.pack_into("<q", data, rows["node_tensors[0][0].value.nbytes"], 1)
    del data[rows["node_tensors[0][0].value.data"] + 1]
    path.write_bytes(bytes(data))
    with pytest.raises(DGLFormatError, match="expected 2 rows"):
        read_graphs(path)


@pytest.mark.parametrize("content", [b"", b"\x3f\x44", b"\x93NUMPY" + bytes(100), bytes(24)])
def test_not_a_dgl_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.dgl"
    path.write_bytes(content)
    for reader in (read_tensor_dict, read_graphs, dgl_file_kind):
        with pytest.raises(DGLFormatError):
            reader(path)  # type: ignore[operator]


def test_wrong_kind_and_trailing_bytes(tmp_path: Path) -> None:
    with pytest.raises(DGLFormatError, match="expected magic 0xdd2e4ff046b4a13f"):
        read_graphs(GOLDEN / "serialization/t_two.dgl")
    with pytest.raises(DGLFormatError, match="expected magic 0xdd5a9fbe3fa2443f"):
        read_tensor_dict(GOLDEN / "serialization/g_default.dgl")
    for rel in ("serialization/t_two.dgl", "serialization/g_default.dgl"):
        path = tmp_path / Path(rel).name
        path.write_bytes((GOLDEN / rel).read_bytes() + b"\0")
        with pytest.raises(DGLFormatError):
            read_tensor_dict(path) if rel.startswith("serialization/t") else read_graphs(path)
