"""Every CLI command with bad arguments: one ``error:`` line naming the culprit, no traceback.

Bad values that click itself rejects (a number out of range, an unknown choice, a
missing option) are usage errors: exit 2 and click's one ``Error:`` line naming the
option. Everything else is caught by the command: exit 1 and exactly one line
starting ``error:`` on stderr that names the file, option, type or value at fault.
``tests/cli/test_cli_bad_input.py`` breaks the *input files*; here the *arguments* are bad.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dask
import pytest

from dgl_chunked.cli import main

# (id, argv with {G} = golden chunked graph, {A} = its assignment, {T} = a scratch dir,
#  {S} = scheduler address; expected exit code; text the error line must contain)
CASES: list[tuple[str, str, int, str]] = [
    ("validate-missing-dir", "validate --in-dir {T}/nowhere", 1, "nowhere/metadata.json"),
    ("validate-bad-storage-options", "validate --in-dir {G} --storage-options {{bad", 2, "--storage-options"),
    ("validate-unreachable-scheduler", "validate --in-dir {G} --scheduler 127.0.0.1:1", 1, "127.0.0.1:1"),
    ("validate-scheduler-not-an-address", "validate --in-dir {G} --scheduler bogus", 1, "'bogus'"),
    ("synth-negative-count", "synth --out-dir {T}/s --num-nodes -5", 1, "-5"),
    ("synth-unknown-preset", "synth --out-dir {T}/s --preset bogus", 2, "--preset"),
    ("synth-missing-out-dir", "synth", 2, "--out-dir"),
    ("inspect-missing-file", "inspect {T}/nowhere.dgl", 1, "nowhere.dgl"),
    ("inspect-not-a-dgl-file", "inspect {G}/metadata.json", 1, "metadata.json"),
    ("inspect-negative-values", "inspect {G}/metadata.json --values -1", 2, "--values"),
    ("partition-unknown-method", "partition --in-dir {G} --out-dir {T}/a --num-parts 2 --method bogus", 1, "bogus"),
    ("partition-zero-parts", "partition --in-dir {G} --out-dir {T}/a --num-parts 0", 2, "--num-parts"),
    ("partition-parts-not-a-number", "partition --in-dir {G} --out-dir {T}/a --num-parts two", 2, "--num-parts"),
    (
        "partition-unknown-ntype",
        "partition --in-dir {G} --out-dir {T}/a --num-parts 2 --balance-ntypes venue",
        1,
        "venue",
    ),
    ("partition-bad-size", "partition --in-dir {G} --out-dir {T}/a --num-parts 2 --max-memory lots", 2, "lots"),
    ("partition-missing-in-dir", "partition --in-dir {T}/nowhere --out-dir {T}/a --num-parts 2", 1, "nowhere"),
    ("partition-out-dir-is-a-file", "partition --in-dir {G} --out-dir {T}/file --num-parts 2", 1, "file"),
    ("report-missing-assignment", "report --in-dir {G} --partitions-dir {T}/nowhere", 1, "partition_meta.json"),
    ("report-json-under-a-file", "report --in-dir {G} --partitions-dir {A} --json {T}/file/r.json", 1, "r.json"),
    ("parmetis-export-bad-name", "parmetis-export --in-dir {G} --out-dir {T}/pm --name a/b", 1, "a/b"),
    ("parmetis-export-unknown-mask", "parmetis-export --in-dir {G} --out-dir {T}/pm --balance-masks nope", 1, "nope"),
    ("parmetis-export-bad-dedup", "parmetis-export --in-dir {G} --out-dir {T}/pm --dedup bogus", 2, "--dedup"),
    (
        "parmetis-import-missing-output",
        "parmetis-import --in-dir {G} --parmetis-output {T}/nowhere.txt --out-dir {T}/a --num-parts 2",
        1,
        "nowhere.txt",
    ),
    (
        "parmetis-import-bad-line",
        "parmetis-import --in-dir {G} --parmetis-output {T}/p0-bad_nodes.txt --out-dir {T}/a --num-parts 2",
        1,
        "p0-bad_nodes.txt: line 1",
    ),
    ("chunk-missing-spec", "chunk --spec {T}/nowhere.yaml --out-dir {T}/c --num-chunks 2", 1, "nowhere.yaml"),
    ("chunk-bad-yaml", "chunk --spec {T}/bad.yaml --out-dir {T}/c --num-chunks 2", 1, "bad.yaml"),
    ("chunk-zero-chunks", "chunk --spec {T}/bad.yaml --out-dir {T}/c --num-chunks 0", 2, "--num-chunks"),
    ("dispatch-missing-in-dir", "dispatch --in-dir {T}/nowhere --partitions-dir {A} --out-dir {T}/o", 1, "nowhere"),
    (
        "dispatch-missing-assignment",
        "dispatch --in-dir {G} --partitions-dir {T}/nowhere --out-dir {T}/o",
        1,
        "nowhere/partition_meta.json",
    ),
    (
        "dispatch-unknown-format",
        "dispatch --in-dir {G} --partitions-dir {A} --out-dir {T}/o --graph-formats coo,bogus",
        1,
        "bogus",
    ),
    (
        "dispatch-zero-halo",
        "dispatch --in-dir {G} --partitions-dir {A} --out-dir {T}/o --halo-hops 0",
        2,
        "--halo-hops",
    ),
    ("dispatch-bad-size", "dispatch --in-dir {G} --partitions-dir {A} --out-dir {T}/o --lookup-cache lots", 2, "lots"),
    ("dispatch-out-dir-is-a-file", "dispatch --in-dir {G} --partitions-dir {A} --out-dir {T}/file", 1, "file"),
    ("run-unknown-method", "run --in-dir {G} --out-dir {T}/o --num-parts 2 --method bogus", 1, "bogus"),
    ("run-unknown-ntype", "run --in-dir {G} --out-dir {T}/o --num-parts 2 --balance-ntypes venue", 1, "venue"),
    (
        "run-zero-trainers",
        "run --in-dir {G} --out-dir {T}/o --num-parts 2 --num-trainers-per-machine 0",
        2,
        "--num-trainers-per-machine",
    ),
    ("verify-missing-out-dir", "verify --in-dir {G} --out-dir {T}/nowhere", 1, "nowhere/metadata.json"),
    ("verify-missing-in-dir", "verify --in-dir {T}/nowhere --out-dir {T}/o", 1, "nowhere/metadata.json"),
    ("unknown-command", "partitoin --in-dir {G}", 2, "partitoin"),
]

# these commands take --scheduler; every case runs on one shared in-process cluster
SCHEDULED = {"validate", "synth", "partition", "report", "parmetis-export", "parmetis-import", "chunk", "dispatch"}
SCHEDULED |= {"run", "verify"}


@pytest.fixture
def places(tmp_path: Path, golden_dir: Path, scheduler: str) -> dict[str, str]:
    tiny = golden_dir / "tiny-pipeline"
    (tmp_path / "file").write_text("not a directory\n")
    (tmp_path / "bad.yaml").write_text("graph_name: [\n")
    (tmp_path / "p0-bad_nodes.txt").write_text("1 2 x\n")
    assign = shutil.copytree(tiny / "partition_assignment", tmp_path / "assign")
    return {"G": str(tiny / "chunked"), "A": str(assign), "T": str(tmp_path), "S": scheduler}


@pytest.mark.parametrize(("argv", "code", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_arguments_give_one_named_error_line(
    argv: str, code: int, needle: str, places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = argv.format(**places).split()
    if args[0] in SCHEDULED and "--scheduler" not in args:
        args += ["--scheduler", places["S"]]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(args) == code
    _, err = capsys.readouterr()
    assert "Traceback" not in err, err
    prefix = "error:" if code == 1 else "Error:"
    lines = [line for line in err.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, err
    assert needle in lines[0], lines[0]
    assert not (Path(places["T"]) / "o" / "metadata.json").exists()
