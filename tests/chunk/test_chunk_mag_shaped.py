"""Acceptance: a MAG240M-shaped raw folder, chunked out of core on a memory-limited cluster.

The paper feature (float16, 768 columns, like MAG240M's ``node_feat.npy``) is larger
than the worker memory limit. Two worker processes chunk it; each worker's peak
RSS (the kernel's high-water mark ``VmHWM`` over the worker's whole life, read once
at the end: no sampling) must stay under the limit. The workers run with glibc's
mmap threshold fixed at 1 MiB (``MALLOC_MMAP_THRESHOLD_``) and two arenas, so every
large buffer is returned to the kernel when freed: the peak measures what the code
holds at once, not how the allocator's adaptive threshold happened to move. The output is
then partitioned into 2 parts, verified against the chunked input, and loaded by
real DGL 2.1.0, whose arrays must equal ours.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest

import dgl_chunked as dglc
from dgl_chunked.chunk import chunk_graph, read_orig_keys
from dgl_chunked.verify import load_partition_output

from ..realdgl.harness import require_dgl, run_dgl_json
from .helpers import read_output, reference_relation

pytestmark = [pytest.mark.distributed, pytest.mark.realdgl]

LIMIT = 400 * 2**20
N = {"paper": 307_200, "author": 60_000, "institution": 900}
DIM = 768
E = {"cites": 300_000, "writes": 200_000, "affiliated_with": 40_000}
SPEC = """
graph_name: mag240m-shaped
node_types:
  paper:
    count: {paper}
    features:
      feat: {{path: paper/node_feat.npy}}
      label: {{path: paper/node_label.npy}}
      year: {{path: paper/node_year.npy, dtype: int16}}
  author: {{count: {author}}}
  institution:
    key: {{path: institution/keys.parquet, column: name}}
edge_types:
  paper:cites:paper:
    source: paper___cites___paper/edge_index.npy
    features: {{weight: paper___cites___paper/weight.npy}}
    reverse: true
    self_loops: remove
    dedup: true
  author:writes:paper:
    source: author___writes___paper/edge_index.npy
    reverse: true
  author:affiliated_with:institution:
    source: {{path: author___affiliated_with___institution/edges.parquet, columns: [author, inst]}}
    reverse: true
"""


_TILE = np.random.default_rng(768).standard_normal((4099, DIM)).astype(np.float16)


def _feat_rows(start: int, stop: int) -> np.ndarray:
    """Rows of the paper feature: a random tile, made unique by columns 0 and 1 (exact in float16)."""
    rows = np.arange(start, stop)
    out = _TILE[rows % len(_TILE)]
    out[:, 0], out[:, 1] = rows % 2048, rows // 2048
    return out


def _make_raw(raw: Path) -> dict[str, Any]:
    rng = np.random.default_rng(240)
    for sub in (
        "paper",
        "institution",
        "paper___cites___paper",
        "author___writes___paper",
        "author___affiliated_with___institution",
    ):
        (raw / sub).mkdir(parents=True)
    feat = np.lib.format.open_memmap(raw / "paper/node_feat.npy", mode="w+", dtype=np.float16, shape=(N["paper"], DIM))
    for start in range(0, N["paper"], 32_768):  # written chunk-wise: never whole in memory
        feat[start : start + 32_768] = _feat_rows(start, min(start + 32_768, N["paper"]))
    feat.flush()
    del feat
    np.save(raw / "paper/node_label.npy", rng.integers(0, 153, N["paper"]).astype(np.float32))
    np.save(raw / "paper/node_year.npy", rng.integers(1990, 2022, N["paper"]))
    cites = rng.integers(0, N["paper"], (2, E["cites"]))
    cites[:, 1000:21000] = cites[:, 100_000:120_000]  # repeated edges
    cites[1, 50:550] = cites[0, 50:550]  # self loops
    np.save(raw / "paper___cites___paper/edge_index.npy", cites)
    weight = rng.random(E["cites"]).astype(np.float32)
    np.save(raw / "paper___cites___paper/weight.npy", weight)
    writes = np.stack([rng.integers(0, N["author"], E["writes"]), rng.integers(0, N["paper"], E["writes"])])
    np.save(raw / "author___writes___paper/edge_index.npy", writes)
    keys = np.array([f"inst-{(i * 7919) % 100_003:06d}" for i in range(N["institution"])])
    pd.DataFrame({"name": keys}).to_parquet(raw / "institution/keys.parquet")
    aff = (rng.integers(0, N["author"], E["affiliated_with"]), rng.integers(0, N["institution"], E["affiliated_with"]))
    pd.DataFrame({"author": aff[0], "inst": keys[aff[1]]}).to_parquet(
        raw / "author___affiliated_with___institution/edges.parquet", row_group_size=5000
    )
    (raw / "spec.yaml").write_text(SPEC.format(**N))
    return {"cites": cites, "weight": weight, "writes": writes, "keys": keys, "aff": aff}


def _assert_same(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Exact (bitwise) equality of dtype, shape and values; fast on large float16 arrays."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    bits = np.dtype(f"u{got.dtype.itemsize}") if got.dtype.itemsize in (1, 2, 4, 8) else None
    if bits is None or got.dtype == bool:
        np.testing.assert_array_equal(got, want, err_msg=what)
    elif not np.array_equal(np.ascontiguousarray(got).view(bits), np.ascontiguousarray(want).view(bits)):
        np.testing.assert_array_equal(got, want, err_msg=what)  # the detailed report


# big buffers always mmap'd (so freed at once), and no per-thread arena growth
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**20), "MALLOC_ARENA_MAX": "2"}


def _peak(dask_worker: Any) -> dict[str, int]:
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f)
    return {"hwm": int(status["VmHWM"].split()[0]) * 1024, "pid": os.getpid()}


def _chunk_on_limited_cluster(raw: Path, out: Path) -> dict[str, dict[str, int]]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit=LIMIT,
            dashboard_address=":0",
            env=ALLOCATOR_ENV,
        ) as cluster,
        Client(cluster) as client,
        dask.config.set(scheduler="dask.distributed"),
    ):
        pids = client.run(os.getpid)
        chunk_graph(raw / "spec.yaml", out, num_chunks=16)
        peaks = client.run(_peak)
        assert {w: p["pid"] for w, p in peaks.items()} == pids, "a worker was restarted"
    return peaks


def _check_chunked(out: Path, raw: Path, truth: dict[str, Any]) -> None:
    """The chunked output equals the raw folder after the spec's transforms."""
    got = read_output(out)
    _assert_same(got.node_data["paper"]["feat"], _feat_rows(0, N["paper"]), "paper/feat")
    assert got.node_data["paper"]["year"].dtype == np.int16
    src, dst, feats = reference_relation(
        truth["cites"][0], truth["cites"][1], {"weight": truth["weight"]}, self_loops="remove", dedup=True
    )
    np.testing.assert_array_equal(got.edges["paper:cites:paper"][0], src)
    np.testing.assert_array_equal(got.edges["paper:rev-cites:paper"][0], dst)
    np.testing.assert_array_equal(got.edge_data["paper:rev-cites:paper"]["weight"], feats["weight"])
    np.testing.assert_array_equal(got.edges["author:affiliated_with:institution"][1], truth["aff"][1])
    np.testing.assert_array_equal(read_orig_keys(out, "institution"), truth["keys"])


