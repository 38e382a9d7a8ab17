"""The ``random`` method: a seeded, chunk-invariant hash of (seed, node type, node ID).

For node ``type_nid`` of the node type with ID ``type_id`` (its position in
``metadata.json``'s ``node_type``)::

    key  = splitmix64(uint64(seed) ^ splitmix64(uint64(type_id)))
    part = splitmix64(key + uint64(type_nid)) % num_parts        (uint64, wrapping)

where ``splitmix64`` is the finaliser of Vigna's SplitMix64 generator (add the
golden-ratio increment, then xor-shift-multiply twice). The result depends only on
``(seed, type_id, type_nid, num_parts)``: not on the node chunking, the number of
workers, or the scheduler. Unlike DGL's ``random_partition.py`` (an unseeded
``np.random.randint``), a run is reproducible from its seed. Balance holds in
expectation only (a multinomial draw); the report shows the realised balance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dgl_chunked._typing import PartArray
from dgl_chunked.partition._base import check_seed, node_type_blocks

if TYPE_CHECKING:
    import dask.array as da

    from dgl_chunked.io.chunked.graph import ChunkedGraph
    from dgl_chunked.partition._base import PartitionOptions

__all__ = ["splitmix64", "random_parts", "random_assignment_block", "RandomMethod"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: npt.NDArray[np.uint64] | np.uint64) -> npt.NDArray[np.uint64]:
    """Vectorised SplitMix64 finaliser (uint64 in, uint64 out, wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MUL1
        z = (z ^ (z >> np.uint64(27))) * _MUL2
        return np.asarray(z ^ (z >> np.uint64(31)), dtype=np.uint64)


def random_parts(type_nids: npt.NDArray[np.integer[Any]], *, type_id: int, seed: int, num_parts: int) -> PartArray:
    """Partition IDs of the given per-type node IDs (pure numpy kernel).

    Parameters
    ----------
    type_nids
        Per-type node IDs (any integer dtype, non-negative).
    type_id
        The node type's ID.
    seed
        Integer in ``[0, 2**64)``.
    num_parts
        Number of partitions (>= 1).

    Returns
    -------
    numpy.ndarray
        int32 IDs in ``[0, num_parts)``, same length as ``type_nids``.
    """
    key = splitmix64(np.uint64(check_seed(seed)) ^ splitmix64(np.uint64(type_id)))
    with np.errstate(over="ignore"):
        h = splitmix64(np.asarray(type_nids).astype(np.uint64) + key)
    return (h % np.uint64(num_parts)).astype(np.int32)


def random_assignment_block(*, type_id: int, seed: int, num_parts: int, block_info: Any = None) -> PartArray:
    """Dask kernel: the block's ``type_nid`` range comes from ``block_info``."""
    lo, hi = block_info[None]["array-location"][0]
    return random_parts(np.arange(lo, hi, dtype=np.uint64), type_id=type_id, seed=seed, num_parts=num_parts)


class RandomMethod:
    """The ``random`` method (DGL ``algo_name`` "random")."""

    name = "random"
    dgl_algo_name = "random"

    def assign(self, graph: ChunkedGraph, num_parts: int, options: PartitionOptions) -> dict[str, da.Array]:
        """Lazy int32 arrays chunked like ``graph.node_chunks(ntype)``; never computes.

        ``balance_ntypes`` and ``balance_edges`` are not used: hashing balances every
        node type and mask in expectation only.
        """
        seed = check_seed(options.seed)
        return node_type_blocks(
            graph,
            random_assignment_block,
            "dglc-assign-random",
            lambda ntype: {"type_id": graph.metadata.ntype_id(ntype), "seed": seed, "num_parts": num_parts},
        )
