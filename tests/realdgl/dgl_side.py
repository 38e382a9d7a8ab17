"""Load files with real DGL and dump what DGL sees to an .npz (runs in the DGL venv).

Runs under the side virtualenv with dgl 2.1.0 / torch 2.2 / numpy 1.x, never in the
package's environment. It imports only dgl, torch, numpy, json, sys, os and its sibling
``dgl_side_common.py`` (what it shares with ``dgl_side_gb24.py``). The
last argument is always the output ``.npz``; string facts go into the JSON blob
stored under the key ``__json__`` (a 0-d unicode array, no pickle needed).

Modes::

    tensors FILE [FILE ...] OUT.npz   load_tensors; keys "f{j}/{name}"
    graphs FILE [FILE ...] OUT.npz    load_graphs; keys "f{j}/g{i}/edges/{etype}/src", ...
    partition CONFIG.json OUT.npz     load_partition (DGL_DIST_DEBUG=1) + load_partition_feats per part
    distgraph CONFIG.json OUT.npz     1-partition config: DistGraph in standalone mode
    distgraph-server CONFIG.json OUT.npz
                                      1-partition config: a DistGraphServer on 127.0.0.1 in a
                                      child process (os.posix_spawn) and a DistGraph client;
                                      DGLC_USE_GRAPHBOLT=1 serves fused_csc_sampling_graph.pt
    graphbolt CONFIG.json OUT.npz     load_partition(use_graphbolt=True) per part: every field
    graphbolts CONFIG.json [...] OUT.npz  the same for several configs; keys "f{j}/p{i}/gb/..."
                                      of the FusedCSCSamplingGraph, "p{i}/gb/..." (DGL's own
                                      partition check runs when edge _ID is stored)
    to-graphbolt CONFIG.json EIDS INNER_NODE INNER_EDGE OUT.npz
                                      dgl_partition_to_graphbolt(CONFIG, store_eids=EIDS, ...)
                                      with flags 0/1, in place (run it on a copy)
    dgl-partition DIR NUM_PARTS KIND OUT.npz
                                      partition_graph of a seeded random graph (KIND homogeneous or
                                      heterogeneous) into DIR: DGL's own partitions, for conversion
    type-order SPEC.json OUT.npz      what DGL's readers say about types, per SPEC's lists, in order:
                                      "convert" [{config, flags [e, n, i], debug}] runs
                                      dgl_partition_to_graphbolt in place; "inspect" [config] runs
                                      load_partition_book, load_partition and (when the config has
                                      it) load_partition(use_graphbolt=True) on every partition,
                                      keys "i{j}/..."; "distgraph" [1-partition config] builds a
                                      standalone DistGraph each, keys "d{j}/..."
    node-ids CONFIG.json SPEC.json OUT.npz
                                      per part, DGL's view of per-type IDs: "p{i}/per_type/{ntype}"
                                      (map_to_per_ntype of the inner nodes' _ID), "p{i}/orig_nids/
                                      {ntype}", "p{i}/orig_eids/{etype}", and for each SPEC entry
                                      [key, ntype] "p{i}/resolved/{key}": the feature's per-type IDs
                                      resolved to original IDs through map_to_homo_nid, nid2partid,
                                      the partition's _ID / NTYPE and orig_nids (-1 kept)
"""

from __future__ import annotations

import json
import os
import sys

