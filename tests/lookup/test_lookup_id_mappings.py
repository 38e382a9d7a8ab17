"""GSProcessing's raw_id_mappings as lookup's keys: the mapping files themselves, CSV, Parquet and memory queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dgl_chunked.cli import main
from dgl_chunked.lookup import lookup_ids
from tests.remap.gsp_mappings import Gsp, one_error_line, orig_in_new_order, write_mapping


def _check_lookup(out: Path, seeds: Path, ntype: str, expect_orig: np.ndarray) -> None:
    """Every partition: its own nodes, ascending new IDs, original IDs and the ``new`` label aligned."""
    orig = orig_in_new_order(out, ntype)
    offsets = np.concatenate([[0], np.cumsum([len(o) for o in orig])])
    found = []
    for p, owned in enumerate(orig):
        nids = np.load(seeds / f"part{p}" / f"{ntype}.nids.npy")
        orig_nids = np.load(seeds / f"part{p}" / f"{ntype}.orig_nids.npy")
        assert np.all(np.diff(nids) > 0) and np.all((nids >= offsets[p]) & (nids < offsets[p + 1]))
        np.testing.assert_array_equal(owned[nids - offsets[p]], orig_nids)
        np.testing.assert_array_equal(np.load(seeds / f"part{p}" / f"{ntype}.new.npy"), orig_nids)
        found.append(orig_nids)
    np.testing.assert_array_equal(np.sort(np.concatenate(found)), np.sort(expect_orig))


def test_lookup_takes_the_mapping_files_themselves_as_queries(
    gsp: Gsp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's command: --queries raw_id_mappings/<ntype>/parquet/* --column orig, keys from the partitions."""
    monkeypatch.setattr("dgl_chunked.remap.id_mappings.PIECE_ROWS", 64)  # many pieces of every file
    monkeypatch.setattr("dgl_chunked.lookup.api._KEYS_PER_BUCKET", 100)  # several hash buckets
    for ntype, users in (("paper", gsp.paper), ("author", gsp.author)):
        args = ["lookup", "--partitions", str(gsp.out), "--out-dir", str(tmp_path / ntype), "--type", ntype]
        queries = str(gsp.out / "raw_id_mappings" / ntype / "parquet" / "*")
        assert main([*args, "--queries", queries, "--column", "orig", "--label", "new"]) == 0
        _check_lookup(gsp.out, tmp_path / ntype, ntype, np.arange(len(users)))


def test_lookup_of_some_user_ids_from_csv_and_memory(gsp: Gsp, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    pick = rng.choice(len(gsp.paper), size=200, replace=False)
    pd.DataFrame({"id": gsp.paper[pick], "new": pick}).to_csv(tmp_path / "q.csv", index=False)
    # the chunked graph's raw_id_mappings (--in-dir), the partitions' copy, or --id-mappings
    lookup_ids(
        gsp.out, tmp_path / "q.csv", tmp_path / "a", type="paper", column="id", labels=["new"], graph=gsp.chunked
    )
    _check_lookup(gsp.out, tmp_path / "a", "paper", pick)
    apick = rng.choice(len(gsp.author), size=100, replace=False)
    frame = pd.DataFrame({"id": gsp.author[apick], "new": apick})
    lookup_ids(
        gsp.out,
        frame,
        tmp_path / "b",
        type="author",
        column="id",
        labels=["new"],
        id_mappings=gsp.chunked / "raw_id_mappings",
    )
    _check_lookup(gsp.out, tmp_path / "b", "author", apick)
    frame.to_parquet(tmp_path / "q.parquet")  # integer user IDs in a Parquet column
    lookup_ids(gsp.out, tmp_path / "q.parquet", tmp_path / "c", type="author", column="id", labels=["new"])
    _check_lookup(gsp.out, tmp_path / "c", "author", apick)


def test_lookup_of_an_unknown_user_id_is_one_line(gsp: Gsp, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pd.DataFrame({"id": [gsp.paper[3], "p-nobody"]}).to_csv(tmp_path / "q.csv", index=False)
    args = ["lookup", "--partitions", str(gsp.out), "--queries", str(tmp_path / "q.csv"), "--type", "paper"]
    assert main([*args, "--out-dir", str(tmp_path / "o")]) != 0
    line = one_error_line(capsys)
    assert "q.csv line 3" in line and "'p-nobody'" in line and "raw_id_mappings" in line


def test_integer_queries_against_text_user_ids_in_many_buckets(
    gsp: Gsp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text user IDs that read as numbers ('1000000004711'), queried as integers: matched (and hashed) as text."""
    monkeypatch.setattr("dgl_chunked.lookup.api._KEYS_PER_BUCKET", 50)
    text = np.array([str(v) for v in gsp.author], dtype=object)
    write_mapping(tmp_path / "m", "author", text, files=4, seed=8)
    pick = np.random.default_rng(3).choice(len(text), size=150, replace=False)
    frame = pd.DataFrame({"id": gsp.author[pick], "new": pick})
    frame.to_parquet(tmp_path / "q.parquet")
    for i, queries in enumerate((frame, tmp_path / "q.parquet")):
        lookup_ids(
            gsp.out, queries, tmp_path / f"o{i}", type="author", column="id", labels=["new"], id_mappings=tmp_path / "m"
        )
        _check_lookup(gsp.out, tmp_path / f"o{i}", "author", pick)
