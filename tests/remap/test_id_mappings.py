"""GSProcessing's raw_id_mappings: carried by run, user IDs of remap's tables (lookup's keys: tests/lookup)."""

from __future__ import annotations

import filecmp
import shutil
import warnings
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dgl_chunked as dglc
from dgl_chunked.cli import main
from dgl_chunked.lookup import lookup_ids
from dgl_chunked.remap import RemapError, ResultSource, remap_results
from dgl_chunked.verify import load_partition_output

from .gsp_mappings import Gsp, one_error_line, orig_in_new_order, read_mapping

# --- carried next to the partitions ------------------------------------------------------


def test_run_carries_raw_id_mappings_file_for_file(gsp: Gsp) -> None:
    src, dst = gsp.chunked / "raw_id_mappings", gsp.out / "raw_id_mappings"
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    assert sorted(p.relative_to(dst) for p in dst.rglob("*") if p.is_file()) == files
    assert any(f.name == "_SUCCESS" for f in files) and any(f.name.endswith(".crc") for f in files)
    assert all(filecmp.cmp(src / f, dst / f, shallow=False) for f in files)
    assert not (gsp.out / "_tmp_raw_id_mappings").exists()
    # GraphStorm's reader sees the same mapping there (dirname(part_config)/raw_id_mappings)
    pd.testing.assert_frame_equal(read_mapping(dst, "paper"), read_mapping(src, "paper"))


def test_overwrite_replaces_the_copy_and_a_graph_without_mappings_leaves_none(gsp: Gsp, tmp_path: Path) -> None:
    shutil.copytree(gsp.chunked, tmp_path / "chunked")
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        dglc.run(tmp_path / "chunked", tmp_path / "out", num_parts=2, seed=1)
        (tmp_path / "chunked" / "raw_id_mappings" / "author" / "parquet" / "_SUCCESS").unlink()
        dglc.run(
            tmp_path / "chunked", tmp_path / "out", num_parts=2, seed=1, options=dglc.DispatchOptions(overwrite=True)
        )
        assert not (tmp_path / "out" / "raw_id_mappings" / "author" / "parquet" / "_SUCCESS").exists()
        assert (tmp_path / "out" / "raw_id_mappings" / "paper" / "parquet" / "_SUCCESS").exists()
        shutil.rmtree(tmp_path / "chunked" / "raw_id_mappings")
        dglc.run(tmp_path / "chunked", tmp_path / "bare", num_parts=2, seed=1)
    assert not (tmp_path / "bare" / "raw_id_mappings").exists()
    assert (tmp_path / "chunked" / "metadata.json").exists()  # the input is only read


# --- lookup and remap alike -------------------------------------------------------------


def _broken(gsp: Gsp, where: Path, edit: str) -> Path:
    """A copy of the partitions whose paper mapping repeats a user ID, or gives a node no row."""
    shutil.copytree(gsp.out, where)
    path = sorted((where / "raw_id_mappings" / "paper" / "parquet").glob("part-*.parquet"))[1]
    table = pq.read_table(path).to_pandas()
    if edit == "repeat-orig":
        table.loc[5, "orig"] = gsp.paper[0]
    else:  # row 5's node loses its row, node 0 gets two
        table.loc[5, "new"] = 0
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
    return where


