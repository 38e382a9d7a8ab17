#!/usr/bin/env bash
# Byte-compile a virtualenv's installed packages (and any directories given after it) on
# every core. Both setup scripts install with pip's --no-compile and call this instead:
# pip compiles one file at a time (a fresh .venv: 167 -> about 115 s on 2 cores).
#
# Usage: scripts/compile-venv.sh PYTHON [DIR...]
#
# The .pyc files matter: where PYTHONDONTWRITEBYTECODE is set, every process (each Dask
# worker, each CLI run, each real-DGL check) would otherwise compile its imports from
# source, and the compiler's freed memory changes how a worker's heap behaves
# (tests/test_cluster.py measures its page faults). purelib and platlib are both
# compiled: on some Pythons they differ, and platlib holds numpy, pandas and pyarrow. A
# file that does not compile (pip skips those too) is compiled, or refused, on import.
set -euo pipefail
py="$1"
shift
mapfile -t site < <("$py" -c 'import sysconfig
for d in dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib")):
    print(d)')
"$py" -m compileall -q -j 0 "$@" "${site[@]}" >/dev/null 2>&1 || true
