"""Simulated multi-host cluster: workers that share no file system with the client or each other.

A ``dask scheduler`` and two ``dask worker`` processes run on 127.0.0.1, each worker in its
own mount namespace (``unshare --mount``) with a private tmpfs over ``/tmp`` and over this
test's data directory: a worker sees neither the client's files nor the other worker's
(scratch, temp files, spill). Input, output and scratch live on an S3 server on loopback
(moto), as on a real cluster with an object store. Every command and every partition
method runs there; the outputs verify against their input and load in real DGL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
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

from dgl_chunked.cli import main  # noqa: E402
from dgl_chunked.errors import EmptyPartitionWarning  # noqa: E402
from dgl_chunked.verify import verify_partitions  # noqa: E402
from tests.conftest import dask_processes, moto_s3  # noqa: E402
from tests.dispatch.helpers import output_files  # noqa: E402
from tests.realdgl.harness import assert_real_dgl_loads, dgl_python  # noqa: E402

pytestmark = pytest.mark.distributed

BUCKET = "dglc-multihost"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _under_tmp(path: str) -> str | None:
    real = os.path.realpath(path)
    return real if real.startswith("/tmp/") else None


# what a worker needs from /tmp: the interpreter's environment and this checkout, when there
KEEP = " ".join(
    sorted({p for p in map(_under_tmp, (sys.prefix, str(Path(__file__).resolve().parents[2]))) if p is not None})
)


def _unshare_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "the unshare command is not installed"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /tmp"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"unshare --mount with a private tmpfs is not permitted here: {probe.stderr.strip()}"
    return None


@dataclass(frozen=True)
class Cluster:
    address: str
    endpoint: str
    options: dict[str, Any]
    fs: Any
    data: Path  # the client's files: invisible to the workers
    workers: list[subprocess.Popen[bytes]]

    def url(self, key: str) -> str:
        return f"s3://{BUCKET}/{key}"

    def cli(self, *argv: str, scheduler: bool = True, options: bool = True) -> None:
        extra = ["--scheduler", self.address] if scheduler else []
        extra += ["--storage-options", json.dumps(self.options)] if options else []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyPartitionWarning)
            rc = main([*argv, *extra])
        assert rc == 0, f"dgl-chunked {' '.join(argv)} exited {rc}"

    def download(self, key: str) -> Path:
        local = self.data / "downloads" / key
        shutil.rmtree(local, ignore_errors=True)  # a second get would nest inside the first copy
        self.fs.get(f"{BUCKET}/{key}", str(local), recursive=True)
        return local


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    problem = _unshare_problem()
    if problem:
        pytest.skip(problem)
    data = tmp_path_factory.mktemp("multihost")
    with moto_s3(BUCKET) as (endpoint, options):

        def isolated(argv: list[str], i: int) -> list[str]:
            # private tmpfs over the data directory, then over /tmp (which may hold it); the
            # Python installation and the code, when they live under /tmp (a checkout there),
            # are bind-mounted back from a handle on the old /tmp that is dropped before exec
            script = (
                'set -e; data="$1"; keep_dirs="$2"; shift 2; '
                'old=$(mktemp -d /dev/shm/dglc-old-tmp-XXXXXX); mount --bind /tmp "$old"; '
                'mount -t tmpfs tmpfs "$data"; mount -t tmpfs tmpfs /tmp; '
                'for d in $keep_dirs; do mkdir -p "$d"; mount --bind "$old/${d#/tmp/}" "$d"; done; '
                'umount "$old"; rmdir "$old"; exec "$@"'
            )
            return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(data), KEEP, *argv]

        env = {**os.environ, "AWS_ENDPOINT_URL_S3": endpoint, **KEYS}  # for `chunk` (no --storage-options)
        with _environ(env), dask_processes(data, isolated) as (address, workers):
            yield Cluster(address, endpoint, options, s3fs.S3FileSystem(**options), data, workers)


class _environ:
    """Set ``os.environ`` to ``env`` inside the block (workers inherit it; so does s3fs here)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.saved = env, dict(os.environ)

    def __enter__(self) -> None:
        os.environ.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environ.clear()
        os.environ.update(self.saved)


@pytest.fixture(scope="module")
def graph(cluster: Cluster) -> Path:
    """The input, written on the workers by ``synth`` straight to S3; a local copy for checks."""
    cluster.cli(
        "synth", "--out-dir", cluster.url("chunked"), "--preset", "homogeneous", "--num-nodes", "600",
        "--num-edges", "4000", "--feat-dim", "4", "--num-chunks", "2", "--seed", "4",
    )  # fmt: skip
    cluster.cli("validate", "--in-dir", cluster.url("chunked"))
    return cluster.download("chunked")