def test_a_repeated_user_id_is_one_line_naming_it(gsp: Gsp, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = _broken(gsp, tmp_path / "parts", "repeat-orig")
    pd.DataFrame({"id": gsp.paper[:3]}).to_csv(tmp_path / "q.csv", index=False)
    args = ["lookup", "--partitions", str(parts), "--queries", str(tmp_path / "q.csv"), "--type", "paper"]
    assert main([*args, "--out-dir", str(tmp_path / "o")]) != 0
    line = one_error_line(capsys)
    assert f"user ID {gsp.paper[0]!r}" in line and "is given again" in line and "part-00001" in line
    np.save(tmp_path / "r.npy", np.zeros(len(gsp.paper), np.float32))
    args = ["remap", "--partitions", str(parts), "--result", f"paper={tmp_path / 'r.npy'}", "--format", "parquet"]
    assert main([*args, "--out-dir", str(tmp_path / "r")]) != 0
    assert f"user ID {gsp.paper[0]!r}" in one_error_line(capsys)
    assert not (tmp_path / "r" / "remap.json").exists()


def test_a_node_without_user_id_stops_remap(gsp: Gsp, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = _broken(gsp, tmp_path / "parts", "repeat-new")
    np.save(tmp_path / "r.npy", np.zeros(len(gsp.paper), np.float32))
    args = ["remap", "--partitions", str(parts), "--result", f"paper={tmp_path / 'r.npy'}", "--format", "csv"]
    assert main([*args, "--out-dir", str(tmp_path / "r")]) != 0
    line = one_error_line(capsys)
    assert "new 0 of node type 'paper' is given again" in line or "no row has new" in line, line
    assert not (tmp_path / "r" / "remap.json").exists()
    # one row fewer than the partitions' nodes: refused before any task, naming both counts
    path = sorted((parts / "raw_id_mappings" / "paper" / "parquet").glob("part-*.parquet"))[0]
    pq.write_table(pq.read_table(path).slice(1), path)
    assert main([*args, "--out-dir", str(tmp_path / "r2")]) != 0
    line = one_error_line(capsys)
    assert f"holds {len(gsp.paper) - 1} user IDs" in line and f"hold {len(gsp.paper)} nodes" in line


# --- remap: Parquet and CSV tables with the user's IDs -----------------------------------


def _new_order(gsp: Gsp, ntype: str, feat: str) -> np.ndarray:
    _, parts = load_partition_output(gsp.out)
    return np.concatenate([p.node_feats[f"{ntype}/{feat}"] for p in parts])


def _feature(gsp: Gsp, ntype: str, feat: str) -> np.ndarray:
    return np.asarray(dglc.open_chunked_graph(gsp.chunked).node_feature(ntype, feat).compute())


def _read_csv_dir(path: Path) -> pd.DataFrame:
    """Every block's file (a block without results holds the header only), user IDs as text."""
    files = sorted(path.glob("part-*.csv"))
    frame = pd.concat([pd.read_csv(f, dtype={"nid": str, "~id": str, "id": str}) for f in files], ignore_index=True)
    return frame.astype({"type_nid": np.int64})


def test_remap_writes_user_ids_beside_values_in_parquet_and_csv(gsp: Gsp, tmp_path: Path) -> None:
    feat, year = _new_order(gsp, "paper", "feat"), _new_order(gsp, "paper", "year")
    np.save(tmp_path / "feat.npy", feat)
    np.save(tmp_path / "year.npy", year)
    truth_feat, truth_year = _feature(gsp, "paper", "feat"), _feature(gsp, "paper", "year")
    result = remap_results(
        gsp.out, {"paper": str(tmp_path / "feat.npy")}, tmp_path / "pq", format="parquet", block_bytes=8000
    )
    assert result.types["node/paper"].columns == ("value", "nid", "type_nid")
    assert "raw_id_mappings" in str(result.types["node/paper"].user_ids)
    table = pq.read_table(tmp_path / "pq" / "nodes" / "paper").to_pandas()
    assert len(list((tmp_path / "pq" / "nodes" / "paper").glob("part-*.parquet"))) > 3  # one file per block
    ids = table["type_nid"].to_numpy()
    np.testing.assert_array_equal(np.sort(ids), np.arange(len(gsp.paper)))
    np.testing.assert_array_equal(table["nid"].to_numpy(), gsp.paper[ids])
    np.testing.assert_array_equal(np.stack(table["value"].to_numpy()), truth_feat[ids])
    # CSV, GraphStorm's column renames and delimiter; 2-D rows joined by ';'
    args = ["remap", "--partitions", str(gsp.out), "--out-dir", str(tmp_path / "csv"), "--output-format", "csv"]
    args += ["--result", f"paper={tmp_path / 'feat.npy'}", "--name", "paper=emb", "--block-size", "5000"]
    assert main([*args, "--column-names", "nid,~id", "--column-names", "emb,embedding"]) == 0
    frame = _read_csv_dir(tmp_path / "csv" / "nodes" / "paper")
    assert list(frame.columns) == ["embedding", "~id", "type_nid"]
    ids = frame["type_nid"].to_numpy()
    np.testing.assert_array_equal(frame["~id"].to_numpy(), gsp.paper[ids])
    got = np.array([[float(v) for v in row.split(";")] for row in frame["embedding"]], dtype=np.float32)
    np.testing.assert_array_equal(got, truth_feat[ids])
    # integer user IDs, a scalar value, tab-separated
    np.save(tmp_path / "emb.npy", _new_order(gsp, "author", "emb"))
    args = ["remap", "--partitions", str(gsp.out), "--out-dir", str(tmp_path / "tsv"), "--format", "csv"]
    assert main([*args, "--result", f"author={tmp_path / 'emb.npy'}", "--output-delimiter", "\t"]) == 0
    text = (tmp_path / "tsv" / "nodes" / "author" / "part-00000.csv").read_text().splitlines()
    assert text[0] == "value\tnid\ttype_nid"
    frame = pd.concat([pd.read_csv(f, sep="\t") for f in sorted((tmp_path / "tsv" / "nodes" / "author").glob("*.csv"))])
    np.testing.assert_array_equal(frame["nid"].to_numpy(), gsp.author[frame["type_nid"].to_numpy()])
    del truth_year, year


def test_remap_pairs_keep_only_rows_with_a_result(gsp: Gsp, tmp_path: Path) -> None:
    year = _new_order(gsp, "paper", "year")
    orig = np.concatenate(orig_in_new_order(gsp.out, "paper"))
    rng = np.random.default_rng(9)
    ids = rng.choice(len(year), size=300, replace=False)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "rows.npy", year[ids])
    source = ResultSource.pairs(str(tmp_path / "rows.npy"), str(tmp_path / "ids.npy"), name="pred")
    remap_results(
        gsp.out, {"paper": source}, tmp_path / "o", format="csv", block_bytes=2000, column_names={"nid": "id"}
    )
    frame = _read_csv_dir(tmp_path / "o" / "nodes" / "paper").rename(columns={"id": "nid"})
    assert sorted(frame.columns) == ["nid", "pred", "type_nid"] and len(frame) == 300
    np.testing.assert_array_equal(np.sort(frame["type_nid"].to_numpy()), np.sort(orig[ids]))
    np.testing.assert_array_equal(frame["nid"].to_numpy(), gsp.paper[frame["type_nid"].to_numpy()])
    truth = _feature(gsp, "paper", "year")
    np.testing.assert_array_equal(frame["pred"].to_numpy(), truth[frame["type_nid"].to_numpy()])


def test_column_names_that_do_not_fit_are_refused(gsp: Gsp, tmp_path: Path) -> None:
    np.save(tmp_path / "r.npy", np.zeros(len(gsp.paper), np.float32))
    with pytest.raises(dglc.errors.OptionError, match="no column 'emb'"):
        remap_results(
            gsp.out, {"paper": str(tmp_path / "r.npy")}, tmp_path / "a", format="parquet", column_names={"emb": "x"}
        )
    with pytest.raises(dglc.errors.OptionError, match="two columns named 'type_nid'"):
        remap_results(
            gsp.out, {"paper": str(tmp_path / "r.npy")}, tmp_path / "b", format="csv", column_names={"nid": "type_nid"}
        )
    with pytest.raises(dglc.errors.OptionError, match="only Parquet and CSV"):
        remap_results(gsp.out, {"paper": str(tmp_path / "r.npy")}, tmp_path / "c", column_names={"nid": "x"})


def test_types_without_user_ids_and_edge_types_get_no_nid(gsp: Gsp, tmp_path: Path) -> None:
    np.save(tmp_path / "f.npy", np.arange(40, dtype=np.int64))  # institution: 40 nodes, no mapping
    result = remap_results(gsp.out, {"institution": str(tmp_path / "f.npy")}, tmp_path / "o", format="parquet")
    assert result.types["node/institution"].columns == ("value", "type_nid")
    with pytest.raises(RemapError, match="has no keys"):
        lookup_ids(gsp.out, np.array([1, 2]), tmp_path / "l", type="institution", by="key")


def test_graphstorm_prediction_files_by_original_id(
    gsp: Gsp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GraphStorm's trainers save predict-<r>.pt with predict_nids-<r>.pt holding original IDs: --id-space original."""
    from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors

    truth = _feature(gsp, "paper", "year")
    chosen = np.random.default_rng(4).choice(len(truth), size=500, replace=False)
    for r, ids in enumerate(np.array_split(chosen, 3)):
        write_torch_tensors(tmp_path / f"predict-{r:05d}.pt", {"p": truth[ids]})
        write_torch_tensors(tmp_path / f"predict_nids-{r:05d}.pt", {"n": ids.astype(np.int64)})
    args = ["remap", "--partitions", str(gsp.out), "--output-format", "csv", "--name", "paper=pred"]
    args += ["--result", f"paper={tmp_path / 'predict-*.pt'}", "--ids", f"paper={tmp_path / 'predict_nids-*.pt'}"]
    assert main([*args, "--id-space", "original", "--out-dir", str(tmp_path / "o"), "--block-size", "3000"]) == 0
    frame = _read_csv_dir(tmp_path / "o" / "nodes" / "paper")
    assert list(frame.columns) == ["pred", "nid", "type_nid"] and len(frame) == len(chosen)
    ids = frame["type_nid"].to_numpy()
    np.testing.assert_array_equal(np.sort(ids), np.sort(chosen))
    np.testing.assert_array_equal(frame["nid"].to_numpy(), gsp.paper[ids])
    np.testing.assert_array_equal(frame["pred"].to_numpy(), truth[ids])
    # read as new IDs (the default), the same files put other rows under these user IDs: the flag matters
    assert main([*args, "--out-dir", str(tmp_path / "n")]) == 0
    other = _read_csv_dir(tmp_path / "n" / "nodes" / "paper")
    assert not np.array_equal(np.sort(other["type_nid"].to_numpy()), np.sort(chosen))
    write_torch_tensors(
        tmp_path / "predict_nids-00002.pt", {"n": np.full(len(np.array_split(chosen, 3)[2]), chosen[0])}
    )
    assert main([*args, "--id-space", "original", "--out-dir", str(tmp_path / "bad")]) != 0
    line = one_error_line(capsys)
    assert "predict_nids-00002.pt" in line and f"original ID {chosen[0]}" in line