os.environ["DGL_DIST_DEBUG"] = "1"  # load_partition then runs DGL's own partition verification
os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl
import numpy as np
import torch
from dgl_side_common import dist_graph, etype_str, one_server, save_npz, serve


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """Tensor -> numpy; bfloat16 as its raw uint16 bits, bool stays bool."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.detach().cpu().numpy()


def mode_tensors(files: list[str], out: dict[str, np.ndarray], info: dict) -> None:
    for j, path in enumerate(files):
        tensors = dgl.data.utils.load_tensors(path)
        info[f"f{j}"] = {"keys": list(tensors), "dtypes": {k: str(v.dtype) for k, v in tensors.items()}}
        for key, value in tensors.items():
            out[f"f{j}/{key}"] = to_numpy(value)


def dump_graph(g: dgl.DGLGraph, prefix: str, out: dict[str, np.ndarray]) -> dict:
    formats = g.formats()  # before anything below materialises more formats
    facts = {
        "ntypes": list(g.ntypes),
        "canonical_etypes": [list(c) for c in g.canonical_etypes],
        "num_nodes": {nt: int(g.num_nodes(nt)) for nt in g.ntypes},
        "num_edges": {etype_str(c): int(g.num_edges(c)) for c in g.canonical_etypes},
        "idtype": str(g.idtype),
        "formats": formats,
        "ndata": {},
        "edata": {},
    }
    for c in g.canonical_etypes:
        src, dst = g.edges(form="uv", order="eid", etype=c)
        out[f"{prefix}/edges/{etype_str(c)}/src"] = to_numpy(src)
        out[f"{prefix}/edges/{etype_str(c)}/dst"] = to_numpy(dst)
        for name, value in g.edges[c].data.items():
            out[f"{prefix}/edata/{etype_str(c)}/{name}"] = to_numpy(value)
            facts["edata"][f"{etype_str(c)}/{name}"] = str(value.dtype)
    for nt in g.ntypes:
        for name, value in g.nodes[nt].data.items():
            out[f"{prefix}/ndata/{nt}/{name}"] = to_numpy(value)
            facts["ndata"][f"{nt}/{name}"] = str(value.dtype)
    return facts


def mode_graphs(files: list[str], out: dict[str, np.ndarray], info: dict) -> None:
    for j, path in enumerate(files):
        graphs, labels = dgl.load_graphs(path)
        info[f"f{j}"] = {
            "graphs": [dump_graph(g, f"f{j}/g{i}", out) for i, g in enumerate(graphs)],
            "labels": {k: str(v.dtype) for k, v in labels.items()},
        }
        for key, value in labels.items():
            out[f"f{j}/labels/{key}"] = to_numpy(value)


def partition_book(gpb: object) -> dict:
    return {
        "num_partitions": int(gpb.num_partitions()),
        "ntypes": list(gpb.ntypes),
        "canonical_etypes": [list(c) for c in gpb.canonical_etypes],
        "node_map": {k: np.asarray(v).tolist() for k, v in getattr(gpb, "_typed_nid_range", {}).items()},
        "edge_map": {
            etype_str(k) if isinstance(k, tuple) else k: np.asarray(v).tolist()
            for k, v in getattr(gpb, "_typed_eid_range", {}).items()
        },
    }


def mode_partition(config: str, out: dict[str, np.ndarray], info: dict) -> None:
    with open(config) as f:
        num_parts = json.load(f)["num_parts"]
    for i in range(num_parts):
        g, node_feats, edge_feats, gpb, graph_name, ntypes, etypes = dgl.distributed.load_partition(config, i)
        formats = g.formats()
        src, dst = g.edges(order="eid")
        out[f"p{i}/src"], out[f"p{i}/dst"] = to_numpy(src), to_numpy(dst)
        for name, value in g.ndata.items():
            out[f"p{i}/ndata/{name}"] = to_numpy(value)
        for name, value in g.edata.items():
            out[f"p{i}/edata/{name}"] = to_numpy(value)
        for key, value in node_feats.items():
            out[f"p{i}/node_feats/{key}"] = to_numpy(value)
        for key, value in edge_feats.items():
            out[f"p{i}/edge_feats/{key}"] = to_numpy(value)
        nfeats, efeats = dgl.distributed.load_partition_feats(config, i)
        for key, value in nfeats.items():
            out[f"p{i}/partition_feats/node/{key}"] = to_numpy(value)
        for key, value in efeats.items():
            out[f"p{i}/partition_feats/edge/{key}"] = to_numpy(value)
        info[f"p{i}"] = {
            "graph_name": graph_name,
            "ntypes": list(ntypes),
            "etypes": [etype_str(e) if isinstance(e, tuple) else e for e in etypes],
            "num_nodes": int(g.num_nodes()),
            "num_edges": int(g.num_edges()),
            "num_inner_nodes": int(g.ndata["inner_node"].sum()),
            "num_inner_edges": int(g.edata["inner_edge"].sum()) if "inner_edge" in g.edata else None,
            "formats": formats,
            "gpb": partition_book(gpb),
        }


def read_dist_data(g: object, prefix: str, out: dict[str, np.ndarray]) -> None:
    """Every node and edge feature of a DistGraph through DistTensor: ``{prefix}ndata/{ntype}/{name}``
    and ``{prefix}edata/{src:rel:dst}/{name}``, rows in per-type ID order."""
    for nt in g.ntypes:
        for name in g.nodes[nt].data:
            out[f"{prefix}ndata/{nt}/{name}"] = to_numpy(g.nodes[nt].data[name][torch.arange(g.num_nodes(nt))])
    for c in g.canonical_etypes:
        for name in g.edges[c].data:
            rows = torch.arange(g.num_edges(c))
            out[f"{prefix}edata/{etype_str(c)}/{name}"] = to_numpy(g.edges[c].data[name][rows])


def read_distgraph(g: object, out: dict[str, np.ndarray], info: dict) -> None:
    """Every feature through DistTensor, all in-edges of a few seeds, find_edges of all edges.

    Keys: ``ndata/{ntype}/{name}``, ``edata/{src:rel:dst}/{name}`` (per-type ids);
    ``find_edges/src|dst``: endpoints of every edge as homogeneous (new) ids, in
    homogeneous edge-id order; ``find_edges/{etype}/src|dst``: per-type ids.
    Sampling (fanout -1): homogeneous ``sample/seeds|src|dst|eid``; heterogeneous
    ``sample/seeds/{ntype}`` and ``sample/{etype}/src|dst|eid`` (per-type ids).
    """
    from dgl.distributed.graph_services import find_edges as homo_find_edges

    info["ntypes"], info["etypes"] = list(g.ntypes), [etype_str(c) for c in g.canonical_etypes]
    read_dist_data(g, "", out)
    src, dst = homo_find_edges(g, torch.arange(g.num_edges()))
    out["find_edges/src"], out["find_edges/dst"] = to_numpy(src), to_numpy(dst)
    if len(g.canonical_etypes) == 1:
        seeds = torch.arange(min(g.num_nodes(), 8))
        sub = dgl.distributed.sample_neighbors(g, seeds, -1)
        src, dst = sub.edges()
        out["sample/seeds"], out["sample/src"], out["sample/dst"] = to_numpy(seeds), to_numpy(src), to_numpy(dst)
        out["sample/eid"] = to_numpy(sub.edata[dgl.EID])
        return
    for c in g.canonical_etypes:
        src, dst = g.find_edges(torch.arange(g.num_edges(c)), etype=c)
        out[f"find_edges/{etype_str(c)}/src"], out[f"find_edges/{etype_str(c)}/dst"] = to_numpy(src), to_numpy(dst)
    seeds = {nt: torch.arange(min(g.num_nodes(nt), 8)) for nt in g.ntypes if g.num_nodes(nt) > 0}
    sub = dgl.distributed.sample_neighbors(g, seeds, -1)
    for nt, ids in seeds.items():
        out[f"sample/seeds/{nt}"] = to_numpy(ids)
    for c in sub.canonical_etypes:
        src, dst = sub.edges(etype=c)
        out[f"sample/{etype_str(c)}/src"], out[f"sample/{etype_str(c)}/dst"] = to_numpy(src), to_numpy(dst)
        out[f"sample/{etype_str(c)}/eid"] = to_numpy(sub.edges[c].data[dgl.EID])


def read_distgraph_graphbolt(g: object, out: dict[str, np.ndarray], info: dict) -> None:
    """GraphBolt serving: features and full-fanout sampling with every node as a seed.

    Keys as :func:`read_distgraph` (``sample/...``); ``sample/eid`` only when edge _ID is stored.
    """
    info["ntypes"], info["etypes"] = list(g.ntypes), [etype_str(c) for c in g.canonical_etypes]
    for nt in g.ntypes:
        for name in g.nodes[nt].data:
            out[f"ndata/{nt}/{name}"] = to_numpy(g.nodes[nt].data[name][torch.arange(g.num_nodes(nt))])
    if len(g.canonical_etypes) == 1:
        sub = g.sample_neighbors(torch.arange(g.num_nodes()), -1)  # passes use_graphbolt
        src, dst = sub.edges()
        out["sample/src"], out["sample/dst"] = to_numpy(src), to_numpy(dst)
        if dgl.EID in sub.edata:
            out["sample/eid"] = to_numpy(sub.edata[dgl.EID])
        return
    seeds = {nt: torch.arange(g.num_nodes(nt)) for nt in g.ntypes if g.num_nodes(nt) > 0}
    sub = g.sample_neighbors(seeds, -1)
    for c in sub.canonical_etypes:
        src, dst = sub.edges(etype=c)
        out[f"sample/{etype_str(c)}/src"], out[f"sample/{etype_str(c)}/dst"] = to_numpy(src), to_numpy(dst)
        if dgl.EID in sub.edges[c].data:
            out[f"sample/{etype_str(c)}/eid"] = to_numpy(sub.edges[c].data[dgl.EID])


def mode_distgraph(config: str, out: dict[str, np.ndarray], info: dict) -> None:
    """Standalone-mode DistGraph (1 partition, no server process)."""
    os.environ["DGL_DIST_MODE"] = "standalone"
    with open(config) as f:
        graph_name = json.load(f)["graph_name"]
    dgl.distributed.initialize(ip_config=None)
    read_distgraph(dgl.distributed.DistGraph(graph_name, part_config=config), out, info)
    dgl.distributed.exit_client()


def mode_distgraph_server(config: str, out: dict[str, np.ndarray], info: dict) -> None:
    """A real DistGraphServer on 127.0.0.1 (child process) and one DistGraph client (1 partition).

    See :func:`dgl_side_common.one_server` for how a server that fails to start, or a client
    that fails, ends.
    """
    with one_server(__file__, "distserver", config, info) as ip_config:
        use_graphbolt = os.environ.get("DGLC_USE_GRAPHBOLT") == "1"
        dgl.distributed.initialize(ip_config, use_graphbolt=use_graphbolt)
        read = read_distgraph_graphbolt if use_graphbolt else read_distgraph
        read(dist_graph(config), out, info)


def mode_distserver(config: str, ip_config: str, ready_fd: str) -> None:
    """Child of distgraph-server: load partition 0, report "ready", serve until the client exits."""
    if os.environ.get("DGLC_USE_GRAPHBOLT") == "1":
        os.environ.pop("DGL_DIST_DEBUG", None)  # DGL's check needs edge _ID, which is optional here
    serve(config, ip_config, ready_fd, use_graphbolt=os.environ.get("DGLC_USE_GRAPHBOLT") == "1")


def load_graphbolt(config: str, part: int, prefix: str, out: dict[str, np.ndarray]) -> dict:
    """load_partition(use_graphbolt=True) of one part: every field of the graph under
    ``{prefix}/...``; facts: types as load_partition lists them, type maps, dtypes, the
    attributes in their order, and ``verified`` when DGL's own partition check ran."""
    from dgl.distributed.partition import _verify_graphbolt_partition

    debug = os.environ.pop("DGL_DIST_DEBUG", None)  # its check needs edge _ID: run it below when stored
    try:
        g, _, _, gpb, _, ntypes, etypes = dgl.distributed.load_partition(
            config, part, load_feats=False, use_graphbolt=True
        )
    finally:
        if debug is not None:
            os.environ["DGL_DIST_DEBUG"] = debug
    facts = {
        "type": type(g).__name__,
        "ntypes": list(ntypes),
        "etypes": [etype_str(e) for e in etypes],
        "node_type_to_id": g.node_type_to_id,
        "edge_type_to_id": g.edge_type_to_id,
    }
    for name in ("csc_indptr", "indices", "node_type_offset", "type_per_edge"):
        value = getattr(g, name)
        facts[name] = None if value is None else str(value.dtype)
        if value is not None:
            out[f"{prefix}/{name}"] = to_numpy(value)
    for kind in ("node_attributes", "edge_attributes"):
        attrs = getattr(g, kind)
        facts[kind] = None if attrs is None else [[k, str(v.dtype)] for k, v in attrs.items()]
        for key, value in (attrs or {}).items():
            out[f"{prefix}/{kind}/{key}"] = to_numpy(value)
    # DGL's check needs edge _ID, and builds a heterograph that DGL refuses when empty
    if g.edge_attributes is not None and dgl.EID in g.edge_attributes and g.total_num_edges > 0:
        _verify_graphbolt_partition(g, part, gpb, *dgl.distributed.load_partition_book(config, part)[2:])
        facts["verified"] = True
    return facts


