"""Two "machines" on one box for DGL's distributed training: network namespaces joined by a veth pair.

DGL 2.1.0 finds a trainer's machine by matching its local addresses against
``ip_config.txt`` and names the shared memory of a server's partition by data name
only, so two ``DistGraphServer`` s on ``127.0.0.1`` hand a trainer the other
partition's rows. Here each machine is a network namespace with its own address
(``10.231.0.1`` and ``.2`` on a veth pair between the two namespaces only, no
route to the host or anywhere else), and every process of a machine runs in a
mount namespace of its own with a private ``tmpfs`` on ``/dev/shm``.

:func:`two_machines` creates both and always removes them (namespaces and links)
on the way out, also after a failure; it skips the test with the reason when they
cannot be made (not root, no ``ip``/``unshare``, no permission in a container).
:func:`machine_command` is the command prefix that runs a program on a machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

__all__ = ["Machine", "machine_command", "two_machines"]

IFNAME = "dglc0"
"""The veth end's name inside each namespace (the same in both: namespaces have their own names)."""


@dataclass(frozen=True)
class Machine:
    """One namespace: its name and its address on the link between the two."""

    netns: str
    address: str


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


@contextmanager
def two_machines() -> Iterator[tuple[Machine, Machine]]:
    """Two network namespaces linked by a veth pair (``10.231.0.1/30`` and ``.2``), removed afterwards."""
    if os.name != "posix" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("network namespaces need root: the distributed DGL example runs each partition's server in one")
    missing = [tool for tool in ("ip", "unshare", "mount") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"network namespaces need {missing} on PATH")
    tag = f"{os.getpid() % 100000}"
    names = (f"dglc{tag}m0", f"dglc{tag}m1")
    links = (f"dglc{tag}a", f"dglc{tag}b")
    created: list[str] = []
    try:
        for name in names:
            made = _ip("netns", "add", name, check=False)
            if made.returncode != 0:
                pytest.skip(f"cannot create a network namespace here ({made.stderr.strip()})")
            created.append(name)
        _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
        machines = []
        for i, (name, link) in enumerate(zip(names, links, strict=True)):
            address = f"10.231.0.{i + 1}"
            _ip("link", "set", link, "netns", name)
            _ip("-n", name, "link", "set", link, "name", IFNAME)
            _ip("-n", name, "addr", "add", f"{address}/30", "dev", IFNAME)
            _ip("-n", name, "link", "set", IFNAME, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            machines.append(Machine(name, address))
        yield machines[0], machines[1]
    finally:
        for link in links:  # still on the host if moving it failed
            _ip("link", "del", link, check=False)
        for name in created:
            _ip("netns", "del", name, check=False)


def machine_command(machine: Machine, shm_size: str = "512m") -> list[str]:
    """Prefix running a program on ``machine``: its network namespace, a private mount namespace, a fresh /dev/shm."""
    mount = f'mount -t tmpfs -o size={shm_size} dglc-shm /dev/shm && exec "$0" "$@"'
    return ["ip", "netns", "exec", machine.netns, "unshare", "--mount", "--propagation", "private", "sh", "-c", mount]
