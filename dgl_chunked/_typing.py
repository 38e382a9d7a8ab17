"""Type aliases shared across dgl_chunked."""

from __future__ import annotations

import os
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from dgl_chunked.errors import OptionError

__all__ = [
    "NodeType",
    "EdgeType",
    "PathLike",
    "IdArray",
    "PartArray",
    "StorageOptions",
    "Bytes",
    "parse_memory_limit",
    "parse_size",
]

NodeType: TypeAlias = str
"""A node type name, e.g. ``"paper"``."""

EdgeType: TypeAlias = str
"""A canonical edge type string ``"src:rel:dst"``."""

PathLike: TypeAlias = str | os.PathLike[str]
"""A local path or an fsspec URL (``s3://bucket/key``)."""

IdArray: TypeAlias = npt.NDArray[np.int64]
PartArray: TypeAlias = npt.NDArray[np.int32]
StorageOptions: TypeAlias = dict[str, Any] | None

Bytes: TypeAlias = int
"""A memory or disk size in bytes: the one type of sizes past the edge (CLI flags and
benchmark arguments are parsed once, by :func:`parse_size`)."""


def parse_size(text: str | int, what: str) -> Bytes:
    """Bytes of a size such as ``"256MiB"``, ``"4GB"`` or ``"0"`` (an int is bytes): the
    one parser of sizes (memory limits, caches, task sizes, block sizes).

    Raises
    ------
    OptionError
        ``text`` is not a size; the message names ``what`` (a flag or a setting).
    """
    if isinstance(text, int):
        return text
    from dask.utils import parse_bytes

    try:
        return int(parse_bytes(text))
    except (ValueError, TypeError) as err:
        raise OptionError(f"{what}: {text!r} is not a size such as 256MiB or a number of bytes") from err


def parse_memory_limit(text: str | int | None) -> Bytes | None:
    """Bytes of a memory size such as ``"4GiB"`` (or bytes as an int): the one parser of
    memory sizes, used where they enter (the CLI, the benchmarks); everything after takes
    bytes. None when unset, ``"auto"`` (Dask's default) or not positive.

    Raises
    ------
    OptionError
        ``text`` is not a size.
    """
    if text is None or text == "" or text == "auto":
        return None
    value = parse_size(text, "memory limit")
    return value if value > 0 else None
