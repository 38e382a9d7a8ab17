"""remap: results in DGL's new-ID space back in original-ID order, row for row.

A partition's ``node_feat.dgl`` holds a feature in exactly the order a trainer's
result array has (type-wise new IDs), so remapping the concatenated partition
features must give back the chunked graph's own feature array.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
import zarr

from dgl_chunked.io.dgl import write_tensor_dict
from dgl_chunked.io.graphbolt.torch_tensors import write_torch_tensors
from dgl_chunked.remap import RemapError, ResultFile, ResultSource, remap_results

from .conftest import Parts


def _write(fmt: str, path: Path, array: np.ndarray, key: str = "pred") -> ResultFile:
    if fmt == "npy":
        np.save(path.with_suffix(".npy"), array)
        return ResultFile(str(path.with_suffix(".npy")))
    if fmt == "parquet":
        column = pa.array(list(array)) if array.ndim > 1 else pa.array(array)
        pq.write_table(pa.table({key: column}), path.with_suffix(".parquet"), row_group_size=97)
        return ResultFile(str(path.with_suffix(".parquet")))
    if fmt == "orc":  # small stripes: rows are read stripe by stripe
        column = pa.array(list(array)) if array.ndim > 1 else pa.array(array)
        orc.write_table(
            pa.table({"ids": np.arange(len(array)), key: column}),
            str(path.with_suffix(".orc")),
            stripe_size=1,
            batch_size=97,
        )
        return ResultFile(str(path.with_suffix(".orc")))
    if fmt == "zarr":
        group = zarr.open_group(str(path.with_suffix(".zarr")), mode="w")
        group.create_array(key, data=array, chunks=(101, *array.shape[1:]))
        return ResultFile(str(path.with_suffix(".zarr")), key=key)
    if fmt == "pt":
        write_torch_tensors(path.with_suffix(".pt"), {key: array})
        return ResultFile(str(path.with_suffix(".pt")))
    write_tensor_dict(path.with_suffix(".dgl"), {"other": np.zeros(2), key: array})
    return ResultFile(str(path.with_suffix(".dgl")), key=key)


def _read(out: Path, fmt: str, stem: str, value: str = "value") -> np.ndarray:
    if fmt == "npy":
        return np.load(out / f"{stem}.npy")
    if fmt == "zarr":
        return np.asarray(zarr.open_group(str(out / f"{stem}.zarr"), mode="r")[value][:])
    table = pd.read_parquet(out / stem)
    ids = table["type_nid" if stem.startswith("nodes/") else "type_eid"].to_numpy()
    assert (ids == np.arange(len(table))).all()  # ascending original IDs, every one
    column = table[value].to_numpy()
    return np.stack(column) if column.dtype == object and len(column) else column


@pytest.mark.parametrize("fmt", ["npy", "parquet", "orc", "zarr", "pt", "dgl"])
def test_one_array_in_any_input_format(hetero: Parts, tmp_path: Path, fmt: str) -> None:
    want = hetero.original("node", "paper", "feat")
    source = ResultSource((_write(fmt, tmp_path / "paper", hetero.new_order("node", "paper", "feat")),))
    result = remap_results(hetero.out, {"paper": source}, tmp_path / "out")
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "nodes" / "paper.npy"), want)
    summary = result.types["node/paper"]
    assert (summary.rows, summary.present, summary.row_shape) == (want.shape[0], want.shape[0], want.shape[1:])
    assert "orig_nids.dgl" in summary.mapping
    manifest = json.loads((tmp_path / "out" / "remap.json").read_text())
    assert manifest["types"]["node/paper"]["files"] == {"values": "nodes/paper.npy"}
    assert not (tmp_path / "out" / "_tmp").exists()


def test_log_lines_name_remap_not_dispatch(hetero: Parts, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """remap's steps log under its own logger and say "remap step", never "dispatch step"."""
    np.save(tmp_path / "year.npy", hetero.new_order("node", "paper", "year"))
    with caplog.at_level(logging.INFO, logger="dgl_chunked"):
        remap_results(hetero.out, {"paper": str(tmp_path / "year.npy")}, tmp_path / "out")
    steps = [r for r in caplog.records if " step: " in r.getMessage()]
    assert steps and {r.name for r in steps} == {"dgl_chunked.remap"}
    assert all(r.getMessage().startswith("remap step: ") for r in steps)


