"""forecast_run / `dgl-chunked plan` against what a real run does, and the disk-space refusal."""

from __future__ import annotations

import os
from collections import namedtuple
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import dgl_chunked as dglc
from dgl_chunked.cli import cli
from dgl_chunked.dispatch.forecast import CALIBRATION, space
from dgl_chunked.synth import SynthSpec, write_synthetic_graph

DiskUsage = namedtuple("DiskUsage", "total used free")


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plan") / "chunked"
    spec = SynthSpec.homogeneous(20_000, 200_000, feat_dim=16, num_chunks=4, edge_feat_dim=2, seed=0)
    write_synthetic_graph(root, spec)
    return root


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("num_parts", "options"),
    [(2, dglc.DispatchOptions()), (3, dglc.DispatchOptions(save_orig_nids=True, graph_formats=("coo", "csc")))],
)
def test_plan_matches_a_real_run(graph_dir, tmp_path, num_parts, options):
    out = tmp_path / "out"
    options = replace(options, block_rows=4096)
    plan = dglc.forecast_run(graph_dir, out, num_parts=num_parts, workers=2, options=options)
    assert not out.exists()  # planning writes nothing
    result = dglc.run(graph_dir, out, num_parts=num_parts, options=replace(options, keep_staging=True))
    planned = {s.name: s.tasks for s in plan.stages if not s.name.startswith("partition")}
    assert planned == result.step_tasks  # exact, stage by stage
    staged, written = _du(out / "_staging"), _du(out) - _du(out / "_staging")
    assert plan.staging_bytes == pytest.approx(staged, rel=0.05)
    assert plan.output_bytes == pytest.approx(written, rel=0.05)
    assert (plan.nodes, plan.edges) == (result.config.num_nodes, result.config.num_edges)
    assert plan.seconds > 0 and plan.peak_worker_bytes > CALIBRATION.worker_base_bytes


def _short_disk(monkeypatch, free: int) -> None:
    real = space.shutil.disk_usage
    monkeypatch.setattr(space.shutil, "disk_usage", lambda p: DiskUsage(real(p).total, real(p).used, free))


def test_plan_and_run_refuse_when_the_disk_is_short(graph_dir, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _short_disk(monkeypatch, free=1_000_000)  # 1 MB: the run needs tens of MB
    plan = dglc.forecast_run(graph_dir, out, num_parts=2, workers=2)
    assert [d.short for d in plan.disks] == [True]  # staging inside the output: one filesystem
    with pytest.raises(dglc.errors.InsufficientSpaceError, match="free"):
        plan.check_space()
    runner = CliRunner()
    res = runner.invoke(cli, ["plan", "--in-dir", str(graph_dir), "--out-dir", str(out), "--num-parts", "2"])
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(out) in errors[0] and "NOT ENOUGH" in res.output
    with pytest.raises(dglc.errors.InsufficientSpaceError):
        dglc.run(graph_dir, out, num_parts=2)
    assert not out.exists()  # refused before anything was written
    res = runner.invoke(
        cli, ["run", "--in-dir", str(graph_dir), "--out-dir", str(out), "--num-parts", "2", "--workers", "1"]
    )
    assert res.exit_code == 1 and res.output.count("error:") == 1, res.output
    assert not out.exists()


def test_dispatch_checks_space_at_start_and_counts_what_it_replaces(graph_dir, tmp_path, monkeypatch):
    out, assign = tmp_path / "out", tmp_path / "assign"
    graph = dglc.open_chunked_graph(graph_dir)
    dglc.write_assignment(assign, dglc.assign_partitions(graph, 2), num_parts=2, algo_name="random")
    dglc.dispatch(graph, assign, out)
    held = _du(out)
    plan = dglc.forecast_run(graph_dir, out, num_parts=2, dispatch_only=True)
    _short_disk(monkeypatch, free=0)
    with pytest.raises(dglc.errors.InsufficientSpaceError):
        dglc.dispatch(graph, assign, tmp_path / "other")
    assert not (tmp_path / "other").exists()
    # overwriting: what the output holds counts as free (it is replaced)
    _short_disk(monkeypatch, free=max(0, plan.staging_bytes + plan.output_bytes - held) + (1 << 20))
    dglc.dispatch(graph, assign, out, options=dglc.DispatchOptions(overwrite=True))
    assert os.path.exists(out / "metadata.json")


def test_plan_run_is_a_deprecated_name_of_forecast_run(graph_dir: Path, tmp_path: Path) -> None:
    from dgl_chunked.dispatch import forecast

    new = dglc.forecast_run(graph_dir, tmp_path / "out", num_parts=2, workers=2)
    with pytest.warns(DeprecationWarning, match="plan_run is deprecated: use forecast_run"):
        old = forecast.plan_run(graph_dir, tmp_path / "out", num_parts=2, workers=2)
    assert forecast.RunPlan is dglc.RunForecast and isinstance(old, dglc.RunForecast)
    assert (old.stages, old.staging_bytes, old.output_bytes) == (new.stages, new.staging_bytes, new.output_bytes)


def test_the_package_root_exports_no_deprecated_name() -> None:
    assert "plan_run" not in dglc.__all__ and "RunPlan" not in dglc.__all__
    assert dglc.__all__ == sorted(dglc.__all__)
    for name in ("plan_run", "RunPlan"):
        with pytest.raises(AttributeError):
            getattr(dglc, name)


def test_forecast_takes_the_cluster_as_one_object(graph_dir: Path, tmp_path: Path) -> None:
    from dgl_chunked.cluster import parse_cluster_options

    cluster = parse_cluster_options(workers=3, threads_per_worker=2, memory_limit="512MiB")
    one = dglc.forecast_run(graph_dir, tmp_path / "out", num_parts=2, cluster=cluster)
    loose = dglc.forecast_run(
        graph_dir, tmp_path / "out", num_parts=2, workers=3, threads_per_worker=2, memory_limit=512 * 2**20
    )
    assert (one.workers, one.memory_limit) == (6, 512 * 2**20)
    assert (one.stages, one.peak_worker_bytes) == (loose.stages, loose.peak_worker_bytes)


def test_plan_says_which_scheduler_run_would_choose_and_why(graph_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from dgl_chunked import cluster

    args = ["plan", "--in-dir", str(graph_dir), "--out-dir", str(tmp_path / "out"), "--num-parts", "2"]
    monkeypatch.setattr(cluster.os, "cpu_count", lambda: 2)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    size = sum(p.stat().st_size for p in graph_dir.rglob("*") if p.name != "metadata.json")  # every input file
    line = next(x for x in res.output.splitlines() if x.startswith("scheduler: "))
    assert line.startswith(f"scheduler: 2 local threads (input of {size / 1e6:.0f} MB, 2 cores")
    monkeypatch.setattr(cluster.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(cluster, "_total_memory", lambda: 8 << 30)
    res = CliRunner().invoke(cli, args)
    line = next(x for x in res.output.splitlines() if x.startswith("scheduler: "))
    assert line.startswith("scheduler: 8 worker process(es) x 1 thread (")
    assert "8 GiB of memory hold 8 at 1 GiB each" in line
    assert "partition(s) (random) on 8 worker thread(s)" in res.output  # the forecast is of that cluster
    assert "write partitions: 6 tasks for 2 x 3 files on 8 thread(s)" in res.output
    res = CliRunner().invoke(cli, [*args, "--workers", "3"])  # a cluster flag: no choice to print
    assert "scheduler: " not in res.output
