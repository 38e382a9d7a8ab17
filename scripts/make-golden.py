"""Regenerate the DGL-written golden files of the test suite (``tests/data/golden/``).

Run with the python of the real-DGL side virtualenv (DGL 2.1.0, torch 2.2.1; see
``scripts/setup-real-dgl.sh``), never with dgl_chunked's own environment::

    $(bash scripts/setup-real-dgl.sh) scripts/make-golden.py [--out tests/data/golden] [--dgl-src DIR]

``--dgl-src`` is a checkout of DGL's source at tag v2.1.0: DGL's chunked pipeline
(``tools/chunk_graph.py``, ``tools/distpartitioning/data_proc_pipeline.py``) is not part
of the wheel. Without it the script clones ``https://github.com/dmlc/dgl`` at v2.1.0
(``--depth 1``) into a temporary directory.

What it writes (spec ``dgl-formats.md`` section 8 describes each file):

``serialization/``
    ``dgl.data.utils.save_tensors`` and ``dgl.save_graphs`` of small literal tensors and
    graphs (``t_*``, ``g_*``, ``hg``, ``multi``), and ``torch.save`` files of plain tensors
    (``pt_*.pt``: a tensor, dicts, a view into a larger storage, a list, a nested dict, and
    two that ``remap`` refuses: a strided view and a module). ``annot_g_default.txt`` is not written
    here: it is the hand-checked field-by-field reading of ``g_default.dgl`` from the spec
    (section 2.9), kept as it is; it has no junk bytes in it, so it holds for every
    regenerated ``g_default.dgl``.
``tiny-pipeline/``
    ``original_graph.dgl``: a heterograph (3 node types, 3 edge types, 32 nodes, 65 edges)
    drawn from ``numpy.random.default_rng(7)``; ``chunked/``: DGL's ``chunk_graph`` of it
    into 2 chunks, with paths made relative and ``num_nodes_per_type`` /
    ``num_edges_per_type`` added (the keys DGL's partition tools read);
    ``partition_assignment/``: part ``(type_nid + 1) % 2`` written with DGL's CSV writer and
    ``partition_meta.json``; ``pipeline_out_none/`` and ``pipeline_out_csc/``: DGL's chunked
    pipeline (world size 1, ``--save-orig-nids --save-orig-eids``, the second with
    ``--graph-formats csc``); ``partition_graph_out/``: ``dgl.distributed.partition_graph``
    (random, seed 0) with ``return_mapping.npz``.

Not bit-reproducible: bytes 32..4095 of every DGL graph file are uninitialised memory,
and ``partition_graph``'s random method depends on torch's generator. The tests compare
against the committed files, never against a fresh run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from dgl.data.utils import save_tensors  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DGL_TAG = "v2.1.0"


def write_serialization(out: Path) -> None:
    """The tensor-dict and graph files of spec section 8 (``golden/serialization``)."""
    out.mkdir(parents=True, exist_ok=True)
    save_tensors(str(out / "t_empty.dgl"), {})
    save_tensors(str(out / "t_two.dgl"), {"a": torch.arange(3), "bb": torch.ones(2, 2)})
    save_tensors(
        str(out / "t_types.dgl"),
        {
            "i8": torch.tensor([1, -2], dtype=torch.int8),
            "u8": torch.tensor([1, 2], dtype=torch.uint8),
            "i16": torch.tensor([1], dtype=torch.int16),
            "i32": torch.tensor([7], dtype=torch.int32),
            "empty2d": torch.zeros(0, 4),
            "f16": torch.tensor([1.0], dtype=torch.float16),
            "bf16": torch.tensor([1.0], dtype=torch.bfloat16),
            "f64": torch.tensor([1.0], dtype=torch.float64),
            "bool": torch.tensor([True, False, True]),
            "scalar": torch.tensor(5),
        },
    )

    def plain() -> dgl.DGLGraph:
        return dgl.graph(([0, 0, 1, 2], [1, 2, 2, 0]), num_nodes=4)

    def featured() -> dgl.DGLGraph:
        g = plain()
        g.ndata["x"] = torch.arange(4)
        g.edata["w"] = torch.ones(4)
        return g

    dgl.save_graphs(str(out / "g_default.dgl"), [plain()])
    dgl.save_graphs(str(out / "g_feat.dgl"), [featured()], {"lab": torch.tensor([9])})
    dgl.save_graphs(str(out / "g_csc.dgl"), [featured()], formats="csc")
    dgl.save_graphs(str(out / "g_all.dgl"), [featured()], formats=["coo", "csr", "csc"])
    dgl.save_graphs(str(out / "g_only_csc_default.dgl"), [featured().formats("csc")])
    dgl.save_graphs(str(out / "g_int32.dgl"), [dgl.graph(([0, 1], [1, 2]), num_nodes=3, idtype=torch.int32)])
    hg = dgl.heterograph(
        {
            ("user", "follows", "user"): ([0, 1], [1, 2]),
            ("user", "plays", "game"): ([0, 2], [1, 0]),
            ("game", "rev", "user"): ([0], [2]),
        },
        num_nodes_dict={"user": 3, "game": 2},
    )
    hg.nodes["user"].data["h"] = torch.arange(3)
    hg.edges["plays"].data["e"] = torch.tensor([5, 6])
    dgl.save_graphs(str(out / "hg.dgl"), [hg])
    dgl.save_graphs(str(out / "multi.dgl"), [plain(), featured()])
    write_torch_saves(out)


def write_torch_saves(out: Path) -> None:
    """``torch.save`` files of plain tensors as trainers write results (``pt_*.pt``, read by ``remap``)."""
    rows = torch.arange(24, dtype=torch.float32).reshape(6, 4) / 4
    torch.save(torch.arange(5, dtype=torch.int64), out / "pt_tensor.pt")
    torch.save({"ids": torch.tensor([4, 0, 2]), "pred": rows[:3].clone()}, out / "pt_dict.pt")
    torch.save({"view": rows[2:5]}, out / "pt_view.pt")  # shares the 6-row storage: offset 2 rows
    torch.save({"col": rows[:, 1]}, out / "pt_strided.pt")  # not contiguous: refused
    torch.save(
        [torch.tensor([True, False]), torch.nn.Parameter(torch.ones(2, dtype=torch.float64))], out / "pt_list.pt"
    )
    torch.save({"outer": {"inner": torch.tensor([7], dtype=torch.int16)}}, out / "pt_nested.pt")
    torch.save({"model": torch.nn.Linear(2, 1)}, out / "pt_module.pt")  # not plain tensors: refused


def tiny_graph() -> tuple[dgl.DGLGraph, dict[str, dict[str, np.ndarray]], dict[str, dict[str, np.ndarray]]]:
    """The tiny heterograph and its node and edge data (numpy, as chunk_graph reads them)."""
    rng = np.random.default_rng(7)
    edges = {
        ("author", "affiliated_with", "institution"): (rng.integers(0, 12, 10), rng.integers(0, 5, 10)),
        ("author", "writes", "paper"): (rng.integers(0, 12, 25), rng.integers(0, 15, 25)),
        ("paper", "cites", "paper"): (rng.integers(0, 15, 30), rng.integers(0, 15, 30)),
    }
    ndata = {
        "paper": {
            "feat": rng.standard_normal((15, 4)).astype(np.float32),
            "label": np.arange(15, dtype=np.int64) * 10,
        },
        "author": {"mask": rng.integers(0, 2, 12).astype(bool)},
    }
    edata = {
        "paper:cites:paper": {"w": rng.random(30)},
        "author:writes:paper": {"year": 2000 + np.arange(25, dtype=np.int64)},
    }
    g = dgl.heterograph(
        {k: (torch.from_numpy(s), torch.from_numpy(d)) for k, (s, d) in edges.items()},
        num_nodes_dict={"author": 12, "institution": 5, "paper": 15},
    )
    for ntype, feats in ndata.items():
        for name, arr in feats.items():
            g.nodes[ntype].data[name] = torch.from_numpy(arr)
    for etype, feats in edata.items():
        for name, arr in feats.items():
            g.edges[tuple(etype.split(":"))].data[name] = torch.from_numpy(arr)
    return g, ndata, edata


def write_tiny_pipeline(out: Path, dgl_src: Path, work: Path) -> None:
    """``golden/tiny-pipeline``: the chunked input, an assignment and DGL's three outputs."""
    tools = dgl_src / "tools"
    sys.path[:0] = [str(tools), str(tools / "partition_algo")]
    from base import PartitionMeta, dump_partition_meta  # type: ignore[import-not-found]
    from chunk_graph import chunk_graph  # type: ignore[import-not-found]
    from distpartitioning import array_readwriter  # type: ignore[import-not-found]

    out.mkdir(parents=True, exist_ok=True)
    g, ndata, edata = tiny_graph()
    dgl.save_graphs(str(out / "original_graph.dgl"), [g])

    def npy(kind: str, typ: str, name: str, arr: np.ndarray) -> str:
        path = work / "npy" / kind / typ / f"{name}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, arr)
        return str(path)

    npaths = {t: {k: npy("node", t, k, a) for k, a in f.items()} for t, f in ndata.items()}
    epaths = {tuple(t.split(":")): {k: npy("edge", t, k, a) for k, a in f.items()} for t, f in edata.items()}
    chunked = out / "chunked"
    chunk_graph(g, "tiny", npaths, epaths, 2, str(chunked))
    meta_path = chunked / "metadata.json"
    meta = json.loads(meta_path.read_text())
    base = str(chunked.resolve()) + os.sep

    def relative(obj: object) -> object:
        if isinstance(obj, dict):
            return {k: relative(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [relative(v) for v in obj]
        return obj[len(base) :] if isinstance(obj, str) and obj.startswith(base) else obj

    meta = relative(meta)
    meta["num_nodes_per_type"] = [int(g.num_nodes(t)) for t in meta["node_type"]]
    meta["num_edges_per_type"] = [int(g.num_edges(tuple(t.split(":")))) for t in meta["edge_type"]]
    meta_path.write_text(json.dumps(meta, sort_keys=True, indent=4))

    assign = out / "partition_assignment"
    assign.mkdir(parents=True, exist_ok=True)
    for ntype, n in zip(meta["node_type"], meta["num_nodes_per_type"], strict=True):
        parts = (np.arange(n, dtype=np.int64) + 1) % 2
        array_readwriter.get_array_parser(name="csv").write(str(assign / f"{ntype}.txt"), parts)
    dump_partition_meta(
        PartitionMeta(version="1.0.0", num_parts=2, algo_name="random"), str(assign / "partition_meta.json")
    )

    for name, formats in (("pipeline_out_none", None), ("pipeline_out_csc", "csc")):
        run_pipeline(tools, chunked, assign, out / name, formats)

    dgl.seed(0)
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 (DGL draws from the legacy global generator)
    nmap, emap = dgl.distributed.partition_graph(
        g, "tiny", 2, str(out / "partition_graph_out"), part_method="random", return_mapping=True
    )
    mapping = {f"orig_nids__{k}": v.numpy() for k, v in nmap.items()}
    mapping.update({f"orig_eids__{':'.join(k)}": v.numpy() for k, v in emap.items()})
    np.savez(out / "partition_graph_out" / "return_mapping.npz", **mapping)


def run_pipeline(tools: Path, chunked: Path, assign: Path, out: Path, formats: str | None) -> None:
    """DGL's chunked pipeline, world size 1, gloo on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env["PYTHONPATH"] = os.pathsep.join([str(tools / "distpartitioning"), str(tools)])
    cmd = [
        sys.executable,
        str(tools / "distpartitioning" / "data_proc_pipeline.py"),
        "--world-size=1",
        "--process-group-timeout=600",
        f"--input-dir={chunked}",
        "--graph-name=tiny",
        "--schema=metadata.json",
        "--num-parts=2",
        f"--output={out}",
        f"--partitions-dir={assign}",
        "--save-orig-nids",
        "--save-orig-eids",
        "--log-level=warning",
    ]
    if formats:
        cmd.append(f"--graph-formats={formats}")
    subprocess.run(cmd, check=True, env=env, cwd=out.parent)


def dgl_source(given: Path | None, work: Path) -> Path:
    if given is not None:
        if not (given / "tools" / "chunk_graph.py").is_file():
            sys.exit(f"error: {given} is not a DGL source checkout (no tools/chunk_graph.py)")
        return given
    dest = work / "dgl"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", DGL_TAG, "https://github.com/dmlc/dgl", str(dest)],
        check=True,
    )
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "golden")
    parser.add_argument("--dgl-src", type=Path, default=None, help=f"DGL source checkout at {DGL_TAG}")
    args = parser.parse_args()
    if dgl.__version__ != "2.1.0":
        sys.exit(f"error: run with DGL 2.1.0 (scripts/setup-real-dgl.sh), found {dgl.__version__}")
    out = args.out.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = dgl_source(args.dgl_src, work)
        staged = work / "golden"
        write_serialization(staged / "serialization")
        write_tiny_pipeline(staged / "tiny-pipeline", src.resolve(), work)
        # serialization/ keeps its hand-written annot_g_default.txt; tiny-pipeline/ is replaced.
        shutil.copytree(staged / "serialization", out / "serialization", dirs_exist_ok=True)
        shutil.rmtree(out / "tiny-pipeline", ignore_errors=True)
        shutil.copytree(staged / "tiny-pipeline", out / "tiny-pipeline")
    print(f"golden files written to {out}")


if __name__ == "__main__":
    main()