@pytest.mark.parametrize("fmt", ["npy", "zarr", "parquet"])
def test_every_output_format(hetero: Parts, tmp_path: Path, fmt: str) -> None:
    np.save(tmp_path / "emb.npy", hetero.new_order("node", "author", "emb"))
    np.save(tmp_path / "order.npy", hetero.new_order("edge", "author:writes:paper", "order"))
    results = {"author": str(tmp_path / "emb.npy"), "writes": str(tmp_path / "order.npy")}
    remap_results(hetero.out, results, tmp_path / "out", graph=hetero.chunked, format=fmt, block_bytes=4096)
    got = _read(tmp_path / "out", fmt, "nodes/author")
    np.testing.assert_array_equal(got, hetero.original("node", "author", "emb"))
    got = _read(tmp_path / "out", fmt, "edges/author:writes:paper")
    np.testing.assert_array_equal(got, hetero.original("edge", "author:writes:paper", "order"))


def test_row_ranges_per_rank_in_natural_order_or_with_starts(hetero: Parts, tmp_path: Path) -> None:
    new = hetero.new_order("node", "paper", "year")
    cuts = [0, 37, 37, 300, len(new)]  # an empty rank file too
    names = ["rank-1", "rank-2", "rank-3", "rank-10"]
    for name, lo, hi in zip(names, cuts, cuts[1:], strict=False):
        np.save(tmp_path / f"{name}.npy", new[lo:hi])
    remap_results(hetero.out, {"paper": [str(tmp_path / "rank-*.npy")]}, tmp_path / "a")
    np.testing.assert_array_equal(np.load(tmp_path / "a/nodes/paper.npy"), hetero.original("node", "paper", "year"))
    shuffled = [(names[i], cuts[i]) for i in (3, 0, 2, 1)]
    source = ResultSource.ranges([str(tmp_path / f"{n}.npy") for n, _ in shuffled], starts=[s for _, s in shuffled])
    remap_results(hetero.out, {"paper": source}, tmp_path / "b")
    assert (tmp_path / "a/nodes/paper.npy").read_bytes() == (tmp_path / "b/nodes/paper.npy").read_bytes()


