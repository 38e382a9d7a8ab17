"""Bad input, end to end through the CLI: one named line on stderr, nothing complete-looking.

Every case copies the golden tiny graph and its assignment, breaks one thing and
runs ``dispatch`` / ``run`` / ``partition`` through :func:`dgl_chunked.cli.main`
on a shared in-process Dask cluster. Each must exit non-zero with exactly one
line on stderr that names the file and the key, row or line (no traceback), and
leave no ``OUT/metadata.json``, no ``OUT/part*/`` and, for commands that write an
assignment, no ``partition_meta.json``.

``tests/io/chunked/test_validate.py`` checks the same kinds of breakage through
``validate``; here the point is the path a real job takes. Disk-full cases run
the CLI in a subprocess with ``RLIMIT_FSIZE`` set, so writes past N bytes fail
with ``EFBIG``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dgl_chunked.cli import main
from dgl_chunked.cluster import WORKER_ENVIRONMENT
from dgl_chunked.io.chunked.formats import read_edge_chunk, write_feature_chunk

EI = "chunked/edge_index"
CITES0 = f"{EI}/paper:cites:paper0.txt"
CITES1 = f"{EI}/paper:cites:paper1.txt"
WRITES0 = f"{EI}/author:writes:paper0.txt"
FEAT1 = "chunked/node_data/paper/feat-1.npy"


@pytest.fixture
def work(tmp_path: Path, golden_dir: Path) -> Path:
    """A writable copy of the golden tiny graph (``chunked/``) and its assignment (``assign/``)."""
    tiny = golden_dir / "tiny-pipeline"
    shutil.copytree(tiny / "chunked", tmp_path / "chunked")
    shutil.copytree(tiny / "partition_assignment", tmp_path / "assign")
    return tmp_path


# --- ways to break the copy -----------------------------------------------------


def _meta(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        path = d / "chunked" / "metadata.json"
        doc = json.loads(path.read_text())
        edit(doc)
        path.write_text(json.dumps(doc, indent=2))

    return apply


def _lines(rel: str, edit: Callable[[list[str]], None]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        lines = (d / rel).read_text().splitlines()
        edit(lines)
        (d / rel).write_text("\n".join(lines) + "\n")

    return apply


def _set(index: int, text: str) -> Callable[[list[str]], None]:
    return lambda lines: lines.__setitem__(index, text)


def _dir_instead(rel: str) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        (d / rel).unlink()
        (d / rel).mkdir()

    return apply


def _broken_link(rel: str) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        (d / rel).unlink()
        (d / rel).symlink_to(d / "no-such-file")

    return apply


def _write_bytes(rel: str, data: bytes | Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        old = (d / rel).read_bytes()
        (d / rel).write_bytes(data(old) if callable(data) else data)

    return apply


def _parquet_cites(mutate: Callable[[pa.Table], pa.Table | bytes]) -> Callable[[Path], None]:
    """Store paper:cites:paper as Parquet; ``mutate`` breaks the second file."""

    def apply(d: Path) -> None:
        for i, rel in enumerate((CITES0, CITES1)):
            src, dst = read_edge_chunk(str(d / rel), fmt="csv", options={"delimiter": " "})
            table: pa.Table | bytes = pa.table({"src": src, "dst": dst})
            if i == 1:
                table = mutate(table)  # type: ignore[arg-type]
            target = d / EI / f"cites{i}.parquet"
            if isinstance(table, bytes):
                target.write_bytes(table)
            else:
                pq.write_table(table, target)
        _meta(
            lambda m: m["edges"].__setitem__(
                "paper:cites:paper",
                {"format": {"name": "parquet"}, "data": ["edge_index/cites0.parquet", "edge_index/cites1.parquet"]},
            )
        )(d)

    return apply


def _corrupt_parquet_feature(d: Path) -> None:
    for i in range(2):
        array = np.load(d / f"chunked/node_data/paper/feat-{i}.npy")
        write_feature_chunk(str(d / f"chunked/node_data/paper/feat-{i}.parquet"), array, fmt="parquet")
    (d / "chunked/node_data/paper/feat-1.parquet").write_bytes(b"PAR1" + b"\0" * 40)
    _meta(
        lambda m: m["node_data"]["paper"].__setitem__(
            "feat",
            {
                "format": {"name": "parquet"},
                "data": ["node_data/paper/feat-0.parquet", "node_data/paper/feat-1.parquet"],
            },
        )
    )(d)


def _dup_ntype(m: dict[str, Any]) -> None:
    m["node_type"].append("paper")
    m["num_nodes_per_type"].append(15)
    m["num_nodes_per_chunk"].append([8, 7])


def _dup_etype(m: dict[str, Any]) -> None:
    m["edge_type"].append("paper:cites:paper")
    m["num_edges_per_type"].append(30)
    m["num_edges_per_chunk"].append([15, 15])


D, R, P = "dispatch", "run", "partition"

# (id, breakage, commands to run, substrings the one stderr line must hold)
CASES: list[tuple[str, Callable[[Path], None], tuple[str, ...], list[str]]] = [
    # missing or unreadable files (tests run as root: a directory or a dangling link stands in for chmod 000)
    ("missing edge file", lambda d: (d / CITES1).unlink(), (D, P), ["paper:cites:paper1.txt", "does not exist"]),
    ("edge file is a directory", _dir_instead(CITES1), (R,), ["paper:cites:paper1.txt", "not a regular file"]),
    ("edge file is a dangling symlink", _broken_link(CITES1), (D,), ["paper:cites:paper1.txt", "does not exist"]),
    ("missing feature file", lambda d: (d / FEAT1).unlink(), (D,), ["node_data/paper/feat-1.npy", "does not exist"]),
    ("feature file is a directory", _dir_instead(FEAT1), (R,), ["node_data/paper/feat-1.npy", "not a regular file"]),
    (
        "missing metadata.json",
        lambda d: (d / "chunked/metadata.json").unlink(),
        (D, P),
        ["chunked/metadata.json", "expected a metadata file"],
    ),
    (
        "metadata.json is a directory",
        _dir_instead("chunked/metadata.json"),
        (R,),
        ["chunked/metadata.json", "expected a metadata file"],
    ),
    # edge file contents
    ("wrong row count", _lines(CITES1, lambda ls: ls.pop()), (D, P), ["paper:cites:paper1.txt", "14", "15"]),
    (
        "node ID out of range",
        _lines(WRITES0, _set(2, "3 15")),
        (D, P),
        ["author:writes:paper0.txt", "row 3", "15", "[0, 15)"],
    ),
    ("negative node ID", _lines(WRITES0, _set(4, "-1 2")), (R, P), ["author:writes:paper0.txt", "row 5", "-1"]),
    (
        "non-integer node ID",
        _lines(WRITES0, _set(1, "3 x")),
        (D, P),
        ["author:writes:paper0.txt", "row 2", "expected an integer node ID, found 'x'"],
    ),
    ("float node ID", _lines(WRITES0, _set(1, "3 2.5")), (R,), ["author:writes:paper0.txt", "row 2", "'2.5'"]),
    (
        "row with 3 columns",
        _lines(WRITES0, _set(6, "1 2 3")),
        (D, P),
        ["author:writes:paper0.txt", "row 7", "expected 2 columns", "found 3"],
    ),
    ("row with 1 column", _lines(WRITES0, _set(6, "1")), (R,), ["author:writes:paper0.txt", "row 7", "found 1"]),
    (
        "header row",
        _lines(WRITES0, lambda ls: ls.insert(0, "src dst")),
        (D, P),
        ["author:writes:paper0.txt", "row 1", "header"],
    ),
    ("empty edge file", _write_bytes(CITES1, b""), (R, P), ["paper:cites:paper1.txt", "empty file"]),
    # Parquet edges
    (
        "corrupt parquet edges",
        _parquet_cites(lambda t: b"PAR1" + b"x" * 32),
        (D, P),
        ["cites1.parquet", "not a readable Parquet file"],
    ),
    (
        "parquet float node IDs",
        _parquet_cites(lambda t: pa.table({"src": t["src"].cast(pa.float64()), "dst": t["dst"]})),
        (R,),
        ["cites1.parquet", "column 'src'", "expected integer node IDs", "double"],
    ),
    (
        "parquet null node ID",
        _parquet_cites(
            lambda t: pa.table({"src": pa.array([None, *t["src"].to_pylist()[1:]], pa.int64()), "dst": t["dst"]})
        ),
        (D,),
        ["cites1.parquet", "row 1", "null"],
    ),
    ("parquet wrong row count", _parquet_cites(lambda t: t.slice(0, 14)), (D, P), ["cites1.parquet", "14", "15"]),
    (
        "parquet single column",
        _parquet_cites(lambda t: t.select(["src"])),
        (R,),
        ["cites1.parquet", "expected 2 columns"],
    ),
    # features
    ("empty .npy file", _write_bytes(FEAT1, b""), (D,), ["feat-1.npy", "no valid .npy header"]),
    ("corrupt .npy", _write_bytes(FEAT1, b"garbage" * 20), (R,), ["feat-1.npy", "no valid .npy header"]),
    ("truncated .npy", _write_bytes(FEAT1, lambda b: b[:-5]), (D,), ["feat-1.npy", "truncated"]),
    ("corrupt parquet feature", _corrupt_parquet_feature, (R,), ["feat-1.parquet", "not a readable Parquet file"]),
    (
        "feature dtype mismatch across chunks",
        lambda d: np.save(d / "chunked/edge_data/paper:cites:paper/w-1.npy", np.zeros(15, np.float32)),
        (D, R),
        ['edge_data["paper:cites:paper"]["w"]', "w-0.npy: float64", "w-1.npy: float32"],
    ),
    (
        "feature rows differ from the node count",
        lambda d: np.save(d / FEAT1, np.zeros((6, 4), np.float32)),
        (D,),
        ['node_data["paper"]["feat"]', "expected 15 rows", "found 14"],
    ),
    # metadata
    ("duplicate node type", _meta(_dup_ntype), (D, P), ["node_type", "unique names", "'paper'"]),
    ("duplicate edge type", _meta(_dup_etype), (R,), ["edge_type", "unique names", "'paper:cites:paper'"]),
    (
        "unknown edge format name",
        _meta(lambda m: m["edges"]["paper:cites:paper"]["format"].__setitem__("name", "hdf5")),
        (D, P),
        ['edges["paper:cites:paper"].format.name', "'hdf5'"],
    ),
    (
        "unknown feature format name",
        _meta(lambda m: m["node_data"]["paper"]["feat"]["format"].__setitem__("name", "hdf5")),
        (R,),
        ['node_data["paper"]["feat"].format.name', "'hdf5'"],
    ),
    # assignment directory (dispatch only: the others write their own)
    (
        "assignment one line short",
        _lines("assign/paper.txt", lambda ls: ls.pop()),
        (D,),
        ["assign/paper.txt", "expected 15 lines", "found 14"],
    ),
    (
        "assignment one line long",
        _lines("assign/paper.txt", lambda ls: ls.append("0")),
        (D,),
        ["assign/paper.txt", "expected 15 lines", "found 16"],
    ),
    (
        "assignment ID >= num_parts",
        _lines("assign/paper.txt", _set(3, "2")),
        (D,),
        ["assign/paper.txt", "line 4", "[0, 2)", "found 2"],
    ),
    (
        "assignment negative ID",
        _lines("assign/author.txt", _set(0, "-1")),
        (D,),
        ["assign/author.txt", "line 1", "negative"],
    ),
    (
        "assignment non-integer",
        _lines("assign/paper.txt", _set(3, "a")),
        (D,),
        ["assign/paper.txt", "line 4", "integer"],
    ),
    ("empty assignment file", _write_bytes("assign/paper.txt", b""), (D,), ["assign/paper.txt", "empty"]),
    (
        "missing assignment file",
        lambda d: (d / "assign/paper.txt").unlink(),
        (D,),
        ["assign/paper.txt", "no such file"],
    ),
    (
        "assignment file is a directory",
        _dir_instead("assign/paper.txt"),
        (D,),
        ["assign/paper.txt", "found a directory"],
    ),
    (
        "missing partition_meta.json",
        lambda d: (d / "assign/partition_meta.json").unlink(),
        (D,),
        ["assign/partition_meta.json", "no such file"],
    ),
    (
        "partition_meta.json is a directory",
        _dir_instead("assign/partition_meta.json"),
        (D,),
        ["assign/partition_meta.json", "found a directory"],
    ),
    (
        "partition_meta.json invalid JSON",
        _write_bytes("assign/partition_meta.json", b"{"),
        (D,),
        ["assign/partition_meta.json", "line 1", "valid JSON"],
    ),
    # output location
    (
        "output parent is a file",
        lambda d: (d / "blocker").write_text("x"),
        (D, R, P),
        ["blocker", "Not a directory", "ENOTDIR"],
    ),
]

PARAMS = [pytest.param(brk, cmd, expected, id=f"{name}-{cmd}") for name, brk, cmds, expected in CASES for cmd in cmds]


def _argv(command: str, d: Path, scheduler: str, out: Path, assign_out: Path) -> list[str]:
    cluster = ["--scheduler", scheduler]
    if command == D:
        return [
            D,
            "--in-dir",
            str(d / "chunked"),
            "--partitions-dir",
            str(d / "assign"),
            "--out-dir",
            str(out),
            "--no-progress",
            *cluster,
        ]
    if command == R:
        return [
            R,
            "--in-dir",
            str(d / "chunked"),
            "--num-parts",
            "2",
            "--out-dir",
            str(out),
            "--partitions-dir",
            str(assign_out),
            "--no-progress",
            *cluster,
        ]
    return [P, "--in-dir", str(d / "chunked"), "--num-parts", "2", "--out-dir", str(assign_out), *cluster]


def assert_nothing_complete(out: Path, assign_out: Path) -> None:
    """No partition config, no ``part*/`` directory, no ``partition_meta.json``."""
    assert not (out / "metadata.json").exists()
    assert [p.name for p in out.glob("part*")] == []
    assert not (assign_out / "partition_meta.json").exists()


def assert_one_named_line(stderr: str, expected: list[str]) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one line on stderr, found {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: "), lines[0]
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"


@pytest.mark.parametrize(("breakage", "command", "expected"), PARAMS)
def test_bad_input_gives_one_named_line_and_no_output(
    work: Path,
    scheduler: str,
    capsys: pytest.CaptureFixture[str],
    breakage: Callable[[Path], None],
    command: str,
    expected: list[str],
) -> None:
    breakage(work)
    parent = work / "blocker" if (work / "blocker").exists() else work
    out, assign_out = parent / "out", parent / "new-assign"
    rc = main(_argv(command, work, scheduler, out, assign_out))
    captured = capsys.readouterr()
    assert rc != 0, captured.out
    assert "Traceback" not in captured.out + captured.err
    assert_one_named_line(captured.err, expected)
    assert_nothing_complete(out, assign_out)


def test_the_golden_copy_itself_runs(work: Path, scheduler: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the unbroken copy goes through every command."""
    for command in (D, R, P):
        out, assign_out = work / f"out-{command}", work / f"assign-{command}"
        assert main(_argv(command, work, scheduler, out, assign_out)) == 0, capsys.readouterr().err
    assert (work / "out-dispatch" / "metadata.json").is_file()
    assert (work / "assign-run" / "partition_meta.json").is_file()
    assert capsys.readouterr().err == ""


