"""``partition_meta.json``: DGL's description of an assignment directory
(``docs/spec/assignment.md``, "partition_meta.json").

DGL's validator accepts only ``algo_name`` "random" or "metis", so that file
carries the DGL-accepted name (the method's own choice; see :func:`dgl_algo_name`)
while the sidecar (:mod:`~dgl_chunked.io.assignment.sidecar`) records the real
method, so nothing is mislabelled. ``num_parts`` always comes from this file,
never from the IDs seen (ParMETIS' postprocessing infers it and silently loses
empty partitions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dgl_chunked._typing import PathLike, StorageOptions
from dgl_chunked.errors import AssignmentError
from dgl_chunked.io.assignment.layout import META_NAME, load_json
from dgl_chunked.io.assignment.sidecar import sidecar_or_none
from dgl_chunked.storage import fs as _fs

__all__ = ["DGL_ALGO_NAMES", "PartitionMeta", "dgl_algo_name", "read_partition_meta"]

DGL_ALGO_NAMES = ("random", "metis")


@dataclass(frozen=True, kw_only=True)
class PartitionMeta:
    """Contents of ``partition_meta.json`` (plus the real method, when we wrote it).

    ``algo_name`` is the DGL-accepted value stored in ``partition_meta.json``;
    ``method`` is the real method from ``dglc_partition.json`` (None for
    directories made by DGL or other tools).
    """

    num_parts: int
    algo_name: str
    version: str = "1.0.0"
    method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``partition_meta.json`` object (without ``method``)."""
        return {"algo_name": self.algo_name, "num_parts": self.num_parts, "version": self.version}

    def to_json(self) -> bytes:
        """The bytes of ``partition_meta.json`` (``indent=4``, sorted keys)."""
        return json.dumps(self.to_dict(), indent=4, sort_keys=True).encode()


def dgl_algo_name(method: str) -> str:
    """The ``algo_name`` DGL accepts for ``method``: itself if allowed, else "random"."""
    return method if method in DGL_ALGO_NAMES else "random"


def read_partition_meta(assign_dir: PathLike, *, storage_options: StorageOptions = None) -> PartitionMeta:
    """Read and validate ``ASSIGN/partition_meta.json``.

    Raises
    ------
    AssignmentError
        Missing file, invalid JSON, ``num_parts`` not a positive integer, a missing
        or non-string ``algo_name`` or ``version``; the message names the file.
    """
    path = _fs.join(assign_dir, META_NAME)
    obj = load_json(path, storage_options, '{"algo_name", "num_parts", "version"}')
    if not isinstance(obj, dict):
        raise AssignmentError(f"{path}: line 1: expected a JSON object, found {type(obj).__name__}")
    num_parts = obj.get("num_parts")
    if not isinstance(num_parts, int) or isinstance(num_parts, bool) or num_parts < 1:
        raise AssignmentError(
            f'{path}: "num_parts": expected a positive integer, found {num_parts!r}; set it to the number of partitions'
        )
    algo = obj.get("algo_name")
    if not isinstance(algo, str) or not algo:
        raise AssignmentError(f'{path}: "algo_name": expected "random" or "metis", found {algo!r}')
    version = obj.get("version", "1.0.0")
    if not isinstance(version, str):
        raise AssignmentError(f'{path}: "version": expected "1.0.0", found {version!r}')
    sidecar = sidecar_or_none(assign_dir, storage_options)
    return PartitionMeta(
        num_parts=num_parts, algo_name=algo, version=version, method=sidecar.method if sidecar else None
    )
