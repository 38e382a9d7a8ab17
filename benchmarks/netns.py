"""A simulated cluster on one machine: network namespaces joined by a switch, links capped by ``tc``.

Every endpoint (the object store, the client, each host) is a network namespace of its
own with one interface, ``eth0``, the end of a veth pair whose other end is a port of a
bridge in a switch namespace. Addresses are in ``10.213.0.0/24`` and exist only inside
these namespaces: nothing is routed to the machine's own namespace or beyond it. A
host's link is capped in both directions with a token bucket (``tbf``): on ``eth0``
(what the host sends) and on its switch port (what it receives).

Interface counters are read on the switch side, one ``ip -s -j link`` call for all
ports: a port's ``tx_bytes`` is what its host received, its ``rx_bytes`` what it sent.
They count everything on the wire: payload, TCP/IP and HTTP headers, Dask's messages.

Needs root, ``ip`` and ``tc`` (iproute2). :func:`netns_problem` says why not, else None.
Every namespace (and with it every link) is removed when the context exits, also on
failure; :func:`remove_stale` removes those of an earlier run killed before its cleanup.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Endpoint", "Topology", "netns_problem", "topology", "remove_stale", "PREFIX", "SUBNET"]

PREFIX = "dglcnb"
"""Every namespace this module creates is named ``<PREFIX><run>-<name>``."""
SUBNET = "10.213.0"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def netns_problem() -> str | None:
    """Why a simulated cluster cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces and tc need root (run as root)"
    missing = [tool for tool in ("ip", "tc", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"missing commands: {', '.join(missing)} (Debian: iproute2, util-linux)"
    probe = f"{PREFIX}probe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Endpoint:
    """One namespace with one link to the switch."""

    name: str
    netns: str
    address: str
    port: str
    """The switch-side interface (counters)."""
    rate: str | None
    """The link's cap in both directions (``tc`` rate, e.g. ``"20mbit"``), or None."""

    def exec(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside this endpoint's namespace."""
        return ["ip", "netns", "exec", self.netns, *argv]


@dataclass
class Topology:
    switch: str
    endpoints: dict[str, Endpoint] = field(default_factory=dict)

    def counters(self) -> dict[str, tuple[int, int]]:
        """``{endpoint: (bytes received, bytes sent)}`` by the endpoint, from the switch's ports."""
        out = _ip("-s", "-j", "-n", self.switch, "link", "show").stdout
        by_port = {link["ifname"]: link["stats64"] for link in json.loads(out) if "stats64" in link}
        return {
            name: (int(by_port[ep.port]["tx"]["bytes"]), int(by_port[ep.port]["rx"]["bytes"]))
            for name, ep in self.endpoints.items()
        }


def _cap(netns: str, dev: str, rate: str) -> None:
    # burst above one GSO super-packet (64 KiB), so no packet is larger than the bucket
    subprocess.run(
        ["ip", "netns", "exec", netns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
         "burst", "256kb", "latency", "200ms"],
        check=True, capture_output=True,
    )  # fmt: skip


@contextmanager
def topology(endpoints: Sequence[tuple[str, str | None]], *, run_id: str | None = None) -> Iterator[Topology]:
    """Namespaces for ``endpoints`` (``(name, rate or None)``) joined by one switch.

    Endpoint ``i`` gets the address ``10.213.0.<i + 1>``. Everything is removed on exit.
    """
    run = run_id or str(os.getpid())
    made: list[str] = []
    try:
        switch = f"{PREFIX}{run}-sw"
        _ip("netns", "add", switch)
        made.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        topo = Topology(switch)
        for i, (name, rate) in enumerate(endpoints):
            netns = f"{PREFIX}{run}-{name}"
            _ip("netns", "add", netns)
            made.append(netns)
            port = f"p{i}"
            _ip("link", "add", "eth0", "netns", netns, "type", "veth", "peer", "name", port, "netns", switch)
            address = f"{SUBNET}.{i + 1}"
            _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", netns, "link", "set", "lo", "up")
            _ip("-n", netns, "link", "set", "eth0", "up")
            _ip("-n", switch, "link", "set", port, "master", "br0")
            _ip("-n", switch, "link", "set", port, "up")
            if rate:
                _cap(netns, "eth0", rate)
                _cap(switch, port, rate)
            topo.endpoints[name] = Endpoint(name, netns, address, port, rate)
        yield topo
    finally:
        for netns in reversed(made):  # deleting a namespace deletes its veth ends
            _ip("netns", "del", netns, check=False)


def remove_stale() -> list[str]:
    """Remove namespaces left by runs of this module that died before cleaning up."""
    names = [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]
    stale = [n for n in names if n.startswith(PREFIX)]
    for n in stale:
        _ip("netns", "del", n, check=False)
    return stale
