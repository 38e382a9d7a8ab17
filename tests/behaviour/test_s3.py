"""Object stores through fsspec/s3fs, against a real S3-compatible server (moto) on 127.0.0.1.

A synthetic heterogeneous chunked graph is written locally and uploaded; ``run``
goes through the CLI with ``--storage-options`` (endpoint, keys) from S3 input to
a local and to an S3 output. Each output is then checked with ``verify_partitions``
against the local input and loaded with real DGL 2.1.0 (``load_partition``), whose
arrays must equal our reader's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

from dgl_chunked.cli import main
from dgl_chunked.errors import EmptyPartitionWarning
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import verify_partitions
from tests.conftest import moto_s3
from tests.realdgl.harness import assert_real_dgl_loads, dgl_python

BUCKET = "dglc-test"
NUM_PARTS = 2


@dataclass(frozen=True)
class S3:
    endpoint: str
    options: dict[str, Any]
    fs: Any

    def url(self, key: str) -> str:
        return f"s3://{BUCKET}/{key}"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """A moto S3 server on 127.0.0.1 (a free port) with one bucket."""
    with moto_s3(BUCKET) as (endpoint, options):
        yield S3(endpoint, options, s3fs.S3FileSystem(**options))


@pytest.fixture(scope="module")
def local_graph(tmp_path_factory: pytest.TempPathFactory, s3: S3) -> Path:
    """A synthetic heterogeneous graph (CSV edges, .npy features), also uploaded to s3://BUCKET/chunked."""
    path = tmp_path_factory.mktemp("s3-input") / "chunked"
    write_synthetic_graph(path, SynthSpec.heterogeneous(scale=1, seed=3))
    s3.fs.put(str(path), f"{BUCKET}/chunked", recursive=True)
    return path


