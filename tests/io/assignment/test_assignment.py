"""Reading and writing DGL assignment directories (``<ntype>.txt`` + ``partition_meta.json``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

from dgl_chunked.errors import AssignmentError, OutputExistsError
from dgl_chunked.io.assignment import PartitionMeta, open_assignment, read_partition_meta, write_assignment
from dgl_chunked.io.assignment.reader import parse_assignment_block
from dgl_chunked.io.chunked.metadata import ChunkedGraphMetadata, read_metadata
from dgl_chunked.testing import raise_if_dask_computes


@pytest.fixture(scope="module")
def tiny_meta(tiny_chunked: Path) -> ChunkedGraphMetadata:
    return read_metadata(tiny_chunked)


@pytest.fixture
def golden_assign(golden_dir: Path) -> Path:
    return golden_dir / "tiny-pipeline" / "partition_assignment"


@pytest.fixture
def assign_copy(golden_assign: Path, tmp_path: Path) -> Path:
    """A writable copy of the golden DGL assignment (no sidecars)."""
    return Path(shutil.copytree(golden_assign, tmp_path / "assign"))


def _truth(d: Path, ntype: str) -> np.ndarray:
    return np.loadtxt(d / f"{ntype}.txt", dtype=np.int64, ndmin=1)


# --- reading the golden DGL directory -------------------------------------------------


@pytest.mark.parametrize("chunks", [None, {"author": (5, 7), "paper": (1, 1, 13), "institution": (5,)}])
def test_golden_assignment_reads_back_exactly(
    golden_assign: Path, tiny_meta: ChunkedGraphMetadata, chunks: dict[str, tuple[int, ...]] | None
) -> None:
    meta, parts = open_assignment(golden_assign, tiny_meta, chunks=chunks)
    assert meta == PartitionMeta(num_parts=2, algo_name="random", version="1.0.0", method=None)
    for ntype in tiny_meta.node_types:
        arr = parts[ntype]
        assert arr.dtype == np.int32
        if chunks:
            assert arr.chunks == (chunks[ntype],)
        got = arr.compute()
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, _truth(golden_assign, ntype))


def test_open_is_lazy_and_values_are_checked_in_tasks(assign_copy: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    lines = (assign_copy / "paper.txt").read_text().splitlines()
    lines[9] = "7"
    (assign_copy / "paper.txt").write_text("\n".join(lines) + "\n")
    with raise_if_dask_computes():
        _, parts = open_assignment(assign_copy, tiny_meta)
    with pytest.raises(AssignmentError, match=r"paper\.txt: line 10: .*found 7"):
        parts["paper"].compute()


def test_num_parts_comes_from_meta_not_from_ids(assign_copy: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    (assign_copy / "partition_meta.json").write_text(
        json.dumps({"algo_name": "metis", "num_parts": 5, "version": "1.0.0"})
    )
    meta, parts = open_assignment(assign_copy, tiny_meta)
    assert meta.num_parts == 5  # only IDs 0 and 1 occur; partitions 2..4 are empty, not dropped
    with pytest.raises(AssignmentError, match="num_parts is 5"):
        open_assignment(assign_copy, tiny_meta, num_parts=2)


# --- errors, each naming file and line ----------------------------------------------------


def _edit(d: Path, ntype: str, text: str) -> None:
    (d / f"{ntype}.txt").write_text(text)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("1\n0\n1\n0\n1\n0\n1\n0\n1\n0\n1\n", r"author\.txt: line 12: expected 12 lines .*found 11 lines"),
        ("0\n" * 13, r"author\.txt: line 13: expected 12 lines .*found 13 lines"),
        ("", r"author\.txt: line 1: expected 12 lines .*the file is empty"),
    ],
    ids=["short", "long", "empty"],
)
def test_wrong_length_is_eager(assign_copy: Path, tiny_meta: ChunkedGraphMetadata, text: str, pattern: str) -> None:
    _edit(assign_copy, "author", text)
    with pytest.raises(AssignmentError, match=pattern):
        open_assignment(assign_copy, tiny_meta)


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("2", r"line 4: expected a partition ID in \[0, 2\) .*found 2"),
        ("-1", r"line 4: expected a partition ID in \[0, 2\), found negative ID -1"),
        ("1.0", r"line 4: expected an integer partition ID .*found b'1.0'"),
        ("x", r"line 4: expected an integer partition ID .*found b'x'"),
        ("", r"line 4: expected an integer partition ID .*found b''"),
        ("0 1", r"line 4: expected an integer partition ID .*found b'0 1'"),
    ],
    ids=["too-big", "negative", "float", "word", "blank", "two-columns"],
)
def test_bad_values_name_file_and_line(
    assign_copy: Path, tiny_meta: ChunkedGraphMetadata, line: str, pattern: str
) -> None:
    lines = ["1", "0", "1", line, "1"]
    _edit(assign_copy, "institution", "\n".join(lines) + "\n")
    _, parts = open_assignment(assign_copy, tiny_meta, chunks={"institution": (2, 3)})
    np.testing.assert_array_equal(parts["institution"].blocks[0].compute(), [1, 0])  # other block is fine
    with pytest.raises(AssignmentError, match=r"institution\.txt: " + pattern):
        parts["institution"].compute()


def test_missing_file(assign_copy: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    (assign_copy / "paper.txt").unlink()
    with pytest.raises(AssignmentError, match=r"paper\.txt: expected one <ntype>\.txt per node type, found no"):
        open_assignment(assign_copy, tiny_meta)


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (None, r"partition_meta\.json: expected .*found no such file"),
        ('{"num_parts": 2,\n "algo_name": "random",,}', r"partition_meta\.json: line 2: expected valid JSON"),
        ("[2]", r"partition_meta\.json: line 1: expected a JSON object"),
        ('{"num_parts": 0, "algo_name": "random"}', r'partition_meta\.json: "num_parts": expected a positive'),
        ('{"num_parts": "2", "algo_name": "random"}', r'"num_parts": expected a positive integer, found \'2\''),
        ('{"num_parts": 2}', r'partition_meta\.json: "algo_name": expected "random" or "metis", found None'),
        ('{"num_parts": 2, "algo_name": "random", "version": 1}', r'"version": expected "1\.0\.0", found 1'),
    ],
    ids=["missing", "bad-json", "not-object", "zero-parts", "string-parts", "no-algo", "bad-version"],
)
def test_invalid_partition_meta(
    assign_copy: Path, tiny_meta: ChunkedGraphMetadata, content: str | None, pattern: str
) -> None:
    meta_path = assign_copy / "partition_meta.json"
    if content is None:
        meta_path.unlink()
    else:
        meta_path.write_text(content)
    with pytest.raises(AssignmentError, match=pattern):
        open_assignment(assign_copy, tiny_meta)


def test_parse_block_kernel() -> None:
    got = parse_assignment_block(b"3\r\n0\r\n12", rows=3, first_line=1, num_parts=13, path="f")
    np.testing.assert_array_equal(got, [3, 0, 12])
    assert got.dtype == np.int32
    with pytest.raises(AssignmentError, match="f: line 42: "):
        parse_assignment_block(b"1\n\n2\n", rows=3, first_line=41, num_parts=3, path="f")


# --- writing ------------------------------------------------------------------------------


def _random_parts(meta: ChunkedGraphMetadata, num_parts: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t: rng.integers(0, num_parts, meta.num_nodes(t)).astype(np.int32) for t in meta.node_types}


@pytest.mark.parametrize("num_parts", [2, 37])
def test_write_read_round_trip(tmp_path: Path, tiny_meta: ChunkedGraphMetadata, num_parts: int) -> None:
    truth = _random_parts(tiny_meta, num_parts)
    parts = {t: da.from_array(v, chunks=5) for t, v in truth.items()}
    parts["paper"] = da.from_array(truth["paper"], chunks=((3, 4, 8),))  # irregular chunks
    out = tmp_path / "assign"
    meta = write_assignment(out, parts, num_parts=num_parts, algo_name="metis", provenance={"seed": 3})
    assert meta == read_partition_meta(out)
    assert json.loads((out / "partition_meta.json").read_text()) == {
        "algo_name": "metis",
        "num_parts": num_parts,
        "version": "1.0.0",
    }
    sidecar = json.loads((out / "dglc_partition.json").read_text())
    assert sidecar["method"] == "metis" and sidecar["seed"] == 3 and sidecar["num_parts"] == num_parts
    assert not (out / ".dglc-tmp").exists()
    for ntype, values in truth.items():
        text = (out / f"{ntype}.txt").read_text()
        assert text == "".join(f"{v}\n" for v in values)  # DGL's format: one int per line, no header
        np.testing.assert_array_equal(_truth(out, ntype), values)
    _, back = open_assignment(out, tiny_meta, chunks={"author": (12,)})
    assert "zarr" in back["author"].name  # the fresh binary sidecar is used
    for ntype, values in truth.items():
        np.testing.assert_array_equal(back[ntype].compute(), values)


def test_text_wins_over_stale_sidecar(tmp_path: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    truth = _random_parts(tiny_meta, 2)
    out = tmp_path / "assign"
    write_assignment(out, truth, num_parts=2, algo_name="random")
    flipped = 1 - truth["author"]
    (out / "author.txt").write_text("".join(f"{v}\n" for v in flipped))
    os.utime(out / "author.txt", (1, 1))  # same size: the mtime tells the edit apart
    _, back = open_assignment(out, tiny_meta)
    assert "zarr" not in back["author"].name
    np.testing.assert_array_equal(back["author"].compute(), flipped)


def test_real_method_name_goes_to_sidecar(tmp_path: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    meta = write_assignment(tmp_path / "a", _random_parts(tiny_meta, 2), num_parts=2, algo_name="my-ldg")
    assert meta.algo_name == "random" and meta.method == "my-ldg"  # DGL only accepts random/metis
    assert json.loads((tmp_path / "a" / "dglc_partition.json").read_text())["method"] == "my-ldg"


def test_overwrite_and_refusal(tmp_path: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    out = tmp_path / "assign"
    write_assignment(out, _random_parts(tiny_meta, 2), num_parts=2, algo_name="random")
    with pytest.raises(OutputExistsError, match="overwrite"):
        write_assignment(out, _random_parts(tiny_meta, 3), num_parts=3, algo_name="random")
    new = _random_parts(tiny_meta, 3, seed=1)
    write_assignment(out, new, num_parts=3, algo_name="random", overwrite=True)
    meta, back = open_assignment(out, tiny_meta)
    assert meta.num_parts == 3
    np.testing.assert_array_equal(back["paper"].compute(), new["paper"])


def test_failed_write_never_looks_complete(tmp_path: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    out = tmp_path / "assign"
    write_assignment(out, _random_parts(tiny_meta, 2), num_parts=2, algo_name="random")
    bad = _random_parts(tiny_meta, 2)
    bad["paper"][7] = 2
    with pytest.raises(AssignmentError, match=r"parts\['paper'\]\[7\]: expected a partition ID in \[0, 2\)"):
        write_assignment(out, bad, num_parts=2, algo_name="random", overwrite=True)
    assert not (out / "partition_meta.json").exists()
    assert not (out / ".dglc-tmp").exists()
    assert not list(out.glob("*.tmp-dglc"))  # the in-place file of the failed write is gone too
    with pytest.raises(AssignmentError, match="partition_meta.json"):
        read_partition_meta(out)


def test_empty_node_type(tmp_path: Path) -> None:
    out = tmp_path / "assign"
    write_assignment(out, {"a": np.array([1, 0, 1]), "empty": np.empty(0, np.int64)}, num_parts=2, algo_name="random")
    assert (out / "empty.txt").read_bytes() == b""


def test_fsspec_memory_round_trip(tiny_meta: ChunkedGraphMetadata) -> None:
    truth = _random_parts(tiny_meta, 4)
    url = "memory://dglc-test-assign"
    write_assignment(url, truth, num_parts=4, algo_name="random", overwrite=True)
    meta, back = open_assignment(url, tiny_meta, chunks={"paper": (7, 8)})
    assert meta.num_parts == 4
    for ntype, values in truth.items():
        np.testing.assert_array_equal(back[ntype].compute(), values)


def test_sidecar_ignored_when_meta_or_sidecar_changed(tmp_path: Path, tiny_meta: ChunkedGraphMetadata) -> None:
    out = tmp_path / "assign"
    truth = _random_parts(tiny_meta, 4)
    write_assignment(out, truth, num_parts=4, algo_name="random")
    (out / "partition_meta.json").write_text('{"algo_name": "random", "num_parts": 2, "version": "1.0.0"}')
    _, back = open_assignment(out, tiny_meta)
    assert "zarr" not in back["paper"].name  # num_parts changed by hand: the text is re-validated
    if truth["paper"].max() >= 2:
        with pytest.raises(AssignmentError, match=r"paper\.txt: line \d+: expected a partition ID in \[0, 2\)"):
            back["paper"].compute()
    (out / "dglc_partition.json").write_text("{broken")
    meta, back = open_assignment(out, tiny_meta)  # an unreadable optional sidecar is ignored
    assert meta.method is None and "zarr" not in back["author"].name


@pytest.mark.parametrize("num_parts", [2, 10, 11])
def test_local_one_digit_ids_are_written_in_place(
    tmp_path: Path, tiny_meta: ChunkedGraphMetadata, num_parts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below 11 parts every line is 2 bytes: each block writes its bytes at their offset
    of one local file, no piece under ``.dglc-tmp`` (nothing read back); the bytes are
    those of the piece-and-join path (taken on ``memory://``)."""
    from dgl_chunked.io.assignment import writer
    from dgl_chunked.storage import fs

    truth = _random_parts(tiny_meta, num_parts)
    truth["empty"] = np.zeros(0, np.int64)
    parts = {t: da.from_array(v, chunks=4) for t, v in truth.items()}
    opened: list[str] = []
    real_open = fs.open_file

    def spy(path: str, mode: str = "rb", *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return real_open(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer._fs, "open_file", spy)
    joined: list[str] = []
    real_concat = fs.concat_files

    def concat_spy(pieces: list[str], target: str, storage_options: object = None) -> None:
        joined.append(str(target))
        real_concat(pieces, target, storage_options)  # type: ignore[arg-type]

    monkeypatch.setattr(writer._fs, "concat_files", concat_spy)
    out = tmp_path / "assign"
    write_assignment(out, parts, num_parts=num_parts, algo_name="random", binary=False)
    in_place = num_parts <= 10
    assert bool(joined) != in_place
    assert any(".dglc-tmp" in p for p in opened) != in_place
    assert not list(out.glob("*.tmp-dglc")) and not (out / ".dglc-tmp").exists()
    ref = f"memory://inplace-ref-{num_parts}"
    write_assignment(ref, parts, num_parts=num_parts, algo_name="random", binary=False)
    mem = fs.filesystem(ref)[0]
    for ntype, values in truth.items():
        data = (out / f"{ntype}.txt").read_bytes()
        assert data == mem.cat(f"/inplace-ref-{num_parts}/{ntype}.txt")
        assert data == "".join(f"{v}\n" for v in values).encode()
    mem.rm(f"/inplace-ref-{num_parts}", recursive=True)
