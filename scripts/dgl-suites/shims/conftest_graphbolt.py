"""conftest.py placed beside DGL's tests/distributed/test_partition.py (dgl_chunked DGL-suite harness).

Replaces DGL 2.1.0's GraphBolt conversion step, dgl.distributed.dgl_partition_to_graphbolt, with
    dgl-chunked convert-graphbolt PART_CONFIG --graph-formats csc
        {--store-eids | --no-store-eids} [--store-inner-node] [--store-inner-edge]
for dgl_partition_to_graphbolt(part_config, store_eids=S, store_inner_node=N,
store_inner_edge=E) (DGL 2.1 defaults: all False).  --graph-formats csc gives DGL 2.1's file,
without _dgl2gb_eid/_gb_dst_id; DGL_DIST_DEBUG is inherited from the test's environment, and
read by dgl-chunked as DGL reads it.

Patched before the test module is imported, in both places the name is looked up:
  * dgl.distributed.dgl_partition_to_graphbolt          (the test's `from dgl.distributed import ...`)
  * dgl.distributed.partition.dgl_partition_to_graphbolt (partition_graph(..., use_graphbolt=True)
                                                          calls it by this module global)
Nothing else of DGL is patched: partition_graph, load_partition, load_partition_book and
the GraphBolt loader stay DGL's.

DGL's converter rewrites PART_CONFIG in place; dgl-chunked leaves a config it did not
write untouched and writes <name>_graphbolt.json beside it (the path it prints). To honour
the contract of the function being replaced, the shim then moves that file over
PART_CONFIG (os.replace), so the test's load_partition(part_config, ...,
use_graphbolt=True) reads the config dgl-chunked wrote.

The command is ``$DGLC_BIN`` (set by scripts/dgl-suites/run.sh), else ``dgl-chunked`` on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import dgl.distributed
import dgl.distributed.partition

if TYPE_CHECKING:
    import pytest

DGLC = os.environ.get("DGLC_BIN", "dgl-chunked")
CALLS: list[list[str]] = []
CONFIG_PREFIX = "partition config: "


def dgl_partition_to_graphbolt(
    part_config: str | os.PathLike[str],
    *,
    store_eids: bool = False,
    store_inner_node: bool = False,
    store_inner_edge: bool = False,
) -> None:
    cmd = [
        DGLC,
        "convert-graphbolt",
        str(part_config),
        "--graph-formats",
        "csc",
        "--store-eids" if store_eids else "--no-store-eids",
    ]
    if store_inner_node:
        cmd.append("--store-inner-node")
    if store_inner_edge:
        cmd.append("--store-inner-edge")
    print("[shim dgl_partition_to_graphbolt] " + " ".join(cmd), file=sys.stderr, flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(res.stdout + res.stderr)
    if res.returncode != 0:
        raise RuntimeError(f"dgl-chunked convert-graphbolt failed (exit {res.returncode}): {res.stderr}")
    written = None
    for line in res.stdout.splitlines():
        if line.startswith(CONFIG_PREFIX):
            written = line[len(CONFIG_PREFIX) :].split(" (load with")[0]
    if written is None:
        raise RuntimeError(f"no {CONFIG_PREFIX.strip()!r} line in convert-graphbolt's output: {res.stdout!r}")
    if os.path.abspath(written) != os.path.abspath(part_config):
        os.replace(written, part_config)
    CALLS.append(cmd)


dgl.distributed.dgl_partition_to_graphbolt = dgl_partition_to_graphbolt
dgl.distributed.partition.dgl_partition_to_graphbolt = dgl_partition_to_graphbolt


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(
        f"[dgl_chunked shim] dgl_partition_to_graphbolt routed to dgl-chunked convert-graphbolt {len(CALLS)} times"
    )