# --- disk full on the output (RLIMIT_FSIZE in a subprocess) ------------------------

# Runs scenarios [(name, limit, argv, on_cluster), ...] given as JSON in one process, each
# with its own file-size limit (soft limit, raised again after the scenario), on one
# in-process cluster when on_cluster (else on local threads); prints {name: [rc, stderr]}.
_LIMITED = """
import contextlib, io, json, logging, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit raise OSError(EFBIG)
from distributed import LocalCluster
from dgl_chunked.cli import main
from dgl_chunked.cluster import WORKER_ENVIRONMENT
scenarios = json.loads(sys.argv[1])
results = {}
with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                  silence_logs=logging.CRITICAL) as cluster:
    for name, limit, argv, on_cluster in scenarios:
        if on_cluster:
            argv = [*argv, "--scheduler", cluster.scheduler_address]
        err = io.StringIO()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = main(argv)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        results[name] = [rc, err.getvalue()]
print(json.dumps(results))
"""

# name -> (file-size limit, command, on a distributed cluster?, substrings of the one
# stderr line). graph.dgl of the tiny partitions is ~6.2 and ~6.8 KB; staging and config
# files are < 2 KB. The first one runs the real CLI (see disk_full_runs).
DISK_FULL = {
    "dispatch-graph.dgl": (4096, D, True, ["graph.dgl", "File too large", "EFBIG"]),
    "run-graph.dgl": (4096, R, True, ["graph.dgl", "File too large", "EFBIG"]),
    "partition-report.json": (1000, P, False, ["new-assign/report.json", "EFBIG"]),
    "partition-zarr-sidecar": (300, P, False, ["new-assign/dglc_parts.zarr", "EFBIG"]),
    # on a cluster, whose worker writes the HALO bucket files (smaller than the JSON)
    "partition-report-on-a-worker": (1000, P, True, ["new-assign/report.json", "EFBIG"]),
    "dispatch-staging": (300, D, True, ["_staging/", "EFBIG"]),
    "dispatch-second-partition": (6500, D, True, ["part1/graph.dgl", "EFBIG"]),
}