def test_pairs_per_rank_cover_a_subset(hetero: Parts, tmp_path: Path) -> None:
    new = hetero.new_order("node", "author", "emb")
    want = hetero.original("node", "author", "emb")
    rng = np.random.default_rng(0)
    chosen = rng.permutation(len(new))[: len(new) // 2]
    for rank, ids in enumerate(np.array_split(chosen, 3)):
        write_torch_tensors(tmp_path / f"pred-{rank}.pt", {"ids": ids, "emb": new[ids]})
    source = ResultSource.pairs(str(tmp_path / "pred-*.pt"))
    result = remap_results(hetero.out, {"author": source}, tmp_path / "npy")
    assert result.types["node/author"].present == len(chosen)
    present = np.load(tmp_path / "npy/nodes/author.present.npy")
    values = np.load(tmp_path / "npy/nodes/author.npy")
    assert present.sum() == len(chosen)
    np.testing.assert_array_equal(values[present], want[present])
    assert np.isnan(values[~present]).all()
    remap_results(
        hetero.out, {"author": source}, tmp_path / "pq", graph=hetero.chunked, format="parquet", block_bytes=2048
    )
    table = pd.read_parquet(tmp_path / "pq/nodes/author")
    assert list(table.columns) == ["emb", "type_nid"] and len(table) == len(chosen)
    np.testing.assert_array_equal(table["type_nid"], np.flatnonzero(present))
    np.testing.assert_array_equal(np.stack(table["emb"].to_numpy()), want[present])


def test_pairs_in_separate_id_and_row_files(hetero: Parts, tmp_path: Path) -> None:
    new = hetero.new_order("edge", "paper:cites:paper", "w")
    order = np.random.default_rng(1).permutation(len(new))
    np.save(tmp_path / "ids.npy", order)
    pq.write_table(pa.table({"w": new[order]}), tmp_path / "rows.parquet", row_group_size=50)
    source = ResultSource.pairs(str(tmp_path / "rows.parquet"), str(tmp_path / "ids.npy"))
    remap_results(hetero.out, {"paper:cites:paper": source}, tmp_path / "out", block_bytes=1000)
    np.testing.assert_array_equal(
        np.load(tmp_path / "out/edges/paper:cites:paper.npy"), hetero.original("edge", "paper:cites:paper", "w")
    )
    assert not (tmp_path / "out/edges/paper:cites:paper.present.npy").exists()  # they cover every edge


def test_assignment_gives_the_same_bytes_as_orig_ids(hetero: Parts, tmp_path: Path) -> None:
    bare = hetero.without_orig_ids(tmp_path / "bare")
    for kind, name, feat in (("node", "paper", "feat"), ("edge", "author:writes:paper", "order")):
        np.save(tmp_path / f"{feat}.npy", hetero.new_order(kind, name, feat))
    results = {"paper": str(tmp_path / "feat.npy"), "author:writes:paper": str(tmp_path / "order.npy")}
    a = remap_results(hetero.out, results, tmp_path / "a", block_bytes=3000)
    b = remap_results(bare, results, tmp_path / "b", graph=hetero.chunked, assignment=hetero.assign, block_bytes=1000)
    assert all("assignment" in t.mapping for t in b.types.values())
    assert all("orig_" in t.mapping for t in a.types.values())
    for rel in ("nodes/paper.npy", "edges/author:writes:paper.npy"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_blocks_and_a_distributed_client_do_not_change_the_bytes(hetero: Parts, tmp_path: Path, client: object) -> None:
    np.save(tmp_path / "feat.npy", hetero.new_order("node", "paper", "feat"))
    results = {"paper": str(tmp_path / "feat.npy")}
    remap_results(hetero.out, results, tmp_path / "one", client=client)
    remap_results(hetero.out, results, tmp_path / "many", block_bytes=700, client=client)
    assert (tmp_path / "one/nodes/paper.npy").read_bytes() == (tmp_path / "many/nodes/paper.npy").read_bytes()
    np.testing.assert_array_equal(np.load(tmp_path / "one/nodes/paper.npy"), hetero.original("node", "paper", "feat"))


def test_dgl_chunked_pipeline_output(golden_dir: Path, tmp_path: Path) -> None:
    """DGL's own pipeline output: its orig_*.dgl are the mapping; without them the assignment is refused
    (DGL's numbering is not ours, and its output carries no mark of ours)."""
    import shutil

    from dgl_chunked.verify import load_partition_output

    tiny = golden_dir / "tiny-pipeline"
    _, parts = load_partition_output(tiny / "pipeline_out_none")
    np.save(tmp_path / "w.npy", np.concatenate([p.edge_feats["paper:cites:paper/w"] for p in parts]))
    remap_results(tiny / "pipeline_out_none", {"cites": str(tmp_path / "w.npy")}, tmp_path / "orig")
    want = np.concatenate([np.load(p) for p in sorted((tiny / "chunked/edge_data/paper:cites:paper").glob("w-*.npy"))])
    np.testing.assert_array_equal(np.load(tmp_path / "orig" / "edges/paper:cites:paper.npy"), want)
    bare = tmp_path / "bare"
    shutil.copytree(tiny / "pipeline_out_none", bare)
    for f in bare.glob("part*/orig_*.dgl"):
        f.unlink()
    with pytest.raises(RemapError, match=r"dgl_chunked did not write these partitions .*--save-orig-eids"):
        remap_results(
            bare,
            {"cites": str(tmp_path / "w.npy")},
            tmp_path / "assign",
            graph=tiny / "chunked",
            assignment=tiny / "partition_assignment",
        )
    assert not (tmp_path / "assign" / "remap.json").exists()


def test_keys_beside_values_in_parquet(keyed: tuple[Parts, dict[str, Path]], tmp_path: Path) -> None:
    parts, raw = keyed
    np.save(tmp_path / "feat.npy", parts.new_order("node", "account", "feat"))
    remap_results(
        parts.out,
        {"account": str(tmp_path / "feat.npy")},
        tmp_path / "out",
        graph=parts.chunked,
        format="parquet",
        block_bytes=5000,
    )
    table = pd.read_parquet(tmp_path / "out/nodes/account")
    assert list(table.columns) == ["value", "nid", "type_nid"]  # GraphStorm's remap_result: value, nid
    nodes = pd.read_parquet(raw["nodes"]).set_index("key")
    np.testing.assert_array_equal(np.stack(table["value"]), np.stack(nodes.loc[table["nid"], "feat"]))


def test_empty_types_and_empty_partitions(tmp_path: Path) -> None:
    import warnings

    import dgl_chunked as dglc
    from dgl_chunked.lookup import lookup_ids

    spec = dglc.SynthSpec(
        node_types={"a": 300, "tiny": 2, "none": 0},
        edge_types={"a:x:tiny": 50, "a:y:a": 0},
        node_features={"tiny": {"f": (3, "float32")}, "none": {"g": (0, "float32")}},
    )
    dglc.write_synthetic_graph(tmp_path / "chunked", spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty assignment files, empty partitions
        dglc.run(
            tmp_path / "chunked",
            tmp_path / "out",
            num_parts=3,
            options=dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    parts = Parts(tmp_path / "chunked", tmp_path / "out", tmp_path / "unused")
    np.save(tmp_path / "t.npy", parts.new_order("node", "tiny", "f"))
    np.save(tmp_path / "n.npy", np.zeros((0, 2), np.float32))
    np.save(tmp_path / "e.npy", np.zeros(0, np.int64))
    results = {"tiny": str(tmp_path / "t.npy"), "none": str(tmp_path / "n.npy"), "a:y:a": str(tmp_path / "e.npy")}
    for fmt in ("npy", "zarr", "parquet"):
        result = remap_results(tmp_path / "out", results, tmp_path / fmt, graph=tmp_path / "chunked", format=fmt)
        assert {k: v.present for k, v in result.types.items()} == {"node/tiny": 2, "node/none": 0, "edge/a:y:a": 0}
        np.testing.assert_array_equal(_read(tmp_path / fmt, fmt, "nodes/tiny"), parts.original("node", "tiny", "f"))
        assert _read(tmp_path / fmt, fmt, "nodes/none").shape[0] == 0
    assert lookup_ids(tmp_path / "out", np.array([1, 0]), tmp_path / "lk", type="tiny", by="id").rows.count(0) >= 1
    assert lookup_ids(tmp_path / "out", np.array([], np.int64), tmp_path / "lk0", type="none", by="id").rows == (
        0,
        0,
        0,
    )


def test_outputs_on_an_object_store_url(hetero: Parts, tmp_path: Path) -> None:
    import io

    import fsspec

    from dgl_chunked.lookup import lookup_ids

    memory = fsspec.filesystem("memory")
    np.save(tmp_path / "feat.npy", hetero.new_order("node", "paper", "feat"))
    want = hetero.original("node", "paper", "feat")
    try:
        for fmt in ("npy", "zarr", "parquet"):  # npy: pieces per block, then one concatenation
            remap_results(
                hetero.out,
                {"paper": str(tmp_path / "feat.npy")},
                f"memory://dglc-remap-{fmt}",
                graph=hetero.chunked,
                format=fmt,
                block_bytes=30000,
            )
            assert memory.exists(f"/dglc-remap-{fmt}/remap.json") and not memory.exists(f"/dglc-remap-{fmt}/_tmp")
        got = np.load(io.BytesIO(memory.cat("/dglc-remap-npy/nodes/paper.npy")))
        np.testing.assert_array_equal(got, want)
        lookup_ids(hetero.out, np.arange(0, len(want), 5), "memory://dglc-lookup", type="paper", by="id")
        assert memory.exists("/dglc-lookup/lookup.json") and memory.exists("/dglc-lookup/part0/paper.pt")
    finally:
        for name in ("dglc-remap-npy", "dglc-remap-zarr", "dglc-remap-parquet", "dglc-lookup"):
            if memory.exists(f"/{name}"):
                memory.rm(f"/{name}", recursive=True)
