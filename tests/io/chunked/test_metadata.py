"""Tests for dgl_chunked.io.chunked.metadata: parsing, derivation, errors, round trips."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgl_chunked.errors import MetadataError
from dgl_chunked.io.chunked.metadata import (
    ChunkedGraphMetadata,
    EdgeTypeSpec,
    parse_metadata,
    read_metadata,
)


@pytest.fixture
def golden_dict(tiny_chunked: Path) -> dict[str, Any]:
    return json.loads((tiny_chunked / "metadata.json").read_text())


def test_golden_metadata_parses(tiny_chunked: Path) -> None:
    meta = read_metadata(tiny_chunked)
    assert meta.graph_name == "tiny"
    assert meta.node_types == ("author", "institution", "paper")
    assert meta.num_nodes_per_type == (12, 5, 15)
    assert meta.num_nodes_per_chunk == ((6, 6), (3, 2), (8, 7))
    assert meta.edge_type_names == (
        "author:affiliated_with:institution",
        "author:writes:paper",
        "paper:cites:paper",
    )
    assert meta.etype("author:writes:paper") == EdgeTypeSpec(
        name="author:writes:paper", src_type="author", rel="writes", dst_type="paper"
    )
    assert meta.num_edges_per_type == (10, 25, 30)
    assert meta.num_edges_per_chunk == ((5, 5), (13, 12), (15, 15))
    src = meta.edges["paper:cites:paper"]
    assert src.format == "csv" and src.options == {"delimiter": " "}
    assert src.where == 'edges["paper:cites:paper"]'
    assert all(os.path.isabs(p) and os.path.isfile(p) for p in src.paths)
    assert sorted(meta.node_data) == ["author", "paper"]
    assert sorted(meta.node_data["paper"]) == ["feat", "label"]
    assert meta.edge_data["paper:cites:paper"]["w"].where == 'edge_data["paper:cites:paper"]["w"]'
    np.testing.assert_array_equal(meta.node_type_offsets, [0, 12, 17, 32])
    np.testing.assert_array_equal(meta.edge_type_offsets, [0, 10, 35, 65])
    assert meta.node_type_offsets.dtype == np.int64
    assert meta.ntype_id("paper") == 2 and meta.etype_id("paper:cites:paper") == 2
    assert meta.num_nodes("institution") == 5 and meta.num_edges("author:writes:paper") == 25


def test_read_metadata_accepts_file_path_and_custom_name(tiny_chunked: Path, tmp_path: Path) -> None:
    by_file = read_metadata(tiny_chunked / "metadata.json")
    assert by_file == read_metadata(tiny_chunked)
    (tmp_path / "graph.json").write_text((tiny_chunked / "metadata.json").read_text())
    other = read_metadata(tmp_path, metadata_filename="graph.json")
    assert other.base_dir == str(tmp_path)
    assert other.edges["paper:cites:paper"].paths[0] == str(tmp_path / "edge_index" / "paper:cites:paper0.txt")


def test_read_metadata_from_fsspec_url(tiny_chunked: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/meta-url/metadata.json", (tiny_chunked / "metadata.json").read_bytes())
    meta = read_metadata("memory://meta-url")
    assert meta.base_dir == "memory://meta-url"
    assert meta.edges["paper:cites:paper"].paths[0] == "memory://meta-url/edge_index/paper:cites:paper0.txt"
    fs.rm("/meta-url", recursive=True)


def test_unknown_type_names_raise_keyerror(tiny_chunked: Path) -> None:
    meta = read_metadata(tiny_chunked)
    with pytest.raises(KeyError, match="venue"):
        meta.ntype_id("venue")
    with pytest.raises(KeyError, match="writes"):
        meta.etype("writes")


# --- derived counts -------------------------------------------------------------


def test_per_type_derived_from_legacy_per_chunk(golden_dict: dict[str, Any]) -> None:
    del golden_dict["num_nodes_per_type"], golden_dict["num_edges_per_type"]
    meta = parse_metadata(golden_dict, base_dir="/in")
    assert meta.num_nodes_per_type == (12, 5, 15)
    assert meta.num_edges_per_type == (10, 25, 30)
    assert meta.num_edges_per_chunk == ((5, 5), (13, 12), (15, 15))


def test_edge_per_chunk_unknown_without_it_for_multi_file_types(
    golden_dict: dict[str, Any],
) -> None:
    del golden_dict["num_edges_per_chunk"], golden_dict["num_nodes_per_chunk"]
    meta = parse_metadata(golden_dict, base_dir="/in")
    assert meta.num_nodes_per_chunk is None
    assert meta.num_edges_per_type == (10, 25, 30)
    assert meta.num_edges_per_chunk is None  # counted from the files later


def test_edge_per_chunk_derived_for_single_file_types(
    golden_dict: dict[str, Any],
) -> None:
    del golden_dict["num_edges_per_chunk"]
    for spec in golden_dict["edges"].values():
        spec["data"] = spec["data"][:1]
    golden_dict["edges"]["paper:cites:paper"]["data"] = []
    golden_dict["num_edges_per_type"] = [10, 25, 0]
    meta = parse_metadata(golden_dict, base_dir="/in")
    assert meta.num_edges_per_chunk == ((10,), (25,), ())


def test_no_edge_counts_at_all(golden_dict: dict[str, Any]) -> None:
    del golden_dict["num_edges_per_chunk"], golden_dict["num_edges_per_type"]
    meta = parse_metadata(golden_dict, base_dir="/in")
    assert meta.num_edges_per_type is None and meta.num_edges_per_chunk is None
    with pytest.raises(MetadataError, match="num_edges_per_type"):
        meta.num_edges("paper:cites:paper")
    with pytest.raises(MetadataError):
        _ = meta.edge_type_offsets
    filled = meta.with_edge_counts(
        {
            "author:affiliated_with:institution": (5, 5),
            "author:writes:paper": (13, 12),
            "paper:cites:paper": (15, 15),
        }
    )
    assert filled.num_edges_per_type == (10, 25, 30)
    np.testing.assert_array_equal(filled.edge_type_offsets, [0, 10, 35, 65])


def test_spark_style_directory_and_glob(tmp_path: Path, golden_dict: dict[str, Any]) -> None:
    part_dir = tmp_path / "cites"
    part_dir.mkdir()
    for name in ["part-00001.txt", "part-00000.txt", "_SUCCESS", ".part-00000.txt.crc"]:
        (part_dir / name).write_text("1 2\n")
    golden_dict["edges"]["paper:cites:paper"]["data"] = "cites"
    golden_dict["edges"]["author:writes:paper"]["data"] = ["cites/part-*.txt"]
    del golden_dict["num_edges_per_chunk"]
    meta = parse_metadata(golden_dict, base_dir=str(tmp_path))
    expected = (str(part_dir / "part-00000.txt"), str(part_dir / "part-00001.txt"))
    assert meta.edges["paper:cites:paper"].paths == expected
    assert meta.edges["author:writes:paper"].paths == expected
    golden_dict["edges"]["paper:cites:paper"]["data"] = ["nothing-*.txt"]
    with pytest.raises(MetadataError, match=r'edges\["paper:cites:paper"\]\.data\[0\]'):
        parse_metadata(golden_dict, base_dir=str(tmp_path))


# --- errors name their JSON path ------------------------------------------------


def _set(path: list[Any], value: Any) -> Any:
    def mutate(d: dict[str, Any]) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return mutate


_DELETE = object()
_CITES = "paper:cites:paper"
_WRITES = "author:writes:paper"

ERROR_CASES = [
    (_set(["graph_name"], _DELETE), "graph_name"),
    (_set(["node_type"], _DELETE), "node_type"),
    (
        _set(["node_type"], ["author", "author", "paper"]),
        "node_type: expected unique names",
    ),
    (_set(["node_type", 0], "au:thor"), "node_type[0]"),
    (_set(["node_type", 2], "pa/per"), "node_type[2]"),
    (_set(["num_nodes_per_type"], [12, 5]), "num_nodes_per_type"),
    (_set(["num_nodes_per_type", 1], -5), "num_nodes_per_type"),
    (_set(["num_nodes_per_chunk", 0], [6, 5]), "num_nodes_per_chunk[0]"),
    (_set(["edge_type", 1], "writes"), "edge_type[1]"),
    (_set(["edge_type", 1], "author:writes:venue"), "edge_type[1]"),
    (_set(["edge_type", 1], "author:wri/tes:paper"), "edge_type[1]"),
    (_set(["edges", _WRITES], _DELETE), f'edges["{_WRITES}"]'),
    (
        _set(["edges", "x:y:z"], {"format": {"name": "csv"}, "data": []}),
        'edges["x:y:z"]',
    ),
    (
        _set(["edges", _CITES, "format", "name"], "hdf5"),
        f'edges["{_CITES}"].format.name',
    ),
    (
        _set(["edges", _CITES, "format", "name"], "numpy"),
        f'edges["{_CITES}"].format.name',
    ),
    (_set(["edges", _CITES, "format", "quote"], '"'), f'edges["{_CITES}"].format'),
    (
        _set(["edges", _CITES, "format", "delimiter"], "::"),
        f'edges["{_CITES}"].format.delimiter',
    ),
    (_set(["edges", _CITES, "format"], "csv"), f'edges["{_CITES}"].format'),
    (_set(["edges", _CITES, "data"], 3), f'edges["{_CITES}"].data'),
    (_set(["num_edges_per_chunk", 2], [30]), "num_edges_per_chunk[2]"),
    (_set(["num_edges_per_type", 2], 31), "num_edges_per_chunk[2]"),
    (_set(["num_edges_per_chunk"], [[5, 5]]), "num_edges_per_chunk"),
    (_set(["node_data"], _DELETE), "node_data"),
    (_set(["node_data", "venue"], {}), 'node_data["venue"]'),
    (
        _set(["node_data", "paper", "feat", "format", "name"], "csv"),
        'node_data["paper"]["feat"].format.name',
    ),
    (
        _set(["node_data", "paper", "a/b"], {"format": {"name": "numpy"}, "data": []}),
        'node_data["paper"]["a/b"]',
    ),
    (_set(["edge_data", "writes"], {}), 'edge_data["writes"]'),
    (_set(["edge_data", "paper:likes:paper"], {}), 'edge_data["paper:likes:paper"]'),
]


@pytest.mark.parametrize(("mutate", "where"), ERROR_CASES)
def test_errors_name_their_json_path(golden_dict: dict[str, Any], mutate: Any, where: str) -> None:
    mutate(golden_dict)
    with pytest.raises(MetadataError) as info:
        parse_metadata(golden_dict, base_dir="/in")
    message = str(info.value)
    assert where in message
    assert "expected" in message and "found" in message


def test_every_problem_is_collected(golden_dict: dict[str, Any]) -> None:
    for mutate, _ in (ERROR_CASES[0], ERROR_CASES[3], ERROR_CASES[13], ERROR_CASES[26]):
        mutate(golden_dict)
    with pytest.raises(MetadataError) as info:
        parse_metadata(golden_dict, base_dir="/in")
    problems = info.value.problems  # type: ignore[attr-defined]
    assert len(problems) >= 4
    assert str(info.value).startswith(f"{len(problems)} problems in metadata.json")


def test_not_an_object_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="JSON object"):
        parse_metadata([1, 2], base_dir="/in")
    (tmp_path / "metadata.json").write_text('{"graph_name": "x",')
    with pytest.raises(MetadataError, match="valid JSON") as info:
        read_metadata(tmp_path)
    assert str(tmp_path / "metadata.json") in str(info.value)
    with pytest.raises(MetadataError, match="metadata-filename"):
        read_metadata(tmp_path, metadata_filename="nope.json")


# --- round trip (hypothesis) ----------------------------------------------------

_NAMES = st.text("abcdefghij_", min_size=1, max_size=6)


@st.composite
def metadata_dicts(draw: st.DrawFn) -> dict[str, Any]:
    ntypes = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
    counts = [draw(st.integers(0, 50)) for _ in ntypes]
    triples = [(s, r, d) for s in ntypes for d in ntypes for r in ("r1", "r2")]
    etypes = [":".join(t) for t in draw(st.lists(st.sampled_from(triples), max_size=4, unique=True))]
    edges, per_chunk = {}, []
    for i, etype in enumerate(etypes):
        files = draw(st.integers(0, 3))
        fmt = draw(
            st.sampled_from(
                [
                    {"name": "csv", "delimiter": " "},
                    {"name": "csv"},
                    {"name": "parquet"},
                ]
            )
        )
        edges[etype] = {
            "format": fmt,
            "data": [f"edge_index/{i}-{k}.x" for k in range(files)],
        }
        per_chunk.append([draw(st.integers(0, 9)) for _ in range(files)])
    out: dict[str, Any] = {
        "graph_name": draw(_NAMES),
        "node_type": ntypes,
        "edge_type": etypes,
        "edges": edges,
    }
    if draw(st.booleans()):
        out["num_nodes_per_type"] = counts
    else:
        out["num_nodes_per_chunk"] = [[c] for c in counts]
    mode = draw(st.sampled_from(["chunk", "type+chunk", "none"]))
    if mode != "none":
        out["num_edges_per_chunk"] = per_chunk
    if mode == "type+chunk":
        out["num_edges_per_type"] = [sum(c) for c in per_chunk]
    feats = st.dictionaries(_NAMES, st.integers(0, 2), max_size=2)
    out["node_data"] = {
        t: {
            f: {
                "format": {"name": "numpy"},
                "data": [f"nd/{t}/{f}-{k}.npy" for k in range(n)],
            }
            for f, n in draw(feats).items()
        }
        for t in draw(st.lists(st.sampled_from(ntypes), unique=True))
    }
    out["edge_data"] = {
        e: {
            f: {
                "format": {"name": "parquet"},
                "data": [f"/abs/{f}-{k}.parquet" for k in range(n)],
            }
            for f, n in draw(feats).items()
        }
        for e in (draw(st.lists(st.sampled_from(etypes), unique=True)) if etypes else [])
    }
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata_dicts())
def test_to_dict_round_trip(data: dict[str, Any]) -> None:
    meta = parse_metadata(copy.deepcopy(data), base_dir="/base/dir")
    as_dict = meta.to_dict()
    again = parse_metadata(json.loads(json.dumps(as_dict)), base_dir="/base/dir")
    assert again == meta
    assert again.to_dict() == as_dict
    assert again.fingerprint() == meta.fingerprint()
    assert isinstance(meta, ChunkedGraphMetadata)
    # relative paths stay relative, absolute ones absolute
    for etype, spec in as_dict["edges"].items():
        assert spec["data"] == data["edges"][etype]["data"]
    moved = parse_metadata(as_dict, base_dir="/elsewhere")
    assert all(p.startswith("/elsewhere/") for s in moved.edges.values() for p in s.paths)


def test_fingerprint_changes_with_content(golden_dict: dict[str, Any]) -> None:
    a = parse_metadata(copy.deepcopy(golden_dict), base_dir="/in")
    golden_dict["num_nodes_per_type"][0] = 12
    assert parse_metadata(copy.deepcopy(golden_dict), base_dir="/in").fingerprint() == a.fingerprint()
    golden_dict["edges"][_CITES]["format"]["delimiter"] = ","
    assert parse_metadata(golden_dict, base_dir="/in").fingerprint() != a.fingerprint()


def test_missing_directory_is_a_metadata_error(golden_dict: dict[str, Any], tmp_path: Path) -> None:
    golden_dict["edges"][_CITES]["data"] = "no-such-dir"
    with pytest.raises(MetadataError, match=r'edges\["paper:cites:paper"\]\.data\[0\].*no-such-dir/'):
        parse_metadata(golden_dict, base_dir=str(tmp_path))
