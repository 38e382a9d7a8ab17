"""remap and lookup tasks carry the run token: two runs share no key (see tests/behaviour/test_task_keys.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dgl_chunked.lookup import lookup_ids
from dgl_chunked.remap import ResultSource, remap_results
from tests.behaviour.test_task_keys import Recorder, _twice, recorder  # noqa: F401 - the fixture

from .conftest import Parts


def test_remap_and_lookup_keys_differ_between_runs(recorder: Recorder, hetero: Parts, tmp_path: Path) -> None:  # noqa: F811
    recorder.prefixes = ("dglc-remap-", "dglc-lookup-")
    bare = hetero.without_orig_ids(tmp_path / "bare")
    new = hetero.new_order("edge", "author:writes:paper", "order")
    np.save(tmp_path / "order.npy", new)
    np.save(tmp_path / "ids.npy", np.arange(len(new))[::-1].copy())
    np.save(tmp_path / "rows.npy", new[::-1].copy())
    pairs = ResultSource.pairs(str(tmp_path / "rows.npy"), str(tmp_path / "ids.npy"))
    for name, source in (("dense", str(tmp_path / "order.npy")), ("pairs", pairs)):
        _twice(
            recorder,
            lambda i, name=name, source=source: remap_results(
                bare, {"writes": source}, tmp_path / f"{name}{i}", graph=hetero.chunked, assignment=hetero.assign
            ),
        )
    _twice(recorder, lambda i: lookup_ids(hetero.out, np.arange(0, 100, 3), tmp_path / f"lk{i}", type="paper", by="id"))
