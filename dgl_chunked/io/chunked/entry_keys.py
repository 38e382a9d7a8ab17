"""What a file entry of ``metadata.json`` may carry besides ``format`` and ``data``.

GraphStorm's GSProcessing writes ``row_counts`` (rows per file, read from the Parquet
footers by ``graph_loaders/row_count_utils.py``) on every entry, and ``"delimiter": ""``
in every Parquet ``format`` (``dist_heterogeneous_loader.py``). DGL 2.1.0's dispatch
reads neither. :func:`parse_row_counts` takes the counts, so no footer is read to learn
them (each file is still checked against its count when it is read);
:func:`note_ignored_options` says once which format options were dropped
(``formats.normalize_options``).
"""

from __future__ import annotations

import logging
from typing import Any

from dgl_chunked.errors import Problems

__all__ = ["is_count", "note_ignored_options", "parse_row_counts"]

logger = logging.getLogger("dgl_chunked.io.chunked.metadata")
_NOTED: set[str] = set()


def is_count(value: Any) -> bool:
    """True for a non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_row_counts(value: Any, where: str, paths: list[str], errs: Problems) -> tuple[int, ...] | None:
    """The entry's ``row_counts`` (one count per file, as GSProcessing writes them), or None."""
    if not isinstance(value, dict) or "row_counts" not in value:
        return None
    counts = value["row_counts"]
    if not isinstance(counts, list) or len(counts) != len(paths) or not all(is_count(c) for c in counts):
        errs.add(
            f"{where}.row_counts",
            f"a list of {len(paths)} non-negative integers, one per file of {where}.data",
            counts,
            "fix it or remove it (the files' footers give the counts)",
        )
        return None
    return tuple(counts)


def note_ignored_options(file: str, ignored: tuple[str, ...]) -> str | None:
    """Log, once per process and file, which format options were dropped (a note, not an
    error: DGL's dispatch drops them too); return the note, None when there is none."""
    if not ignored:
        return None
    keys = sorted({w.rsplit(".", 1)[1] for w in ignored})
    note = (
        f"note: {file}: ignored the format option(s) {keys} of {len(ignored)} file entries "
        f"(first: {ignored[0]}): Parquet and NumPy files need none, and DGL's dispatch reads only "
        "the format's name"
    )
    if note not in _NOTED:
        _NOTED.add(note)
        logger.warning("%s", note)
    return note
