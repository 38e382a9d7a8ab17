"""METIS through its C API without the GIL: the partition pymetis gives, bit for bit."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from dgl_chunked.partition import metis_capi
from dgl_chunked.partition.metis import metis_parts, symmetric_csr

pymetis = pytest.importorskip("pymetis")


def _graph(seed: int, weighted: bool) -> tuple[Any, Any, Any, Any]:
    """A random symmetric CSR graph, with node weights and symmetric edge weights when ``weighted``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 6000))
    m = int(rng.integers(n, 8 * n))
    xadj, adjncy = symmetric_csr(rng.integers(0, n, m), rng.integers(0, n, m), n)
    if not weighted:
        return xadj, adjncy, None, None
    src = np.repeat(np.arange(n), np.diff(xadj))
    pair = np.minimum(src, adjncy) * 7919 + np.maximum(src, adjncy)  # both directions weigh the same
    return xadj, adjncy, rng.integers(1, 9, n), (pair % 50 + 1).astype(np.int64)


def _pymetis(xadj: Any, adjncy: Any, k: int, seed: int, ncuts: int, vw: Any, ew: Any) -> Any:
    opts = pymetis.Options()
    opts.seed = seed
    if ncuts > 1:
        opts.ncuts = ncuts
    adjacency = pymetis.CSRAdjacency(xadj, adjncy)
    got = pymetis.part_graph(k, adjacency=adjacency, vweights=vw, eweights=ew, options=opts, recursive=k <= 8)
    return np.asarray(got[1], np.int32)


@pytest.mark.parametrize(
    ("seed", "k", "ncuts", "weighted"),
    [(0, 2, 1, False), (1, 3, 4, True), (2, 8, 16, True), (3, 16, 1, False), (4, 64, 4, True), (5, 4, 1, True)],
)
def test_the_same_partition_as_pymetis(seed: int, k: int, ncuts: int, weighted: bool) -> None:
    xadj, adjncy, vw, ew = _graph(seed, weighted)
    want = _pymetis(xadj, adjncy, k, 1000 + seed, ncuts, vw, ew)
    got = metis_capi.part_graph(
        xadj, adjncy, k, seed=1000 + seed, ncuts=ncuts, recursive=k <= 8, vweights=vw, eweights=ew
    )
    assert got is not None and got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    assert metis_capi.part_graph(xadj, adjncy, k, seed=1001 + seed, ncuts=ncuts, recursive=k <= 8) is not None


def test_metis_parts_falls_back_to_pymetis_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    xadj, adjncy, vw, ew = _graph(9, True)
    direct = metis_parts(xadj, adjncy, 8, seed=3, vweights=vw, eweights=ew, ncuts=4)
    monkeypatch.setattr(metis_capi, "_library", lambda: None)
    assert metis_capi.part_graph(xadj, adjncy, 8, seed=3, ncuts=4, recursive=True) is None
    np.testing.assert_array_equal(metis_parts(xadj, adjncy, 8, seed=3, vweights=vw, eweights=ew, ncuts=4), direct)


def test_bad_input_names_the_metis_call() -> None:
    xadj, adjncy, _, _ = _graph(11, False)
    with pytest.raises(RuntimeError, match=r"METIS_PartGraphKway failed: METIS_ERROR_INPUT \(\d+ nodes"):
        metis_capi.part_graph(xadj, adjncy, 0, seed=0, ncuts=1, recursive=False)  # no parts


def test_threads_partition_at_once_with_their_own_results() -> None:
    """The call holds no Python state: threads running it at once get what each would alone."""
    graphs = [_graph(20 + i, True) for i in range(4)]
    alone = [
        metis_capi.part_graph(x, a, 8, seed=i, ncuts=2, recursive=True, vweights=v, eweights=e)
        for i, (x, a, v, e) in enumerate(graphs)
    ]
    together: list[Any] = [None] * len(graphs)

    def run(i: int) -> None:
        x, a, v, e = graphs[i]
        together[i] = metis_capi.part_graph(x, a, 8, seed=i, ncuts=2, recursive=True, vweights=v, eweights=e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(graphs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(a, b)
