"""``plan``'s network forecast against what an S3 server and a byte-counting relay in
front of it count (``tests/s3relay.py``): per step that moves more than 1 MB, its
bytes each way within 10%; the run's requests within 10%, with and without
``--partitions-dir``.

The run is made on the synchronous scheduler, so its requests are the same from one
run to the next (the relay's bytes differ by a few digits of a date or a length).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import dgl_chunked as dglc  # noqa: E402
from dgl_chunked.io.assignment import read_partition_meta  # noqa: E402
from dgl_chunked.storage import fs  # noqa: E402
from dgl_chunked.synth import SynthSpec, write_synthetic_graph  # noqa: E402
from tests.s3relay import Counts, counted_s3  # noqa: E402


class _Marks(logging.Handler):
    """The relay's and the server's counts at every step line (``<command> step: <name> (...)``)."""

    def __init__(self, counts: Counts) -> None:
        super().__init__(logging.INFO)
        self.counts = counts
        self.marks: list[tuple[str, tuple[int, int, int]]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if " step: " in message:
            self.marks.append((message.split(" step: ", 1)[1].split(" (")[0], self.counts.snapshot()))


def _lines(path: str, storage_options: dict[str, Any]) -> int:
    with fs.open_file(path, "rb", storage_options) as f:
        return len(f.read().splitlines())


CASES = {
    "parquet-partitions-dir": (
        SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_format="parquet", seed=0),
        2,
        dglc.DispatchOptions(block_rows=8192),
        "s3://relay/assign",
    ),
    "orig-ids": (
        SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_feat_dim=2, seed=0),
        3,
        dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, block_rows=4096),
        None,
    ),
    "local-partitions-dir": (  # the assignment files on the local disk: only the owners are read remotely
        SynthSpec.homogeneous(20_000, 200_000, feat_dim=8, num_chunks=2, seed=0),
        2,
        dglc.DispatchOptions(block_rows=8192),
        "LOCAL",
    ),
    "heterogeneous-partitions-dir": (  # 4 node types, 5 edge types, CSV edges
        SynthSpec.heterogeneous(scale=20, seed=1),
        4,
        dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, block_rows=4096),
        "s3://relay/assign",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_forecast_matches_what_s3_counts(case: str, tmp_path: Path) -> None:
    spec, num_parts, options, assign = CASES[case]
    bucket = f"relay-{case}"  # moto's buckets live as long as the process
    partitions_dir = (
        str(tmp_path / "assign") if assign == "LOCAL" else assign and assign.replace("s3://relay/", f"s3://{bucket}/")
    )
    with counted_s3(bucket) as (so, counts):
        write_synthetic_graph(f"s3://{bucket}/g", spec, storage_options=so)
        plan = dglc.forecast_run(
            dglc.open_chunked_graph(f"s3://{bucket}/g", storage_options=so, task_bytes="1MiB"),
            f"s3://{bucket}/out",
            num_parts=num_parts,
            options=options,
            storage_options=so,
            workers=1,
            hosts=1,
            partitions_dir=partitions_dir,
        )
        assert plan.network is not None
        handler, logger = _Marks(counts), logging.getLogger("dgl_chunked")
        level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            handler.marks.append(("open", counts.snapshot()))
            graph = dglc.open_chunked_graph(f"s3://{bucket}/g", storage_options=so, task_bytes="1MiB")
            dglc.run(
                graph, f"s3://{bucket}/out", num_parts=num_parts, options=options, storage_options=so,
                partitions_dir=partitions_dir,
            )  # fmt: skip
            handler.marks.append(("end", counts.snapshot()))
            if partitions_dir:  # DGL's files, one line per node
                meta = read_partition_meta(partitions_dir, storage_options=so)
                lines = {t: _lines(fs.join(partitions_dir, f"{t}.txt"), so) for t in graph.metadata.node_types}
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
    measured = {
        name: (c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2])
        for (name, c0), (_, c1) in zip(handler.marks, handler.marks[1:], strict=False)
    }
    forecast = {s.name: s for s in plan.network.stages}
    steps = ["stage assignment", "number nodes", "stage edges and features", "write partitions"]
    if partitions_dir:
        steps.insert(2, "write assignment")
    assert list(measured) == ["open", *steps]  # the client's opening and the partition, then each step
    measured[next(iter(forecast))] = measured.pop("open")
    big = 0
    for name, (down, up, _) in measured.items():
        for got, want, way in ((down, forecast[name].down_bytes, "down"), (up, forecast[name].up_bytes, "up")):
            if got > 1e6:
                assert want == pytest.approx(got, rel=0.1), (name, way)
                big += 1
    assert big >= 4  # edges and features, and the writers, each way
    total = sum(r for _, _, r in measured.values())
    assert sum(s.requests for s in plan.network.stages) == pytest.approx(total, rel=0.1)
    if partitions_dir:  # the step of its own, and the files really written
        assert forecast["write assignment"].requests == pytest.approx(measured["write assignment"][2], rel=0.1)
        assert meta.num_parts == num_parts
        assert lines == {t: graph.metadata.num_nodes(t) for t in graph.metadata.node_types}
