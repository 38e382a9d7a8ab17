"""``make_assignment``: the partition command's workflow as one library call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dask
import numpy as np
import pytest

import dgl_chunked
from dgl_chunked.errors import DglChunkedError
from dgl_chunked.io.assignment import open_assignment, write_assignment
from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import PartitionOptions, assign_partitions, compute_partition_report, make_assignment
from dgl_chunked.storage.overlap import OverlapError


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_make_assignment_writes_what_its_steps_write(tiny_chunked: Path, tmp_path: Path) -> None:
    graph = open_chunked_graph(str(tiny_chunked))
    options = PartitionOptions(seed=5, balance_ntypes=("paper",))
    with dask.config.set(scheduler="synchronous"):
        report = make_assignment(graph, tmp_path / "one", num_parts=3, method="random", options=options)
        # the same steps by hand: assign, write, report on what was written
        parts = assign_partitions(graph, 3, method="random", options=options)
        provenance = {"seed": 5, "balance_ntypes": ["paper"], "balance_edges": False}
        write_assignment(tmp_path / "two", parts, num_parts=3, algo_name="random", provenance=provenance)
        _, written = open_assignment(tmp_path / "two", graph.metadata, num_parts=3)
        expected = compute_partition_report(graph, written, 3, scratch_dir=str(tmp_path / "scratch"))
    one, two = _files(tmp_path / "one"), _files(tmp_path / "two")
    assert json.loads(one.pop("report.json")) == expected.to_dict() == report.to_dict()
    del one[".dglc-owned.json"], two[".dglc-owned.json"]  # the ownership markers: times, host, lease
    sidecars = [json.loads(d.pop("dglc_partition.json")) for d in (one, two)]
    own = {"files", "token"}  # each text file's size and time; a token of the directory's path
    assert [{k: v for k, v in s.items() if k not in own} for s in sidecars] == [
        {k: v for k, v in sidecars[1].items() if k not in own}
    ] * 2  # the provenance recorded alike
    assert sidecars[0]["seed"] == 5 and sidecars[0]["balance_ntypes"] == ["paper"]
    assert one == two  # every other assignment file (the text files, the Zarr form), byte for byte
    assert report.num_parts == 3 and report.num_nodes == 32 and report.num_edges == 65
    paper = np.loadtxt(tmp_path / "one" / "paper.txt", dtype=np.int64)
    assert paper.tolist() == parts["paper"].compute().tolist()
    assert not [p for p in (tmp_path / "one").iterdir() if p.name.startswith("dglc-")]  # its scratch is gone


def test_make_assignment_is_the_root_export_and_takes_a_path(tiny_chunked: Path, tmp_path: Path) -> None:
    assert dgl_chunked.make_assignment is make_assignment
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with dask.config.set(scheduler="synchronous"):
        report = dgl_chunked.make_assignment(str(tiny_chunked), tmp_path / "a", num_parts=2, scratch_dir=scratch)
    assert sum(report.to_dict()["nodes"]["paper"]) == 15
    assert list(scratch.iterdir()) == []  # the scratch went where asked, and is removed
    meta = json.loads((tmp_path / "a" / "partition_meta.json").read_text())
    assert meta == {"algo_name": "random", "num_parts": 2, "version": "1.0.0"}


def test_a_failed_report_retracts_the_assignment(tiny_chunked: Path, tmp_path: Path) -> None:
    bad = Path(shutil.copytree(tiny_chunked, tmp_path / "chunked"))
    (bad / "edge_index" / "paper:cites:paper1.txt").write_text("1 2 3\n")  # a row of three columns
    out = tmp_path / "assign"
    with dask.config.set(scheduler="synchronous"), pytest.raises(DglChunkedError, match="paper:cites:paper1.txt"):
        make_assignment(str(bad), out, num_parts=2)
    assert not (out / "partition_meta.json").exists()  # nothing looks complete
    assert not [p for p in out.iterdir() if p.name.startswith("dglc-")]


def test_the_free_heap_goes_back_between_the_assignment_and_the_report(
    tiny_chunked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report starts from the partitioner's live data, not from its free heap too."""
    from dgl_chunked.partition import workflow

    events: list[str] = []
    monkeypatch.setattr(workflow, "give_back_free_heap", lambda: events.append("trim") or True)
    write, report = workflow.write_assignment, workflow.compute_partition_report
    monkeypatch.setattr(workflow, "write_assignment", lambda *a, **k: (events.append("write"), write(*a, **k))[1])
    monkeypatch.setattr(
        workflow, "compute_partition_report", lambda *a, **k: (events.append("report"), report(*a, **k))[1]
    )
    with dask.config.set(scheduler="synchronous"):
        make_assignment(str(tiny_chunked), tmp_path / "a", num_parts=2)
    assert events == ["write", "trim", "report"]


def test_an_output_inside_the_input_is_refused_before_anything_is_created(tiny_chunked: Path, tmp_path: Path) -> None:
    chunked = Path(shutil.copytree(tiny_chunked, tmp_path / "chunked"))
    before = sorted(p.name for p in chunked.rglob("*"))
    with pytest.raises(OverlapError, match="--out-dir .* is inside the chunked graph directory"):
        make_assignment(str(chunked), chunked / "assign", num_parts=2)
    assert sorted(p.name for p in chunked.rglob("*")) == before
