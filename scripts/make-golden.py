"""Regenerate the DGL-written golden files of the test suite (``tests/data/golden/``).

Run with the python of the real-DGL side virtualenv (DGL 2.1.0, torch 2.2.1; see
``scripts/setup-real-dgl.sh``), never with dgl_chunked's own environment::

    $(bash scripts/setup-real-dgl.sh) scripts/make-golden.py [--out tests/data/golden] [--dgl-src DIR]

``--dgl-src`` is a checkout of DGL's source at tag v2.1.0: DGL's chunked pipeline
(``tools/chunk_graph.py``, ``tools/distpartitioning/data_proc_pipeline.py``) is not part
of the wheel. Without it the script clones ``https://github.com/dmlc/dgl`` at v2.1.0
(``--depth 1``) into a temporary directory.

What it writes (``docs/spec/index.md``, "Golden files", describes each file):

``serialization/``
    ``dgl.data.utils.save_tensors`` and ``dgl.save_graphs`` of small literal tensors and
    graphs (``t_*``, ``g_*``, ``hg``, ``multi``), and ``torch.save`` files of plain tensors
    (``pt_*.pt``: a tensor, dicts, a view into a larger storage, a list, a nested dict, and
    two that ``remap`` refuses: a strided view and a module). ``annot_g_default.txt`` is not written
    here: it is the hand-checked field-by-field reading of ``g_default.dgl``
    (``docs/spec/dgl-binary.md``, "Worked example"), kept as it is; it has no junk bytes
    in it, so it holds for every regenerated ``g_default.dgl``.
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
``type-order/<case>/``
    Graphs whose type IDs are not in the sorted order of their names (see
    :data:`TYPE_ORDER_CASES`): ``chunked/`` is DGL's ``chunk_graph`` output with the
    ``node_type`` / ``edge_type`` lists (and the per-type and per-chunk counts with
    them) put in the case's order, so the type IDs of DGL's pipeline follow it;
    ``partition_assignment/`` a fixed assignment into the case's partitions;
    ``pipeline_out/``: DGL's chunked pipeline (world size 1, ``--save-orig-nids
    --save-orig-eids``). ``user-item-tag`` also has ``partition_assignment_1/`` and
    ``pipeline_out_1/``: one partition, for ``DistGraph``'s standalone mode.

``gsprocessing/``
    ``partition_assignment/`` (``tests.gsprocessing.write_assignment_txt``) and
    ``pipeline_out/``: DGL's chunked pipeline (world size 1, ``--save-orig-nids
    --save-orig-eids``, ``--schema=updated_row_counts_metadata.json``) on the graph
    ``tests.gsprocessing.write_gsprocessing_graph`` writes (GraphStorm's GSProcessing
    layout); ``input.sha256``: that graph's digest, which the suite checks before it
    compares (the suite writes the graph itself).

``shuffled-order/``
    The same layout as a type-order case for one larger graph (:data:`SHUFFLED_CASE`):
    more than 16 items of a type per partition, so DGL's unstable sort by type
    (``data_shuffle.py``, ``reorder_data``) leaves new IDs out of original-ID order
    inside a type (``tests/realdgl/test_realdgl_remap.py`` checks that it does).

``--sets`` regenerates only some of these directories (the others stay as they are).

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
SETS = ("serialization", "tiny-pipeline", "type-order", "gsprocessing", "shuffled-order")


def write_serialization(out: Path) -> None:
    """The tensor-dict and graph files of ``golden/serialization`` (``docs/spec/dgl-binary.md``)."""
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
    meta = relative_paths(json.loads(meta_path.read_text()), chunked)
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


TYPE_ORDER_CASES: dict[str, dict] = {
    # type IDs: user 0, item 1, tag 2 (sorted: item, tag, user); etypes likewise out of order
    "user-item-tag": {
        "nodes": {"user": 14, "item": 9, "tag": 5},
        "edges": {
            "user:follows:user": 24,
            "user:buys:item": 20,
            "item:bought-by:user": 16,
            "tag:labels:item": 11,
        },
        "ndata": {"user": {"feat": ("float32", 3)}, "item": {"label": ("int64", 0)}},
        "edata": {"user:buys:item": {"rating": ("float32", 0)}},
        "parts": (2, 1),
    },
    # upper case, digits and underscores: sorted (code points) A_b, B10, Paper2, author, zz
    "mixed-names": {
        "nodes": {"Paper2": 10, "author": 8, "A_b": 4, "zz": 3, "B10": 6},
        "edges": {
            "author:writes:Paper2": 14,
            "Paper2:cites:Paper2": 12,
            "A_b:has:author": 6,
            "zz:Rel9:B10": 5,
            "B10:to:Paper2": 7,
            "author:X:zz": 4,
        },
        "ndata": {"Paper2": {"x": ("float32", 2)}, "zz": {"y": ("int32", 0)}},
        "edata": {"Paper2:cites:Paper2": {"w": ("float64", 0)}},
        "parts": (3,),
    },
    # one node type and one edge type (DGL treats it as homogeneous); 11 partitions, so
    # the config holds part-10, which a sorted document would put before part-2
    "one-type": {
        "nodes": {"Node7": 30},
        "edges": {"Node7:links:Node7": 50},
        "ndata": {"Node7": {"h": ("float32", 2)}},
        "edata": {"Node7:links:Node7": {"k": ("int64", 0)}},
        "parts": (11,),
    },
}
"""The type-order graphs: node and edge types in type-ID order with their counts,
features ``{type: {name: (dtype, width)}}`` (width 0: 1-D), partition counts."""


def type_order_graph(case: dict, seed: int) -> tuple[dgl.DGLGraph, dict, dict]:
    """The case's heterograph (numpy-seeded edges) and its node and edge data."""
    rng = np.random.default_rng(seed)
    nodes, edges = case["nodes"], case["edges"]
    arrays = {}
    for etype, m in edges.items():
        src_t, _, dst_t = etype.split(":")
        arrays[tuple(etype.split(":"))] = (rng.integers(0, nodes[src_t], m), rng.integers(0, nodes[dst_t], m))

    def data(spec: dict, counts: dict) -> dict:
        out = {}
        for typ, feats in spec.items():
            out[typ] = {}
            for name, (dtype, width) in feats.items():
                shape = (counts[typ], width) if width else (counts[typ],)
                out[typ][name] = (rng.standard_normal(shape) * 100).astype(dtype)
        return out

    ndata, edata = data(case["ndata"], nodes), data(case["edata"], edges)
    g = dgl.heterograph(
        {k: (torch.from_numpy(s), torch.from_numpy(d)) for k, (s, d) in arrays.items()}, num_nodes_dict=nodes
    )
    return g, ndata, edata


