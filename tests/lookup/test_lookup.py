"""lookup: original IDs or keys with labels -> per partition, DGL's new IDs a trainer loads, labels aligned."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from dgl_chunked.chunk import read_orig_keys
from dgl_chunked.cli import main
from dgl_chunked.errors import OptionError
from dgl_chunked.io.formats.torch import read_torch_file
from dgl_chunked.lookup import lookup_ids
from dgl_chunked.verify import load_partition_output
from tests.remap.conftest import Parts


def _truth(out: Path, ntype: str) -> list[np.ndarray]:
    """Per partition, the original IDs in new-ID order (from orig_nids.dgl)."""
    _, parts = load_partition_output(out)
    return [p.orig_nids[ntype] for p in parts]


def _check(out: Path, result_dir: Path, ntype: str, labels: dict[int, dict[str, np.ndarray]], total: int) -> None:
    """Every partition's files: ascending new IDs of its own nodes, original IDs and labels aligned."""
    orig = _truth(out, ntype)
    offsets = np.concatenate([[0], np.cumsum([len(o) for o in orig])])
    seen = 0
    for p, owned in enumerate(orig):
        nids = np.load(result_dir / f"part{p}" / f"{ntype}.nids.npy")
        orig_nids = np.load(result_dir / f"part{p}" / f"{ntype}.orig_nids.npy")
        assert nids.dtype == np.int64 and np.all(np.diff(nids) > 0)
        assert np.all((nids >= offsets[p]) & (nids < offsets[p + 1]))  # partition p's type-wise range
        np.testing.assert_array_equal(owned[nids - offsets[p]], orig_nids)
        pt = read_torch_file(result_dir / f"part{p}" / f"{ntype}.pt")
        np.testing.assert_array_equal(pt["nids"], nids)
        for name in labels:
            got = np.load(result_dir / f"part{p}" / f"{ntype}.{name}.npy")
            np.testing.assert_array_equal(
                got, np.stack([labels[name][o] for o in orig_nids]) if len(orig_nids) else got
            )
            np.testing.assert_array_equal(pt[name], got)
        seen += len(nids)
    assert seen == total


