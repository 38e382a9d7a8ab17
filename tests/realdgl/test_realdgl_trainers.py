"""--num-trainers-per-machine: trainer_id node data that real DGL loads, balanced and local."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgl_chunked import DispatchOptions, run
from dgl_chunked.synth import SynthSpec, write_synthetic_graph
from dgl_chunked.verify import load_partition_output, verify_partitions

from .harness import assert_real_dgl_loads

pytestmark = pytest.mark.realdgl


def test_two_trainers_per_machine(tmp_path):
    meta = write_synthetic_graph(tmp_path / "chunked", SynthSpec.heterogeneous(scale=4, seed=2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(
            tmp_path / "chunked",
            tmp_path / "out",
            num_parts=2,
            num_trainers_per_machine=2,
            seed=4,
            options=DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    report = verify_partitions(tmp_path / "chunked", tmp_path / "out", num_trainers_per_machine=2)
    assert report.ok, report.problems  # trainer_id node data included
    config, parts = load_partition_output(tmp_path / "out")
    arrays, _ = assert_real_dgl_loads(tmp_path / "out")
    for p, part in enumerate(parts):
        for ntype in meta.node_types:
            s, e = config.node_map[ntype][p]
            trainer = part.node_feats[f"{ntype}/trainer_id"]
            assert trainer.dtype == np.int64 and trainer.shape == (e - s,)
            # every node's trainer lies in its own machine's range [p*T, (p+1)*T)
            assert np.all((trainer >= 2 * p) & (trainer < 2 * p + 2))
            if e - s >= 200:  # the two trainers of a machine get balanced halves
                counts = np.bincount(trainer - 2 * p, minlength=2)
                assert abs(int(counts[0]) - int(counts[1])) <= 0.15 * (e - s), (ntype, counts)
            np.testing.assert_array_equal(arrays[f"p{p}/node_feats/{ntype}/trainer_id"], trainer)
    # the trainer split is the random assignment into 4 parts, machine = trainer // 2
    from dgl_chunked import assign_partitions, open_chunked_graph

    fine = assign_partitions(open_chunked_graph(tmp_path / "chunked"), 4, seed=4)
    for part in parts:
        for ntype in meta.node_types:
            orig = part.orig_nids[ntype]
            np.testing.assert_array_equal(
                part.node_feats[f"{ntype}/trainer_id"], np.asarray(fine[ntype].compute())[orig]
            )