def test_workers_see_neither_the_client_files_nor_each_other(cluster: Cluster, graph: Path) -> None:
    from distributed import Client

    marker = cluster.data / "client-only.txt"
    marker.write_text("x")
    with Client(cluster.address) as client:
        seen = client.run(os.path.exists, str(marker))
        assert len(seen) == 2 and not any(seen.values()), seen
        client.run(lambda: Path("/tmp/dglc-worker-mark").write_text(str(os.getpid())))  # noqa: S108
        marks = client.run(lambda: Path("/tmp/dglc-worker-mark").read_text())  # noqa: S108
        pids = client.run(os.getpid)
        assert {w: int(m) for w, m in marks.items()} == pids  # each worker reads only its own /tmp
    assert not Path("/tmp/dglc-worker-mark").exists()  # noqa: S108


@pytest.mark.parametrize("method", ["random", "metis", "lp"])
def test_partition(cluster: Cluster, graph: Path, method: str) -> None:
    """Each method's assignment (and its report, whose scratch lives under the output)."""
    assign = cluster.url(f"assign-{method}")
    cluster.cli(
        "partition", "--in-dir", cluster.url("chunked"), "--out-dir", assign, "--num-parts", "2", "--method", method,
    )  # fmt: skip
    _assert_clean(cluster, f"assign-{method}")
    report = json.loads(cluster.fs.cat(f"{BUCKET}/assign-{method}/report.json"))
    assert sum(report["nodes"]["_N"]) == 600


def _check_output(cluster: Cluster, graph: Path, key: str) -> None:
    cluster.cli("verify", "--in-dir", cluster.url("chunked"), "--out-dir", cluster.url(key))
    _assert_clean(cluster, key)
    local = cluster.download(key)
    assert verify_partitions(graph, local).ok
    if dgl_python() or os.environ.get("DGLC_REQUIRE_REAL_DGL") == "1":
        assert_real_dgl_loads(local)


def test_report_and_dispatch(cluster: Cluster, graph: Path) -> None:
    assign = cluster.url("assign-lp")
    if not cluster.fs.exists(f"{BUCKET}/assign-lp/partition_meta.json"):
        test_partition(cluster, graph, "lp")
    cluster.cli("report", "--in-dir", cluster.url("chunked"), "--partitions-dir", assign)
    cluster.cli(
        "dispatch", "--in-dir", cluster.url("chunked"), "--partitions-dir", assign, "--out-dir",
        cluster.url("dispatch-lp"), "--save-orig-nids", "--save-orig-eids", "--no-progress",
    )  # fmt: skip
    _check_output(cluster, graph, "dispatch-lp")


def _run_argv(cluster: Cluster, key: str, method: str) -> list[str]:
    return [
        "run", "--in-dir", cluster.url("chunked"), "--out-dir", cluster.url(key), "--num-parts", "2",
        "--method", method, "--seed", "3", "--save-orig-nids", "--save-orig-eids", "--no-progress",
    ]  # fmt: skip


def _assert_clean(cluster: Cluster, *keys: str) -> None:
    """No staging, scratch or temporary entries left under the outputs."""
    for key in keys:
        names = {p.rsplit("/", 1)[-1] for p in cluster.fs.ls(f"{BUCKET}/{key}", refresh=True)}
        assert ".dglc-owned.json" in names, (key, names)  # the ownership marker stays with the output
        assert not {n for n in names - {".dglc-owned.json"} if n.startswith(("_staging", "_tmp", "dglc-", ".dglc-"))}, (
            key,
            names,
        )


def test_run(cluster: Cluster, graph: Path) -> None:
    cluster.cli(*_run_argv(cluster, "run-lp", "lp"))
    _check_output(cluster, graph, "run-lp")


def test_parmetis_export_and_import(cluster: Cluster, graph: Path) -> None:
    cluster.cli("parmetis-export", "--in-dir", cluster.url("chunked"), "--out-dir", cluster.url("pm"))
    names = sorted(p.rsplit("/", 1)[-1] for p in cluster.fs.ls(f"{BUCKET}/pm"))
    assert names == [".dglc-owned.json", "synth_edges.txt", "synth_nodes.txt", "synth_stats.txt"], names
    # a ParMETIS-style result: "<orig_nid> <part_id>" lines, split over two rank files
    num_nodes = sum(json.loads((graph / "metadata.json").read_text())["num_nodes_per_type"])
    part = (np.arange(num_nodes) * 7919 % 3).astype(np.int64)
    half = num_nodes // 2
    for rank, (lo, hi) in enumerate([(0, half), (half, num_nodes)]):
        lines = "".join(f"{i} {part[i]}\n" for i in range(lo, hi))
        cluster.fs.pipe(f"{BUCKET}/pm-out/p{rank:03d}-synth_nodes.txt", lines.encode())
    cluster.cli(
        "parmetis-import", "--in-dir", cluster.url("chunked"), "--parmetis-output", cluster.url("pm-out"),
        "--out-dir", cluster.url("assign-pm"), "--num-parts", "3", "--form", "gnid",
    )  # fmt: skip
    assign = cluster.download("assign-pm")
    meta = json.loads((graph / "metadata.json").read_text())
    got = np.concatenate([np.loadtxt(assign / f"{t}.txt", dtype=np.int64, ndmin=1) for t in meta["node_type"]])
    assert np.array_equal(got, part)


