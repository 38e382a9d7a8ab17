"""``verify_partitions`` / ``dgl-chunked verify``: out of core, and every corruption is named."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import dask
import numpy as np
import pytest

from dgl_chunked.cli import main
from dgl_chunked.dispatch import DispatchOptions, dispatch
from dgl_chunked.errors import OptionError
from dgl_chunked.io.dgl.binary import (
    HomogeneousGraph,
    read_graphs,
    read_tensor_dict,
    write_graph,
    write_tensor_dict,
)
from dgl_chunked.pipeline import run
from dgl_chunked.verify import VerifyCounts, verify_partitions
from dgl_chunked.verify.trainers import TrainerSpan, check_trainer_spans

NTYPES = ["author", "institution", "paper"]


def _assignment(golden_dir: Path) -> dict[str, np.ndarray]:
    folder = golden_dir / "tiny-pipeline" / "partition_assignment"
    return {t: np.loadtxt(folder / f"{t}.txt", dtype=np.int64, ndmin=1) for t in NTYPES}


@pytest.fixture(scope="module")
def good(golden_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our output for the golden tiny graph, with orig IDs (read-only: copy before breaking)."""
    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path_factory.mktemp("verify-good") / "out"
    with dask.config.set(scheduler="synchronous"):
        dispatch(
            tiny / "chunked",
            tiny / "partition_assignment",
            out,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    return out


def _copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "out"
    shutil.copytree(source, target)
    return target


@pytest.fixture
def out(good: Path, tmp_path: Path) -> Path:
    return _copy(good, tmp_path)


# --- editing a partition -----------------------------------------------------------


def _rewrite_graph(path: Path, edit: Callable[[dict], None]) -> None:
    """Read graph.dgl into a dict (num_nodes, src, dst, ndata, edata), edit it, write it back."""
    (g,), _ = read_graphs(path)
    etype = g.canonical_etypes[0]
    src, dst = g.edges()
    state = {
        "num_nodes": g.num_nodes[g.ntypes[0]],
        "src": np.asarray(src),
        "dst": np.asarray(dst),
        "ndata": {k: np.array(v) for k, v in g.ndata[g.ntypes[0]].items()},
        "edata": {k: np.array(v) for k, v in g.edata[etype].items()},
    }
    edit(state)
    write_graph(path, HomogeneousGraph(**state), formats=g.stored_formats[etype])


def _rewrite_tensors(path: Path, edit: Callable[[dict], None]) -> None:
    tensors = {k: np.array(v) for k, v in read_tensor_dict(path).items()}
    edit(tensors)
    write_tensor_dict(path, tensors)


def _config(out: Path) -> dict:
    return json.loads((out / "metadata.json").read_text())


def _problems(out: Path, tiny_chunked: Path, **kw: object) -> str:
    report = verify_partitions(tiny_chunked, out, **kw)
    assert not report.ok, "the corruption was not detected"
    return "\n".join(report.problems)


# --- the golden outputs verify -------------------------------------------------------


@pytest.mark.parametrize("which", ["pipeline_out_none", "pipeline_out_csc"])
def test_dgl_golden_outputs_verify(golden_dir: Path, tiny_chunked: Path, which: str) -> None:
    report = verify_partitions(tiny_chunked, golden_dir / "tiny-pipeline" / which, assignment=_assignment(golden_dir))
    assert report.ok, report.problems
    # the input's sizes (tiny-pipeline/chunked/metadata.json): every input item was found once
    assert report.checked == VerifyCounts(
        partitions=2,
        nodes_per_type={"author": 12, "institution": 5, "paper": 15},
        edges_per_type={"author:affiliated_with:institution": 10, "author:writes:paper": 25, "paper:cites:paper": 30},
        node_feature_rows={"author/mask": 12, "paper/feat": 15, "paper/label": 15},
        edge_feature_rows={"author:writes:paper/year": 25, "paper:cites:paper/w": 30},
    )
    assert (report.checked.nodes, report.checked.edges, report.checked.feature_rows) == (32, 65, 97)


def test_our_output_verifies_with_many_small_blocks(good: Path, tiny_chunked: Path, golden_dir: Path) -> None:
    """Node blocks of 4 IDs: 9 node tasks, each merging several partitions' segments."""
    report = verify_partitions(tiny_chunked, good, assignment=_assignment(golden_dir), block_rows=4)
    assert report.ok, report.problems
    assert report.checked.nodes == 32 and report.checked.edges == 65


def test_verify_runs_on_a_cluster_with_a_scratch_dir(
    good: Path, tiny_chunked: Path, tmp_path: Path, client: object
) -> None:
    scratch = tmp_path / "scratch"
    report = verify_partitions(tiny_chunked, good, scratch_dir=scratch, block_rows=8)
    assert report.ok, report.problems
    assert list(scratch.iterdir()) == []  # the staged facts are removed


def test_feature_files_are_never_read_whole(good: Path, tiny_chunked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Features are compared by byte ranges; only orig_*.dgl go through read_tensor_dict."""
    from dgl_chunked.verify import load

    real = load.read_tensor_dict

    def guarded(path: object, **kw: object) -> object:
        assert "feat" not in str(path), f"{path} read whole"
        return real(path, **kw)

    monkeypatch.setattr(load, "read_tensor_dict", guarded)
    assert verify_partitions(tiny_chunked, good).ok


# --- corruptions, each named ----------------------------------------------------------


def test_swapped_feature_rows(out: Path, tiny_chunked: Path) -> None:
    def swap(t: dict) -> None:
        t["paper/feat"][[0, 1]] = t["paper/feat"][[1, 0]]

    _rewrite_tensors(out / "part0" / "node_feat.dgl", swap)
    text = _problems(out, tiny_chunked)
    assert "part0: 2 row(s) of node feature paper/feat differ from the input" in text


def test_swapped_edge_feature_rows(out: Path, tiny_chunked: Path) -> None:
    def swap(t: dict) -> None:
        t["paper:cites:paper/w"][[0, -1]] = t["paper:cites:paper/w"][[-1, 0]]

    _rewrite_tensors(out / "part1" / "edge_feat.dgl", swap)
    ids = read_tensor_dict(out / "part1" / "orig_eids.dgl")["paper:cites:paper"]
    text = _problems(out, tiny_chunked)  # the two rows come from two input files: one message each
    for row in (0, len(ids) - 1):
        assert (
            f"part1: 1 row(s) of edge feature paper:cites:paper/w differ from the input "
            f"(e.g. type_eid {ids[row]} at local row {row})"
        ) in text


def test_feature_of_the_wrong_dtype(out: Path, tiny_chunked: Path) -> None:
    _rewrite_tensors(
        out / "part1" / "node_feat.dgl", lambda t: t.__setitem__("paper/feat", t["paper/feat"].astype(np.float64))
    )
    text = _problems(out, tiny_chunked)
    assert "part1: node feature paper/feat: expected shape" in text and "<f4" in text and "<f8" in text


def test_dropped_edge(out: Path, tiny_chunked: Path) -> None:
    """The last paper:cites:paper edge of part1 is gone from graph.dgl, orig_eids and edge_feat."""

    def drop(g: dict) -> None:
        g["src"], g["dst"] = g["src"][:-1], g["dst"][:-1]
        g["edata"] = {k: v[:-1] for k, v in g["edata"].items()}

    _rewrite_graph(out / "part1" / "graph.dgl", drop)
    _rewrite_tensors(
        out / "part1" / "orig_eids.dgl", lambda t: t.__setitem__("paper:cites:paper", t["paper:cites:paper"][:-1])
    )
    _rewrite_tensors(
        out / "part1" / "edge_feat.dgl", lambda t: t.__setitem__("paper:cites:paper/w", t["paper:cites:paper/w"][:-1])
    )
    text = _problems(out, tiny_chunked)
    total = (
        _config(out)["edge_map"]["paper:cites:paper"][1][1]
        - _config(out)["edge_map"]["author:affiliated_with:institution"][1][0]
    )
    assert "part1: edge _ID is not" in text and f"({total - 1} edges, edge_map says {total})" in text
    assert "part1: edge feature paper:cites:paper/w: expected shape" in text
    assert "edge type 'paper:cites:paper'" in text and "in no partition's orig_eids" in text


def test_duplicated_edge(out: Path, tiny_chunked: Path) -> None:
    """part1 names one input edge twice in orig_eids (and so loses another one)."""
    ids = read_tensor_dict(out / "part1" / "orig_eids.dgl")["paper:cites:paper"]
    _rewrite_tensors(
        out / "part1" / "orig_eids.dgl", lambda t: t["paper:cites:paper"].__setitem__(0, t["paper:cites:paper"][1])
    )
    text = _problems(out, tiny_chunked)
    assert (
        f"edge type 'paper:cites:paper': 1 input type_eid(s) are stored more than once "
        f"(e.g. type_eid {ids[1]}: 2 times, in part1, part1)"
    ) in text
    assert f"in no partition's orig_eids (e.g. type_eid {ids[0]})" in text
    assert "part1: 1 edge(s) of 'paper:cites:paper' do not match the input edges named by orig_eids" in text


def test_edge_in_two_partitions(out: Path, tiny_chunked: Path) -> None:
    """part0 and part1 both claim an input edge."""
    theirs = read_tensor_dict(out / "part1" / "orig_eids.dgl")["paper:cites:paper"]
    _rewrite_tensors(out / "part0" / "orig_eids.dgl", lambda t: t["paper:cites:paper"].__setitem__(0, theirs[0]))
    text = _problems(out, tiny_chunked)
    assert f"(e.g. type_eid {theirs[0]}: 2 times, in part0, part1)" in text


def test_wrong_inner_node_id(out: Path, tiny_chunked: Path) -> None:
    _rewrite_graph(out / "part1" / "graph.dgl", lambda g: g["ndata"]["_ID"].__setitem__(0, 0))
    assert "part1: inner nodes are not first with _ID" in _problems(out, tiny_chunked)


def test_wrong_halo_node_id(out: Path, tiny_chunked: Path) -> None:
    """A HALO node points at another (real, non-owned) node: the edges using it are wrong."""
    config = _config(out)
    lo, hi = config["node_map"]["author"][0][0], config["node_map"]["paper"][0][1]

    def retarget(g: dict) -> None:
        halo = g["ndata"]["_ID"][hi - lo :]
        others = np.setdiff1d(np.arange(hi, config["num_nodes"]), halo)
        same_type = [x for x in others if g["ndata"]["_TYPE"][hi - lo] == _type_of(config, x)]
        g["ndata"]["_ID"][hi - lo] = same_type[0]

    _rewrite_graph(out / "part0" / "graph.dgl", retarget)
    assert "part0:" in (text := _problems(out, tiny_chunked)) and "do not match the input edges" in text


def _type_of(config: dict, new_id: int) -> int:
    for t, ntype in enumerate(NTYPES):
        if any(s <= new_id < e for s, e in config["node_map"][ntype]):
            return t
    raise AssertionError(new_id)


def test_extra_halo_node(out: Path, tiny_chunked: Path) -> None:
    """A HALO node that no owned edge uses."""
    config = _config(out)

    def add(g: dict) -> None:
        n_inner = config["node_map"]["paper"][0][1]
        unused = np.setdiff1d(np.arange(n_inner, config["num_nodes"]), g["ndata"]["_ID"])[0]
        g["num_nodes"] += 1
        g["ndata"] = {
            k: np.append(v, {"_ID": unused, "inner_node": 0}.get(k, _type_of(config, unused))).astype(v.dtype)
            for k, v in g["ndata"].items()
        }

    _rewrite_graph(out / "part0" / "graph.dgl", add)
    assert "part0: HALO nodes are not exactly the non-owned sources of owned edges" in _problems(out, tiny_chunked)


def test_halo_node_owned_by_the_partition(out: Path, tiny_chunked: Path) -> None:
    config = _config(out)
    lo = config["node_map"]["author"][0][0]
    n_inner = config["node_map"]["paper"][0][1] - lo
    _rewrite_graph(out / "part0" / "graph.dgl", lambda g: g["ndata"]["_ID"].__setitem__(n_inner, lo))
    assert "part0: 1 HALO node(s) are owned by part0 itself (e.g. _ID 0)" in _problems(out, tiny_chunked)


@pytest.mark.parametrize("name", ["orig_nids", "orig_eids"])
def test_missing_orig_file(out: Path, tiny_chunked: Path, name: str) -> None:
    (out / "part1" / f"{name}.dgl").unlink()
    assert _problems(out, tiny_chunked) == (
        f"part1: {name}.dgl missing; verify needs them (dispatch with --save-orig-nids --save-orig-eids)"
    )


def test_node_in_the_wrong_partition(out: Path, tiny_chunked: Path, golden_dir: Path) -> None:
    wrong = _assignment(golden_dir)
    wrong["paper"][3] = 1 - wrong["paper"][3]
    text = _problems(out, tiny_chunked, assignment=wrong)
    assert "node type 'paper': 1 node(s) are not in their assigned partition (e.g. type_nid 3" in text


def test_node_missing_and_duplicated(out: Path, tiny_chunked: Path) -> None:
    ids = read_tensor_dict(out / "part0" / "orig_nids.dgl")["author"]
    _rewrite_tensors(out / "part0" / "orig_nids.dgl", lambda t: t["author"].__setitem__(0, t["author"][1]))
    text = _problems(out, tiny_chunked)
    assert (
        f"node type 'author': 1 input type_nid(s) in [0, 12) are in no partition's orig_nids "
        f"(e.g. type_nid {ids[0]})" in text
    )
    assert f"(e.g. type_nid {ids[1]}: 2 times, in part0, part0)" in text


def test_broken_config_ranges(out: Path, tiny_chunked: Path) -> None:
    config = _config(out)
    config["node_map"]["paper"][1][0] += 1
    (out / "metadata.json").write_text(json.dumps(config))
    text = _problems(out, tiny_chunked)
    assert "node_map ranges are not contiguous" in text and "node_map['paper'] covers 14 nodes" in text


def test_unreadable_graph_file(out: Path, tiny_chunked: Path) -> None:
    (out / "part0" / "graph.dgl").write_bytes(b"\0" * 10)
    assert _problems(out, tiny_chunked).startswith("part0: cannot read its files:")


# --- the command ------------------------------------------------------------------------


def test_cli_verify_ok_and_failing(out: Path, tiny_chunked: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--in-dir", str(tiny_chunked), "--out-dir", str(out)]) == 0
    assert "ok: 65 edges, 97 feature rows, 32 nodes, 2 partitions checked" in capsys.readouterr().out
    (out / "part1" / "orig_nids.dgl").unlink()
    assert main(["verify", "--in-dir", str(tiny_chunked), "--out-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("problem: part1: orig_nids.dgl missing") and "Traceback" not in err


# --- trainer_id (num_trainers_per_machine > 1) ----------------------------------------------


@pytest.fixture(scope="module")
def trained(tiny_chunked: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``run`` with 2 trainers per machine: node_feat.dgl holds ``<ntype>/trainer_id`` (read-only)."""
    out = tmp_path_factory.mktemp("verify-trainers") / "out"
    with dask.config.set(scheduler="synchronous"):
        run(
            tiny_chunked,
            out,
            num_parts=2,
            num_trainers_per_machine=2,
            seed=4,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    return out


@pytest.fixture
def trained_out(trained: Path, tmp_path: Path) -> Path:
    return _copy(trained, tmp_path)


def _trainers(out: Path, p: int) -> dict[str, np.ndarray]:
    return {k: v for k, v in read_tensor_dict(out / f"part{p}" / "node_feat.dgl").items() if "trainer_id" in k}


def test_trainer_ids_verify(trained: Path, tiny_chunked: Path) -> None:
    """Each part's trainers are [2p, 2p + 2); verify accepts them, given T or not, and counts as usual."""
    assert {k: sorted(set(v.tolist())) for k, v in _trainers(trained, 1).items()} == {
        f"{t}/trainer_id": [2, 3] for t in NTYPES
    }
    for per_machine in (None, 2):
        report = verify_partitions(tiny_chunked, trained, num_trainers_per_machine=per_machine)
        assert report.ok, report.problems
        assert report.checked.summary() == "65 edges, 97 feature rows, 32 nodes, 2 partitions"
    with pytest.raises(OptionError, match="num_trainers_per_machine must be >= 1 or None"):
        verify_partitions(tiny_chunked, trained, num_trainers_per_machine=0)
    text = "\n".join(verify_partitions(tiny_chunked, trained, num_trainers_per_machine=1).problems)
    assert "with 1 trainers per machine part0's trainers are [0, 1)" in text
    assert "with 1 trainers per machine part1's trainers are [1, 2)" in text


def test_trainer_id_of_another_machine(trained_out: Path, tiny_chunked: Path) -> None:
    """A part1 node names trainer 0 (part0's): no number of trainers per machine fits."""
    _rewrite_tensors(trained_out / "part1" / "node_feat.dgl", lambda t: t["paper/trainer_id"].__setitem__(0, 0))
    assert _problems(trained_out, tiny_chunked) == (
        "part1: node_feat.dgl paper/trainer_id names trainers 0..3 for items of part1; with 2 trainers per "
        "machine (the least number that fits the largest trainer IDs) part1's trainers are [2, 4)"
    )


def test_trainer_id_beyond_all_trainers(trained_out: Path, tiny_chunked: Path) -> None:
    """Trainer 4 with 2 parts of 2 trainers: outside [0, num_parts * T)."""
    _rewrite_tensors(trained_out / "part1" / "node_feat.dgl", lambda t: t["author/trainer_id"].__setitem__(0, 4))
    text = _problems(trained_out, tiny_chunked, num_trainers_per_machine=2)
    assert text == (
        "part1: node_feat.dgl author/trainer_id names trainers 2..4 for items of part1; "
        "with 2 trainers per machine part1's trainers are [2, 4)"
    )
    # inferred, T = 3 fits trainer 4, but then part1's 2s fall outside [3, 6)
    assert "part1's trainers are [3, 6)" in _problems(trained_out, tiny_chunked)


def test_trainer_id_that_is_not_one_integer_per_node(trained_out: Path, tiny_chunked: Path) -> None:
    _rewrite_tensors(
        trained_out / "part0" / "node_feat.dgl",
        lambda t: t.__setitem__("paper/trainer_id", t["paper/trainer_id"].astype(np.float32)),
    )
    rows = _config(trained_out)["node_map"]["paper"][0]
    assert _problems(trained_out, tiny_chunked) == (
        f"part0: node data paper/trainer_id: expected shape ({rows[1] - rows[0]},) of integers, "
        f"found ({rows[1] - rows[0]},) <f4"
    )


def _add_dgl_trainer_data(out: Path) -> None:
    """As DGL's partition_graph also stores: ndata trainer_id in graph.dgl (each local node's,
    HALO nodes too) and ``<etype>/trainer_id`` in edge_feat.dgl (the destination's)."""
    config = _config(out)
    by_new_id = np.concatenate(
        [_trainers(out, p)[f"{t}/trainer_id"] for p in range(config["num_parts"]) for t in NTYPES]
    )
    for p in range(config["num_parts"]):
        (g,), _ = read_graphs(out / f"part{p}" / "graph.dgl")
        nid = np.asarray(g.ndata[g.ntypes[0]]["_ID"])
        dst = np.asarray(g.edges()[1])
        e_lo = config["edge_map"][ETYPES[0]][p][0]
        extra = {
            f"{etype}/trainer_id": by_new_id[nid[dst[s - e_lo : e - e_lo]]]
            for etype, (s, e) in ((e, config["edge_map"][e][p]) for e in ETYPES)
        }
        node_trainers = by_new_id[nid]
        _rewrite_graph(
            out / f"part{p}" / "graph.dgl", lambda g, v=node_trainers: g["ndata"].__setitem__("trainer_id", v)
        )
        _rewrite_tensors(out / f"part{p}" / "edge_feat.dgl", lambda t, v=extra: t.update(v))


ETYPES = ["author:affiliated_with:institution", "author:writes:paper", "paper:cites:paper"]


def test_dgl_style_trainer_data_in_graph_and_edge_features(trained_out: Path, tiny_chunked: Path) -> None:
    _add_dgl_trainer_data(trained_out)
    assert "paper:cites:paper/trainer_id" in read_tensor_dict(trained_out / "part0" / "edge_feat.dgl")
    report = verify_partitions(tiny_chunked, trained_out, num_trainers_per_machine=2)
    assert report.ok, report.problems
    # a HALO node of part0 (owned by part1) named with part0's trainer 1
    n_inner = _config(trained_out)["node_map"]["paper"][0][1]
    _rewrite_graph(trained_out / "part0" / "graph.dgl", lambda g: g["ndata"]["trainer_id"].__setitem__(n_inner, 1))
    assert _problems(trained_out, tiny_chunked) == (
        "part0: ndata trainer_id names trainers 1..3 for items of part1; with 2 trainers per machine "
        "(the least number that fits the largest trainer IDs) part1's trainers are [2, 4)"
    )
    _rewrite_tensors(
        trained_out / "part1" / "edge_feat.dgl", lambda t: t["author:writes:paper/trainer_id"].__setitem__(0, 7)
    )
    assert "part1: edge_feat.dgl author:writes:paper/trainer_id names trainers 2..7 for items of part1" in (
        _problems(trained_out, tiny_chunked, num_trainers_per_machine=2)
    )


@pytest.mark.parametrize(
    ("spans", "per_machine", "bad"),
    [
        ([(0, 0, 0, 2), (1, 1, 3, 5)], None, []),  # T = 3
        ([(0, 0, 0, 2), (1, 1, 3, 5)], 3, []),
        ([(0, 0, 0, 2), (1, 1, 3, 5)], 4, [1]),  # part1's trainers would be [4, 8)
        ([(0, 0, 0, 1), (1, 1, 1, 3)], None, [1]),  # T = 2: part1 is [2, 4)
        ([(0, 1, 2, 3), (1, 1, 3, 3)], None, []),  # a HALO node of part0, owned by part1
        ([(0, 0, -1, 1), (1, 1, 2, 3)], None, [0]),
        ([(0, 0, 0, 0), (1, 1, 1, 1)], None, []),  # T = 1
    ],
)
def test_check_trainer_spans(spans: list, per_machine: int | None, bad: list[int]) -> None:
    problems = check_trainer_spans(
        [TrainerSpan(p, q, "x", lo, hi) for p, q, lo, hi in spans], num_parts=2, per_machine=per_machine
    )
    assert [int(s.split(":")[0].removeprefix("part")) for s in problems] == bad, problems
