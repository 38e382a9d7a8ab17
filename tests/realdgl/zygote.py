"""Import real DGL once per test process, then fork a child per side script (DGL venv).

Importing torch and DGL is about 4.3 CPU seconds, most of a side script's run, and the
suite runs side scripts about a hundred times. This process imports them once, with
the harness's environment (what DGL 2.1.0 reads at import: ``DGLBACKEND``, ``DGL_FFI``,
``DGL_LIBRARY_PATH``; the ``DGL_DIST_*`` variables the side scripts set are read when
called). Then, per request, it forks: the child starts its own session, takes the
request's working directory, environment and argv, sends its stdout and stderr to the
request's files and runs the script as ``__main__`` (:func:`runpy.run_path`, which
also stands it in ``sys.modules["__main__"]`` for ``multiprocessing``). The child
leaves the way an interpreter does, through ``SystemExit`` (threads joined, ``atexit``
handlers run: DGL's client shutdown among them).

Protocol (one request at a time, lines of JSON): on stdin ``{"argv": [script, ...],
"cwd": ..., "env": {...}, "stdout": path, "stderr": path}``; on stdout
``{"pid": N}`` when the child started, then ``{"pid": N, "status": S}`` when it ended
(``S``: the exit code, or minus the signal that killed it). ``harness.run_dgl`` uses
it; ``DGLC_DGL_ZYGOTE=0`` runs every script in a fresh interpreter instead.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

os.environ.setdefault("DGLBACKEND", "pytorch")  # read when dgl is imported, as the side scripts set it

import dgl  # noqa: E402,F401
import dgl.distributed  # noqa: E402,F401
import dgl.graphbolt  # noqa: E402,F401
import numpy  # noqa: E402,F401
import torch  # noqa: E402,F401


def _child(request: dict) -> int:
    """Run the request's script in this (forked) process; its exit code."""
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # sys.stdin, sys.stdout and sys.stderr wrap fds 0-2: they now read and write these
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def main() -> None:
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            raise SystemExit(_child(request))  # leaves as an interpreter does
        print(json.dumps({"pid": pid}), file=replies, flush=True)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"pid": pid, "status": code}), file=replies, flush=True)


if __name__ == "__main__":
    main()
