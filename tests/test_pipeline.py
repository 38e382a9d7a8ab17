"""``run`` checks its locations and the space once, before anything is written."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import dask
import pytest

from dgl_chunked import DispatchOptions, dispatch, run
from dgl_chunked.storage.overlap import OverlapError

# modules by name: the package's function ``dispatch`` hides its subpackage as an attribute
pipeline = importlib.import_module("dgl_chunked.pipeline")
dispatch_api = importlib.import_module("dgl_chunked.dispatch.api")


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of ``module.name`` (still calling it)."""
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_run_checks_overlap_and_space_once(tiny_chunked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_overlap = _count(monkeypatch, pipeline, "check_no_overlap")
    run_space = _count(monkeypatch, pipeline, "forecast_run")
    dispatch_overlap = _count(monkeypatch, dispatch_api, "check_no_overlap")
    dispatch_space = _count(monkeypatch, dispatch_api, "forecast_dispatch")
    with dask.config.set(scheduler="synchronous"):
        result = run(str(tiny_chunked), tmp_path / "out", num_parts=2, partitions_dir=tmp_path / "assign")
    assert result.config.num_parts == 2 and result.config.num_nodes == 32
    assert json.loads((tmp_path / "assign" / "partition_meta.json").read_text())["num_parts"] == 2
    # one check of the outputs (output, scratch, staging), one of the kept assignment; one forecast
    assert (len(run_overlap), len(run_space)) == (2, 1)
    assert (len(dispatch_overlap), len(dispatch_space)) == (0, 0)  # the run's dispatch checks neither again

    with dask.config.set(scheduler="synchronous"):  # dispatch alone still checks both, once
        dispatch(str(tiny_chunked), tmp_path / "assign", tmp_path / "out2", options=DispatchOptions())
    assert (len(dispatch_overlap), len(dispatch_space)) == (1, 1)


def test_run_refuses_a_staging_inside_the_input_before_anything_is_written(tiny_chunked: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    options = DispatchOptions(staging_dir=str(tiny_chunked))
    with pytest.raises(OverlapError, match="staging directory .* is inside the chunked graph directory"):
        run(str(tiny_chunked), out, num_parts=2, options=options)
    assert not out.exists()  # no scratch was made, no partitioner ran
    assert not [p for p in tiny_chunked.iterdir() if p.name.startswith("dglc-")]


def test_run_refuses_a_kept_assignment_inside_its_output(tiny_chunked: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(OverlapError, match="--partitions-dir .* is inside the --out-dir"):
        run(str(tiny_chunked), out, num_parts=2, partitions_dir=out / "assign")
    assert not out.exists()
