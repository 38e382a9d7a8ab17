"""Free disk space where a run will write: checked before anything is written.

Local paths (and ``file://`` URLs) are measured with :func:`shutil.disk_usage` on
their nearest existing ancestor; two locations on one device share its free
space. What the locations already hold counts as available (a resumed or
overwritten run replaces it). Object stores have no free-space notion: they are
reported as unknown and never refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from dgl_chunked._typing import StorageOptions
from dgl_chunked.errors import InsufficientSpaceError
from dgl_chunked.storage import fs

__all__ = ["DiskNeed", "disk_needs", "check_space", "format_bytes"]


@dataclass(frozen=True)
class DiskNeed:
    """Bytes a run will write on one filesystem, and what it has free (None: unknown)."""

    paths: tuple[str, ...]
    needed: int
    free: int | None

    @property
    def short(self) -> bool:
        return self.free is not None and self.needed > self.free


def format_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n / 1e3:.1f} kB"


def _local_path(path: str) -> str | None:
    if path.startswith("file://"):
        return path[len("file://") :]
    return None if fs.is_url(path) else os.path.abspath(path)


def _device_and_free(path: str) -> tuple[int, int] | None:
    """``(device, free bytes)`` of the filesystem ``path`` is (or would be) on."""
    local = _local_path(path)
    if local is None:
        return None
    probe = local
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    return os.stat(probe).st_dev, shutil.disk_usage(probe).free


def _held_bytes(path: str) -> int:
    """Bytes of the files under a local directory (0 when absent or remote)."""
    local = _local_path(path)
    if local is None or not os.path.isdir(local):
        return 0
    total = 0
    for root, _, files in os.walk(local):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _outermost(paths: Sequence[str]) -> list[str]:
    norm = [p.rstrip("/") for p in paths]
    return [p for p in norm if not any(p != q and p.startswith(q + "/") for q in norm)]


def disk_needs(wants: Sequence[tuple[str, int]], storage_options: StorageOptions = None) -> tuple[DiskNeed, ...]:
    """Group ``(path, bytes)`` by filesystem: one :class:`DiskNeed` per device (or per remote path)."""
    del storage_options  # remote stores are not measured
    by_device: dict[object, tuple[list[str], int, int | None]] = {}
    for path, size in wants:
        found = _device_and_free(path)
        key: object = ("remote", path) if found is None else found[0]
        paths, total, free = by_device.get(key, ([], 0, None if found is None else found[1]))
        by_device[key] = ([*paths, path], total + size, free)
    return tuple(
        DiskNeed(tuple(p), n, None if f is None else f + sum(_held_bytes(q) for q in _outermost(p)))
        for p, n, f in by_device.values()
    )


def check_space(needs: Sequence[DiskNeed]) -> None:
    """Raise :class:`~dgl_chunked.errors.InsufficientSpaceError` for the first filesystem that is short."""
    for need in needs:
        if need.short:
            raise InsufficientSpaceError(
                f"{' and '.join(need.paths)}: the run needs about {format_bytes(need.needed)} there, "
                f"the filesystem has {format_bytes(need.free or 0)} free; free space, or choose another "
                "--out-dir / --staging-dir (see `dgl-chunked plan`)"
            )