def _disk_full_argv(command: str, tiny: Path, d: Path) -> list[str]:
    out, assign_out = str(d / "out"), str(d / "new-assign")
    if command == D:
        return [
            D,
            "--in-dir",
            str(tiny / "chunked"),
            "--partitions-dir",
            str(tiny / "partition_assignment"),
            "--out-dir",
            out,
            "--no-progress",
        ]
    if command == R:
        return [
            R,
            "--in-dir",
            str(tiny / "chunked"),
            "--num-parts",
            "2",
            "--out-dir",
            out,
            "--partitions-dir",
            assign_out,
            "--no-progress",
        ]
    return [P, "--in-dir", str(tiny / "chunked"), "--num-parts", "2", "--out-dir", assign_out]


@pytest.fixture(scope="module")
def disk_full_runs(tmp_path_factory: pytest.TempPathFactory, golden_dir: Path) -> dict[str, Any]:
    """name -> (work dir, rc, stderr). The scenarios share one subprocess; the real CLI
    (a LocalCluster of worker processes, whose logs share its stderr) gets its own."""
    tiny = golden_dir / "tiny-pipeline"
    dirs = {name: tmp_path_factory.mktemp(f"disk-full-{name}") for name in DISK_FULL}
    scenarios = [
        (name, limit, _disk_full_argv(command, tiny, dirs[name]), on_cluster)
        for name, (limit, command, on_cluster, _) in DISK_FULL.items()
    ]
    real_name, real_limit, real_argv, _ = scenarios.pop(0)
    # the workers' environment the CLI sets up, whatever earlier clusters of this pytest
    # process left in os.environ: the batch's workers are threads of its own process
    env = {**os.environ, **WORKER_ENVIRONMENT}
    real = subprocess.Popen(
        [sys.executable, "-c", _REAL_CLI, str(real_limit), *real_argv, "--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    batch = subprocess.run(
        [sys.executable, "-c", _LIMITED, json.dumps(scenarios)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    _, real_err = real.communicate(timeout=300)
    assert batch.returncode == 0, batch.stderr
    results = {name: (dirs[name], rc, err) for name, (rc, err) in json.loads(batch.stdout).items()}
    results[real_name] = (dirs[real_name], real.returncode, real_err)
    return results


_REAL_CLI = """
import resource, signal, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from dgl_chunked.cli import main
from dgl_chunked.cluster import WORKER_ENVIRONMENT
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("name", DISK_FULL)
def test_disk_full_gives_one_line_naming_the_file(disk_full_runs: dict[str, Any], name: str) -> None:
    d, rc, stderr = disk_full_runs[name]
    assert rc == 1, stderr
    assert "Traceback" not in stderr
    assert_one_named_line(stderr, DISK_FULL[name][3])
    assert_nothing_complete(d / "out", d / "new-assign")
    limit = DISK_FULL[name][0]  # a write cut at the limit leaves a file of exactly that size
    assert [f for f in d.rglob("*") if f.is_file() and f.stat().st_size == limit] == []
