"""--halo-hops 2 with HALO edges kept: the local graph is the exact 2-hop in-neighbourhood."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from dgl_chunked import DispatchOptions, assign_partitions, dispatch, open_chunked_graph
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output, verify_partitions

from .harness import assert_real_dgl_loads

pytestmark = pytest.mark.realdgl

OPTS = DispatchOptions(save_orig_nids=True, save_orig_eids=True)


def _dispatch(tmp_path, name, options):
    graph = open_chunked_graph(tmp_path / "chunked")
    parts = assign_partitions(graph, 3, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dispatch(graph, parts, tmp_path / name, num_parts=3, options=options)
    return load_partition_output(tmp_path / name)


def test_two_hop_in_neighbourhood(tmp_path):
    write_synthetic_graph(tmp_path / "chunked", SynthSpec.heterogeneous(scale=1, seed=6))
    one_config, one = _dispatch(tmp_path, "h1", OPTS)
    assert verify_partitions(tmp_path / "chunked", tmp_path / "h1").ok
    config, parts = _dispatch(tmp_path, "h2", replace(OPTS, halo_hops=2))
    assert config.halo_hops == 2
    # the global edge list (new IDs) from the verified 1-hop output
    gsrc = np.concatenate([p.ndata["_ID"][p.src] for p in one])
    gdst = np.concatenate([p.ndata["_ID"][p.dst] for p in one])
    geid = np.concatenate([p.edata["_ID"] for p in one])
    part_starts = np.array([config.node_map[next(iter(config.ntypes))][p][0] for p in range(3)] + [config.num_nodes])
    for p, (part, base) in enumerate(zip(parts, one, strict=True)):
        lo, hi = part_starts[p], part_starts[p + 1]
        d0 = np.arange(lo, hi)
        d1 = np.setdiff1d(np.unique(gsrc[np.isin(gdst, d0)]), d0)
        want = np.isin(gdst, np.union1d(d0, d1))
        want_nodes = np.union1d(d0, gsrc[want])
        nid, eid = part.ndata["_ID"], part.edata["_ID"]
        np.testing.assert_array_equal(np.sort(nid), want_nodes)
        got = sorted(zip(nid[part.src].tolist(), nid[part.dst].tolist(), eid.tolist(), strict=False))
        assert got == sorted(zip(gsrc[want].tolist(), gdst[want].tolist(), geid[want].tolist(), strict=False))
        # owned edges first, unchanged from the 1-hop output; HALO edges after, by edge ID
        n_owned = base.src.shape[0]
        np.testing.assert_array_equal(eid[:n_owned], base.edata["_ID"])
        np.testing.assert_array_equal(part.edata["inner_edge"], np.arange(eid.shape[0]) < n_owned)
        assert np.all(np.diff(eid[n_owned:]) > 0)
        assert np.all((eid[n_owned:] < base.edata["_ID"][0]) | (eid[n_owned:] > base.edata["_ID"][-1]))
        owner = np.searchsorted(part_starts[:-1], nid, side="right") - 1
        np.testing.assert_array_equal(part.ndata["part_id"], owner)
        assert part.node_feats.keys() == base.node_feats.keys()
    _, info = assert_real_dgl_loads(tmp_path / "h2")
    for p in range(3):
        assert info[f"p{p}"]["num_inner_edges"] == one[p].src.shape[0]