def _run_cli(s3: S3, cluster: list[str], out: str, assign: str, *extra: str) -> None:
    argv = [
        "run",
        "--in-dir",
        s3.url("chunked"),
        "--out-dir",
        out,
        "--num-parts",
        str(NUM_PARTS),
        "--partitions-dir",
        assign,
        "--save-orig-nids",
        "--save-orig-eids",
        "--storage-options",
        json.dumps(s3.options),
        "--no-progress",
        *cluster,
        *extra,
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        assert main(argv) == 0


def _assignment(s3: S3, assign_key: str, local_graph: Path) -> dict[str, np.ndarray]:
    meta = json.loads((local_graph / "metadata.json").read_text())
    return {
        t: np.loadtxt(s3.fs.open(f"{BUCKET}/{assign_key}/{t}.txt"), dtype=np.int64, ndmin=1) for t in meta["node_type"]
    }


def _check_with_real_dgl(out: Path) -> None:
    """Real DGL's load_partition sees exactly what our reader sees (as tests/realdgl do)."""
    assert_real_dgl_loads(out)


# --- S3 input, local output ---------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_in_local_out(s3: S3, local_graph: Path, scheduler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("s3-in-local-out") / "out"
    _run_cli(s3, ["--scheduler", scheduler], str(out), s3.url("assign-local-out"))
    return out


def test_s3_input_local_output_verifies(s3: S3, local_graph: Path, s3_in_local_out: Path) -> None:
    assert sorted(p.name for p in s3_in_local_out.iterdir()) == [".dglc-owned.json", "metadata.json", "part0", "part1"]
    assignment = _assignment(s3, "assign-local-out", local_graph)  # written to S3 by --partitions-dir
    report = verify_partitions(local_graph, s3_in_local_out, assignment=assignment)
    assert report.ok, report.problems
    assert report.checked.edges > 0 and report.checked.feature_rows > 0


@pytest.mark.realdgl
def test_s3_input_local_output_loads_in_real_dgl(s3_in_local_out: Path) -> None:
    _check_with_real_dgl(s3_in_local_out)


def test_verify_reads_input_and_output_on_s3(s3: S3, local_graph: Path, s3_in_local_out: Path) -> None:
    """verify_partitions with both sides on S3 (the output uploaded from the local run)."""
    s3.fs.put(str(s3_in_local_out), f"{BUCKET}/uploaded-out", recursive=True)
    report = verify_partitions(s3.url("chunked"), s3.url("uploaded-out"), storage_options=s3.options)
    assert report.ok, report.problems
    local = verify_partitions(local_graph, s3_in_local_out)
    assert report.checked == local.checked


def test_verify_cli_on_s3_names_a_corrupt_partition(
    s3: S3, s3_in_local_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s3.fs.put(str(s3_in_local_out), f"{BUCKET}/corrupt-out", recursive=True)
    s3.fs.rm(f"{BUCKET}/corrupt-out/part1/orig_eids.dgl")
    rc = main(
        [
            "verify",
            "--in-dir",
            s3.url("chunked"),
            "--out-dir",
            s3.url("corrupt-out"),
            "--storage-options",
            json.dumps(s3.options),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("problem: part1: orig_eids.dgl missing"), err


# --- S3 input, S3 output --------------------------------------------------------------------


def test_s3_input_s3_output(s3: S3, local_graph: Path, tmp_path: Path) -> None:
    """The CLI's own LocalCluster (worker processes). The staging is local here (moto answers a
    request in ~20 ms); the next test stages on S3.

    A failing task's traceback is then formatted in the worker process: Python 3.11's traceback
    module calls ``ast.parse``, which is not thread-safe, and a worker thread of an in-process
    cluster formatting one while pytest formats its report crashes pytest (INTERNALERROR).
    """
    _run_cli(s3, ["--workers", "1"], s3.url("out"), s3.url("assign-s3-out"), "--staging-dir", str(tmp_path / "staging"))
    keys = sorted(k.split(f"{BUCKET}/out/", 1)[1] for k in s3.fs.find(f"{BUCKET}/out"))
    assert "metadata.json" in keys and not [k for k in keys if k.startswith(("_staging", "_tmp"))]
    s3.fs.get(f"{BUCKET}/out", str(tmp_path / "out"), recursive=True)
    report = verify_partitions(local_graph, tmp_path / "out", assignment=_assignment(s3, "assign-s3-out", local_graph))
    assert report.ok, report.problems
    if dgl_python() or os.environ.get("DGLC_REQUIRE_REAL_DGL") == "1":
        _check_with_real_dgl(tmp_path / "out")


def test_api_run_s3_to_s3_with_staging_on_s3(s3: S3, tmp_path: Path) -> None:
    """Everything on S3, the Zarr staging too (FsspecStore); a small graph keeps it quick.
    On the synchronous scheduler (see the note on the test above)."""
    import dgl_chunked as dglc

    write_synthetic_graph(tmp_path / "small", SynthSpec.homogeneous(300, 1500, feat_dim=4, num_chunks=2))
    s3.fs.put(str(tmp_path / "small"), f"{BUCKET}/small", recursive=True)
    graph = dglc.open_chunked_graph(s3.url("small"), storage_options=s3.options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyPartitionWarning)
        result = dglc.run(
            graph,
            s3.url("out-api"),
            num_parts=NUM_PARTS,
            storage_options=s3.options,
            options=dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    assert result.config_path == s3.url("out-api/metadata.json")
    report = verify_partitions(graph, s3.url("out-api"), storage_options=s3.options)
    assert report.ok, report.problems


# --- no flag: s3fs reads the endpoint and keys from the environment ------------------------------


def test_endpoint_from_environment(s3: S3, local_graph: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    env.update(
        AWS_ENDPOINT_URL_S3=s3.endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "dgl_chunked", "validate", "--in-dir", s3.url("chunked")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"ok: {s3.url('chunked')} is a valid chunked graph" in proc.stdout


def test_graphbolt_on_s3_direct_and_converted(s3: S3, local_graph: Path, scheduler: str, tmp_path: Path) -> None:
    """run --use-graphbolt to S3 and convert-graphbolt of an S3 output give the same .pt bytes;
    verify reads the GraphBolt partitions straight from S3."""
    from dgl_chunked import convert_to_graphbolt

    flags = ("--store-eids", "--store-inner-node", "--staging-dir", str(tmp_path / "staging"))  # local: fast
    _run_cli(s3, ["--scheduler", scheduler], s3.url("gb-out"), s3.url("assign-gb"), "--use-graphbolt", *flags)
    _run_cli(s3, ["--scheduler", scheduler], s3.url("gb-conv"), s3.url("assign-gb-conv"), *flags[2:])
    convert_to_graphbolt(s3.url("gb-conv"), store_eids=True, store_inner_node=True, storage_options=s3.options)
    for p in range(NUM_PARTS):
        direct = s3.fs.cat(f"{BUCKET}/gb-out/part{p}/fused_csc_sampling_graph.pt")
        assert direct == s3.fs.cat(f"{BUCKET}/gb-conv/part{p}/fused_csc_sampling_graph.pt")
    assert not [k for k in s3.fs.find(f"{BUCKET}/gb-conv") if k.endswith(".tmp")]
    report = verify_partitions(local_graph, s3.url("gb-out"), storage_options=s3.options)
    assert report.ok, report.problems