def write_type_order(out: Path, dgl_src: Path, work: Path) -> None:
    """``golden/type-order/<case>``: chunked input in the case's type order, assignments, DGL's output."""
    tools = dgl_src / "tools"
    for seed, (name, case) in enumerate(TYPE_ORDER_CASES.items(), start=11):
        write_case(out / name, name, case, seed, tools, work)


SHUFFLED_CASE: dict = {
    # types large enough (more than 16 items of a type per partition) that numpy's unstable
    # argsort in data_shuffle.py's reorder_data leaves new IDs out of original-ID order
    "nodes": {"user": 150, "item": 90, "tag": 12},
    "edges": {"user:buys:item": 320, "item:bought-by:user": 200, "user:follows:user": 260, "tag:labels:item": 40},
    "ndata": {"user": {"feat": ("float32", 3)}, "item": {"label": ("int64", 0)}},
    "edata": {"user:buys:item": {"rating": ("float32", 0)}},
    "parts": (2,),
}
"""The graph of ``golden/shuffled-order``."""


def write_shuffled_order(out: Path, dgl_src: Path, work: Path) -> None:
    """``golden/shuffled-order``: DGL's pipeline output whose new IDs do not follow original IDs inside a type."""
    write_case(out, "shuffled", SHUFFLED_CASE, 5, dgl_src / "tools", work)


