"""What ``dgl_side.py`` and ``dgl_side_gb24.py`` share (runs in the DGL venv, imported by them).

Each script sets its own environment (``DGL_DIST_DEBUG``, ``DGLBACKEND``) before it
imports this module, which imports only dgl, numpy and the standard library.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import dgl
import numpy as np


def server_port(salt: int = 0) -> int:
    """A port for the test's DistGraphServer on 127.0.0.1: ``DGLC_DIST_PORT`` when set,
    else the first free one from a per-process start in 20000-32767, below Linux's
    ephemeral range (32768-60999 by default), where any client connection on the machine
    may hold a port: a server picked at 38090 once failed "Address already in use" and
    the test hung until its timeout (CI, 2026-11-27)."""
    if "DGLC_DIST_PORT" in os.environ:
        return int(os.environ["DGLC_DIST_PORT"])
    span = 32768 - 20000
    start = (os.getpid() + salt) % span
    for i in range(span):
        port = 20000 + (start + i) % span
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port in 20000-32767 on 127.0.0.1")


def etype_str(etype: tuple[str, str, str]) -> str:
    return ":".join(etype)


def save_npz(target: str, out: dict[str, np.ndarray], info: dict) -> None:
    """Write ``out`` to ``target`` with the facts ``info`` as JSON under ``__json__``."""
    out["__json__"] = np.array(json.dumps(info))
    np.savez(target, **out)


@contextmanager
def one_server(script: str, server_mode: str, config: str, info: dict, salt: int = 0) -> Iterator[str]:
    """A real DistGraphServer on 127.0.0.1 (:func:`server_port`) for the 1-partition ``config``, run as
    ``script server_mode CONFIG IP_CONFIG READY_FD`` in a child process; yields the
    ip_config path for the client, whose ``exit_client`` at the end shuts the server down.

    The server reports through a pipe once it has loaded the partition (or the pipe
    closes because it died), so a server that cannot start fails fast instead of
    leaving the client retrying its connection forever. If the client fails, the
    server is killed before the error propagates. The server's wait status goes to
    ``info["server_exit_status"]``.
    """
    with _one_server_at_a_time():  # the port is picked once the last server is gone
        yield from _served(script, server_mode, config, server_port(salt), info)


@contextmanager
def _one_server_at_a_time() -> Iterator[None]:
    """Hold the machine's DistGraphServer lock (a file in the temp dir): DGL 2.1 names its
    shared-memory tensors after the node type and feature only (``node~paper~label-kvdata``),
    so two servers on one machine at once (two pytest-xdist workers) remove each other's
    ("fail to open node~paper~label-kvdata-: No such file or directory")."""
    import fcntl
    import tempfile

    with open(os.path.join(tempfile.gettempdir(), "dglc-realdgl-server.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _served(script: str, server_mode: str, config: str, port: int, info: dict) -> Iterator[str]:
    """The body of :func:`one_server`, under its lock."""
    ip_config = os.path.abspath("ip_config.txt")
    with open(ip_config, "w") as f:
        f.write(f"127.0.0.1 {port}\n")
    os.environ.update(DGL_DIST_MODE="distributed", DGL_NUM_SERVER="1")
    ready_r, ready_w = os.pipe()
    os.set_inheritable(ready_w, True)
    args = [sys.executable, os.path.abspath(script), server_mode, config, ip_config, str(ready_w), "unused.npz"]
    server = os.posix_spawn(sys.executable, args, dict(os.environ))
    os.close(ready_w)
    try:
        if os.read(ready_r, 16) != b"ready":
            _, status = os.waitpid(server, 0)
            server = 0
            raise RuntimeError(
                f"DistGraphServer failed while loading {config} (wait status {status}); see its stderr above"
            )
        yield ip_config
        dgl.distributed.exit_client()  # shuts the server down
    except BaseException:
        if server:
            os.kill(server, 9)
            os.waitpid(server, 0)
        raise
    finally:
        os.close(ready_r)
    _, info["server_exit_status"] = os.waitpid(server, 0)


def dist_graph(config: str) -> object:
    """A DistGraph client of the 1-partition ``config`` (after ``dgl.distributed.initialize``)."""
    with open(config) as f:
        graph_name = json.load(f)["graph_name"]
    gpb = dgl.distributed.load_partition_book(config, 0)[0]
    return dgl.distributed.DistGraph(graph_name, gpb=gpb)


def serve(config: str, ip_config: str, ready_fd: str, use_graphbolt: bool) -> None:
    """The child of :func:`one_server`: load partition 0, report "ready", serve until the client exits."""
    server = dgl.distributed.DistGraphServer(
        0, ip_config, 1, 1, config, graph_format=["csc", "coo"], use_graphbolt=use_graphbolt
    )
    os.write(int(ready_fd), b"ready")
    os.close(int(ready_fd))
    server.start()
