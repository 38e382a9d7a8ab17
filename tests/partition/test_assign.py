"""The method registry and argument checking of ``assign_partitions``."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.chunked.graph import ChunkedGraph, open_chunked_graph
from dgl_chunked.partition import (
    PartitionOptions,
    assign_partitions,
    available_methods,
    get_method,
    register_method,
)
from dgl_chunked.partition import assign as assign_module


@pytest.fixture
def tiny_graph(tiny_chunked: Path) -> ChunkedGraph:
    return open_chunked_graph(tiny_chunked)


class _FirstPart:
    """A toy method: everything in partition 0."""

    name = "all-zero"
    dgl_algo_name = "random"

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        return {
            t: da.zeros(graph.num_nodes(t), chunks=(graph.node_chunks(t),), dtype=np.int32) for t in graph.node_types
        }


class _Broken(_FirstPart):
    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        return {t: da.zeros(graph.num_nodes(t), dtype=np.int64) for t in graph.node_types}


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assign_module, "_REGISTRY", dict(assign_module._REGISTRY))


def test_builtin_methods() -> None:
    assert {"random", "metis"} <= set(available_methods())
    assert get_method("metis").dgl_algo_name == "metis"


@pytest.mark.usefixtures("clean_registry")
def test_register_a_method(tiny_graph: ChunkedGraph) -> None:
    register_method("all-zero", _FirstPart())
    parts = assign_partitions(tiny_graph, 3, method="all-zero")
    assert all((a.compute() == 0).all() for a in parts.values())
    with pytest.raises(AssignmentError, match="already registered"):
        register_method("all-zero", _FirstPart())
    with pytest.raises(AssignmentError, match="expected an object with name"):
        register_method("bad", object())  # type: ignore[arg-type]


@pytest.mark.usefixtures("clean_registry")
def test_a_method_must_return_int32_with_node_chunks(tiny_graph: ChunkedGraph) -> None:
    register_method("broken", _Broken())
    with pytest.raises(AssignmentError, match="expected int32 chunked like"):
        assign_partitions(tiny_graph, 2, method="broken")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"method": "nope"}, r"method: expected one of .*'random'.*found 'nope'"),
        ({"balance_ntypes": ["nope"]}, r"balance_ntypes: expected node types or node feature names"),
        ({"seed": -1}, r"seed: expected an integer in \[0, 2\*\*64\)"),
    ],
)
def test_argument_errors(tiny_graph: ChunkedGraph, kwargs: dict[str, object], pattern: str) -> None:
    with pytest.raises(AssignmentError, match=pattern):
        assign_partitions(tiny_graph, 2, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("num_parts", [0, -3, 1.5, True])
def test_num_parts_must_be_positive_int(tiny_graph: ChunkedGraph, num_parts: object) -> None:
    with pytest.raises(AssignmentError, match="num_parts: expected an integer >= 1"):
        assign_partitions(tiny_graph, num_parts)  # type: ignore[arg-type]


def test_balance_names_accept_types_and_features(tiny_graph: ChunkedGraph) -> None:
    parts = assign_partitions(tiny_graph, 2, balance_ntypes=["paper", "mask"])
    assert set(parts) == set(tiny_graph.node_types)


def test_run_takes_the_partition_options_as_one_object(tiny_chunked: Path, tmp_path: Path) -> None:
    from dgl_chunked import PartitionOptions, run
    from dgl_chunked.errors import OptionError

    loose = run(tiny_chunked, tmp_path / "loose", num_parts=2, seed=7, balance_ntypes="paper,author")
    one = run(
        tiny_chunked,
        tmp_path / "one",
        num_parts=2,
        partition_options=PartitionOptions(seed=7, balance_ntypes=("paper", "author")),
    )
    names = sorted(p.relative_to(tmp_path / "loose") for p in (tmp_path / "loose").rglob("*.dgl"))
    assert names and loose.config.num_parts == one.config.num_parts == 2
    for name in names:
        assert (tmp_path / "loose" / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
    with pytest.raises(OptionError, match="either a PartitionOptions or the keyword"):
        run(tiny_chunked, tmp_path / "both", num_parts=2, seed=1, partition_options=PartitionOptions())
