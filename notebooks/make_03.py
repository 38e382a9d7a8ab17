"""Regenerate notebooks/03-results-back-to-keys.ipynb (outputs stripped)."""

import nbformat as nbf

cells = [
    nbf.v4.new_markdown_cell(
        "# Seeds in, results out: from your keys to partitions and back\n\n"
        "Raw tables know nodes by their own keys; a DGL trainer knows them by *new IDs*, partition by "
        "partition. This notebook makes keyed raw tables of a graph with planted communities, chunks "
        "and partitions them, turns a label table into per-partition seeds with `lookup_ids`, plays the "
        "trainers' part without DGL (a neighbour vote per partition, written as `(new ID, prediction)` "
        "pairs per rank), and brings the predictions back under the keys with `remap_results`. The "
        "user guide's *From your keys to a trained model and back* runs the same flow with DGL's "
        "distributed training."
    ),
    nbf.v4.new_code_cell(
        "import json, os, tempfile\n"
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "import pandas as pd\n"
        "from distributed import Client, LocalCluster\n"
        "import dgl_chunked as dglc\n"
        "from dgl_chunked.chunk import chunk_graph, read_orig_keys\n"
        "from dgl_chunked.verify import load_partition_output\n\n"
        "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)\n"
        "client = Client(cluster)\n"
        "work = tempfile.mkdtemp(prefix='dglc-nb03-')"
    ),
    nbf.v4.new_markdown_cell(
        "## Raw tables with keys\n\n"
        "2,000 accounts in 6 communities (the label), each with about 6 links inside its community "
        "and 2 random ones, both directions stored. The features lean weakly towards the label."
    ),
    nbf.v4.new_code_cell(
        "rng = np.random.default_rng(0)\n"
        "n, classes = 2000, 6\n"
        "keys = np.array([f'acct-{v:07d}' for v in rng.choice(10**7, n, replace=False)])\n"
        "label = rng.integers(0, classes, n)\n"
        "members = [np.flatnonzero(label == c) for c in range(classes)]\n"
        "src = np.concatenate([np.repeat(np.arange(n), 6), np.repeat(np.arange(n), 2)])\n"
        "dst = np.concatenate([np.concatenate([rng.choice(members[label[v]], 6) for v in range(n)]),\n"
        "                      rng.integers(0, n, 2 * n)])\n"
        "keep = src != dst\n"
        "src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])\n"
        "feat = rng.normal(size=(n, 16)).astype(np.float32)\n"
        "feat[np.arange(n), label] += 0.7\n"
        "raw = os.path.join(work, 'raw')\n"
        "os.makedirs(raw)\n"
        "pd.DataFrame({'key': keys, 'feat': list(feat)}).to_parquet(os.path.join(raw, 'nodes.parquet'))\n"
        "pd.DataFrame({'src': keys[src], 'dst': keys[dst]}).to_parquet(os.path.join(raw, 'edges.parquet'))\n"
        "labels = pd.DataFrame({'key': keys, 'label': label, 'is_train': (rng.random(n) < 0.6).astype(int)})\n"
        "labels.to_csv(os.path.join(raw, 'labels.csv'), index=False)\n"
        "labels.head()"
    ),
    nbf.v4.new_markdown_cell("## Chunk and partition\n\n`chunk` gives every key a dense ID and keeps the keys."),
    nbf.v4.new_code_cell(
        "spec = {'graph_name': 'accounts',\n"
        "        'node_types': {'account': {'key': {'path': 'nodes.parquet', 'column': 'key'},\n"
        "                                   'features': {'feat': {'path': 'nodes.parquet', 'column': 'feat'}}}},\n"
        "        'edge_types': {'account:links:account':\n"
        "                           {'source': {'path': 'edges.parquet', 'columns': ['src', 'dst']}}}}\n"
        "with open(os.path.join(raw, 'spec.json'), 'w') as f:\n"
        "    json.dump(spec, f)\n"
        "chunked, parts = os.path.join(work, 'chunked'), os.path.join(work, 'parts')\n"
        "chunk_graph(os.path.join(raw, 'spec.json'), chunked, num_chunks=2)\n"
        "dglc.run(chunked, parts, num_parts=2, method='lp', options=dglc.DispatchOptions(save_orig_nids=True))\n"
        "config = dglc.read_partition_config(parts)\n"
        "config.node_map"
    ),
    nbf.v4.new_markdown_cell(
        "## Seeds and labels per partition: `lookup_ids`\n\n"
        "The label table's keys become each partition's new IDs, sorted, with the labels aligned: "
        "what a trainer passes to `DistNodeDataLoader`."
    ),
    nbf.v4.new_code_cell(
        "seeds = os.path.join(work, 'seeds')\n"
        "found = dglc.lookup_ids(parts, os.path.join(raw, 'labels.csv'), seeds, graph=chunked, column='key',\n"
        "                        labels=['label', 'is_train'])\n"
        "per_part = pd.DataFrame([\n"
        "    {'partition': p, 'seeds': rows,\n"
        "     'train': int(np.load(os.path.join(seeds, f'part{p}/account.is_train.npy')).sum())}\n"
        "    for p, rows in enumerate(found.rows)])\n"
        "per_part"
    ),
    nbf.v4.new_markdown_cell(
        "Inside a partition new IDs follow ascending original ID: the map between the two spaces is "
        "one increasing run per partition, which is what lets `remap` and `lookup` work block by "
        "block without a global sort."
    ),
    nbf.v4.new_code_cell(
        "fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))\n"
        "for p in range(config.num_parts):\n"
        "    nids = np.load(os.path.join(seeds, f'part{p}/account.nids.npy'))\n"
        "    orig = np.load(os.path.join(seeds, f'part{p}/account.orig_nids.npy'))\n"
        "    axes[0].plot(orig, nids, '.', ms=2, label=f'partition {p}')\n"
        "axes[0].set(title='new ID against original ID', xlabel='original ID', ylabel='new ID (type-wise)')\n"
        "axes[0].legend()\n"
        "axes[1].bar(per_part['partition'], per_part['seeds'], label='labelled')\n"
        "axes[1].bar(per_part['partition'], per_part['train'], label='of which train', alpha=0.8)\n"
        "axes[1].set(title='seeds per partition', xlabel='partition', xticks=per_part['partition'])\n"
        "axes[1].legend()\n"
        "fig.tight_layout()"
    ),
    nbf.v4.new_markdown_cell(
        "## The trainers' part, without DGL\n\n"
        "Each rank predicts its partition's nodes by a vote of their labelled in-neighbours (its "
        "`graph.dgl` holds them, HALO nodes included, under their new IDs), falling back to the "
        "features, and writes `(new IDs, predictions)`: the pairs a DGL trainer writes after "
        "`node_split`."
    ),
    nbf.v4.new_code_cell(
        "_, partitions = load_partition_output(parts)\n"
        "known = {}\n"
        "for p in range(config.num_parts):\n"
        "    nids = np.load(os.path.join(seeds, f'part{p}/account.nids.npy'))\n"
        "    train = np.load(os.path.join(seeds, f'part{p}/account.is_train.npy')) == 1\n"
        "    known.update(zip(nids[train], np.load(os.path.join(seeds, f'part{p}/account.label.npy'))[train]))\n"
        "preds = os.path.join(work, 'pred')\n"
        "os.makedirs(preds)\n"
        "for p, part in enumerate(partitions):\n"
        "    new = part.ndata['_ID']                      # new ID of every local node\n"
        "    inner = np.flatnonzero(part.ndata['inner_node'] == 1)\n"
        "    votes = np.zeros((len(new), classes))\n"
        "    lab = np.array([known.get(int(v), -1) for v in new[part.src]])\n"
        "    np.add.at(votes, (part.dst[lab >= 0], lab[lab >= 0]), 1)\n"
        "    x = part.node_feats['account/feat']\n"
        "    pred = np.where(votes[inner].sum(1) > 0, votes[inner].argmax(1), x[:, :classes].argmax(1))\n"
        "    np.save(os.path.join(preds, f'ids-{p}.npy'), new[inner])\n"
        "    np.save(os.path.join(preds, f'pred-{p}.npy'), pred)"
    ),
    nbf.v4.new_markdown_cell(
        "## Predictions back under the keys: `remap_results`\n\n"
        "Parquet output holds the prediction, the user's ID (`nid`, as GraphStorm's `remap_result` names it; "
        "renamed to `key` here) and the original ID; a join with the label table by key gives the accuracy."
    ),
    nbf.v4.new_code_cell(
        "source = dglc.ResultSource.pairs(os.path.join(preds, 'pred-*.npy'), os.path.join(preds, 'ids-*.npy'),\n"
        "                                 name='pred')\n"
        "dglc.remap_results(parts, {'account': source}, os.path.join(work, 'remapped'), graph=chunked,\n"
        "                   format='parquet', column_names={'nid': 'key'})\n"
        "remapped = pd.read_parquet(os.path.join(work, 'remapped/nodes/account'))\n"
        "test = labels[labels.is_train == 0].merge(remapped, on='key')\n"
        "features_only = (feat[:, :classes].argmax(1) == label)[labels.is_train.to_numpy() == 0].mean()\n"
        "vote = (test.pred == test.label).mean()\n"
        "pd.DataFrame({'accuracy on test keys': {'neighbour vote (remapped by key)': vote,\n"
        "                                        'features alone': features_only}}).round(3)"
    ),
    nbf.v4.new_code_cell(
        "confusion = pd.crosstab(test.label, test.pred)\n"
        "fig, ax = plt.subplots(figsize=(4.5, 3.8))\n"
        "ax.imshow(confusion.to_numpy(), cmap='Blues')\n"
        "ax.set(title='test keys: label against prediction', xlabel='prediction', ylabel='label')\n"
        "fig.tight_layout()\n"
        "remapped.head()"
    ),
    nbf.v4.new_code_cell("client.close()\ncluster.close()"),
]
nb = nbf.v4.new_notebook(
    cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
)
nbf.write(nb, "notebooks/03-results-back-to-keys.ipynb")
