"""The assignment sidecar ``dglc_partition.json``: its model, bytes and validation."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.assignment import (
    AssignmentSidecar,
    open_assignment,
    read_assignment_sidecar,
    read_partition_meta,
    write_assignment,
)
from dgl_chunked.io.chunked.metadata import read_metadata

DATA = Path(__file__).resolve().parents[2] / "data" / "assignment_sidecar"
# written by dgl_chunked before the sidecar had a model (commit a28af42): cli partition
# provenance, parmetis import provenance, and a seedless run
WRITTEN_BEFORE = ["partition.json", "parmetis.json", "plain.json"]


@pytest.mark.parametrize("name", WRITTEN_BEFORE)
def test_a_sidecar_written_before_round_trips_byte_for_byte(name: str) -> None:
    raw = (DATA / name).read_bytes()
    sidecar = AssignmentSidecar.from_json(raw, where=name)
    assert sidecar.to_json() == raw
    assert AssignmentSidecar.from_json(json.loads(raw), where=name) == sidecar  # decoded object: same model


def test_the_fields_of_a_sidecar_written_before() -> None:
    sidecar = AssignmentSidecar.from_json((DATA / "partition.json").read_bytes(), where="partition.json")
    assert (sidecar.num_parts, sidecar.method, sidecar.dgl_algo_name) == (3, "lp", "random")
    assert sidecar.files == {
        "author": (24, "1795459373.4082625"),
        "institution": (10, "1795459373.4085438"),
        "paper": (30, "1795459373.408718"),
    }
    assert sidecar.provenance == {"balance_edges": True, "balance_ntypes": ["paper"], "seed": 7}
    assert (sidecar.format, sidecar.format_version, sidecar.binary) == ("dglc-assignment", 1, "dglc_parts.zarr")
    assert (sidecar.token, sidecar.dgl_chunked_version) == ("84035d4d9825de03", "0.1.0")
    parmetis = AssignmentSidecar.from_json((DATA / "parmetis.json").read_bytes(), where="parmetis.json")
    assert parmetis.provenance == {
        "partitioner": "parmetis",
        "parmetis_output": ["pm/p000-g_nodes.txt", "pm/p001-g_nodes.txt"],
    }


def test_the_token_hashes_the_files() -> None:
    for name in WRITTEN_BEFORE:
        sidecar = AssignmentSidecar.from_json((DATA / name).read_bytes(), where=name)
        again = AssignmentSidecar.create(
            num_parts=sidecar.num_parts,
            method=sidecar.method,
            dgl_algo_name=sidecar.dgl_algo_name,
            files=sidecar.files,
            provenance=sidecar.provenance,
        )
        assert again.token == sidecar.token
        assert again.to_json() == (DATA / name).read_bytes()


def test_write_assignment_writes_the_model(tmp_path: Path, tiny_chunked: Path) -> None:
    md = read_metadata(tiny_chunked)
    rng = np.random.default_rng(3)
    parts = {t: rng.integers(0, 3, md.num_nodes(t)) for t in md.node_types}
    out = tmp_path / "assign"
    provenance = {"seed": 7, "balance_ntypes": ["paper"], "balance_edges": True, "method": "not-the-method"}
    write_assignment(out, parts, num_parts=3, algo_name="lp", provenance=provenance)
    raw = (out / "dglc_partition.json").read_bytes()
    sidecar = read_assignment_sidecar(out)
    assert sidecar is not None and sidecar.to_json() == raw
    assert sidecar.method == "lp"  # the sidecar's own keys win over provenance
    assert sidecar.provenance == {"seed": 7, "balance_ntypes": ["paper"], "balance_edges": True}
    assert json.loads(raw).keys() == json.loads((DATA / "partition.json").read_bytes()).keys()
    for ntype in md.node_types:
        assert sidecar.files[ntype][0] == (out / f"{ntype}.txt").stat().st_size
    stamps = {t: list(s) for t, s in sidecar.files.items()}
    assert sidecar.token == hashlib.sha256(json.dumps(stamps, sort_keys=True).encode()).hexdigest()[:16]
    assert read_partition_meta(out).method == "lp"


def _edit(key: str, value: Any) -> bytes:
    obj = json.loads((DATA / "partition.json").read_bytes())
    if value is _DROP:
        del obj[key]
    else:
        obj[key] = value
    return json.dumps(obj).encode()


_DROP = object()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("files", _DROP, r'"files": expected an object, found no such key'),
        ("files", [1, 2], r'"files": expected an object, found \[1, 2\]'),
        ("files", {"paper": [30]}, r'"files"\["paper"\]: expected \[size, mtime\].*found \[30\]'),
        ("files", {"paper": [-1, "x"]}, r'"files"\["paper"\]: expected \[size, mtime\]'),
        ("files", {"paper": [True, "x"]}, r'"files"\["paper"\]: expected \[size, mtime\]'),
        ("num_parts", 0, r'"num_parts": expected a positive integer, found 0'),
        ("num_parts", "3", r"\"num_parts\": expected an integer, found '3'"),
        ("method", None, r'"method": expected a string, found None'),
        ("token", _DROP, r'"token": expected a string, found no such key'),
        ("format", "other", r"\"format\": expected 'dglc-assignment', found 'other'"),
        ("format_version", 2, r'"format_version": expected 1, found 2 \(written by another dgl_chunked version\)'),
    ],
)
def test_a_bad_key_is_named_with_the_file(key: str, value: Any, message: str) -> None:
    with pytest.raises(AssignmentError, match=r"^ASSIGN/dglc_partition\.json: " + message + ".*--overwrite"):
        AssignmentSidecar.from_json(_edit(key, value), where="ASSIGN/dglc_partition.json")


@pytest.mark.parametrize(
    ("raw", "message"),
    [(b"{broken", r"line 1: expected valid JSON"), (b"[1, 2]", r"expected a JSON object, found list")],
)
def test_bad_json_is_named_with_the_file(raw: bytes, message: str) -> None:
    with pytest.raises(AssignmentError, match=r"^S\.json: " + message):
        AssignmentSidecar.from_json(raw, where="S.json")


def test_a_missing_sidecar_reads_as_none_and_a_bad_one_is_ignored_by_readers(
    tmp_path: Path, tiny_chunked: Path, caplog: pytest.LogCaptureFixture
) -> None:
    md = read_metadata(tiny_chunked)
    parts = {t: np.arange(md.num_nodes(t)) % 2 for t in md.node_types}
    out = tmp_path / "assign"
    write_assignment(out, parts, num_parts=2, algo_name="lp")
    path = out / "dglc_partition.json"
    path.write_bytes(_edit("files", {"paper": "big"}))
    with pytest.raises(AssignmentError, match=r'dglc_partition\.json: "files"\["paper"\]'):
        read_assignment_sidecar(out)
    with caplog.at_level(logging.WARNING, logger="dgl_chunked.io.assignment.sidecar"):
        meta, back = open_assignment(out, md)  # optional: ignored, the text is read
    assert meta.method is None and "zarr" not in back["paper"].name
    assert '"files"["paper"]' in caplog.text
    for ntype in md.node_types:
        np.testing.assert_array_equal(back[ntype].compute(), parts[ntype])
    path.unlink()
    assert read_assignment_sidecar(out) is None