def mode_graphbolt(config: str, out: dict[str, np.ndarray], info: dict, prefix: str = "") -> None:
    with open(config) as f:
        num_parts = json.load(f)["num_parts"]
    for i in range(num_parts):
        info[f"p{i}"] = load_graphbolt(config, i, f"{prefix}p{i}/gb", out)


def mode_graphbolts(configs: list[str], out: dict[str, np.ndarray], info: dict) -> None:
    """``graphbolt`` of several configs in one interpreter (one DGL import): keys ``f{j}/...``."""
    for j, config in enumerate(configs):
        info[f"f{j}"] = {}
        mode_graphbolt(config, out, info[f"f{j}"], prefix=f"f{j}/")


def mode_to_graphbolt(config: str, flags: list[str], out: dict[str, np.ndarray], info: dict) -> None:
    os.environ.pop("DGL_DIST_DEBUG", None)  # debug mode would store every attribute
    eids, inner_node, inner_edge = (flag == "1" for flag in flags)
    dgl.distributed.dgl_partition_to_graphbolt(
        config, store_eids=eids, store_inner_node=inner_node, store_inner_edge=inner_edge
    )
    with open(config) as f:
        info["config"] = json.load(f)


def mode_dgl_partition(out_dir: str, num_parts: str, kind: str, out: dict[str, np.ndarray], info: dict) -> None:
    os.environ.pop("DGL_DIST_DEBUG", None)
    gen = torch.Generator().manual_seed(7)
    if kind == "homogeneous":
        g = dgl.graph((torch.randint(0, 300, (2000,), generator=gen), torch.randint(0, 300, (2000,), generator=gen)))
    else:
        g = dgl.heterograph(
            {
                ("user", "follows", "user"): (
                    torch.randint(0, 120, (600,), generator=gen),
                    torch.randint(0, 120, (600,), generator=gen),
                ),
                ("user", "buys", "item"): (
                    torch.randint(0, 120, (500,), generator=gen),
                    torch.randint(0, 80, (500,), generator=gen),
                ),
                ("item", "bought-by", "user"): (
                    torch.randint(0, 80, (400,), generator=gen),
                    torch.randint(0, 120, (400,), generator=gen),
                ),
            },
            num_nodes_dict={"user": 120, "item": 80},
        )
    dgl.distributed.partition_graph(g, "dglgraph", int(num_parts), out_dir, part_method="random")
    info["num_edges"] = int(g.num_edges())


