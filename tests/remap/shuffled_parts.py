"""Partitions whose ``orig_*ids.dgl`` list each partition's IDs in random order (as DGL's pipeline may).

:func:`shuffled` is the fixture of remap's and lookup's shuffle-route tests: the
``hetero`` partitions with every ``orig_nids.dgl`` / ``orig_eids.dgl`` entry permuted
inside its partition; :func:`orig_ids` gives the truth (original ID of every new ID).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from dgl_chunked.io.dgl import write_tensor_dict
from dgl_chunked.io.formats.dgl import index_tensor_dict
from dgl_chunked.io.formats.tensor_rows import read_payload_rows

if TYPE_CHECKING:  # the conftest registers this module's fixture: no import of it at run time
    from tests.remap.conftest import Parts

__all__ = ["entries", "orig_ids", "shuffle_orig_ids", "shuffled"]


def entries(path: Path) -> dict[str, np.ndarray]:
    """Every entry of a DGL tensor dict file, as numpy."""
    return {name: read_payload_rows(str(path), p, 0, p.rows) for name, p in index_tensor_dict(str(path)).items()}


def shuffle_orig_ids(src: Path, where: Path, seed: int) -> Path:
    """A copy of ``src`` whose orig_*.dgl entries are permuted inside each partition."""
    shutil.copytree(src, where)
    rng = np.random.default_rng(seed)
    for f in sorted([*where.glob("part*/orig_nids.dgl"), *where.glob("part*/orig_eids.dgl")]):
        write_tensor_dict(f, {name: rng.permutation(ids) for name, ids in entries(f).items()})
    return where


def orig_ids(out: Path, kind: str, name: str) -> np.ndarray:
    """Original ID of every type-wise new ID (the partitions' files, concatenated)."""
    files = sorted(out.glob(f"part*/orig_{kind}ids.dgl"), key=lambda p: int(p.parent.name[4:]))
    return np.concatenate([entries(f)[name] for f in files]).astype(np.int64)


@pytest.fixture(scope="module")
def shuffled(hetero: Parts, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = shuffle_orig_ids(hetero.out, tmp_path_factory.mktemp("shuffled") / "out", seed=9)
    for kind, name in (("n", "paper"), ("e", "author:writes:paper")):
        ids = orig_ids(out, kind, name)
        assert (np.diff(ids) < 0).sum() > 10, "the permutation must break ascending order"
    return out