def write_case(root: Path, name: str, case: dict, seed: int, tools: Path, work: Path) -> None:
    """One case: chunked input in the case's type order, assignments, DGL's pipeline output."""
    if str(tools) not in sys.path:
        sys.path[:0] = [str(tools), str(tools / "partition_algo")]
    from base import PartitionMeta, dump_partition_meta  # type: ignore[import-not-found]
    from chunk_graph import chunk_graph  # type: ignore[import-not-found]
    from distpartitioning import array_readwriter  # type: ignore[import-not-found]

    root.mkdir(parents=True, exist_ok=True)
    g, ndata, edata = type_order_graph(case, seed)

    def npy(kind: str, typ: str, feat: str, arr: np.ndarray, name: str = name) -> str:
        path = work / "npy" / name / kind / typ / f"{feat}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, arr)
        return str(path)

    npaths = {t: {k: npy("node", t, k, a) for k, a in f.items()} for t, f in ndata.items()}
    epaths = {tuple(t.split(":")): {k: npy("edge", t, k, a) for k, a in f.items()} for t, f in edata.items()}
    chunked = root / "chunked"
    chunk_graph(g, name, npaths, epaths, 2, str(chunked))
    meta = relative_paths(json.loads((chunked / "metadata.json").read_text()), chunked)
    # chunk_graph lists types in DGL's (sorted) order; put them in the case's order
    norder = [meta["node_type"].index(t) for t in case["nodes"]]
    eorder = [meta["edge_type"].index(e) for e in case["edges"]]
    meta["node_type"] = [meta["node_type"][i] for i in norder]
    meta["num_nodes_per_chunk"] = [meta["num_nodes_per_chunk"][i] for i in norder]
    meta["edge_type"] = [meta["edge_type"][i] for i in eorder]
    meta["num_edges_per_chunk"] = [meta["num_edges_per_chunk"][i] for i in eorder]
    meta["num_nodes_per_type"] = [int(g.num_nodes(t)) for t in meta["node_type"]]
    meta["num_edges_per_type"] = [int(g.num_edges(tuple(e.split(":")))) for e in meta["edge_type"]]
    (chunked / "metadata.json").write_text(json.dumps(meta, sort_keys=True, indent=4))

    for num_parts in case["parts"]:
        suffix = "" if num_parts == case["parts"][0] else f"_{num_parts}"
        assign = root / f"partition_assignment{suffix}"
        assign.mkdir(parents=True, exist_ok=True)
        for t, ntype in enumerate(meta["node_type"]):
            n = meta["num_nodes_per_type"][t]
            parts = (np.arange(n, dtype=np.int64) * 5 + 3 * t + n // 2) % num_parts
            array_readwriter.get_array_parser(name="csv").write(str(assign / f"{ntype}.txt"), parts)
        dump_partition_meta(
            PartitionMeta(version="1.0.0", num_parts=num_parts, algo_name="random"),
            str(assign / "partition_meta.json"),
        )
        run_pipeline(tools, chunked, assign, root / f"pipeline_out{suffix}", None, name, num_parts)


def write_gsprocessing(out: Path, dgl_src: Path, work: Path) -> None:
    """``gsprocessing/``: DGL's pipeline on the GSProcessing-shaped graph of
    ``tests/gsprocessing.py`` (the suite writes the graph again; ``input.sha256`` is the
    digest of the graph this output belongs to), with ``updated_row_counts_metadata.json``
    as GraphStorm's ``dist_partition_graph.py`` dispatches it."""
    sys.path.insert(0, str(REPO))
    from tests.gsprocessing import write_assignment_txt, write_gsprocessing_graph

    graph = write_gsprocessing_graph(work / "gsprocessing-input")
    write_assignment_txt(graph, out / "partition_assignment")
    (out / "input.sha256").write_text(graph.digest() + "\n")
    run_pipeline(
        dgl_src / "tools",
        graph.root,
        out / "partition_assignment",
        out / "pipeline_out",
        None,
        graph_name=graph.graph_name,
        schema="updated_row_counts_metadata.json",
    )


def relative_paths(meta: object, chunked: Path) -> object:
    """``meta`` with the absolute paths under ``chunked`` made relative to it."""
    base = str(chunked.resolve()) + os.sep
    if isinstance(meta, dict):
        return {k: relative_paths(v, chunked) for k, v in meta.items()}
    if isinstance(meta, list):
        return [relative_paths(v, chunked) for v in meta]
    return meta[len(base) :] if isinstance(meta, str) and meta.startswith(base) else meta


def run_pipeline(
    tools: Path,
    chunked: Path,
    assign: Path,
    out: Path,
    formats: str | None,
    graph_name: str = "tiny",
    num_parts: int = 2,
    schema: str = "metadata.json",
) -> None:
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
        f"--graph-name={graph_name}",
        f"--schema={schema}",
        f"--num-parts={num_parts}",
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
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"comma-separated directories to regenerate (default all: {','.join(SETS)})",
    )
    args = parser.parse_args()
    sets = [x for x in args.sets.split(",") if x]
    if not sets or set(sets) - set(SETS):
        sys.exit(f"error: --sets {args.sets!r}: expected a comma-separated subset of {','.join(SETS)}")
    if dgl.__version__ != "2.1.0":
        sys.exit(f"error: run with DGL 2.1.0 (scripts/setup-real-dgl.sh), found {dgl.__version__}")
    out = args.out.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = dgl_source(args.dgl_src, work) if sets != ["serialization"] else Path()
        staged = work / "golden"
        if "serialization" in sets:
            write_serialization(staged / "serialization")
            # serialization/ keeps its hand-written annot_g_default.txt
            shutil.copytree(staged / "serialization", out / "serialization", dirs_exist_ok=True)
        writers = (
            ("tiny-pipeline", write_tiny_pipeline),
            ("type-order", write_type_order),
            ("gsprocessing", write_gsprocessing),
            ("shuffled-order", write_shuffled_order),
        )
        for name, write in writers:
            if name in sets:  # replaced as a whole
                write(staged / name, src.resolve(), work)
                shutil.rmtree(out / name, ignore_errors=True)
                shutil.copytree(staged / name, out / name)
    print(f"golden files written to {out}")


if __name__ == "__main__":
    main()
