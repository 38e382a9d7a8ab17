"""``remap`` and ``lookup`` on DGL's own chunked-pipeline output, checked row by row against what real DGL loads.

The input is the golden ``tests/data/golden/shuffled-order/`` (``scripts/make-golden.py``):
DGL 2.1.0's pipeline (``--save-orig-nids --save-orig-eids``) on a graph with more than 16
items of a type per partition, so DGL's unstable sort by type (``data_shuffle.py``,
``reorder_data``) leaves its new IDs out of original-ID order inside every type; the
fixture asserts that it does, so the tests cannot pass by an ascending accident.

What DGL loads (``load_partition`` in the DGL venv) is what a trainer's results look
like: each partition's node and edge features in DGL's type-wise new-ID order.
Remapping their concatenation must give the chunked input's features in original-ID
order, row for row; looking up original IDs must give the new IDs at which DGL serves
those very rows. Without ``orig_*ids.dgl`` (DGL's default) both commands refuse in one
line naming the dispatch flag; keys without the chunked graph are refused in one line
naming ``--in-dir``; an error found by a task under ``--workers 2`` prints that line only.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dgl_chunked.io.chunked.graph import open_chunked_graph
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.io.formats.tensor_rows import read_payload_rows

from .harness import run_dgl_json

pytestmark = pytest.mark.realdgl

NODE_FEATS = {"user": "feat", "item": "label"}
EDGE_FEATS = {"user:buys:item": "rating"}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dgl_chunked", *argv], capture_output=True, text=True, timeout=300, check=False
    )


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


def _refused(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _orig_ids(out: Path, kind: str, name: str) -> list[np.ndarray]:
    files = sorted(out.glob(f"part*/orig_{kind}ids.dgl"), key=lambda p: int(p.parent.name[4:]))
    return [read_payload_rows(str(f), (e := index_tensor_dict(str(f))[name]), 0, e.rows) for f in files]


@pytest.fixture(scope="module")
def dgl_run(golden_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The golden DGL output, a copy without orig_*ids.dgl, and what real DGL loads from it."""
    golden = golden_dir / "shuffled-order"
    out = golden / "pipeline_out"
    for kind, names in (("n", NODE_FEATS), ("e", EDGE_FEATS)):
        for name in names:
            for p, ids in enumerate(_orig_ids(out, kind, name)):  # the point of the golden set
                assert (np.diff(ids) < 0).any(), f"part{p} {name}: DGL's order happens to ascend"
    arrays, info = run_dgl_json("partition", str(out / "metadata.json"))
    num_parts = len([k for k in info if k.startswith("p")])
    bare = tmp_path_factory.mktemp("dgl-bare") / "out"
    shutil.copytree(out, bare)
    for f in [*bare.glob("part*/orig_nids.dgl"), *bare.glob("part*/orig_eids.dgl")]:
        f.unlink()
    graph = open_chunked_graph(golden / "chunked")
    served = {}  # what DGL serves, in type-wise new-ID order
    truth = {}  # the chunked input, in original-ID order
    for name, feat in NODE_FEATS.items():
        served[name] = np.concatenate([arrays[f"p{p}/node_feats/{name}/{feat}"] for p in range(num_parts)])
        truth[name] = np.asarray(graph.node_feature(name, feat).compute())
    for name, feat in EDGE_FEATS.items():
        served[name] = np.concatenate([arrays[f"p{p}/edge_feats/{name}/{feat}"] for p in range(num_parts)])
        truth[name] = np.asarray(graph.edge_feature(name, feat).compute())
    return {"golden": golden, "out": out, "bare": bare, "served": served, "truth": truth, "info": info}


