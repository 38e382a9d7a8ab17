"""Partitions to remap results on: a heterogeneous synthetic graph and a keyed planted graph."""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import dask
import numpy as np
import pytest

import dgl_chunked as dglc
from dgl_chunked.chunk import chunk_graph
from dgl_chunked.verify import load_partition_output
from tests.realdgl.planted import SPEC, write_planted_tables
from tests.remap.gsp_mappings import gsp  # noqa: F401 - the fixture of the raw_id_mappings tests (here and tests/lookup)
from tests.remap.shuffled_parts import shuffled  # noqa: F401 - the fixture of the shuffle-route tests (here and tests/lookup)


@dataclass(frozen=True)
class Parts:
    """A chunked graph, its partitions (with orig_nids/orig_eids) and the assignment they came from."""

    chunked: Path
    out: Path
    assign: Path

    def new_order(self, kind: str, type_name: str, feat: str) -> np.ndarray:
        """A feature in DGL's type-wise new-ID order: what a trainer's result array looks like."""
        _, parts = load_partition_output(self.out)
        feats = [p.node_feats if kind == "node" else p.edge_feats for p in parts]
        return np.concatenate([f[f"{type_name}/{feat}"] for f in feats])

    def original(self, kind: str, type_name: str, feat: str) -> np.ndarray:
        graph = dglc.open_chunked_graph(self.chunked)
        array = graph.node_feature(type_name, feat) if kind == "node" else graph.edge_feature(type_name, feat)
        return np.asarray(array.compute())

    def without_orig_ids(self, where: Path) -> Path:
        """A copy of the partitions without orig_nids.dgl / orig_eids.dgl (as dispatch writes by default)."""
        shutil.copytree(self.out, where)
        for f in [*where.glob("part*/orig_nids.dgl"), *where.glob("part*/orig_eids.dgl")]:
            f.unlink()
        return where


def _run(chunked: Path, out: Path, assign: Path, num_parts: int) -> None:
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        dglc.run(
            chunked,
            out,
            num_parts=num_parts,
            seed=3,
            partitions_dir=assign,
            options=dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )


@pytest.fixture(scope="session")
def hetero(tmp_path_factory: pytest.TempPathFactory) -> Parts:
    base = tmp_path_factory.mktemp("remap-hetero")
    with dask.config.set(scheduler="synchronous"):
        dglc.write_synthetic_graph(base / "chunked", dglc.SynthSpec.heterogeneous(scale=2, seed=5))
    _run(base / "chunked", base / "out", base / "assign", 3)
    return Parts(base / "chunked", base / "out", base / "assign")


@pytest.fixture(scope="session")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Parts, dict[str, Path]]:
    base = tmp_path_factory.mktemp("remap-keyed")
    raw = write_planted_tables(base / "raw", num_nodes=500, seed=4)
    (base / "raw" / "spec.json").write_text(json.dumps(SPEC))
    with dask.config.set(scheduler="synchronous"):
        chunk_graph(base / "raw" / "spec.json", base / "chunked", num_chunks=3)
    _run(base / "chunked", base / "out", base / "assign", 2)
    return Parts(base / "chunked", base / "out", base / "assign"), raw
