"""Regenerate notebooks/01-explore-chunked-graph.ipynb (outputs stripped)."""

import nbformat as nbf

md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell
cells = [
    md(
        "# Explore a chunked graph\n\n"
        "Open a graph in DGL's *Chunked Graph Format* as lazy Dask collections, check it, and look at "
        "its degree distributions and feature statistics on a 2-worker `LocalCluster`.\n\n"
        "Set `DGL_CHUNKED_DATA` to a chunked graph directory (the folder holding `metadata.json`) to "
        "explore your own data; otherwise a synthetic heterogeneous graph with power-law degrees is written "
        "to a temporary folder."
    ),
    code(
        "import os, tempfile\n"
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "import pandas as pd\n"
        "import dask\n"
        "from distributed import Client, LocalCluster\n\n"
        "from dgl_chunked.io.chunked.graph import open_chunked_graph\n"
        "from dgl_chunked.io.chunked.validate import validate_chunked_graph\n"
        "from dgl_chunked.synth import SynthSpec, write_synthetic_graph\n\n"
        "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=':0')\n"
        "client = Client(cluster)\n"
        "work = tempfile.mkdtemp(prefix='dglc-nb01-')"
    ),
    md(
        "## 1. Get a graph\n\n"
        "`write_synthetic_graph` writes one file per chunk as Dask tasks on the cluster, then `metadata.json`."
    ),
    code(
        "in_dir = os.environ.get('DGL_CHUNKED_DATA')\n"
        "if not in_dir:\n"
        "    in_dir = os.path.join(work, 'chunked')\n"
        "    spec = SynthSpec.heterogeneous(scale=4, distribution='powerlaw', num_feature_chunks=3, seed=1)\n"
        "    write_synthetic_graph(in_dir, spec)\n"
        "sorted(os.listdir(in_dir))"
    ),
    md(
        "## 2. Validate it\n\n"
        "Every chunk file is checked in its own task; every problem would be listed with its file and row."
    ),
    code("report = validate_chunked_graph(in_dir)\nassert report.ok, report.problems\nprint(report.summary_table())"),
    md(
        "## 3. Open it lazily\n\n"
        "Opening reads `metadata.json` (and later only file headers): the collections below have known "
        "chunks and divisions, and nothing is computed yet."
    ),
    code(
        "graph = open_chunked_graph(in_dir)\n"
        "meta = graph.metadata\n"
        "print(graph)\n"
        "pd.DataFrame({\n"
        "    'nodes': meta.num_nodes_per_type,\n"
        "    'node chunks': [len(graph.node_chunks(t)) for t in meta.node_types],\n"
        "    'features': [', '.join(meta.node_data.get(t, {})) for t in meta.node_types],\n"
        "}, index=list(meta.node_types))"
    ),
    code(
        "pd.DataFrame({\n"
        "    'edges': [graph.num_edges(e) for e in graph.edge_types],\n"
        "    'edge files': [len(graph.edge_chunks(e)) for e in graph.edge_types],\n"
        "    'features': [', '.join(meta.edge_data.get(e, {})) for e in graph.edge_types],\n"
        "}, index=list(graph.edge_types))"
    ),
    code(
        "etype = graph.edge_types[0]\n"
        "edges = graph.edges(etype)\n"
        "print(etype, 'divisions:', edges.divisions)\n"
        "edges.head()"
    ),
    md("## 4. Degree distributions\n\nIn-degree (edges per destination node) of every edge type, in one compute."),
    code(
        "lazy = {e: graph.edges(e)['dst'].value_counts() for e in graph.edge_types}\n"
        "(computed,) = dask.compute(lazy)\n"
        "degrees = {}\n"
        "for e, counts in computed.items():\n"
        "    n = graph.num_nodes(meta.etype(e).dst_type)\n"
        "    degree = np.zeros(n, np.int64)\n"
        "    degree[counts.index.to_numpy()] = counts.to_numpy()\n"
        "    degrees[e] = degree\n"
        "pd.DataFrame({e: {'mean': d.mean(), 'max': d.max(), 'zero-degree %': 100 * (d == 0).mean(),\n"
        "                  'top-1% share %': 100 * np.sort(d)[::-1][:max(len(d) // 100, 1)].sum() / max(d.sum(), 1)}\n"
        "              for e, d in degrees.items()}).T.round(2)"
    ),
    code(
        "fig, axes = plt.subplots(1, 2, figsize=(11, 4))\n"
        "for e, d in degrees.items():\n"
        "    values, freq = np.unique(d[d > 0], return_counts=True)\n"
        "    axes[0].loglog(values, freq, 'o', ms=3, label=e)\n"
        "    axes[1].plot(np.sort(d)[::-1].cumsum() / max(d.sum(), 1), label=e)\n"
        "axes[0].set(title='in-degree distribution', xlabel='in-degree', ylabel='nodes')\n"
        "axes[1].set(title='cumulative share of edges', xlabel='nodes, by decreasing in-degree', xscale='log')\n"
        "axes[0].legend(fontsize=7)\n"
        "fig.tight_layout()\n"
        "fig.savefig(os.path.join(work, 'degrees.png'))"
    ),
    md(
        "## 5. Feature statistics\n\n"
        "Column statistics of every node feature, computed on the cluster from the memory-mapped chunks."
    ),
    code(
        "stats = {}\n"
        "for ntype, feats in meta.node_data.items():\n"
        "    for feat in feats:\n"
        "        x = graph.node_feature(ntype, feat)\n"
        "        x2 = x.reshape(x.shape[0], -1).astype('float64')\n"
        "        stats[(ntype, feat)] = dict(dtype=str(x.dtype), shape=x.shape, chunks=len(x.chunks[0]),\n"
        "                                    mean=x2.mean(), std=x2.std(), min=x2.min(), max=x2.max())\n"
        "(stats,) = dask.compute(stats)\n"
        "table = pd.DataFrame(stats).T\n"
        "table"
    ),
    code(
        "if 'paper' in meta.node_data and 'feat' in meta.node_data['paper']:\n"
        "    feat = graph.node_feature('paper', 'feat')\n"
        "    mean, std = dask.compute(feat.mean(axis=0), feat.std(axis=0))\n"
        "    fig, ax = plt.subplots(figsize=(7, 3))\n"
        "    ax.errorbar(np.arange(len(mean)), mean, yerr=std, fmt='o')\n"
        "    ax.set(title='paper/feat: per-column mean ± std', xlabel='column')\n"
        "    fig.tight_layout()\n"
        "    fig.savefig(os.path.join(work, 'features.png'))"
    ),
    code("client.close()\ncluster.close()"),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, "notebooks/01-explore-chunked-graph.ipynb")
