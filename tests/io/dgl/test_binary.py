"""dgl_chunked.io.dgl.binary against DGL's own files (golden) and against itself.

Golden files were written by real DGL 2.1.0 (``docs/spec/index.md``, "Golden files").
Graph files are compared byte for byte except bytes 32..4095 (uninitialised in DGL)
and the order of tensor entries (DGL iterates a hash map, we sort by key).
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.errors import DGLFormatError
from dgl_chunked.io.dgl import spans as dgl_spans
from dgl_chunked.io.dgl.binary import (
    BFLOAT16_RAW,
    ArraySpans,
    GraphData,
    HomogeneousGraph,
    annotate_dgl_file,
    dgl_file_kind,
    read_graphs,
    read_tensor_dict,
    write_graph,
    write_tensor_dict,
)

SER = "serialization"
EDGES = (np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0]))  # g_default & co: dgl.graph(([0,0,1,2],[1,2,2,0]))


def golden_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.dgl"))


def canonical_bytes(path: Path) -> bytes:
    """File bytes with the header junk zeroed and every (name, tensor) vector sorted by name."""
    data = bytearray(path.read_bytes())
    if dgl_file_kind(path) == "graphs":
        data[32:4096] = bytes(4064)
    entries: list[tuple[str, int, int, bytes]] = []  # (group, start, end, key)
    start, key = 0, b""
    for offset, size, name, value in annotate_dgl_file(path):
        m = re.fullmatch(r"(.*)\[\d+\]\.(name\.len|name|value\.data)", name)
        if m and m.group(2) == "name.len":
            start = offset
        elif m and m.group(2) == "name":
            key = ast.literal_eval(value)
        elif m:
            entries.append((m.group(1), start, offset + size, key))
    runs: list[list[tuple[str, int, int, bytes]]] = []
    for entry in entries:  # a run = one vector: same group, back to back
        if runs and runs[-1][-1][0] == entry[0] and runs[-1][-1][2] == entry[1]:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    for run in runs:
        chunks = [bytes(data[a:b]) for _, a, b, _ in sorted(run, key=lambda e: e[3])]
        data[run[0][1] : run[-1][2]] = b"".join(chunks)
    return bytes(data)


def rewrite(graph: GraphData, path: Path, **kwargs: Any) -> None:
    (etype,) = graph.canonical_etypes
    src, dst = graph.edges()
    write_graph(
        path,
        HomogeneousGraph(
            num_nodes=graph.num_nodes["_N"],
            src=src,
            dst=dst,
            ndata=graph.ndata["_N"],
            edata=graph.edata[etype],
            idtype=graph.idtype,
        ),
        formats=graph.stored_formats[etype],
        **kwargs,
    )


# --- golden files: reading ------------------------------------------------------


def test_every_golden_file_reads(golden_dir: Path) -> None:
    files = golden_files(golden_dir)
    # 11 in serialization/, 27 in tiny-pipeline/, 85 in type-order/, 10 in gsprocessing/, 10 in shuffled-order/
    assert len(files) == 143
    for path in files:
        if dgl_file_kind(path) == "tensors":
            eager, mapped = read_tensor_dict(path), read_tensor_dict(path, mmap=True)
            assert list(eager) == list(mapped)
            for key in eager:
                nan = eager[key].dtype.kind == "f"  # gsprocessing/ holds NaN labels
                assert eager[key].dtype == mapped[key].dtype
                assert np.array_equal(eager[key], mapped[key], equal_nan=nan)
        else:
            graphs, _ = read_graphs(path)
            for g in graphs:
                for etype in g.canonical_etypes:
                    src, dst = g.edges(etype)
                    assert src.shape == dst.shape == (g.num_edges(etype),)
                    assert src.dtype == g.idtype


def test_t_two_values(golden_dir: Path) -> None:
    t = read_tensor_dict(golden_dir / SER / "t_two.dgl")
    assert list(t) == ["bb", "a"]  # DGL's hash-map order
    assert t["a"].dtype == np.int64 and t["a"].tolist() == [0, 1, 2]
    assert t["bb"].dtype == np.float32 and np.array_equal(t["bb"], np.ones((2, 2), np.float32))


def test_t_types_values(golden_dir: Path) -> None:
    t = read_tensor_dict(golden_dir / SER / "t_types.dgl")
    expected = {
        "scalar": (np.int64, (), [5]),
        "bool": (np.uint8, (3,), [1, 0, 1]),
        "f64": (np.float64, (1,), [1.0]),
        "bf16": (np.uint16, (1,), [0x3F80]),
        "f16": (np.float16, (1,), [1.0]),
        "empty2d": (np.float32, (0, 4), []),
        "i32": (np.int32, (1,), [7]),
        "i16": (np.int16, (1,), [1]),
        "u8": (np.uint8, (2,), [1, 2]),
        "i8": (np.int8, (2,), [1, -2]),
    }
    assert set(t) == set(expected)
    for key, (dtype, shape, values) in expected.items():
        assert t[key].dtype == dtype and t[key].shape == shape, key
        assert t[key].reshape(-1).tolist() == values, key
    assert t["bf16"].dtype.metadata == {"dgl_dtype": "bfloat16"}


def test_t_empty(golden_dir: Path) -> None:
    assert read_tensor_dict(golden_dir / SER / "t_empty.dgl") == {}


@pytest.mark.parametrize(
    ("name", "stored", "allowed", "idtype"),
    [
        ("g_default", ("coo",), ("coo", "csr", "csc"), np.int64),
        ("g_csc", ("csc",), ("coo", "csr", "csc"), np.int64),
        ("g_all", ("coo", "csr", "csc"), ("coo", "csr", "csc"), np.int64),
        ("g_only_csc_default", ("csc",), ("csc",), np.int64),
        ("g_feat", ("coo",), ("coo", "csr", "csc"), np.int64),
    ],
)
def test_golden_homogeneous_graphs(
    golden_dir: Path, name: str, stored: tuple[str, ...], allowed: tuple[str, ...], idtype: type
) -> None:
    graphs, labels = read_graphs(golden_dir / SER / f"{name}.dgl")
    (g,) = graphs
    etype = ("_N", "_E", "_N")
    assert g.ntypes == ["_N"] and g.canonical_etypes == [etype] and g.num_nodes == {"_N": 4}
    assert g.stored_formats[etype] == stored and g.allowed_formats[etype] == allowed
    assert g.idtype == idtype and set(g.formats[etype]) == set(stored)
    src, dst = g.edges()
    assert src.tolist() == EDGES[0].tolist() and dst.tolist() == EDGES[1].tolist()
    if "coo" in stored:
        assert g.formats[etype]["coo"][2].shape == (0,) and g.formats[etype]["coo"][2].dtype == np.int64
    if "csc" in stored:
        indptr, indices, data = g.formats[etype]["csc"]
        assert indptr.tolist() == [0, 1, 2, 4, 4] and indices.tolist() == [2, 0, 0, 1]
        assert data.tolist() == [3, 0, 1, 2]
    if "csr" in stored:
        indptr, indices, data = g.formats[etype]["csr"]
        assert indptr.tolist() == [0, 2, 3, 4, 4] and indices.tolist() == [1, 2, 2, 0]
        assert data.tolist() == [0, 1, 2, 3]
    if name == "g_feat":
        assert labels["lab"].tolist() == [9] and g.ndata["_N"]["x"].tolist() == [0, 1, 2, 3]
        assert g.edata[etype]["w"].dtype == np.float32 and g.edata[etype]["w"].tolist() == [1.0] * 4
    else:
        assert labels == {}


def test_g_int32(golden_dir: Path) -> None:
    (g,), _ = read_graphs(golden_dir / SER / "g_int32.dgl")
    assert g.idtype == np.int32 and g.num_nodes == {"_N": 3}
    src, dst = g.edges()
    assert src.dtype == np.int32 and src.tolist() == [0, 1] and dst.tolist() == [1, 2]
    assert g.formats[("_N", "_E", "_N")]["coo"][2].dtype == np.int64  # null array stays int64


def test_hg_metagraph(golden_dir: Path) -> None:
    path = golden_dir / SER / "hg.dgl"
    (g,), _ = read_graphs(path)
    assert g.ntypes == ["game", "user"]
    assert g.canonical_etypes == [("game", "rev", "user"), ("user", "follows", "user"), ("user", "plays", "game")]
    assert g.num_nodes == {"game": 2, "user": 3}
    rows = {name: value for _, _, name, value in annotate_dgl_file(path)}
    as_int64 = {
        k: np.frombuffer(bytes.fromhex(rows[f"metagraph.csr.{k}.data"]), "<i8").tolist()
        for k in ("indptr", "indices", "data")
    }
    assert as_int64 == {"indptr": [0, 1, 3], "indices": [1, 1, 0], "data": [0, 1, 2]}
    # relation metagraphs: 2x2 one edge for game->user, 1x1 self loop for user->user
    assert rows["rel[0].coo.metagraph.csr.num_rows"] == "2" and rows["rel[1].coo.metagraph.csr.num_rows"] == "1"
    assert g.edges("plays")[0].tolist() == [0, 2] and g.edata[("user", "plays", "game")]["e"].tolist() == [5, 6]


def test_multi_has_two_graphs(golden_dir: Path) -> None:
    graphs, labels = read_graphs(golden_dir / SER / "multi.dgl")
    assert len(graphs) == 2 and labels == {}
    for g in graphs:
        assert [a.tolist() for a in g.edges()] == [e.tolist() for e in EDGES]


def test_annotation_matches_golden_field_by_field(golden_dir: Path) -> None:
    golden = []
    for line in (golden_dir / SER / "annot_g_default.txt").read_text().splitlines():
        if line.startswith("EOF"):
            assert line == "EOF at 4920 file size 4920"
            continue
        m = re.fullmatch(r"\s*(\d+)\s+(\d+)  (.*?)(?: = (.*))?", line)
        assert m, line
        golden.append((int(m.group(1)), int(m.group(2)), m.group(3), m.group(4) or ""))
    ours = annotate_dgl_file(golden_dir / SER / "g_default.dgl")
    assert len(ours) == len(golden) == 142
    for mine, theirs in zip(ours, golden, strict=False):
        assert mine == theirs
    assert sum(size for _, size, _, _ in ours) == 4920


def test_pipeline_outputs_match_chunked_input(golden_dir: Path) -> None:
    tiny = golden_dir / "tiny-pipeline"
    chunked = tiny / "chunked"

    def concat(kind: str, typ: str, feat: str) -> np.ndarray:
        return np.concatenate([np.load(chunked / kind / typ / f"{feat}-{i}.npy") for i in (0, 1)])

    for out in ("pipeline_out_none", "pipeline_out_csc"):
        for part in ("part0", "part1"):
            nfeat = read_tensor_dict(tiny / out / part / "node_feat.dgl")
            efeat = read_tensor_dict(tiny / out / part / "edge_feat.dgl")
            nids = read_tensor_dict(tiny / out / part / "orig_nids.dgl")
            eids = read_tensor_dict(tiny / out / part / "orig_eids.dgl")
            assert np.array_equal(nfeat["paper/feat"], concat("node_data", "paper", "feat")[nids["paper"]])
            assert np.array_equal(nfeat["paper/label"], concat("node_data", "paper", "label")[nids["paper"]])
            mask = concat("node_data", "author", "mask")[nids["author"]]
            assert mask.dtype == np.bool_ and nfeat["author/mask"].dtype == np.uint8
            assert nfeat["author/mask"].tolist() == mask.astype(np.uint8).tolist()
            w = concat("edge_data", "paper:cites:paper", "w")[eids["paper:cites:paper"]]
            assert np.array_equal(efeat["paper:cites:paper/w"], w)
            (g,), _ = read_graphs(tiny / out / part / "graph.dgl")
            dtypes = {k: v.dtype for k, v in g.ndata["_N"].items()}
            assert dtypes == {"_ID": np.int64, "_TYPE": np.int32, "inner_node": np.uint8}
    none = read_graphs(tiny / "pipeline_out_none" / "part1" / "graph.dgl")[0][0]
    csc = read_graphs(tiny / "pipeline_out_csc" / "part1" / "graph.dgl")[0][0]
    assert all(np.array_equal(a, b) for a, b in zip(none.edges(), csc.edges(), strict=False))


# --- golden files: our writer reproduces DGL's bytes ----------------------------------


def test_t_empty_bytes(tmp_path: Path, golden_dir: Path) -> None:
    write_tensor_dict(tmp_path / "e.dgl", {})
    ours = (tmp_path / "e.dgl").read_bytes()
    assert len(ours) == 24 and ours == (golden_dir / SER / "t_empty.dgl").read_bytes()


@pytest.mark.parametrize("name", ["t_two", "t_types"])
def test_tensor_dict_bytes_match_golden_modulo_order(tmp_path: Path, golden_dir: Path, name: str) -> None:
    golden = golden_dir / SER / f"{name}.dgl"
    content = {k: v for k, v in read_tensor_dict(golden).items() if v.ndim > 0}  # we refuse 0-d
    out = tmp_path / "t.dgl"
    write_tensor_dict(out, content)
    if name == "t_two":
        assert canonical_bytes(out) == out.read_bytes()  # already sorted
        assert out.read_bytes() == canonical_bytes(golden)
    else:  # t_types also holds a 0-d "scalar": compare entry by entry
        ours, theirs = _entry_bytes(out), _entry_bytes(golden)
        assert ours == {k: v for k, v in theirs.items() if k != "b'scalar'"}


def _entry_bytes(path: Path) -> dict[str, bytes]:
    data, rows, out = path.read_bytes(), annotate_dgl_file(path), {}
    starts = [(o, n) for o, _, n, _ in rows if n.endswith(".name.len")] + [(len(data), "end")]
    names = [v for _, _, n, v in rows if re.fullmatch(r"entries\[\d+\]\.name", n)]
    for (lo, _), (hi, _), name in zip(starts, starts[1:], names, strict=False):
        out[name] = data[lo:hi]
    return out


@pytest.mark.parametrize(
    "relpath",
    [
        "serialization/g_default.dgl",
        "serialization/g_csc.dgl",
        "serialization/g_all.dgl",
        "serialization/g_int32.dgl",
        "tiny-pipeline/pipeline_out_none/part0/graph.dgl",
        "tiny-pipeline/pipeline_out_none/part1/graph.dgl",
        "tiny-pipeline/pipeline_out_csc/part0/graph.dgl",
        "tiny-pipeline/pipeline_out_csc/part1/graph.dgl",
        "tiny-pipeline/partition_graph_out/part0/graph.dgl",
        "tiny-pipeline/partition_graph_out/part1/graph.dgl",
    ],
)
def test_graph_bytes_match_golden(tmp_path: Path, golden_dir: Path, relpath: str) -> None:
    golden = golden_dir / relpath
    (g,), _ = read_graphs(golden)
    rewrite(g, tmp_path / "g.dgl")
    ours = (tmp_path / "g.dgl").read_bytes()
    assert ours[32:4096] == bytes(4064)
    assert ours == canonical_bytes(golden)


def test_only_csc_default_differs_in_allowed_word_only(tmp_path: Path, golden_dir: Path) -> None:
    golden = golden_dir / SER / "g_only_csc_default.dgl"
    (g,), _ = read_graphs(golden)
    rewrite(g, tmp_path / "g.dgl")
    ours, theirs = (tmp_path / "g.dgl").read_bytes(), canonical_bytes(golden)
    (at,) = [o for o, _, n, _ in annotate_dgl_file(golden) if n == "rel[0].allowed_formats(|1<<32)"]
    assert len(ours) == len(theirs)
    assert [i for i in range(len(ours)) if ours[i] != theirs[i]] == [at]  # 7|1<<32 vs 4|1<<32
    assert ours[at] == 7 and theirs[at] == 4


# --- writer round trips ----------------------------------------------------------------

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (0,), (0, 3), (2, 0), (1,)])
def test_tensor_roundtrip(tmp_path: Path, dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    arr = (rng.standard_normal(shape) * 50).astype(dtype)
    write_tensor_dict(tmp_path / "t.dgl", {"x": arr, "y/z": arr[::-1].copy()})
    back = read_tensor_dict(tmp_path / "t.dgl")
    expect = arr.astype(np.uint8) if dtype == "bool" else arr
    assert list(back) == ["x", "y/z"]
    assert back["x"].dtype == expect.dtype and back["x"].shape == shape
    assert np.array_equal(back["x"], expect) and np.array_equal(back["y/z"], expect[::-1])


def test_bfloat16_roundtrip(tmp_path: Path, golden_dir: Path) -> None:
    raw = np.array([0x3F80, 0xC000], dtype=BFLOAT16_RAW)
    write_tensor_dict(tmp_path / "b.dgl", {"bf16": raw})
    back = read_tensor_dict(tmp_path / "b.dgl")["bf16"]
    assert back.tolist() == [0x3F80, 0xC000] and back.dtype.metadata == {"dgl_dtype": "bfloat16"}


def test_keys_sorted_and_deterministic(tmp_path: Path) -> None:
    data = {"b": np.arange(3), "a": np.ones((2, 2)), "c/d": np.zeros(1, np.int8)}
    write_tensor_dict(tmp_path / "1.dgl", data)
    write_tensor_dict(tmp_path / "2.dgl", dict(reversed(list(data.items()))))
    assert (tmp_path / "1.dgl").read_bytes() == (tmp_path / "2.dgl").read_bytes()
    assert list(read_tensor_dict(tmp_path / "1.dgl")) == ["a", "b", "c/d"]


def _spans(arr: np.ndarray, sizes: list[int]) -> ArraySpans:
    bounds = np.cumsum([0, *sizes])
    return ArraySpans(arr.shape, arr.dtype, lambda: (arr[a:b] for a, b in itertools.pairwise(bounds)))


def test_sources_give_identical_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zarr

    monkeypatch.setattr(dgl_spans, "SPAN_BYTES", 40)  # many spans even for tiny arrays
    arr = np.arange(60, dtype=np.float32).reshape(20, 3)
    np.save(tmp_path / "a.npy", arr)
    z = zarr.create_array(store=str(tmp_path / "z.zarr"), shape=arr.shape, chunks=(7, 3), dtype=arr.dtype)
    z[:] = arr
    sources = {
        "numpy": arr,
        "memmap": np.load(tmp_path / "a.npy", mmap_mode="r"),
        "zarr": z,
        "spans": _spans(arr, [0, 3, 9, 0, 8]),
    }
    outputs = {}
    for name, value in sources.items():
        write_tensor_dict(tmp_path / f"{name}.dgl", {"feat": value})
        outputs[name] = (tmp_path / f"{name}.dgl").read_bytes()
    assert len(set(outputs.values())) == 1
    assert np.array_equal(read_tensor_dict(tmp_path / "numpy.dgl")["feat"], arr)


def test_fsspec_memory_url() -> None:
    arr = np.arange(10, dtype=np.int32)
    write_tensor_dict("memory://dglc-test/t.dgl", {"a": arr})
    assert np.array_equal(read_tensor_dict("memory://dglc-test/t.dgl")["a"], arr)
    graph = HomogeneousGraph(num_nodes=4, src=EDGES[0], dst=EDGES[1], ndata={"x": np.arange(4)})
    write_graph("memory://dglc-test/g.dgl", graph, formats=("coo", "csc"))
    (g,), _ = read_graphs("memory://dglc-test/g.dgl")
    assert g.stored_formats[("_N", "_E", "_N")] == ("coo", "csc") and g.ndata["_N"]["x"].tolist() == [0, 1, 2, 3]


FORMAT_SETS = [("coo",), ("csr",), ("csc",), ("coo", "csr"), ("coo", "csc"), ("csr", "csc"), ("coo", "csr", "csc")]


@pytest.mark.parametrize("formats", FORMAT_SETS)
@pytest.mark.parametrize("idtype", [np.int32, np.int64])
def test_graph_roundtrip(tmp_path: Path, formats: tuple[str, ...], idtype: type) -> None:
    rng = np.random.default_rng(1)
    n, e = 50, 300
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    ndata = {"feat": rng.standard_normal((n, 4)).astype(np.float32), "mask": rng.random(n) < 0.5}
    edata = {"_ID": np.arange(e), "w": rng.standard_normal(e)}
    graph = HomogeneousGraph(num_nodes=n, src=src, dst=dst, ndata=ndata, edata=edata, idtype=np.dtype(idtype))
    write_graph(tmp_path / "g.dgl", graph, formats=list(reversed(formats)))
    (g,), labels = read_graphs(tmp_path / "g.dgl")
    etype = ("_N", "_E", "_N")
    assert labels == {} and g.idtype == idtype and g.stored_formats[etype] == formats
    assert g.allowed_formats[etype] == ("coo", "csr", "csc")
    for name in formats:  # every stored format on its own gives the edges back in eid order
        single = GraphData(**{**g.__dict__, "formats": {etype: {name: g.formats[etype][name]}}})
        s, d = single.edges()
        assert s.dtype == idtype and s.tolist() == src.tolist() and d.tolist() == dst.tolist()
    assert list(g.ndata["_N"]) == ["feat", "mask"] and g.ndata["_N"]["mask"].dtype == np.uint8
    assert np.array_equal(g.ndata["_N"]["feat"], ndata["feat"])
    assert np.array_equal(g.edata[etype]["w"], edata["w"])
    streamed = HomogeneousGraph(
        num_nodes=n,
        src=_spans(src, [100, 0, 200]),
        dst=_spans(dst, [1, 299]),
        ndata=ndata,
        edata=edata,
        idtype=np.dtype(idtype),
    )
    write_graph(tmp_path / "b.dgl", streamed, formats=formats)
    assert (tmp_path / "b.dgl").read_bytes() == (tmp_path / "g.dgl").read_bytes()


def test_empty_graph_roundtrip(tmp_path: Path) -> None:
    empty = np.zeros(0, np.int64)
    write_graph(tmp_path / "g.dgl", HomogeneousGraph(num_nodes=0, src=empty, dst=empty), formats=FORMAT_SETS[-1])
    (g,), _ = read_graphs(tmp_path / "g.dgl")
    assert g.num_nodes == {"_N": 0} and g.num_edges() == 0 and g.edges()[0].shape == (0,)


def test_csr_csc_sorted_stable(tmp_path: Path) -> None:
    src, dst = np.array([2, 0, 2, 0, 1]), np.array([1, 1, 0, 1, 1])
    write_graph(tmp_path / "g.dgl", HomogeneousGraph(num_nodes=3, src=src, dst=dst), formats=("csr", "csc"))
    (g,), _ = read_graphs(tmp_path / "g.dgl")
    indptr, indices, data = g.formats[("_N", "_E", "_N")]["csr"]
    assert indptr.tolist() == [0, 2, 3, 5] and indices.tolist() == [1, 1, 1, 1, 0] and data.tolist() == [1, 3, 4, 0, 2]
    indptr, indices, data = g.formats[("_N", "_E", "_N")]["csc"]
    assert indptr.tolist() == [0, 1, 5, 5] and indices.tolist() == [2, 2, 0, 0, 1] and data.tolist() == [2, 0, 1, 3, 4]


# --- writer refuses what DGL cannot load ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.array(5), "0-d scalar"),
        (np.zeros(3, np.uint16), "torch 2.2"),
        (np.zeros(3, np.uint32), "torch 2.2"),
        (np.zeros(3, np.uint64), "torch 2.2"),
        (np.zeros(3, np.complex64), "expected one of"),
        (np.array(["a"]), "expected one of"),
        (ArraySpans((), np.float32, list), "0-d scalar"),
        (ArraySpans((4,), np.float32, lambda: [np.zeros(3, np.float32)]), "produced 3 rows in total"),
        (ArraySpans((4,), np.float32, lambda: [np.zeros(3, np.float32)] * 2), "more than the declared 4"),
        (ArraySpans((4, 2), np.float32, lambda: [np.zeros((4, 3), np.float32)]), "has shape (4, 3)"),
        (ArraySpans((4,), np.float32, lambda: [np.zeros(4, np.float64)]), "has dtype float64"),
    ],
)
def test_write_tensor_dict_rejects(tmp_path: Path, value: Any, message: str) -> None:
    out = tmp_path / "t.dgl"
    with pytest.raises(DGLFormatError, match=re.escape(message)):
        write_tensor_dict(out, {"good": np.arange(3), "bad": value})
    assert not out.exists()


def test_write_tensor_dict_rejects_bad_keys(tmp_path: Path) -> None:
    with pytest.raises(DGLFormatError, match="must be UTF-8 encodable str"):
        write_tensor_dict(tmp_path / "t.dgl", {1: np.arange(3)})  # type: ignore[dict-item]
    with pytest.raises(DGLFormatError, match="must be UTF-8 encodable str"):
        write_tensor_dict(tmp_path / "t.dgl", {"bad\udc80": np.arange(3)})
    write_tensor_dict(tmp_path / "t.dgl", {"papier/éte": np.arange(3)})
    assert list(read_tensor_dict(tmp_path / "t.dgl")) == ["papier/éte"]


def test_big_endian_input_is_stored_little_endian(tmp_path: Path) -> None:
    native = np.arange(12, dtype=np.float64).reshape(3, 4)
    write_tensor_dict(tmp_path / "le.dgl", {"x": native})
    write_tensor_dict(tmp_path / "be.dgl", {"x": native.astype(">f8")})
    assert (tmp_path / "le.dgl").read_bytes() == (tmp_path / "be.dgl").read_bytes()


@pytest.mark.parametrize(
    ("kwargs", "formats", "message"),
    [
        ({"src": [0, 4], "dst": [1, 1]}, ("coo",), "must lie in [0, 4)"),
        ({"src": [0, -1], "dst": [1, 1]}, ("csc",), "must lie in [0, 4)"),
        ({"src": [0, 1], "dst": [1]}, ("coo",), "dst has 1"),
        ({"src": [0.0, 1.0], "dst": [1, 1]}, ("coo",), "1-D integer array"),
        ({"src": [0, 1], "dst": [1, 1], "ndata": {"x": np.zeros(3)}}, ("coo",), "expected first dimension 4"),
        ({"src": [0, 1], "dst": [1, 1], "edata": {"x": np.zeros(3)}}, ("coo",), "expected first dimension 2"),
        ({"src": [0, 1], "dst": [1, 1], "edata": {"x": np.zeros(2, np.uint32)}}, ("coo",), "torch 2.2"),
        ({"src": [0, 1], "dst": [1, 1]}, (), "non-empty subset"),
        ({"src": [0, 1], "dst": [1, 1]}, ("coo", "csx"), "non-empty subset"),
    ],
)
def test_write_graph_rejects(tmp_path: Path, kwargs: dict[str, Any], formats: tuple[str, ...], message: str) -> None:
    out = tmp_path / "g.dgl"
    with pytest.raises(DGLFormatError, match=re.escape(message)):
        write_graph(out, HomogeneousGraph(num_nodes=4, **kwargs), formats=formats)
    assert not out.exists()


def test_write_graph_limits(tmp_path: Path) -> None:
    graph = HomogeneousGraph(num_nodes=3, src=[0, 1, 2], dst=[1, 2, 0])
    with pytest.raises(DGLFormatError, match="max_in_memory_edges=2"):
        write_graph(tmp_path / "g.dgl", graph, formats=("coo", "csc"), max_in_memory_edges=2)
    write_graph(tmp_path / "g.dgl", graph, formats=("coo",), max_in_memory_edges=2)  # COO streams
    with pytest.raises(DGLFormatError, match="int64 or int32"):
        HomogeneousGraph(num_nodes=3, src=[], dst=[], idtype=np.dtype(np.int16))
    with pytest.raises(DGLFormatError, match="idtype int32"):
        HomogeneousGraph(num_nodes=2**31, src=[], dst=[], idtype=np.dtype(np.int32))
    with pytest.raises(DGLFormatError, match="expected an int"):
        HomogeneousGraph(num_nodes=3.0, src=[], dst=[])  # type: ignore[arg-type]


def test_failed_stream_removes_partial_file(tmp_path: Path) -> None:
    def spans() -> Any:
        yield np.zeros(2, np.int64)
        raise RuntimeError("source died")

    out = tmp_path / "g.dgl"
    graph = HomogeneousGraph(num_nodes=4, src=ArraySpans((4,), np.int64, spans), dst=np.zeros(4, np.int64))
    with pytest.raises(RuntimeError, match="source died"):
        write_graph(out, graph)
    assert not out.exists()


@pytest.mark.parametrize("mode", ["r+", "c"])
def test_memmap_page_release_keeps_caller_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Dropping written memmap pages must not lose unflushed (r+) or copy-on-write (c) changes."""
    monkeypatch.setattr(dgl_spans, "SPAN_BYTES", 4096)
    base = np.arange(50_000, dtype=np.int64)
    np.save(tmp_path / "a.npy", base)
    mm = np.load(tmp_path / "a.npy", mmap_mode=mode)
    mm[::7] = -1  # not flushed
    expect = np.array(mm)
    write_tensor_dict(tmp_path / "t.dgl", {"a": mm})
    assert np.array_equal(read_tensor_dict(tmp_path / "t.dgl")["a"], expect)
    assert np.array_equal(mm, expect)  # the caller's view is intact after the write


def test_release_pages_of_read_only_memmap(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(300_000, dtype=np.int64))
    mm = np.load(tmp_path / "a.npy", mmap_mode="r")
    view = mm[1000:200_000]
    total = int(view.sum())
    dgl_spans.release_pages(view)
    assert int(view.sum()) == total  # pages come back from the file
    dgl_spans.release_pages(mm[:0])  # empty views are a no-op
