"""DGL v2.4.0's GraphBolt code on DGL 2.1.0 (runs in the DGL venv; see dgl240_converter.py).

Like ``dgl_side.py``: the last argument is the output ``.npz``, facts go under
``__json__``. Modes::

    convert24 CONFIG.json FORMATS EIDS INNER_NODE INNER_EDGE DEBUG OUT.npz
        DGL v2.4.0's dgl_partition_to_graphbolt(CONFIG, store_eids=EIDS, ...,
        graph_formats=FORMATS) in place (run it on a copy); FORMATS "none" or "coo,csc";
        flags 0/1; DEBUG 1 sets DGL_DIST_DEBUG. Facts: the rewritten config.
    linkpred CONFIG.json OUT.npz
        1-partition config served from fused_csc_sampling_graph.pt by a DistGraphServer on
        127.0.0.1 (child process, DGL_DIST_DEBUG=1: DGL 2.1's partition check runs) with
        DGL v2.4.0's _find_edges and DistGraph.find_edges in place of DGL 2.1's (which
        refuses GraphBolt) in both processes, and a DistGraph client: DistGraph.find_edges
        of every edge per etype ("find/<etype>/src|dst"),
        then a DistEdgeDataLoader (NeighborSampler([-1]), Uniform(2) negatives, batches
        of 97) over every edge: per batch the positive pairs as global per-type IDs
        ("lp/<etype>/eid|src|dst"), the negatives ("lp/<etype>/neg_src|neg_dst") and the
        sampled blocks' edge count. Fact "dgl21_find_edges": what DGL 2.1's own
        _find_edges says on the same partition.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dgl  # noqa: E402
import dgl240_converter as v24  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from dgl_side_common import dist_graph, etype_str, one_server, save_npz, serve  # noqa: E402


def mode_convert24(config: str, args: list[str], info: dict) -> None:
    formats, eids, inner_node, inner_edge, debug = args
    if debug == "1":
        os.environ["DGL_DIST_DEBUG"] = "1"
    else:
        os.environ.pop("DGL_DIST_DEBUG", None)
    v24.dgl_partition_to_graphbolt(
        config,
        store_eids=eids == "1",
        store_inner_node=inner_node == "1",
        store_inner_edge=inner_edge == "1",
        graph_formats=None if formats == "none" else formats.split(","),
    )
    with open(config) as f:
        info["config"] = json.load(f)


def _use_v24_find_edges() -> None:
    """DGL v2.4.0's ``_find_edges`` (reads ``_dgl2gb_eid``, ``_gb_dst_id``) and
    ``DistGraph.find_edges`` (without v2.1.0's GraphBolt refusal) in place of DGL 2.1's."""
    from dgl.distributed import graph_services

    graph_services._find_edges = v24._find_edges
    dgl.distributed.DistGraph.find_edges = v24.DistGraph.find_edges


def _dgl21_find_edges(config: str) -> str:
    """DGL 2.1's own _find_edges on the GraphBolt partition: what it says (an error, as a rule)."""
    from dgl.distributed import graph_services

    g, _, _, gpb, _, _, _ = dgl.distributed.load_partition(config, 0, load_feats=False, use_graphbolt=True)
    try:
        graph_services._find_edges(g, gpb, torch.arange(min(3, g.total_num_edges)))
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        return type(err).__name__
    return "ok"


def mode_linkpred(config: str, out: dict[str, np.ndarray], info: dict) -> None:
    info["dgl21_find_edges"] = _dgl21_find_edges(config)
    with one_server(__file__, "server24", config, info, salt=7) as ip_config:
        _use_v24_find_edges()
        dgl.distributed.initialize(ip_config, use_graphbolt=True)
        _read_link_prediction(dist_graph(config), out, info)


def _read_link_prediction(g: object, out: dict[str, np.ndarray], info: dict) -> None:
    etypes = [c for c in g.canonical_etypes if g.num_edges(c) > 0]
    for c in etypes:
        src, dst = g.find_edges(torch.arange(g.num_edges(c)), etype=c)
        out[f"find/{etype_str(c)}/src"], out[f"find/{etype_str(c)}/dst"] = src.numpy(), dst.numpy()
    homo = len(g.canonical_etypes) == 1
    eids = torch.arange(g.num_edges()) if homo else {c: torch.arange(g.num_edges(c)) for c in etypes}
    loader = dgl.dataloading.DistEdgeDataLoader(
        g,
        eids,
        dgl.dataloading.NeighborSampler([-1]),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(2),
        batch_size=97,
        shuffle=True,
        drop_last=False,
    )
    got: dict[str, list[np.ndarray]] = {}
    batches, block_edges = 0, 0
    for _input_nodes, pair, neg_pair, blocks in loader:
        batches += 1
        block_edges += sum(int(blocks[0].num_edges(c)) for c in blocks[0].canonical_etypes)
        for c in pair.canonical_etypes:
            key = etype_str(c)
            s_nid, d_nid = pair.nodes[c[0]].data[dgl.NID], pair.nodes[c[2]].data[dgl.NID]
            src, dst = pair.edges(etype=c)
            nsrc, ndst = neg_pair.edges(etype=c)
            for name, value in (
                ("eid", pair.edges[c].data[dgl.EID]),
                ("src", s_nid[src]),
                ("dst", d_nid[dst]),
                ("neg_src", s_nid[nsrc]),
                ("neg_dst", d_nid[ndst]),
            ):
                got.setdefault(f"lp/{key}/{name}", []).append(value.numpy())
    for key, values in got.items():
        out[key] = np.concatenate(values)
    info.update(batches=batches, block_edges=block_edges)


def mode_server24(config: str, ip_config: str, ready_fd: str) -> None:
    """Child of linkpred: DGL 2.1's check of the partition on load, v2.4.0's _find_edges."""
    os.environ["DGL_DIST_DEBUG"] = "1"  # load_partition runs _verify_graphbolt_partition (needs edge _ID)
    _use_v24_find_edges()
    serve(config, ip_config, ready_fd, use_graphbolt=True)


def main(argv: list[str]) -> int:
    mode, inputs, target = argv[0], argv[1:-1], argv[-1]
    out: dict[str, np.ndarray] = {}
    info: dict = {"dgl": dgl.__version__, "torch": torch.__version__}
    if mode == "convert24":
        mode_convert24(inputs[0], inputs[1:], info)
    elif mode == "linkpred":
        mode_linkpred(inputs[0], out, info)
    elif mode == "server24":
        mode_server24(inputs[0], inputs[1], inputs[2])
        return 0
    else:
        print(f"unknown mode {mode!r}; expected convert24 or linkpred", file=sys.stderr)
        return 2
    save_npz(target, out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
