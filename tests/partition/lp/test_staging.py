"""The ``lp`` staging in slices: a read task of more than ``STAGE_EDGES`` edges (a large
edge file) is oriented and staged one slice at a time, as separate staged files, and the
assignment is the one staging it whole gives (the slices are a finer file chunking)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.partition import LPConfig, LPMethod, assign_partitions, register_method
from dgl_chunked.partition.lp import method as lp_module
from dgl_chunked.partition.lp import staging as T
from dgl_chunked.partition.lp import store as S
from dgl_chunked.testing import GraphTruth, planted_partition_edges, write_graph_from_truth

MASKS = ["train_mask", "val_mask", "test_mask"]


def test_stage_pieces_cover_every_edge() -> None:
    edges = T.STAGE_EDGES
    assert [T.stage_pieces(r) for r in (0, 1, edges, edges + 1, 3 * edges)] == [1, 1, 1, 2, 3]


@pytest.mark.parametrize("config", [LPConfig(block_rows=512), LPConfig(block_rows=512, coarse_nodes=100)])
def test_sliced_staging_gives_the_whole_staging_assignment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: LPConfig
) -> None:
    n = 3000
    src, dst = planted_partition_edges(n, 24_000, 6, skewed=True, p_in=0.9, seed=4)
    src, dst = np.concatenate([src, [7, 9]]), np.concatenate([dst, [7, 9]])  # self-loops in the last slice
    r = np.random.default_rng(5).random(n)
    truth = GraphTruth(
        graph_name="g",
        num_nodes={"_N": n},
        edges={"_N:_E:_N": (src, dst)},
        node_data={"_N": {"train_mask": r < 0.6, "val_mask": (r >= 0.6) & (r < 0.8), "test_mask": r >= 0.8}},
        edge_data={},
    )
    graph = open_chunked_graph(write_graph_from_truth(tmp_path / "g", truth, edge_chunks=2).base_dir)
    written: list[int] = []
    real = S.remove_staged
    monkeypatch.setattr(S, "remove_staged", lambda root, files: (written.append(files), real(root, files)))

    def run() -> np.ndarray:
        lp_module._RESULTS.clear()
        register_method("lp", LPMethod(config), overwrite=True)
        try:
            with dask.config.set(scheduler="threads", num_workers=2):
                return np.asarray(assign_partitions(graph, 4, method="lp", balance_ntypes=MASKS)["_N"].compute())
        finally:
            register_method("lp", LPMethod(), overwrite=True)

    whole = run()
    monkeypatch.setattr(T, "STAGE_EDGES", 5000)  # each of the two files in 3 slices
    sliced = run()
    assert written == [2, 6]
    np.testing.assert_array_equal(whole, sliced)


def _release_from_a_task() -> list[bool]:
    from dgl_chunked.partition.lp import streaming as D

    return D.release_arrow_pools()


def test_arrow_pools_are_released_on_every_worker_main_thread(process_client: Any) -> None:
    """pyarrow's pool (mimalloc) gives back the buffers Arrow's threads allocated (a
    threaded read of a large file) only when released from the process's main thread:
    the driver's release runs there on every worker, and outside a worker nowhere."""
    workers = len(process_client.scheduler_info()["workers"])
    assert process_client.submit(_release_from_a_task, pure=False).result() == [True] * workers
    assert _release_from_a_task() == []
