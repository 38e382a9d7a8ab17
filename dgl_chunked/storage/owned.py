"""Directories dgl_chunked owns: a marker file, removal only of marked paths, overlap checks, leases.

Every directory the package writes into (an output, a staging area, a scratch
directory) is created by it and carries a small JSON marker, ``.dglc-owned.json``::

    {"tool": "dgl_chunked", "kind": "dispatch", "run_id": "5f0c...", "version": "0.1.0",
     "host": "node17", "pid": 4242, "created": 1764000000.0, "started": 1764000300.0,
     "heartbeat": 1764000330.0, "released": false}

This module is the one place to import the ownership API from; each concern
lives in its own module:

- :mod:`~dgl_chunked.storage.marker`: the marker model (:class:`Marker`,
  :func:`read_marker`) and :class:`ForeignDataError`;
- :mod:`~dgl_chunked.storage.owned_dirs`: :func:`create_owned_dir` creates a
  directory that does not exist (or is empty) and marks it; :func:`remove_owned`
  and :func:`clear_owned` delete only marked directories and, given the names the
  tool writes there (``expected``), refuse before deleting anything when another
  entry is found. A bucket itself is never removed;
- :mod:`~dgl_chunked.storage.overlap`: :func:`check_no_overlap` refuses an output,
  staging or scratch location that is equal to, inside, or contains an input
  (:class:`OverlapError` names both);
- :mod:`~dgl_chunked.storage.lease`: the marker doubles as a lease
  (:func:`acquire_lease`, heartbeat thread, take-over of stale leases; the module
  docstring describes the race window on object stores).
"""

from __future__ import annotations

from dgl_chunked.storage.lease import (
    HEARTBEAT_SECONDS,
    LEASE_STALE_SECONDS,
    SETTLE_SECONDS,
    Lease,
    LeaseHeldError,
    acquire_lease,
)
from dgl_chunked.storage.marker import MARKER_NAME, ForeignDataError, Marker, read_marker
from dgl_chunked.storage.overlap import OverlapError, check_no_overlap, location_token
from dgl_chunked.storage.owned_dirs import (
    clear_owned,
    create_owned_dir,
    foreign_entries,
    make_scratch_dir,
    prepare_owned_output,
    remove_owned,
    require_owned,
)

__all__ = [
    "MARKER_NAME",
    "LEASE_STALE_SECONDS",
    "HEARTBEAT_SECONDS",
    "SETTLE_SECONDS",
    "ForeignDataError",
    "OverlapError",
    "LeaseHeldError",
    "Lease",
    "Marker",
    "acquire_lease",
    "check_no_overlap",
    "clear_owned",
    "create_owned_dir",
    "foreign_entries",
    "location_token",
    "prepare_owned_output",
    "read_marker",
    "remove_owned",
    "require_owned",
    "make_scratch_dir",
]
