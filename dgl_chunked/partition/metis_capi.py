"""METIS's C API called through :mod:`ctypes`, in the library that pymetis ships, so
that the partitioning runs without Python's GIL.

``pymetis.part_graph`` holds the GIL for the whole METIS call (pymetis 2025.2.2: its
pybind11 wrapper, ``wrap_part_graph`` in ``src/wrapper/wrapper.cpp``, releases
nothing). In one process, every other thread then waits for it: the ``lp`` method's
tasks beside its METIS calls on the coarsest levels stood still (issue #38). A
:mod:`ctypes` foreign call releases the GIL while it runs.

The call is the one that wrapper makes, in the same library (pymetis's extension
exports METIS's API: ``METIS_SetDefaultOptions``, ``METIS_PartGraphRecursive``,
``METIS_PartGraphKway``): ``ncon`` 1, no ``vsize``, ``tpwgts`` or ``ubvec``, the options
METIS's defaults with ``seed`` and, above 1, ``ncuts``; ``idx_t`` of the width the
extension reports (64 bits in pymetis's wheels). Same library, same arguments: the
same partition, bit for bit (checked against ``pymetis.part_graph`` in the tests).
Where the library or a symbol cannot be reached, :func:`part_graph` returns None and
the caller uses pymetis itself.

One call at a time per process (:data:`_ONE_AT_A_TIME`), as under the GIL before: METIS
seeds and draws from one random state for the whole library (GKlib's generator, a
static array), so two calls at once changed each other's partitions (seen in the
tests: 4 threads, 8 parts, each graph partitioned differently than alone).
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import IdArray

__all__ = ["part_graph"]

METIS_NOPTIONS = 40
"""Length of METIS's options array (``metis.h`` of METIS 5.1, which pymetis bundles)."""

_OPTION_NCUTS = 7
_OPTION_SEED = 8
_METIS_OK = 1
_ERRORS = {-2: "METIS_ERROR_INPUT", -3: "METIS_ERROR_MEMORY", -4: "METIS_ERROR"}
_ONE_AT_A_TIME = threading.Lock()


@functools.cache
def _library() -> tuple[Any, type[np.signedinteger[Any]]] | None:
    """pymetis's extension opened by :mod:`ctypes`, and its ``idx_t``; None when pymetis,
    its width or a METIS symbol is missing."""
    try:
        from pymetis import _internal

        lib = ctypes.CDLL(_internal.__file__)
        width = int(_internal._idx_type_width())
        for name in ("METIS_SetDefaultOptions", "METIS_PartGraphRecursive", "METIS_PartGraphKway"):
            getattr(lib, name)
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return None
    idx: dict[int, type[np.signedinteger[Any]]] = {32: np.int32, 64: np.int64}
    return (lib, idx[width]) if width in idx else None


def part_graph(
    xadj: IdArray,
    adjncy: IdArray,
    num_parts: int,
    *,
    seed: int,
    ncuts: int,
    recursive: bool,
    vweights: IdArray | None = None,
    eweights: IdArray | None = None,
) -> npt.NDArray[np.int32] | None:
    """The part of every node, as ``pymetis.part_graph(num_parts, CSRAdjacency(xadj,
    adjncy), vweights=..., eweights=..., options=Options(seed=seed, ncuts=...),
    recursive=recursive)[1]`` returns it, computed without the GIL; None when METIS's
    library cannot be reached this way (use pymetis then). ``num_parts`` of at least 2."""
    found = _library()
    if found is None:
        return None
    lib, idx = found
    options = np.empty(METIS_NOPTIONS, idx)
    lib.METIS_SetDefaultOptions(_pointer(options))
    options[_OPTION_SEED] = seed
    if ncuts > 1:
        options[_OPTION_NCUTS] = ncuts
    xadj, adjncy = np.ascontiguousarray(xadj, idx), np.ascontiguousarray(adjncy, idx)
    vwgt = None if vweights is None else np.ascontiguousarray(vweights, idx)
    adjwgt = None if eweights is None else np.ascontiguousarray(eweights, idx)
    nvtxs, ncon, nparts, edgecut = (np.array([x], idx) for x in (xadj.size - 1, 1, num_parts, 0))
    part = np.empty(xadj.size - 1, idx)
    call = lib.METIS_PartGraphRecursive if recursive else lib.METIS_PartGraphKway
    call.restype = ctypes.c_int
    with _ONE_AT_A_TIME:
        status = _call(call, nvtxs, ncon, xadj, adjncy, vwgt, adjwgt, nparts, options, edgecut, part)
    if status != _METIS_OK:
        raise RuntimeError(
            f"METIS_PartGraph{'Recursive' if recursive else 'Kway'} failed: "
            f"{_ERRORS.get(status, status)} ({nvtxs[0]} nodes, {adjncy.size} entries, {num_parts} parts)"
        )
    return part.astype(np.int32)


def _call(call: Any, *arrays: npt.NDArray[Any] | None) -> int:
    """``METIS_PartGraph*`` on ``nvtxs, ncon, xadj, adjncy, vwgt, adjwgt, nparts,
    options, edgecut, part`` (no ``vsize``, ``tpwgts`` or ``ubvec``): its status."""
    nvtxs, ncon, xadj, adjncy, vwgt, adjwgt, nparts, options, edgecut, part = arrays
    return int(
        call(
            *map(_pointer, (nvtxs, ncon, xadj, adjncy, vwgt)),
            None,  # vsize
            *map(_pointer, (adjwgt, nparts)),
            None,  # tpwgts
            None,  # ubvec
            *map(_pointer, (options, edgecut, part)),
        )
    )


def _pointer(array: npt.NDArray[Any] | None) -> ctypes.c_void_p | None:
    """The address of ``array``'s data (None: a NULL pointer)."""
    return None if array is None else ctypes.c_void_p(array.ctypes.data)
