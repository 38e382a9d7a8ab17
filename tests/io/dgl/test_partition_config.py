"""The partition config (``OUT/metadata.json``): DGL's pipeline layout, IDs from the values.

Golden documents are DGL 2.1.0's chunked-pipeline outputs (``tests/data/golden``):
``tiny-pipeline`` (types sorted by name) and ``type-order/<case>`` (types whose IDs
are not in name order, one type in eleven partitions).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dgl_chunked.errors import MetadataError
from dgl_chunked.io.assignment.meta import PartitionMeta
from dgl_chunked.io.dgl.partition_config import (
    PartitionConfig,
    config_document,
    read_partition_config,
    types_in_id_order,
    write_partition_config,
)

PIPELINE_OUTPUTS = [
    "tiny-pipeline/pipeline_out_none",
    "type-order/user-item-tag/pipeline_out",
    "type-order/user-item-tag/pipeline_out_1",
    "type-order/mixed-names/pipeline_out",
    "type-order/one-type/pipeline_out",
]


@pytest.mark.parametrize("output", PIPELINE_OUTPUTS)
def test_dgl_pipeline_config_reads_and_writes_back_byte_for_byte(golden_dir: Path, output: str) -> None:
    path = golden_dir / output / "metadata.json"
    config = read_partition_config(path)
    assert config_document(config) == path.read_bytes()
    chunked = json.loads((path.parents[1] / "chunked" / "metadata.json").read_text())
    assert list(config.ntypes.items()) == [(t, i) for i, t in enumerate(chunked["node_type"])]
    assert list(config.etypes.items()) == [(e, i) for i, e in enumerate(chunked["edge_type"])]
    assert list(config.node_map) == chunked["node_type"] and list(config.edge_map) == chunked["edge_type"]


@pytest.mark.parametrize("output", PIPELINE_OUTPUTS)
def test_a_config_with_sorted_keys_reads_the_same(golden_dir: Path, output: str, tmp_path: Path) -> None:
    """Our outputs before the pipeline's layout had every key sorted: IDs come from the values."""
    original = golden_dir / output / "metadata.json"
    older = tmp_path / "metadata.json"
    older.write_text(json.dumps(json.loads(original.read_text()), indent=4, sort_keys=True) + "\n")
    a, b = read_partition_config(original), read_partition_config(older)
    assert a == b
    for name in ("ntypes", "etypes", "node_map", "edge_map"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name
    write_partition_config(tmp_path, b)
    assert older.read_bytes() == original.read_bytes()


def test_layout_is_the_pipeline_layout_whatever_the_construction_order() -> None:
    config = PartitionConfig(
        graph_name="g",
        num_parts=12,
        node_map={"b": [[i, i] for i in range(12)], "a": [[i, i + 1] for i in range(12)]},
        edge_map={"a:r:b": [[i, i] for i in range(12)]},
        ntypes={"b": 1, "a": 0},
        etypes={"a:r:b": 0},
    )
    doc = config.to_dict()
    assert list(doc) == [
        "edge_map",
        "etypes",
        "graph_name",
        "halo_hops",
        "node_map",
        "ntypes",
        "num_edges",
        "num_nodes",
        "num_parts",
        "part_method",
        *(f"part-{p}" for p in range(12)),
    ]
    assert list(doc["ntypes"].items()) == [("a", 0), ("b", 1)] and list(doc["node_map"]) == ["a", "b"]
    assert list(doc["part-10"]) == ["node_feats", "edge_feats", "part_graph"]
    gb = replace(config, graphbolt=True).to_dict()
    assert list(gb)[-2:] == ["node_map_dtype", "edge_map_dtype"]
    assert list(gb["part-0"]) == ["node_feats", "edge_feats", "part_graph_graphbolt"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ntypes": {"author": 0, "institution": 2, "paper": 3}}, r"ntypes IDs \[0, 2, 3\] are not 0 \.\. 2"),
        ({"ntypes": {"author": 0, "institution": 0, "paper": 1}}, r"ntypes IDs \[0, 0, 1\]"),
        ({"etypes": {"author:affiliated_with:institution": "0"}}, r"etypes\['author:affiliated_with:institution'\]"),
        ({"ntypes": []}, r"'ntypes' must be a non-empty object"),
        ({"node_map": {"writer": [[0, 1], [1, 2]]}}, r"node_map names 'writer', which ntypes lacks"),
        ({"edge_map": {"author:writes:paper": [0, 1]}}, r"edge_map\['author:writes:paper'\] is not a list"),
    ],
)
def test_bad_type_ids_are_refused_naming_the_key(golden_dir: Path, tmp_path: Path, change: dict, message: str) -> None:
    doc = json.loads((golden_dir / "tiny-pipeline/pipeline_out_none/metadata.json").read_text())
    doc.update(change)
    (tmp_path / "metadata.json").write_text(json.dumps(doc))
    with pytest.raises(MetadataError, match=message) as err:
        read_partition_config(tmp_path)
    assert str(tmp_path / "metadata.json") in str(err.value)


def test_defaults_and_legacy_list_maps_are_the_homogeneous_types(tmp_path: Path) -> None:
    doc = {"graph_name": "g", "num_parts": 1, "node_map": [[0, 5]], "edge_map": [[0, 7]], "num_nodes": 5}
    (tmp_path / "g.json").write_text(json.dumps(doc))
    config = read_partition_config(tmp_path / "g.json")
    assert config.ntypes == {"_N": 0} and config.etypes == {"_N:_E:_N": 0}
    assert config.node_map == {"_N": [[0, 5]]} and config.edge_map == {"_N:_E:_N": [[0, 7]]}


def test_types_in_id_order_keeps_every_key_in_its_place() -> None:
    doc = {
        "z": 1,
        "ntypes": {"tag": 2, "item": 1, "user": 0},
        "node_map": {"item": [[1, 2]], "user": [[0, 1]], "tag": [[2, 3]]},
        "edge_map": {"_N:_E:_N": [[0, 0]]},
        "a": 2,
    }
    out = types_in_id_order(doc, where="x.json")
    assert list(out) == ["z", "ntypes", "node_map", "edge_map", "a"]  # no etypes added
    assert list(out["ntypes"]) == list(out["node_map"]) == ["user", "item", "tag"]
    assert list(doc["ntypes"]) == ["tag", "item", "user"]  # the input is left alone


def test_partition_meta_json_is_dgl_bytes(golden_dir: Path) -> None:
    """``partition_meta.json`` as DGL's ``dump_partition_meta`` writes it (sorted keys, indent 4)."""
    want = (golden_dir / "tiny-pipeline/partition_assignment/partition_meta.json").read_bytes()
    assert PartitionMeta(num_parts=2, algo_name="random").to_json() == want
    for case, parts in (("user-item-tag", 2), ("mixed-names", 3), ("one-type", 11)):
        want = (golden_dir / "type-order" / case / "partition_assignment/partition_meta.json").read_bytes()
        assert PartitionMeta(num_parts=parts, algo_name="random").to_json() == want
