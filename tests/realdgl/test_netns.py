"""The two-machine layout of the distributed training test: linked, isolated, and removed after a failure."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .netns import machine_command, two_machines

SERVE = (
    "import socket,sys; s=socket.create_server((sys.argv[1], 40123)); print('up', flush=True); "
    "c,_=s.accept(); c.sendall(b'hello')"
)
ASK = (
    "import os,socket,sys; c=socket.create_connection((sys.argv[1], 40123), timeout=10); "
    "print(c.recv(5).decode(), len(os.listdir('/dev/shm')))"
)


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout


def test_machines_reach_each_other_and_are_removed_after_a_failure() -> None:
    with pytest.raises(RuntimeError, match="boom"), two_machines() as (m0, m1):
        names = (m0.netns, m1.netns)
        assert all(n in _namespaces() for n in names)
        server = subprocess.Popen(
            [*machine_command(m1), sys.executable, "-c", SERVE, m1.address], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "up"
            out = subprocess.run(
                [*machine_command(m0), sys.executable, "-c", ASK, m1.address],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout.split()
        finally:
            server.kill()
            server.wait()
        assert out == ["hello", "0"]  # machine 1 answers machine 0, which sees an empty /dev/shm of its own
        raise RuntimeError("boom")
    assert not any(n in _namespaces() for n in names)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert names[0][:-2] not in links