def test_remap_dgl_output_row_by_row(dgl_run: dict[str, Any], tmp_path: Path) -> None:
    argv = ["remap", "--partitions", str(dgl_run["out"]), "--block-size", "2KiB"]
    for name in (*NODE_FEATS, *EDGE_FEATS):
        np.save(tmp_path / f"{name}.npy", dgl_run["served"][name])
        argv += ["--result", f"{name}={tmp_path / f'{name}.npy'}"]
    _ok(_cli(*argv, "--out-dir", str(tmp_path / "r")))
    for name in NODE_FEATS:
        np.testing.assert_array_equal(np.load(tmp_path / f"r/nodes/{name}.npy"), dgl_run["truth"][name])
    for name in EDGE_FEATS:
        np.testing.assert_array_equal(np.load(tmp_path / f"r/edges/{name}.npy"), dgl_run["truth"][name])
    # pairs, a subset in random order, per "rank"
    served = dgl_run["served"]["user"]
    ids = np.random.default_rng(0).permutation(served.shape[0])[: served.shape[0] // 2]
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "rows.npy", served[ids])
    _ok(
        _cli(
            "remap", "--partitions", str(dgl_run["out"]), "--out-dir", str(tmp_path / "p"), "--block-size", "1KiB",
            "--result", f"user={tmp_path / 'rows.npy'}", "--ids", f"user={tmp_path / 'ids.npy'}",
        )
    )  # fmt: skip
    present = np.load(tmp_path / "p/nodes/user.present.npy")
    assert present.sum() == ids.size
    np.testing.assert_array_equal(np.load(tmp_path / "p/nodes/user.npy")[present], dgl_run["truth"]["user"][present])


def test_lookup_dgl_output_gives_the_rows_dgl_serves(dgl_run: dict[str, Any], tmp_path: Path) -> None:
    truth, served = dgl_run["truth"]["user"], dgl_run["served"]["user"]
    queries = np.random.default_rng(1).permutation(truth.shape[0])[:100]
    np.save(tmp_path / "q.npy", queries)
    _ok(
        _cli(
            "lookup", "--partitions", str(dgl_run["out"]), "--queries", str(tmp_path / "q.npy"), "--type", "user",
            "--by", "id", "--out-dir", str(tmp_path / "l"),
        )
    )  # fmt: skip
    ranges = dgl_run["info"]["p0"]["gpb"]
    seen = []
    for p in range(2):
        nids = np.load(tmp_path / f"l/part{p}/user.nids.npy")
        orig = np.load(tmp_path / f"l/part{p}/user.orig_nids.npy")
        assert (np.diff(nids) > 0).all()
        np.testing.assert_array_equal(served[nids], truth[orig])  # DGL serves the queried node's row there
        seen.append(orig)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.sort(queries))
    assert ranges  # DGL read the partition book


def test_without_orig_ids_dgl_output_is_refused(dgl_run: dict[str, Any], golden_dir: Path, tmp_path: Path) -> None:
    bare, golden = dgl_run["bare"], dgl_run["golden"]
    np.save(tmp_path / "user.npy", dgl_run["served"]["user"])
    np.save(tmp_path / "q.npy", np.arange(10))
    mapping = ["--in-dir", str(golden / "chunked"), "--partitions-dir", str(golden / "partition_assignment")]
    for extra in ([], mapping):
        line = _refused(
            _cli(
                "remap", "--partitions", str(bare), "--out-dir", str(tmp_path / f"r{len(extra)}"),
                "--result", f"user={tmp_path / 'user.npy'}", *extra,
            ),
            "orig_nids.dgl: not found", "--save-orig-nids",
        )  # fmt: skip
        assert ("dgl_chunked did not write these partitions" in line) and not (tmp_path / f"r{len(extra)}").exists()
        _refused(
            _cli(
                "lookup", "--partitions", str(bare), "--out-dir", str(tmp_path / f"l{len(extra)}"),
                "--queries", str(tmp_path / "q.npy"), "--type", "user", "--by", "id", *extra,
            ),
            "orig_nids.dgl: not found", "--save-orig-nids",
        )  # fmt: skip
    # DGL's in-memory partitioner keeps its mapping in memory only: refused the same way
    tiny = golden_dir / "tiny-pipeline"
    np.save(tmp_path / "paper.npy", np.zeros(15))
    _refused(
        _cli(
            "remap", "--partitions", str(tiny / "partition_graph_out/tiny.json"), "--out-dir", str(tmp_path / "pg"),
            "--result", f"paper={tmp_path / 'paper.npy'}", "--in-dir", str(tiny / "chunked"),
            "--partitions-dir", str(tiny / "partition_assignment"),
        ),
        "orig_nids.dgl: not found", "--save-orig-nids",
    )  # fmt: skip