def _check_real_dgl(parts_dir: Path) -> None:
    config, parts = load_partition_output(parts_dir)
    arrays, info = run_dgl_json("partition", str(parts_dir / "metadata.json"))
    for p, part in enumerate(parts):
        assert info[f"p{p}"]["etypes"] == list(config.etypes)
        np.testing.assert_array_equal(arrays[f"p{p}/src"], part.src)
        np.testing.assert_array_equal(arrays[f"p{p}/dst"], part.dst)
        for kind, data in (("ndata", part.ndata), ("edata", part.edata)):
            for name, value in data.items():
                np.testing.assert_array_equal(arrays[f"p{p}/{kind}/{name}"], value)
        for kind, feats in (("node", part.node_feats), ("edge", part.edge_feats)):
            dgl_keys = {k.split(f"p{p}/{kind}_feats/", 1)[1] for k in arrays if k.startswith(f"p{p}/{kind}_feats/")}
            assert dgl_keys == set(feats)
            for key, value in feats.items():
                _assert_same(arrays[f"p{p}/{kind}_feats/{key}"], value, key)
                _assert_same(arrays[f"p{p}/partition_feats/{kind}/{key}"], value, key)


@pytest.fixture(scope="module")
def mag(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The raw folder, chunked once on the memory-limited cluster, with the workers' peaks."""
    base = tmp_path_factory.mktemp("mag")
    raw, out = base / "raw", base / "chunked"
    truth = _make_raw(raw)
    assert (raw / "paper/node_feat.npy").stat().st_size > LIMIT
    return {"base": base, "raw": raw, "out": out, "truth": truth, "peaks": _chunk_on_limited_cluster(raw, out)}


@pytest.mark.slow
def test_mag_shaped_chunking_stays_under_the_worker_memory_limit(mag):
    for worker, peak in mag["peaks"].items():
        print(f"{worker}: VmHWM {peak['hwm'] / 2**20:.0f} MiB, limit {LIMIT / 2**20:.0f} MiB")
        assert 0 < peak["hwm"] < LIMIT, (worker, peak)
    _check_chunked(mag["out"], mag["raw"], mag["truth"])


@pytest.mark.slow
def test_mag_shaped_output_partitions_verifies_and_loads_in_real_dgl(mag):
    require_dgl()
    out, parts = mag["out"], mag["base"] / "parts"
    opts = dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True, progress=False)
    with warnings.catch_warnings(), dask.config.set(scheduler="threads"):
        warnings.simplefilter("ignore")
        dglc.run(out, parts, num_parts=2, options=opts)
    report = dglc.verify_partitions(out, parts)
    assert report.ok, report.problems
    _check_real_dgl(parts)
