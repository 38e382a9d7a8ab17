"""GSProcessing-shaped ``raw_id_mappings/<ntype>/`` for a test graph, as Spark writes them.

Layout and columns read from GraphStorm's ``graphstorm-processing/graphstorm_processing/
graph_loaders/dist_heterogeneous_loader.py`` (``_write_nodeid_mapping_and_update_state``:
``orig``, ``new`` under ``raw_id_mappings/<ntype>/parquet/``): Spark part files with
uneven row counts and rows in no particular order, ``_SUCCESS`` and ``.crc`` side files.

:func:`gsp` is the module fixture of remap's and lookup's tests of them: a chunked graph
with such mappings, and its partitions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dgl_chunked as dglc
from dgl_chunked.verify import load_partition_output


def string_ids(n: int, seed: int) -> np.ndarray:
    """``n`` distinct user IDs such as ``'p-3f9a1c0d'`` (object array)."""
    rng = np.random.default_rng(seed)
    codes = rng.choice(1 << 32, size=n, replace=False)
    return np.array([f"p-{c:08x}" for c in codes], dtype=object)


def int_ids(n: int, seed: int) -> np.ndarray:
    """``n`` distinct large integer user IDs (int64)."""
    rng = np.random.default_rng(seed)
    return (10**12 + rng.choice(10 * n + 1, size=n, replace=False)).astype(np.int64)


def write_mapping(root: Path, ntype: str, orig: np.ndarray, *, files: int = 5, seed: int = 0) -> list[Path]:
    """Write ``orig[i]`` as the user ID of node ``i``: ``files`` uneven part files, rows shuffled."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(orig))
    cuts = np.sort(rng.choice(np.arange(1, len(orig)), size=files - 1, replace=False))
    out = root / ntype / "parquet"
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    kind = pa.string() if orig.dtype == object else pa.int64()
    for i, rows in enumerate(np.split(order, cuts)):
        table = pa.table({"orig": pa.array(orig[rows], kind), "new": pa.array(rows.astype(np.int64))})
        path = out / f"part-{i:05d}-6a1c0b8e-0f3e-4c1a-9d2b-{i:012d}-c000.snappy.parquet"
        pq.write_table(table, path, compression="snappy", row_group_size=97)
        (out / f".{path.name}.crc").write_bytes(b"crc\n")
        paths.append(path)
    (out / "_SUCCESS").write_bytes(b"")
    return paths


def read_mapping(root: Path, ntype: str) -> pd.DataFrame:
    """``orig``, ``new`` of every row, as GraphStorm's ``IdReverseMap`` reads them (pyarrow's dataset reader)."""
    return pq.read_table(root / ntype).to_pandas().sort_values("new", kind="stable").reset_index(drop=True)


def orig_in_new_order(out: Path, ntype: str) -> list[np.ndarray]:
    """Per partition of ``out``, the original IDs of its ``ntype`` nodes in new-ID order."""
    _, parts = load_partition_output(out)
    return [p.orig_nids[ntype] for p in parts]


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The CLI's one ``error:`` line on stderr (no traceback, nothing else)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@dataclass(frozen=True)
class Gsp:
    """A chunked graph with raw_id_mappings (paper: strings, author: integers) and its partitions."""

    chunked: Path
    out: Path
    paper: np.ndarray  # user ID of paper i
    author: np.ndarray


@pytest.fixture(scope="module")
def gsp(tmp_path_factory: pytest.TempPathFactory) -> Gsp:
    base = tmp_path_factory.mktemp("gsp")
    with dask.config.set(scheduler="synchronous"):
        dglc.write_synthetic_graph(base / "chunked", dglc.SynthSpec.heterogeneous(scale=1, seed=5))
    graph = dglc.open_chunked_graph(base / "chunked")
    paper = string_ids(graph.num_nodes("paper"), 1)
    author = int_ids(graph.num_nodes("author"), 2)
    write_mapping(base / "chunked" / "raw_id_mappings", "paper", paper, files=5, seed=3)
    write_mapping(base / "chunked" / "raw_id_mappings", "author", author, files=3, seed=4)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        dglc.run(
            base / "chunked",
            base / "out",
            num_parts=3,
            seed=3,
            options=dglc.DispatchOptions(save_orig_nids=True, save_orig_eids=True),
        )
    return Gsp(base / "chunked", base / "out", paper, author)
