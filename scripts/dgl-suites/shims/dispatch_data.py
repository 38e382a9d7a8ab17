"""Shim for DGL's tools/dispatch_data.py (dgl_chunked DGL-suite harness).

Replaces DGL's dispatch step (the script launches tools/distpartitioning/data_proc_pipeline.py
over ssh/gloo, one rank per line of --ip-config) with
    dgl-chunked dispatch <the same flags>
whose flags are named after dispatch_data.py's (--in-dir, --metadata-filename,
--partitions-dir, --out-dir, --save-orig-nids, --save-orig-eids, --graph-formats); the
ssh-era flags (--ip-config, --ssh-port, --python-path, --master-port,
--process-group-timeout) are accepted and ignored by dgl-chunked itself.  DGL's
--log-level is a per-command flag there and a top-level one in dgl-chunked, so it is moved
in front of the subcommand (upper-cased).

The command is ``$DGLC_BIN`` (set by scripts/dgl-suites/run.sh), else ``dgl-chunked`` on PATH.
"""

import os
import sys

DGLC = os.environ.get("DGLC_BIN", "dgl-chunked")


def split_log_level(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into (top-level ``--log-level`` flags, the subcommand's flags)."""
    top: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--log-level" and i + 1 < len(argv):
            top += ["--log-level", argv[i + 1].upper()]
            i += 2
            continue
        if a.startswith("--log-level="):
            top += ["--log-level", a.split("=", 1)[1].upper()]
            i += 1
            continue
        rest.append(a)
        i += 1
    return top, rest


def main() -> None:
    top, rest = split_log_level(sys.argv[1:])
    cmd = [DGLC, *top, "dispatch", *rest]
    print("[shim dispatch_data.py] " + " ".join(cmd), file=sys.stderr, flush=True)
    os.execvp(DGLC, cmd)


if __name__ == "__main__":
    main()
