"""``run --partitions-dir``: the assignment is written from what dispatch staged (issue 37).

The directory holds the same bytes as ``partition`` writes for the same method and seed
(``<ntype>.txt``, ``partition_meta.json``), without the Zarr copy that dispatch no longer
reads, and a later ``dispatch`` from it writes the same partitions as the run did.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import dgl_chunked as dglc


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("trainers", [1, 2])
def test_run_keeps_the_assignment_partition_writes(tmp_path: Path, trainers: int) -> None:
    chunked = tmp_path / "chunked"
    dglc.write_synthetic_graph(chunked, dglc.SynthSpec.heterogeneous(scale=2, seed=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dglc.run(
            chunked,
            tmp_path / "out",
            num_parts=2,
            seed=3,
            partitions_dir=tmp_path / "kept",
            num_trainers_per_machine=trainers,
        )
    graph = dglc.open_chunked_graph(chunked)
    parts = dglc.assign_partitions(graph, 2 * trainers, method="random", seed=3)
    parts = {t: (p // trainers).astype("int32") for t, p in parts.items()}
    dglc.write_assignment(tmp_path / "written", parts, num_parts=2, algo_name="random")
    kept = tmp_path / "kept"
    for ntype in graph.metadata.node_types:
        assert (kept / f"{ntype}.txt").read_bytes() == (tmp_path / "written" / f"{ntype}.txt").read_bytes()
    assert (kept / "partition_meta.json").read_bytes() == (tmp_path / "written" / "partition_meta.json").read_bytes()
    assert not (kept / "dglc_parts.zarr").exists()
    assert json.loads((kept / "dglc_partition.json").read_text())["binary"] == ""
    if trainers == 1:  # the kept directory dispatches to the run's bytes (text read, no Zarr copy)
        dglc.dispatch(chunked, kept, tmp_path / "again")
        run_files, again_files = _files(tmp_path / "out"), _files(tmp_path / "again")
        assert run_files.keys() == again_files.keys()
        differ = [k for k in run_files if run_files[k] != again_files[k] and not k.endswith(".json")]
        assert differ == []
