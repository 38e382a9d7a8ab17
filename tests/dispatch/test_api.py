"""``dispatch``: one function; ``prechecked=True`` leaves the location and space checks
to a caller that made them (``run``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import assign_partitions
from dgl_chunked.storage.overlap import OverlapError
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from tests.dispatch.helpers import output_files


def test_dispatch_checks_its_locations_unless_the_caller_did(tmp_path: Path):
    write_synthetic_graph(tmp_path / "chunked", SynthSpec.homogeneous(200, 1000, feat_dim=2, seed=2))
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, 2, seed=0)
    inside = tmp_path / "chunked" / "out"  # an output inside the input
    with pytest.raises(OverlapError, match="--out-dir"):
        dispatch(graph, parts, inside, num_parts=2)
    assert not inside.exists()  # refused before anything was written
    dispatch(graph, parts, tmp_path / "outside", num_parts=2, options=DispatchOptions(check_space=False))
    dispatch(graph, parts, inside, num_parts=2, options=DispatchOptions(check_space=False), prechecked=True)
    assert output_files(inside) == output_files(tmp_path / "outside")
