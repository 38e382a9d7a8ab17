"""GSProcessing's string IDs through our partitions and real DGL 2.1.0, and back, row by row.

A chunked graph with GSProcessing-shaped ``raw_id_mappings`` is partitioned by ``run``
(which carries the mapping next to the partitions). Real DGL's ``load_partition`` gives
every partition's own ``paper`` nodes and their features, as a trainer sees them; those
rows, saved as ``(type-wise new ID, row)`` pairs per partition, are remapped to CSV under
the string IDs and checked against the input by ID. ``lookup`` of every string ID gives
each partition exactly the nodes DGL says it owns.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import dgl_chunked as dglc
from dgl_chunked.cli import main
from tests.remap.gsp_mappings import string_ids, write_mapping

from .harness import require_dgl, run_dgl_json


def _dgl_inner_papers(config: Path, num_parts: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per partition, as real DGL loads it: the type-wise new IDs of its own papers and their ``feat`` rows."""
    arrays, info = run_dgl_json("partition", str(config))
    out, before = [], 0
    for p in range(num_parts):
        lo, hi = info[f"p{p}"]["gpb"]["node_map"]["paper"][p]
        ids = arrays[f"p{p}/ndata/_ID"][arrays[f"p{p}/ndata/inner_node"].astype(bool)]
        ids = np.sort(ids[(ids >= lo) & (ids < hi)])
        feat = arrays[f"p{p}/node_feats/paper/feat"]
        assert feat.shape[0] == ids.shape[0] == hi - lo
        out.append((ids - lo + before, feat))
        before += hi - lo
    return out


def test_predictions_back_under_gsprocessing_string_ids(tmp_path: Path) -> None:
    require_dgl()
    with dask.config.set(scheduler="synchronous"):
        dglc.write_synthetic_graph(tmp_path / "chunked", dglc.SynthSpec.heterogeneous(scale=1, seed=8))
    n = dglc.open_chunked_graph(tmp_path / "chunked").num_nodes("paper")
    users = string_ids(n, 11)
    write_mapping(tmp_path / "chunked" / "raw_id_mappings", "paper", users, files=4, seed=12)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        dglc.run(
            tmp_path / "chunked",
            tmp_path / "parts",
            num_parts=2,
            seed=2,
            options=dglc.DispatchOptions(save_orig_nids=True),
        )
    per_part = _dgl_inner_papers(tmp_path / "parts" / "metadata.json", 2)
    for p, (ids, feat) in enumerate(per_part):
        np.save(tmp_path / f"ids-{p}.npy", ids)
        np.save(tmp_path / f"pred-{p}.npy", feat)

    # the truth, as GSProcessing wrote it: user ID -> original ID, and the input's features
    mapping = pq.read_table(tmp_path / "chunked" / "raw_id_mappings" / "paper").to_pandas()
    orig_of = dict(zip(mapping["orig"], mapping["new"], strict=True))
    truth = np.asarray(dglc.open_chunked_graph(tmp_path / "chunked").node_feature("paper", "feat").compute())

    args = ["remap", "--partitions", str(tmp_path / "parts"), "--out-dir", str(tmp_path / "remapped")]
    args += ["--result", f"paper={tmp_path / 'pred-*.npy'}", "--ids", f"paper={tmp_path / 'ids-*.npy'}"]
    assert main([*args, "--output-format", "csv", "--name", "paper=emb", "--column-names", "nid,~id"]) == 0
    files = sorted((tmp_path / "remapped" / "nodes" / "paper").glob("part-*.csv"))
    frame = pd.concat([pd.read_csv(f, dtype={"~id": str}) for f in files], ignore_index=True)
    assert list(frame.columns) == ["emb", "~id", "type_nid"] and len(frame) == n
    assert sorted(frame["~id"]) == sorted(users)
    for user, orig, emb in zip(frame["~id"], frame["type_nid"], frame["emb"], strict=True):
        assert orig_of[user] == orig
        np.testing.assert_array_equal(np.array(emb.split(";"), dtype=np.float32), truth[orig], err_msg=user)

    queries = str(tmp_path / "parts" / "raw_id_mappings" / "paper" / "parquet" / "*")
    args = ["lookup", "--partitions", str(tmp_path / "parts"), "--type", "paper", "--out-dir", str(tmp_path / "seeds")]
    assert main([*args, "--queries", queries, "--column", "orig"]) == 0
    for p, (ids, _) in enumerate(per_part):
        np.testing.assert_array_equal(np.load(tmp_path / "seeds" / f"part{p}" / "paper.nids.npy"), ids)
