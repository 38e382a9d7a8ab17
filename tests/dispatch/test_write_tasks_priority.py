"""The write step starts its largest files first (issue 37): a Dask priority per file, so
that two partitions' graph files do not queue on one worker while others write small
feature files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dgl_chunked.dispatch import DispatchOptions, api, dispatch
from dgl_chunked.dispatch.write_tasks import largest_first

FILES = ("graph.dgl", "node_feat.dgl", "edge_feat.dgl")


def test_largest_first_ranks_files_by_bytes_and_keeps_the_partition_order_in_ties() -> None:
    sizes = {(0, "graph"): 100, (0, "node_feat"): 10, (1, "graph"): 100, (1, "node_feat"): 50, (1, "edge_feat"): 0}
    assert largest_first(sizes) == {
        (0, "graph"): 5,
        (1, "graph"): 4,
        (1, "node_feat"): 3,
        (0, "node_feat"): 2,
        (1, "edge_feat"): 1,
    }
    assert largest_first({}) == {}


def _priorities(tasks: list[Any]) -> dict[tuple[int, int], int]:
    """Each task's (partition, file index) and the priority its graph layer carries."""
    found = {}
    for task in tasks:
        (annotations,) = [layer.annotations for layer in task.__dask_graph__().layers.values() if layer.annotations]
        found[task.key[1], task.key[2]] = annotations["priority"]
    return found


def test_the_write_step_gives_the_largest_output_file_the_first_start(
    golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    real = api.write_step_tasks

    def recording(*args: Any, **kwargs: Any) -> Any:
        tasks, graph_at, ends = real(*args, **kwargs)
        seen.extend(tasks)
        return tasks, graph_at, ends

    monkeypatch.setattr(api, "write_step_tasks", recording)
    monkeypatch.setattr(api, "cluster_threads", lambda client: 1)  # one task per file: the keys name the files
    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path / "out"
    dispatch(tiny / "chunked", tiny / "partition_assignment", out, options=DispatchOptions(overwrite=True))
    priority = _priorities(seen)
    parts = sorted(out.glob("part*"))
    assert len(priority) == len(parts) * len(FILES)
    assert sorted(priority.values()) == list(range(1, len(priority) + 1))  # one rank per file
    size = {(p, i): (part / name).stat().st_size for p, part in enumerate(parts) for i, name in enumerate(FILES)}
    top = max(priority, key=lambda name: priority[name])
    assert size[top] == max(size.values())  # the largest file written is the one started first
    for p in range(len(parts)):  # and a partition's graph file before its (smaller) feature files
        if size[p, 0] > max(size[p, 1], size[p, 2]):
            assert priority[p, 0] > max(priority[p, 1], priority[p, 2])
