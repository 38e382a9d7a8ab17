"""Damaged input files, one at a time: one ``error:`` line naming the file, or an output that verifies.

Each case copies a small heterogeneous graph (the golden tiny graph: CSV edges and
``.npy`` features, or the same rows as Parquet edges and Parquet features in three
files per type), damages one file or one ``metadata.json`` field the way storage and
hand edits do (truncated, emptied, deleted, scrambled headers and footers, damaged
page headers behind an intact footer, short ``.npy``, wrong dtypes, broken fields)
and runs a command through :func:`dgl_chunked.cli.main` on an in-process cluster with
the default task size, so the damaged file is read in a task together with its
neighbours. Each case ends in one of two ways:

- exit 1, exactly one line on stderr, ``error: ...``, naming the file (and the row
  group, byte range or row where the table says), no traceback, and nothing that
  looks finished (no ``OUT/metadata.json``, no ``part*/``, no ``partition_meta.json``);
- where the damage cannot matter (Parquet readers never look at the leading magic):
  success, and partitions byte-identical to those of the undamaged copy.

``cli/test_bad_input.py`` covers wrong contents (IDs out of range, row counts, ...);
this table covers damaged bytes. It runs in about 5 s.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dgl_chunked.cli import main
from dgl_chunked.testing import load_truth, write_graph_from_truth
from tests.cli.test_cli_bad_input import assert_nothing_complete, assert_one_named_line

TASK_SIZE = "32MiB"  # every type's files in one read task: the damaged file has neighbours
CITES = "paper:cites:paper"


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory, golden_dir: Path) -> dict[str, Path]:
    """``csv``: the golden tiny graph (CSV edges, .npy features, two files per type);
    ``parquet``: its rows as Parquet edges and features, three files per type."""
    root = tmp_path_factory.mktemp("bases")
    shutil.copytree(golden_dir / "tiny-pipeline" / "chunked", root / "csv")
    truth = load_truth(root / "csv")
    write_graph_from_truth(
        root / "parquet", truth, edge_chunks=3, feature_chunks=3, edge_format="parquet", feature_format="parquet"
    )
    return {"csv": root / "csv", "parquet": root / "parquet"}


def _files(graph: Path, *key: str) -> list[Path]:
    """The files of ``edges <etype>`` or ``node_data <ntype> <feat>`` in metadata.json."""
    meta = json.loads((graph / "metadata.json").read_text())
    source = meta[key[0]][key[1]] if key[0] == "edges" else meta[key[0]][key[1]][key[2]]
    return [graph / p for p in source["data"]]


# --- kinds of damage (bytes -> bytes, applied to one file) -------------------------------


def truncated(b: bytes) -> bytes:
    return b[: len(b) // 2]


def emptied(b: bytes) -> bytes:
    return b""


def head_scrambled(b: bytes) -> bytes:
    return b"XXXX" + b[4:]


def footer_scrambled(b: bytes) -> bytes:
    """The Thrift footer overwritten; its length and the closing magic left intact."""
    size = int.from_bytes(b[-8:-4], "little")
    return b[: len(b) - 8 - size] + b"\xff" * size + b[-8:]


def pages_damaged(b: bytes) -> bytes:
    """The first page header overwritten behind an intact footer (validate's footer read passes)."""
    return b[:4] + b"\xff" * 24 + b[28:]


def short_npy(b: bytes) -> bytes:
    return b[:-5]


def garbage(b: bytes) -> bytes:
    return b"\x00\x93garbage\xff" * 8


def in_the_middle(b: bytes) -> bytes:
    """Binary garbage in the middle of a CSV edge file."""
    return b[: len(b) // 2] + b"\x00\xff\xfe binary \x01\n" + b[len(b) // 2 :]


def _damage(base: str, key: tuple[str, ...], k: int, how: Callable[[bytes], bytes] | None) -> Any:
    def apply(d: Path) -> Path:
        path = _files(d, *key)[k]
        if how is None:
            path.unlink()
        else:
            path.write_bytes(how(path.read_bytes()))
        return path

    return base, apply


def _float64_file(d: Path) -> Path:
    path = _files(d, "node_data", "paper", "feat")[1]
    np.save(path, np.load(path).astype(np.float64))
    return path


def _float_edges(d: Path) -> Path:
    path = _files(d, "edges", CITES)[1]
    table = pq.read_table(path)
    pq.write_table(pa.table({"src": table["src"].cast(pa.float64()), "dst": table["dst"]}), path)
    return path


def _meta(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    def apply(d: Path) -> Path:
        path = d / "metadata.json"
        doc = json.loads(path.read_text())
        edit(doc)
        path.write_text(json.dumps(doc))
        return path

    return apply


def _zarr_chunk(d: Path) -> Path:
    """A chunk of the assignment's Zarr copy (the ``dispatch`` case's ``--partitions-dir``,
    ``work/given`` beside the graph copy)."""
    path = d.parent / "work" / "given" / "dglc_parts.zarr" / "paper" / "c" / "0"
    path.write_bytes(b"xx")
    return path.parent.parent


def _invalid_json(d: Path) -> Path:
    path = d / "metadata.json"
    path.write_text(path.read_text()[:-40])
    return path


RUN, DISPATCH, VALIDATE, LP, VERIFY = "run", "dispatch", "validate", "partition-lp", "verify"
EDGES_PQ, FEAT_PQ = ("edges", CITES), ("node_data", "paper", "feat")
EDGES_CSV, FEAT_NPY = ("edges", CITES), ("node_data", "paper", "feat")

# (id, base graph, damage, commands, what the one line holds besides the file name;
#  None: the damage cannot matter and the output must equal the undamaged one)
CASES: list[tuple[str, tuple[str, Callable[[Path], Path]], tuple[str, ...], list[str] | None]] = [
    ("parquet edges truncated", _damage("parquet", EDGES_PQ, 1, truncated), (RUN, LP), ["not a readable Parquet"]),
    ("parquet edges emptied", _damage("parquet", EDGES_PQ, 1, emptied), (DISPATCH,), ["not a readable Parquet"]),
    ("parquet edges deleted", _damage("parquet", EDGES_PQ, 2, None), (RUN,), ["does not exist"]),
    ("parquet edges footer scrambled", _damage("parquet", EDGES_PQ, 1, footer_scrambled), (RUN,), ["not a readable"]),
    (
        "parquet edges pages damaged",
        _damage("parquet", EDGES_PQ, 1, pages_damaged),
        (RUN, DISPATCH, VALIDATE, LP, VERIFY),
        ["row group 0", "rows 1-", "bytes 4-", "damaged"],
    ),
    ("parquet edges leading magic scrambled", _damage("parquet", EDGES_PQ, 1, head_scrambled), (RUN,), None),
    ("parquet edges float IDs", ("parquet", _float_edges), (RUN,), ["column 'src'", "integer"]),
    ("parquet feature truncated", _damage("parquet", FEAT_PQ, 1, truncated), (RUN,), ["not a readable Parquet"]),
    (
        "parquet feature pages damaged",
        _damage("parquet", FEAT_PQ, 2, pages_damaged),
        (RUN, VALIDATE, VERIFY),
        ["row group 0", "damaged"],
    ),
    ("parquet feature footer scrambled", _damage("parquet", FEAT_PQ, 0, footer_scrambled), (DISPATCH,), ["Parquet"]),
    ("csv edges binary garbage", _damage("csv", EDGES_CSV, 1, in_the_middle), (RUN, VALIDATE), ["row"]),
    ("csv edges emptied", _damage("csv", EDGES_CSV, 0, emptied), (DISPATCH,), ["empty"]),
    ("npy feature short", _damage("csv", FEAT_NPY, 1, short_npy), (RUN, VALIDATE), ["truncated"]),
    ("npy feature emptied", _damage("csv", FEAT_NPY, 0, emptied), (DISPATCH,), ["no valid .npy header"]),
    ("npy feature header scrambled", _damage("csv", FEAT_NPY, 1, garbage), (RUN,), ["no valid .npy header"]),
    ("npy feature wrong dtype", ("csv", _float64_file), (RUN, VALIDATE), ["float64", "float32"]),
    (
        "metadata.json negative count",
        ("csv", _meta(lambda m: m["num_nodes_per_type"].__setitem__(0, -3))),
        (RUN, VALIDATE),
        ["num_nodes_per_type"],
    ),
    (
        "metadata.json count as text",
        ("csv", _meta(lambda m: m["num_nodes_per_type"].__setitem__(1, "15"))),
        (DISPATCH,),
        ["num_nodes_per_type"],
    ),
    (
        "metadata.json data not a list",
        ("csv", _meta(lambda m: m["edges"][CITES].__setitem__("data", "edge_index/x.txt"))),
        (RUN,),
        ["edges", "data"],
    ),
    (
        "metadata.json chunk counts of the wrong length",
        ("csv", _meta(lambda m: m["num_edges_per_chunk"][2].append(4))),
        (RUN, VALIDATE),
        ["num_edges_per_chunk"],
    ),
    ("metadata.json cut short", ("csv", _invalid_json), (RUN, VALIDATE), ["JSON"]),
    ("assignment zarr chunk damaged", ("csv", _zarr_chunk), (DISPATCH,), ["dglc_parts.zarr", "rows 1-", "delete"]),
    (
        "metadata.json node_type missing",
        ("csv", _meta(lambda m: m.pop("node_type"))),
        (DISPATCH,),
        ["node_type"],
    ),
]

PARAMS = [pytest.param(dmg, cmd, want, id=f"{name}-{cmd}") for name, dmg, cmds, want in CASES for cmd in cmds]


def _argv(command: str, graph: Path, work: Path, scheduler: str) -> list[str]:
    out, assign = work / "out", work / "assign"
    cluster = ["--scheduler", scheduler, "--task-size", TASK_SIZE]
    ids = ["--save-orig-nids", "--save-orig-eids", "--no-progress"]  # verify needs them
    if command == RUN:
        return [RUN, "--in-dir", str(graph), "--num-parts", "2", "--out-dir", str(out), *ids, *cluster]
    if command == DISPATCH:
        given = str(work / "given")
        return [DISPATCH, "--in-dir", str(graph), "--partitions-dir", given, "--out-dir", str(out), *ids, *cluster]
    if command == LP:
        lp = ["--num-parts", "2", "--method", "lp", "--out-dir", str(assign)]
        return ["partition", "--in-dir", str(graph), *lp, *cluster]
    if command == VERIFY:
        return [VERIFY, "--in-dir", str(graph), "--out-dir", str(work / "clean-out"), *cluster]
    return [VALIDATE, "--in-dir", str(graph), *cluster]


@pytest.fixture(scope="module")
def clean(bases: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, scheduler: str) -> dict[str, Path]:
    """Per base: an assignment (for dispatch) and the undamaged ``run`` output (for verify)."""
    out = {}
    for name, graph in bases.items():
        work = tmp_path_factory.mktemp(f"clean-{name}")
        assert main(["partition", "--in-dir", str(graph), "--num-parts", "2", "--out-dir", str(work / "given")]) == 0
        assert main(_argv(RUN, graph, work, scheduler)) == 0
        shutil.move(work / "out", work / "clean-out")
        out[name] = work
    return out


def _partition_bytes(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.suffix == ".dgl"
    }


@pytest.mark.parametrize(("damage", "command", "expected"), PARAMS)
def test_damaged_input_gives_one_named_line(
    damage: tuple[str, Callable[[Path], Path]],
    command: str,
    expected: list[str] | None,
    bases: dict[str, Path],
    clean: dict[str, Path],
    tmp_path: Path,
    scheduler: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, apply = damage
    graph, work = tmp_path / "graph", tmp_path / "work"
    shutil.copytree(bases[base], graph)
    shutil.copytree(clean[base], work)
    damaged = apply(graph)
    capsys.readouterr()
    rc = main(_argv(command, graph, work, scheduler))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    if expected is None:  # cannot matter: the output is the undamaged one
        assert rc == 0, captured.err
        assert _partition_bytes(work / "out") == _partition_bytes(work / "clean-out")
        return
    assert rc == 1, captured.out
    assert_one_named_line(captured.err, [damaged.name, *expected])
    assert_nothing_complete(work / "out", work / "assign")
