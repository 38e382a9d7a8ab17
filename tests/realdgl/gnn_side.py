"""GraphSAGE node classification with real DGL 2.1.0, run in the DGL venv (torch, CPU).

Modes (``python gnn_side.py MODE ARGS.json``; the JSON file holds the arguments):

- ``machine``: one "machine" of a distributed run: starts a ``DistGraphServer`` for
  its partition in a child process, then the trainer in this process. Meant to run
  in a network namespace of its own (its own address in ``ip_config.txt``) with a
  private ``/dev/shm``, so that DGL's shared memory, named by data name only, and
  its machine detection, by local address, see one machine each.
- ``single``: the same model trained in one process on the whole graph, built from
  the raw tables (the reference accuracy).

The trainer reads its seeds and labels from ``dgl-chunked lookup``'s per-partition
``.pt`` file, trains with ``DistNodeDataLoader`` and DDP (gloo), predicts the class of
the nodes ``node_split`` gives it, and writes ``{"ids": new IDs, "pred": classes}``
with ``torch.save`` for ``dgl-chunked remap``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dgl
import dgl.nn.pytorch as dglnn
import numpy as np
import torch as th
import torch.nn.functional as F


class SAGE(th.nn.Module):
    def __init__(self, in_feats: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.layers = th.nn.ModuleList(
            [dglnn.SAGEConv(in_feats, hidden, "mean"), dglnn.SAGEConv(hidden, classes, "mean")]
        )

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks, strict=True)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


def seed_everything(seed: int) -> None:
    th.manual_seed(seed)
    dgl.seed(seed)


def train_steps(model, loader, features, labels_of, opt, epochs: int, join=None) -> None:
    for _ in range(epochs):
        ctx = join() if join is not None else _Null()
        with ctx:
            for input_nodes, seeds, blocks in loader:
                logits = model(blocks, features(input_nodes))
                loss = F.cross_entropy(logits, labels_of(seeds))
                opt.zero_grad()
                loss.backward()
                opt.step()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- distributed -------------------------------------------------------------------


def _server(args: dict) -> None:
    server = dgl.distributed.DistGraphServer(
        args["rank"], args["ip_config"], 1, args["num_trainers"], args["part_config"], graph_format=["csc", "coo"]
    )
    server.start()


def _trainer(args: dict) -> None:
    os.environ.update(DGL_DIST_MODE="distributed", DGL_ROLE="default", DGL_NUM_SERVER="1", DGL_NUM_SAMPLER="0")
    seed_everything(args["seed"] + args["rank"])
    dgl.distributed.initialize(args["ip_config"])
    th.distributed.init_process_group(
        "gloo", init_method=f"tcp://{args['master']}", rank=args["rank"], world_size=args["num_trainers"]
    )
    g = dgl.distributed.DistGraph(args["graph_name"], part_config=args["part_config"])
    pb = g.get_partition_book()
    data = th.load(os.path.join(args["seeds"], f"part{pb.partid}", f"{args['ntype']}.pt"))
    nids, labels, is_train = data["nids"], data["label"].long(), data["is_train"].bool()
    train_nids = nids[is_train]
    feats = g.ndata["feat"]

    def labels_of(seeds):
        return labels[th.searchsorted(nids, seeds)]

    sampler = dgl.dataloading.NeighborSampler(args["fanouts"])
    # DDP averages the trainers' gradients: each takes its share of the one-process batch
    batch = args["batch_size"] // args["num_trainers"]
    loader = dgl.dataloading.DistNodeDataLoader(g, train_nids, sampler, batch_size=batch, shuffle=True)
    model = th.nn.parallel.DistributedDataParallel(SAGE(feats.shape[1], args["hidden"], args["classes"]))
    opt = th.optim.Adam(model.parameters(), lr=args["lr"])
    train_steps(model, loader, lambda n: feats[n], labels_of, opt, args["epochs"], join=model.join)
    model.eval()
    nodes = dgl.distributed.node_split(th.ones(g.num_nodes(), dtype=th.bool), pb, force_even=True)
    full = dgl.dataloading.NeighborSampler([-1, -1])
    ids, preds, rows = [], [], []
    with th.no_grad():
        for input_nodes, seeds, blocks in dgl.dataloading.DistNodeDataLoader(g, nodes, full, batch_size=512):
            preds.append(model.module(blocks, feats[input_nodes]).argmax(1))
            ids.append(seeds)
            rows.append(feats[seeds])  # the features this trainer saw, to check against the raw table
    os.makedirs(args["pred_dir"], exist_ok=True)
    target = os.path.join(args["pred_dir"], f"pred-{args['rank']}.pt")
    th.save({"ids": th.cat(ids), "pred": th.cat(preds), "feat": th.cat(rows)}, target + ".tmp")
    os.replace(target + ".tmp", target)
    local = pb.partid2nids(pb.partid)
    facts = {
        "rank": args["rank"],
        "partid": int(pb.partid),
        "train_seeds": int(train_nids.numel()),
        "train_seeds_local": int(np.isin(train_nids.numpy(), local.numpy()).sum()),
        "predicted": int(nodes.numel()),
    }
    with open(os.path.join(args["pred_dir"], f"facts-{args['rank']}.json"), "w") as f:
        json.dump(facts, f)
    g.barrier()
    dgl.distributed.exit_client()


def mode_machine(args: dict) -> int:
    """Server in a child process, trainer here; the server ends when every trainer has exited."""
    env = dict(os.environ, DGL_DIST_MODE="distributed", DGL_ROLE="server")
    server = subprocess.Popen([sys.executable, __file__, "server", args["args_file"]], env=env)
    try:
        _trainer(args)
    except BaseException:
        server.kill()
        raise
    deadline = time.time() + 60
    while server.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    if server.poll() is None:
        server.kill()
        return 3
    return 0


# --- one process --------------------------------------------------------------------


def mode_single(args: dict) -> int:
    import pandas as pd

    seed_everything(args["seed"])
    nodes = pd.read_parquet(args["nodes"])
    edges = pd.read_parquet(args["edges"])
    labels = pd.read_csv(args["labels"])
    index = {k: i for i, k in enumerate(nodes["key"])}
    src = th.tensor(edges["src"].map(index).to_numpy())
    dst = th.tensor(edges["dst"].map(index).to_numpy())
    g = dgl.graph((src, dst), num_nodes=len(nodes))
    feats = th.tensor(np.stack(nodes["feat"].to_numpy()), dtype=th.float32)
    y = th.full((len(nodes),), -1, dtype=th.long)
    ids = th.tensor(labels["key"].map(index).to_numpy())
    y[ids] = th.tensor(labels["label"].to_numpy())
    train = ids[th.tensor(labels["is_train"].to_numpy() == 1)]
    test = ids[th.tensor(labels["is_train"].to_numpy() == 0)]
    sampler = dgl.dataloading.NeighborSampler(args["fanouts"])
    loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=args["batch_size"], shuffle=True)
    model = SAGE(feats.shape[1], args["hidden"], args["classes"])
    opt = th.optim.Adam(model.parameters(), lr=args["lr"])
    train_steps(model, loader, lambda n: feats[n], lambda s: y[s], opt, args["epochs"])
    model.eval()
    full = dgl.dataloading.NeighborSampler([-1, -1])
    with th.no_grad():
        pred = th.empty(len(nodes), dtype=th.long)
        for input_nodes, seeds, blocks in dgl.dataloading.DataLoader(g, th.arange(len(nodes)), full, batch_size=512):
            pred[seeds] = model(blocks, feats[input_nodes]).argmax(1)
    acc = float((pred[test] == y[test]).float().mean())
    facts = {"accuracy": acc, "features_only": _features_only(feats, y, train, test, args)}
    with open(args["out"], "w") as f:
        json.dump({**facts, "test": int(test.numel()), "train": int(train.numel())}, f)
    return 0


def _features_only(feats, y, train, test, args: dict) -> float:
    """Test accuracy of a linear model on the node features alone (no graph)."""
    model = th.nn.Linear(feats.shape[1], args["classes"])
    opt = th.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(200):
        loss = F.cross_entropy(model(feats[train]), y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with th.no_grad():
        return float((model(feats[test]).argmax(1) == y[test]).float().mean())


def main(argv: list[str]) -> int:
    mode, args_file = argv
    with open(args_file) as f:
        args = json.load(f)
    args["args_file"] = args_file
    if mode == "server":
        _server(args)
        return 0
    return {"machine": mode_machine, "single": mode_single}[mode](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