def test_chunk_from_and_to_s3(cluster: Cluster, tmp_path: Path) -> None:
    """``chunk`` (no --storage-options: s3fs takes the endpoint from the environment)."""
    src, dst = np.arange(40) % 10, (np.arange(40) * 3 + 1) % 10
    np.save(tmp_path / "edge_index.npy", np.stack([src, dst]))
    np.save(tmp_path / "feat.npy", np.arange(20, dtype=np.float32).reshape(10, 2))
    spec = {
        "graph_name": "tiny",
        "node_types": {"n": {"count": 10, "features": {"feat": {"path": "feat.npy"}}}},
        "edge_types": {"n:to:n": {"source": "edge_index.npy"}},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    cluster.fs.put(str(tmp_path) + "/", f"{BUCKET}/raw", recursive=True)
    cluster.cli(
        "chunk", "--spec", cluster.url("raw/spec.json"), "--out-dir", cluster.url("chunked-tiny"),
        "--num-chunks", "2", options=False,
    )  # fmt: skip
    local = cluster.download("chunked-tiny")
    cluster.cli("validate", "--in-dir", cluster.url("chunked-tiny"))
    meta = json.loads((local / "metadata.json").read_text())
    assert meta["num_nodes_per_type"] == [10] and meta["num_edges_per_type"] == [40]
    _assert_clean(cluster, "chunked-tiny")


# --- a worker killed during each step -------------------------------------------------------


_STEPS = [  # (step, S3 key fragment whose appearance means it is under way, its task key prefix)
    ("lp driver", "/dglc-lp-", "dglc-assign-lp-driver"),
    ("stage assignment", "/_done/assign%2F", "dglc-stage-assignment"),
    ("number nodes", "/_done/number%2F", "dglc-number-nodes"),
    ("stage edges and features", "/_done/edges%2F", "dglc-stage-"),
    ("write partitions", "/_tmp_part", "dglc-write-partition"),
]


def _kill_a_worker(address: str, prefix: str) -> bool:
    """SIGKILL the worker process running a task whose key starts with ``prefix`` (else
    any busy one); its nanny starts a new one, as on a real cluster. True when the
    victim was running such a task."""
    import signal

    from distributed import Client

    with Client(address) as client:
        processing = client.processing()
        running = [w for w, keys in processing.items() if any(str(k).lstrip("('").startswith(prefix) for k in keys)]
        victim = (running or sorted(processing, key=lambda w: -len(processing[w])))[0]
        os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
        return bool(running)


def test_worker_killed_during_each_step_gives_identical_bytes(cluster: Cluster, graph: Path) -> None:
    if not cluster.fs.exists(f"{BUCKET}/run-lp/metadata.json"):
        cluster.cli(*_run_argv(cluster, "run-lp", "lp"))  # the same job undisturbed
    key = "kill-run"
    done: list[str] = []
    stop = threading.Event()
    watch = s3fs.S3FileSystem(**cluster.options, skip_instance_cache=True)  # not the job's (cached) instance

    def killer() -> None:
        steps = iter(_STEPS)
        name, fragment, prefix = next(steps)
        while not stop.is_set():
            try:
                found = [p for p in watch.find(f"{BUCKET}/{key}", withdirs=True) if fragment in p]
            except FileNotFoundError:
                found = []
            if found:
                done.append(name + ("" if _kill_a_worker(cluster.address, prefix) else " (between its tasks)"))
                try:
                    name, fragment, prefix = next(steps)
                except StopIteration:
                    return
            time.sleep(0.05)
            watch.invalidate_cache()

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        cluster.cli(*_run_argv(cluster, key, "lp"))
    finally:
        stop.set()
        thread.join(timeout=30)
    assert len(done) == len(_STEPS), f"steps seen under way: {done}"
    ref, got = cluster.download("run-lp"), cluster.download(key)
    assert output_files(got) == output_files(ref), f"killed during {done}"
    print(f"worker killed during: {done}", file=sys.stderr)