def dump_book(gpb: object, prefix: str, out: dict[str, np.ndarray]) -> dict:
    """A partition book's types, ranges and every ID's mapping (type, per-type ID, partition)."""
    facts = partition_book(gpb)
    facts.update(partid=int(gpb.partid), metadata=gpb.metadata())
    nids, eids = torch.arange(int(gpb._max_node_ids[-1])), torch.arange(int(gpb._max_edge_ids[-1]))
    for kind, ids, to_type in (("node", nids, gpb.map_to_per_ntype), ("edge", eids, gpb.map_to_per_etype)):
        type_ids, per_type = to_type(ids)
        out[f"{prefix}/{kind}/type"], out[f"{prefix}/{kind}/per_type"] = to_numpy(type_ids), to_numpy(per_type)
    out[f"{prefix}/node/part"], out[f"{prefix}/edge/part"] = (
        to_numpy(gpb.nid2partid(nids)),
        to_numpy(gpb.eid2partid(eids)),
    )
    return facts


def inspect_types(config: str, prefix: str, out: dict[str, np.ndarray]) -> dict:
    """load_partition_book, load_partition and load_partition(use_graphbolt=True) of every part."""

    with open(config) as f:
        doc = json.load(f)
    facts: dict = {"parts": []}
    for i in range(doc["num_parts"]):
        gpb, name, ntypes, etypes = dgl.distributed.load_partition_book(config, i)
        part = {
            "book": dump_book(gpb, f"{prefix}/p{i}/book", out),
            "graph_name": name,
            "ntypes": [[k, int(v)] for k, v in ntypes.items()],
            "etypes": [[etype_str(k), int(v)] for k, v in etypes.items()],
        }
        entry = doc[f"part-{i}"]
        if "part_graph" in entry:  # DGL_DIST_DEBUG is set: DGL verifies the partition
            g, _, _, _, name, ntype_list, etype_list = dgl.distributed.load_partition(config, i, load_feats=False)
            part["dgl"] = {"ntypes": list(ntype_list), "etypes": [etype_str(e) for e in etype_list]}
            for kind, data in (("ndata", g.ndata), ("edata", g.edata)):
                for key, value in data.items():
                    out[f"{prefix}/p{i}/dgl/{kind}/{key}"] = to_numpy(value)
        if "part_graph_graphbolt" in entry:
            part["gb"] = load_graphbolt(config, i, f"{prefix}/p{i}/gb", out)
        facts["parts"].append(part)
    return facts