def test_keys_need_the_chunked_graph(dgl_run: dict[str, Any], tmp_path: Path) -> None:
    np.save(tmp_path / "q.npy", np.arange(10))
    base = ["lookup", "--partitions", str(dgl_run["out"]), "--queries", str(tmp_path / "q.npy"), "--type", "user"]
    for by in ([], ["--by", "key"]):
        _refused(_cli(*base, *by, "--out-dir", str(tmp_path / "l")), "keys are unknown", "--in-dir", "--by id")
    _refused(
        _cli(*base[:-2], "--by", "id", "--out-dir", str(tmp_path / "l")), "say which one", "--type"
    )  # three node types, no --type
    assert not (tmp_path / "l").exists()
    np.save(tmp_path / "user.npy", dgl_run["served"]["user"])
    _refused(
        _cli(
            "remap", "--partitions", str(dgl_run["out"]), "--out-dir", str(tmp_path / "pq"),
            "--result", f"user={tmp_path / 'user.npy'}", "--format", "parquet",
        ),
        "format parquet", "--in-dir",
    )  # fmt: skip


def test_task_errors_under_workers_print_one_line(dgl_run: dict[str, Any], tmp_path: Path) -> None:
    total = dgl_run["truth"]["user"].shape[0]
    np.save(tmp_path / "q.npy", np.array([3, 1, total + 4]))  # found by the task staging the queries
    _refused(
        _cli(
            "lookup", "--partitions", str(dgl_run["out"]), "--queries", str(tmp_path / "q.npy"), "--type", "user",
            "--by", "id", "--out-dir", str(tmp_path / "l"), "--workers", "2",
        ),
        "q.npy row 2", f"original ID {total + 4} is outside",
    )  # fmt: skip
    np.save(tmp_path / "ids.npy", np.array([5, 7, 5]))  # found by the task staging a slab
    np.save(tmp_path / "rows.npy", np.zeros(3))
    _refused(
        _cli(
            "remap", "--partitions", str(dgl_run["out"]), "--out-dir", str(tmp_path / "r"),
            "--result", f"user={tmp_path / 'rows.npy'}", "--ids", f"user={tmp_path / 'ids.npy'}", "--workers", "2",
        ),
        "ids.npy row 2", "repeats new ID 5", "row 0",
    )  # fmt: skip


def test_partition_graph_output_with_its_mapping_saved(golden_dir: Path, tmp_path: Path) -> None:
    """``dgl.distributed.partition_graph(..., return_mapping=True)`` output, its mapping saved per partition as
    ``part<i>/orig_nids.dgl`` / ``orig_eids.dgl`` (docs/user-guide/results.md): remap gives DGL's rows back in
    original order, lookup the new IDs where DGL serves them."""
    import json

    from dgl_chunked.io.dgl import write_tensor_dict

    tiny = golden_dir / "tiny-pipeline"
    out = tmp_path / "pg"
    shutil.copytree(tiny / "partition_graph_out", out)
    config = json.loads((out / "tiny.json").read_text())
    mapping = np.load(out / "return_mapping.npz")
    for kind, key in (("n", "node_map"), ("e", "edge_map")):
        for p in range(config["num_parts"]):
            entries = {}
            for name, ranges in config[key].items():
                start = sum(e - s for s, e in ranges[:p])
                entries[name] = mapping[f"orig_{kind}ids__{name}"][start : start + ranges[p][1] - ranges[p][0]]
            write_tensor_dict(out / f"part{p}/orig_{kind}ids.dgl", entries)
    arrays, _ = run_dgl_json("partition", str(out / "tiny.json"))
    served = np.concatenate([arrays[f"p{p}/node_feats/paper/feat"] for p in range(config["num_parts"])])
    truth = np.asarray(open_chunked_graph(tiny / "chunked").node_feature("paper", "feat").compute())
    np.save(tmp_path / "feat.npy", served)
    _ok(_cli("remap", "--partitions", str(out / "tiny.json"), "--out-dir", str(tmp_path / "r"), "--result",
             f"paper={tmp_path / 'feat.npy'}"))  # fmt: skip
    np.testing.assert_array_equal(np.load(tmp_path / "r/nodes/paper.npy"), truth)
    np.save(tmp_path / "q.npy", np.array([14, 0, 7, 3]))
    _ok(_cli("lookup", "--partitions", str(out / "tiny.json"), "--out-dir", str(tmp_path / "l"), "--queries",
             str(tmp_path / "q.npy"), "--type", "paper", "--by", "id"))  # fmt: skip
    for p in range(config["num_parts"]):
        nids = np.load(tmp_path / f"l/part{p}/paper.nids.npy")
        np.testing.assert_array_equal(served[nids], truth[np.load(tmp_path / f"l/part{p}/paper.orig_nids.npy")])
