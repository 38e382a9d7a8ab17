"""Type aliases shared across dgl_chunked."""

from __future__ import annotations

import os
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["NodeType", "EdgeType", "PathLike", "IdArray", "PartArray", "StorageOptions"]

NodeType: TypeAlias = str
"""A node type name, e.g. ``"paper"``."""

EdgeType: TypeAlias = str
"""A canonical edge type string ``"src:rel:dst"``."""

PathLike: TypeAlias = str | os.PathLike[str]
"""A local path or an fsspec URL (``s3://bucket/key``)."""

IdArray: TypeAlias = npt.NDArray[np.int64]
PartArray: TypeAlias = npt.NDArray[np.int32]
StorageOptions: TypeAlias = dict[str, Any] | None