def distgraph_types(config: str, prefix: str, out: dict[str, np.ndarray]) -> dict:
    """A standalone DistGraph of a 1-partition config, in a fresh standalone kvstore."""
    from dgl.distributed import kvstore

    kvstore.close_kvstore()  # every config gets its own store: no data left from the one before
    kvstore.init_kvstore(None, 1, "default")
    with open(config) as f:
        graph_name = json.load(f)["graph_name"]
    g = dgl.distributed.DistGraph(graph_name, part_config=config)
    facts = {
        "ntypes": list(g.ntypes),
        "etypes": [etype_str(c) for c in g.canonical_etypes],
        "ntype_ids": {nt: int(g.get_ntype_id(nt)) for nt in g.ntypes},
        "etype_ids": {etype_str(c): int(g.get_etype_id(c)) for c in g.canonical_etypes},
        "num_nodes": {nt: int(g.num_nodes(nt)) for nt in g.ntypes},
        "num_edges": {etype_str(c): int(g.num_edges(c)) for c in g.canonical_etypes},
        "book": dump_book(g.get_partition_book(), f"{prefix}/book", out),
    }
    read_dist_data(g, f"{prefix}/", out)
    for c in g.canonical_etypes:
        src, dst = g.find_edges(torch.arange(g.num_edges(c)), etype=c)
        out[f"{prefix}/find_edges/{etype_str(c)}/src"] = to_numpy(src)
        out[f"{prefix}/find_edges/{etype_str(c)}/dst"] = to_numpy(dst)
    return facts