def test_ids_with_labels_from_parquet_csv_npy_and_memory(hetero: Parts, tmp_path: Path) -> None:
    n = sum(len(o) for o in _truth(hetero.out, "paper"))
    rng = np.random.default_rng(2)
    ids = rng.permutation(n)[: n // 2]
    vec = rng.normal(size=(len(ids), 3)).astype(np.float32)
    frame = pd.DataFrame({"paper_id": ids, "label": ids % 7, "vec": list(vec)})
    frame.to_parquet(tmp_path / "q.parquet", row_group_size=100)
    frame[["paper_id", "label"]].to_csv(tmp_path / "q.csv", index=False)
    np.save(tmp_path / "q.npy", ids)
    labels = {"label": dict(zip(ids.tolist(), (ids % 7).tolist(), strict=True))}
    with_vec = {**labels, "vec": dict(zip(ids.tolist(), vec, strict=True))}
    lookup_ids(
        hetero.out,
        tmp_path / "q.parquet",
        tmp_path / "a",
        type="paper",
        column="paper_id",
        labels=["label", "vec"],
        by="id",
        block_rows=300,
    )
    _check(hetero.out, tmp_path / "a", "paper", with_vec, len(ids))
    lookup_ids(hetero.out, frame, tmp_path / "b", type="paper", column="paper_id", labels=["label", "vec"], by="id")
    _check(hetero.out, tmp_path / "b", "paper", with_vec, len(ids))
    assert (
        main(
            [
                "lookup",
                "--partitions",
                str(hetero.out),
                "--queries",
                str(tmp_path / "q.csv"),
                "--type",
                "paper",
                "--by",
                "id",
                "--label",
                "label",
                "--out-dir",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )
    _check(hetero.out, tmp_path / "c", "paper", labels, len(ids))
    lookup_ids(hetero.out, tmp_path / "q.npy", tmp_path / "d", type="paper", by="id", formats=["npy"], block_rows=128)
    _check_npy_only(tmp_path / "d", hetero.out)
    manifest = json.loads((tmp_path / "c" / "lookup.json").read_text())
    assert manifest["by"] == "id" and sum(manifest["rows"]) == len(ids) and manifest["labels"] == ["label"]


def test_ids_with_labels_from_orc_stripes(hetero: Parts, tmp_path: Path) -> None:
    """ORC queries (io/formats/orc.py) are read stripe by stripe, named columns and vector labels as Parquet's."""
    n = sum(len(o) for o in _truth(hetero.out, "paper"))
    rng = np.random.default_rng(5)
    ids = rng.permutation(n)[: n // 2]
    vec = rng.normal(size=(len(ids), 2)).astype(np.float32)
    table = pa.table({"label": ids % 5, "paper_id": ids, "vec": pa.array(list(vec), pa.list_(pa.float32()))})
    orc.write_table(table, str(tmp_path / "q.orc"), stripe_size=1, batch_size=50)
    assert orc.ORCFile(str(tmp_path / "q.orc")).nstripes > 2
    lookup_ids(
        hetero.out,
        tmp_path / "q.orc",
        tmp_path / "a",
        type="paper",
        column="paper_id",
        labels=["label", "vec"],
        by="id",
        block_rows=100,
    )
    labels = {
        "label": dict(zip(ids.tolist(), (ids % 5).tolist(), strict=True)),
        "vec": dict(zip(ids.tolist(), vec, strict=True)),
    }
    _check(hetero.out, tmp_path / "a", "paper", labels, len(ids))


def _check_npy_only(result_dir: Path, out: Path) -> None:
    for p in range(len(_truth(out, "paper"))):
        assert (result_dir / f"part{p}" / "paper.nids.npy").exists()
        assert not (result_dir / f"part{p}" / "paper.pt").exists()


def test_keys_through_the_cli_with_the_assignment(keyed: tuple[Parts, dict[str, Path]], tmp_path: Path) -> None:
    parts, raw = keyed
    bare = parts.without_orig_ids(tmp_path / "bare")
    labels = pd.read_csv(raw["labels"])
    args = [
        "lookup",
        "--partitions",
        str(bare),
        "--in-dir",
        str(parts.chunked),
        "--partitions-dir",
        str(parts.assign),
        "--queries",
        str(raw["labels"]),
        "--column",
        "key",
        "--label",
        "label",
        "--out-dir",
        str(tmp_path / "s"),
    ]
    assert main(args) == 0
    keys = read_orig_keys(parts.chunked, "account")
    by_key = dict(zip(labels["key"], labels["label"], strict=True))
    want = {"label": {i: by_key[k] for i, k in enumerate(keys)}}
    _check(parts.out, tmp_path / "s", "account", want, len(labels))
    assert json.loads((tmp_path / "s" / "lookup.json").read_text())["by"] == "key"


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *expected: str) -> None:
    assert main(argv) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for text in expected:
        assert text in lines[0], (text, lines[0])


def test_bad_queries_name_the_file_and_row(
    keyed: tuple[Parts, dict[str, Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts, raw = keyed
    keys = read_orig_keys(parts.chunked, "account")
    (tmp_path / "q.csv").write_text(f"key,label\n{keys[0]},1\n{keys[1]},2\nacct-nobody,3\n")
    base = ["lookup", "--partitions", str(parts.out), "--in-dir", str(parts.chunked), "--out-dir", str(tmp_path / "o")]
    _refused(capsys, [*base, "--queries", str(tmp_path / "q.csv")], "q.csv line 4", "'acct-nobody'", "not a node")
    (tmp_path / "r.csv").write_text(f"key,label\n{keys[3]},1\n{keys[4]},2\n{keys[3]},3\n")
    _refused(
        capsys, [*base, "--queries", str(tmp_path / "r.csv")], "r.csv line 4", f"repeats key {keys[3]!r}", "line 2"
    )
    assert not (tmp_path / "o" / "lookup.json").exists() and not (tmp_path / "o" / "part0").exists()
    np.save(tmp_path / "ids.npy", np.array([0, 1, len(keys)]))
    _refused(capsys, [*base, "--by", "id", "--queries", str(tmp_path / "ids.npy")], "ids.npy row 2", "outside")
    _refused(capsys, [*base, "--queries", str(tmp_path / "q.csv"), "--column", "nope"], "no column 'nope'")
    with pytest.raises(OptionError, match="keys are unknown"):
        lookup_ids(parts.out, np.array([1, 2]), tmp_path / "x", by="key")


def test_log_lines_name_lookup_not_dispatch(hetero: Parts, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """lookup's steps log under its own logger and say "lookup step", never "dispatch step"."""
    with caplog.at_level(logging.INFO, logger="dgl_chunked"):
        lookup_ids(hetero.out, np.arange(0, 50, 7), tmp_path / "o", type="paper", by="id")
    steps = [r for r in caplog.records if " step: " in r.getMessage()]
    assert steps and {r.name for r in steps} == {"dgl_chunked.lookup"}
    assert all(r.getMessage().startswith("lookup step: ") for r in steps)
    assert "write partitions" in {r.getMessage().removeprefix("lookup step: ").split(" (")[0] for r in steps}
