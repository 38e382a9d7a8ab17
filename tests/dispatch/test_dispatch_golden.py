"""Our dispatch of the golden graphs against DGL's own chunked-pipeline output.

``tiny-pipeline`` (types in name order, two graph formats) and ``type-order/<case>``
(type IDs not in name order; one type in eleven partitions): the config is DGL's
document byte for byte (but ``part_method``, which DGL's pipeline always writes as
"metis"), and every partition holds the same nodes, edges and HALO nodes.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.verify import load_partition_output, verify_partitions

from .helpers import output_files, read_assignment_txt

NTYPES = ["author", "institution", "paper"]


@pytest.fixture(scope="module", params=["none", "csc"])
def outputs(request, golden_dir, tmp_path_factory):
    """(ours, DGL's) output directories for one --graph-formats setting."""
    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path_factory.mktemp(f"ours-{request.param}")
    formats = ("csc",) if request.param == "csc" else ("coo",)
    import dask

    with dask.config.set(scheduler="synchronous"):
        dispatch(
            tiny / "chunked",
            tiny / "partition_assignment",
            out,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True, graph_formats=formats, overwrite=True),
        )
    return out, tiny / f"pipeline_out_{request.param}", formats


@pytest.fixture(scope="module", params=["user-item-tag", "mixed-names", "one-type"])
def type_order_outputs(request, golden_dir, tmp_path_factory):
    """(ours, DGL's) output directories of one type-order case."""
    case = golden_dir / "type-order" / request.param
    out = tmp_path_factory.mktemp(f"ours-{request.param}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small types leave some partitions without nodes of a type
        dispatch(
            case / "chunked",
            case / "partition_assignment",
            out,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True, overwrite=True),
        )
    return out, case / "pipeline_out"


def _assert_dgl_document(ours: Path, dgl: Path) -> None:
    text = (ours / "metadata.json").read_text()
    assert '"part_method": "random"' in text  # the assignment's method; DGL's pipeline says "metis"
    assert text.replace('"part_method": "random"', '"part_method": "metis"') == (dgl / "metadata.json").read_text()


def test_config_is_dgl_pipeline_document(outputs):
    _assert_dgl_document(*outputs[:2])


def test_type_order_config_is_dgl_pipeline_document(type_order_outputs):
    _assert_dgl_document(*type_order_outputs)


def test_type_order_same_nodes_edges_and_halo_sets_as_dgl(type_order_outputs):
    ours, dgl = type_order_outputs
    assert _blocks(ours)[:3] == _blocks(dgl)[:3]


def test_verify_reads_dgl_ours_and_our_older_configs(type_order_outputs, tmp_path):
    """verify takes type IDs from the config's values: DGL's output, ours, and ours with
    the sorted keys our configs had before they took the pipeline's layout."""
    ours, dgl = type_order_outputs
    older = tmp_path / "older"
    shutil.copytree(ours, older)
    doc = json.loads((older / "metadata.json").read_text())
    (older / "metadata.json").write_text(json.dumps(doc, indent=4, sort_keys=True))
    chunked = dgl.parent / "chunked"
    ntypes = json.loads((chunked / "metadata.json").read_text())["node_type"]
    assignment = read_assignment_txt(dgl.parent / "partition_assignment", ntypes)
    for out in (ours, dgl, older):
        report = verify_partitions(chunked, out, assignment=assignment)
        assert report.ok, (out, report.problems)
        assert report.checked.nodes == doc["num_nodes"] and report.checked.edges == doc["num_edges"]


def _config(path: Path) -> dict:
    return json.loads((path / "metadata.json").read_text())


def test_config_ranges_equal_dgl(outputs):
    ours, dgl, _ = outputs
    a, b = _config(ours), _config(dgl)
    for key in (
        "node_map",
        "edge_map",
        "ntypes",
        "etypes",
        "num_nodes",
        "num_edges",
        "num_parts",
        "graph_name",
        "halo_hops",
    ):
        assert a[key] == b[key], key
    for p in range(a["num_parts"]):
        assert a[f"part-{p}"] == b[f"part-{p}"]


def test_both_outputs_verify_against_the_input(outputs, tiny_chunked, golden_dir):
    assignment = read_assignment_txt(golden_dir / "tiny-pipeline" / "partition_assignment", NTYPES)
    for out in outputs[:2]:
        report = verify_partitions(tiny_chunked, out, assignment=assignment)
        assert report.ok, report.problems
        assert report.checked.edges == 65 and report.checked.nodes == 32


