"""Peak memory of a process, measured one way by every benchmark.

A process's peak resident size is ``VmHWM`` in ``/proc/<pid>/status``. Not
``getrusage``'s ``ru_maxrss``: Linux keeps it across fork and exec, so a Dask worker
(or any child) started by a process that had once held 2 GB reports at least 2 GB.
``VmHWM`` belongs to the process's own address space, which exec replaces.

Benchmarks are scripts run from the repository root (``python benchmarks/x.py``), so
this module is importable by its name, in the benchmark and in its Dask workers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["peak_rss_mb", "rss_mb", "status_mb", "statuses_mb", "worker_peaks_mb"]


def status_mb(field: str, pid: int | str = "self") -> float:
    """``field`` of ``/proc/<pid>/status`` (``VmHWM``, ``VmRSS``, ...), in MiB."""
    return statuses_mb([field], pid)[field]


def statuses_mb(fields: list[str], pid: int | str = "self") -> dict[str, float]:
    """``fields`` of ``/proc/<pid>/status``, in MiB, from one read of it."""
    got: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name = line.split(":", 1)[0]
            if name in fields:
                got[name] = int(line.split()[1]) / 1024
    missing = [f for f in fields if f not in got]
    if missing:
        raise KeyError(f"/proc/{pid}/status has no {', '.join(missing)}")
    return got


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident size of a process (``VmHWM``), in MiB."""
    return status_mb("VmHWM", pid)


def rss_mb(pid: int | str = "self") -> float:
    """Resident size of a process now (``VmRSS``), in MiB."""
    return status_mb("VmRSS", pid)


def worker_peaks_mb(client: Any, field: str = "VmHWM") -> list[float]:
    """``field`` of every worker process of a Dask ``client``, in MiB, sorted."""
    return sorted(client.run(status_mb, field).values())