def mode_type_order(spec_path: str, out: dict[str, np.ndarray], info: dict) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    for item in spec.get("convert", []):
        if item["debug"]:
            os.environ["DGL_DIST_DEBUG"] = "1"
        else:
            os.environ.pop("DGL_DIST_DEBUG", None)
        eids, inner_node, inner_edge = (bool(x) for x in item["flags"])
        dgl.distributed.dgl_partition_to_graphbolt(
            item["config"], store_eids=eids, store_inner_node=inner_node, store_inner_edge=inner_edge
        )
    os.environ["DGL_DIST_DEBUG"] = "1"
    info["inspect"] = [inspect_types(c, f"i{j}", out) for j, c in enumerate(spec.get("inspect", []))]
    if spec.get("distgraph"):
        os.environ["DGL_DIST_MODE"] = "standalone"
        dgl.distributed.initialize(ip_config=None)
        info["distgraph"] = [distgraph_types(c, f"d{j}", out) for j, c in enumerate(spec["distgraph"])]
        dgl.distributed.exit_client()


def mode_node_ids(config: str, spec_path: str, out: dict[str, np.ndarray], info: dict) -> None:
    """What node-ID features (hard negatives) name, through DGL's own ID maps."""
    with open(spec_path) as f:
        spec = json.load(f)
    with open(config) as f:
        num_parts = json.load(f)["num_parts"]
    base = os.path.dirname(config)
    parts = []
    for i in range(num_parts):
        g, _, edge_feats, gpb, _, _, _ = dgl.distributed.load_partition(config, i)
        orig_nids = dgl.data.utils.load_tensors(os.path.join(base, f"part{i}", "orig_nids.dgl"))
        orig_eids = dgl.data.utils.load_tensors(os.path.join(base, f"part{i}", "orig_eids.dgl"))
        homo_to_orig = {}
        for nt in gpb.ntypes:
            mask = g.ndata["inner_node"].bool() & (g.ndata[dgl.NTYPE] == gpb.ntypes.index(nt))
            homo = g.ndata[dgl.NID][mask]  # inner nodes of type nt, ascending _ID: orig_nids' order
            _, per_type = gpb.map_to_per_ntype(homo)
            out[f"p{i}/per_type/{nt}"] = to_numpy(per_type)
            out[f"p{i}/orig_nids/{nt}"] = to_numpy(orig_nids[nt])
            homo_to_orig[nt] = (homo, orig_nids[nt])
        for key, value in orig_eids.items():
            out[f"p{i}/orig_eids/{key}"] = to_numpy(value)
        parts.append((gpb, edge_feats, homo_to_orig))
    for i, (gpb, edge_feats, _) in enumerate(parts):
        for key, nt in spec:
            values = edge_feats[key].long()
            flat = values.reshape(-1)
            keep = flat >= 0
            homo = gpb.map_to_homo_nid(flat[keep], nt)
            owner = gpb.nid2partid(homo)
            resolved = flat.clone()
            orig = torch.empty_like(homo)
            for p in owner.unique().tolist():
                ids, origs = parts[p][2][nt]
                sel = owner == p
                idx = torch.searchsorted(ids, homo[sel]).clamp(max=max(len(ids) - 1, 0))
                assert bool((ids[idx] == homo[sel]).all()), f"{key}: IDs not inner nodes of part {p}"
                orig[sel] = origs[idx]
            resolved[keep] = orig
            out[f"p{i}/resolved/{key}"] = to_numpy(resolved.reshape(values.shape))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, inputs, target = argv[0], argv[1:-1], argv[-1]
    out: dict[str, np.ndarray] = {}
    info: dict = {"dgl": dgl.__version__, "torch": torch.__version__}
    modes = {"tensors": mode_tensors, "graphs": mode_graphs, "graphbolts": mode_graphbolts}
    if mode in modes:
        modes[mode](inputs, out, info)
    elif mode == "partition":
        mode_partition(inputs[0], out, info)
    elif mode == "distgraph":
        mode_distgraph(inputs[0], out, info)
    elif mode == "distgraph-server":
        mode_distgraph_server(inputs[0], out, info)
    elif mode == "graphbolt":
        mode_graphbolt(inputs[0], out, info)
    elif mode == "to-graphbolt":
        mode_to_graphbolt(inputs[0], inputs[1:4], out, info)
    elif mode == "type-order":
        mode_type_order(inputs[0], out, info)
    elif mode == "dgl-partition":
        mode_dgl_partition(inputs[0], inputs[1], inputs[2], out, info)
    elif mode == "node-ids":
        mode_node_ids(inputs[0], inputs[1], out, info)
    elif mode == "distserver":
        mode_distserver(inputs[0], inputs[1], inputs[2])
        return 0
    else:
        print(f"unknown mode {mode!r}; expected tensors, graphs, partition or distgraph", file=sys.stderr)
        return 2
    save_npz(target, out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
