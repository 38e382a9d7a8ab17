"""GraphStorm's two partition steps in real DGL 2.1.0: ``range`` partitions and
node-ID features (hard negatives).

One DGL process per output runs ``load_partition`` on every partition and resolves,
through DGL's own ID maps (``map_to_per_ntype``, ``map_to_homo_nid``, ``nid2partid``,
the partitions' ``_ID`` / ``NTYPE`` and ``orig_nids.dgl``), what each translated
hard-negative value names; it must be the input's value for the same edge.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dgl_chunked.dispatch import DispatchOptions
from dgl_chunked.partition import range_bounds
from dgl_chunked.pipeline import run
from dgl_chunked.testing import write_graph_from_truth

from ..dispatch.test_node_id_features import CLICKS, FOLLOWS, SPECS, _truth
from .harness import assert_real_dgl_loads, run_dgl_json

pytestmark = pytest.mark.realdgl

NAMED = [[f"{CLICKS}/hard_neg", "item"], [f"{CLICKS}/one_neg", "item"], [f"{FOLLOWS}/neg", "user"]]


@pytest.mark.parametrize("method", ["range", "random"])
def test_hard_negatives_resolve_to_the_input_nodes(tmp_path: Path, method: str) -> None:
    truth = _truth()
    write_graph_from_truth(tmp_path / "g", truth, edge_chunks=3, feature_chunks=2)
    options = DispatchOptions(save_orig_nids=True, save_orig_eids=True, node_id_features=SPECS)
    result = run(tmp_path / "g", tmp_path / "out", num_parts=3, method=method, seed=2, options=options)
    assert_real_dgl_loads(tmp_path / "out")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(NAMED))
    arrays, _ = run_dgl_json("node-ids", str(result.config_path), str(spec))
    checked = 0
    for p in range(3):
        for key, _ in NAMED:
            etype, feat = key.rsplit("/", 1)
            want = truth.edge_data[etype][feat][arrays[f"p{p}/orig_eids/{etype}"]]
            got = arrays[f"p{p}/resolved/{key}"]
            np.testing.assert_array_equal(got, want.astype(np.int64), err_msg=key)
            checked += int((want >= 0).sum())
        if method == "range":  # DGL's per-type IDs of every inner node are its input IDs
            for ntype, n in truth.num_nodes.items():
                bounds = range_bounds(n, 3)
                np.testing.assert_array_equal(arrays[f"p{p}/orig_nids/{ntype}"], np.arange(bounds[p], bounds[p + 1]))
                np.testing.assert_array_equal(arrays[f"p{p}/per_type/{ntype}"], arrays[f"p{p}/orig_nids/{ntype}"])
    assert checked > 500