def _blocks(out: Path):
    config, parts = load_partition_output(out)
    node_sets, edge_sets, halos = {}, {}, {}
    new_to_orig = {}
    for p, part in enumerate(parts):
        for ntype in config.ntypes:
            s, e = config.node_map[ntype][p]
            ids = part.orig_nids[ntype]
            node_sets[p, ntype] = sorted(ids.tolist())
            for k in range(e - s):
                new_to_orig[s + k] = (ntype, int(ids[k]))
        for etype in config.edge_map:
            edge_sets[p, etype] = sorted(part.orig_eids[etype].tolist())
    for p, part in enumerate(parts):
        lo, hi = min(r[p][0] for r in config.node_map.values()), max(r[p][1] for r in config.node_map.values())
        halo_ids = part.ndata["_ID"][hi - lo :]
        halos[p] = sorted(new_to_orig[int(i)] for i in halo_ids)
    return node_sets, edge_sets, halos, parts


def test_same_nodes_edges_and_halo_sets_as_dgl(outputs):
    ours, dgl, formats = outputs
    a_nodes, a_edges, a_halo, a_parts = _blocks(ours)
    b_nodes, b_edges, b_halo, b_parts = _blocks(dgl)
    assert a_nodes == b_nodes
    assert a_edges == b_edges
    assert a_halo == b_halo
    for part, dgl_part in zip(a_parts, b_parts, strict=True):
        assert part.formats == dgl_part.formats == formats
        for key, value in part.ndata.items():
            assert value.dtype == dgl_part.ndata[key].dtype, key
        assert set(part.ndata) == set(dgl_part.ndata)
        assert set(part.edata) == set(dgl_part.edata)
        for key, value in part.node_feats.items():
            assert value.dtype == dgl_part.node_feats[key].dtype, key


def test_inside_blocks_our_order_is_ascending_original_id(outputs):
    ours, _, _ = outputs
    _, parts = load_partition_output(ours)
    for part in parts:
        for ids in [*part.orig_nids.values(), *part.orig_eids.values()]:
            assert np.all(np.diff(ids) > 0)


def test_existing_output_is_refused_then_overwritten(tmp_path, golden_dir):
    from dgl_chunked.errors import OutputExistsError

    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path / "out"
    dispatch(tiny / "chunked", tiny / "partition_assignment", out)
    first = (out / "part0" / "graph.dgl").read_bytes()
    with pytest.raises(OutputExistsError, match="--overwrite"):
        dispatch(tiny / "chunked", tiny / "partition_assignment", out)
    dispatch(tiny / "chunked", tiny / "partition_assignment", out, options=DispatchOptions(overwrite=True))
    assert (out / "part0" / "graph.dgl").read_bytes() == first
    assert not (out / "_staging").exists()
    assert sorted(p.name for p in out.iterdir()) == [".dglc-owned.json", "metadata.json", "part0", "part1"]
    shutil.rmtree(out)


def test_staging_removed_in_the_background_and_a_killed_runs_trash_by_the_next_run(
    tmp_path: Path, golden_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``background_removal``: the same partitions; the staging gone from its place when dispatch
    returns and from the disk once waited for; a trash a killed process left removed by a rerun."""
    from dgl_chunked.dispatch import staging as staging_module
    from dgl_chunked.dispatch import wait_for_staging_removal
    from dgl_chunked.storage.trash import TRASH_MARK

    tiny = golden_dir / "tiny-pipeline"
    args = (tiny / "chunked", tiny / "partition_assignment")
    dispatch(*args, tmp_path / "wait")
    out = tmp_path / "out"
    dispatch(*args, out, options=DispatchOptions(background_removal=True))
    assert not (out / "_staging").exists()
    wait_for_staging_removal()
    assert sorted(p.name for p in out.iterdir()) == [".dglc-owned.json", "metadata.json", "part0", "part1"]
    assert output_files(out) == output_files(tmp_path / "wait")

    monkeypatch.setattr(staging_module, "remove_later", lambda remove, what: None)  # killed before it ran
    dispatch(*args, out, options=DispatchOptions(background_removal=True, overwrite=True))
    [trash] = [p.name for p in out.iterdir() if TRASH_MARK in p.name]
    assert trash.startswith("_staging" + TRASH_MARK)
    monkeypatch.undo()
    dispatch(*args, out, options=DispatchOptions(overwrite=True))  # the next run removes it
    assert sorted(p.name for p in out.iterdir()) == [".dglc-owned.json", "metadata.json", "part0", "part1"]
    assert output_files(out) == output_files(tmp_path / "wait")
