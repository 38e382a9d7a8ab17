#!/usr/bin/env bash
# Create (or update) ./.venv with dgl_chunked installed in editable mode and its extras.
# Usage: scripts/setup-dev.sh [EXTRAS]   (default test,metis,s3; "" installs the package alone)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1-test,metis,s3}"
spec="."
[ -z "$extras" ] || spec=".[${extras}]"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
log="$(mktemp)"
if ! .venv/bin/pip install --disable-pip-version-check --no-compile -e "$spec" >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" >&2
    echo "error: installing dgl_chunked${extras:+[$extras]} into .venv failed (log above)" >&2
    exit 1
fi
# pip byte-compiles what it installs one file at a time; compileall -j 0 does it on every
# core (a fresh .venv: 167 -> about 120 s on 2 cores). The .pyc files matter: where
# PYTHONDONTWRITEBYTECODE is set, every process (each Dask worker, each CLI run) would
# otherwise compile its imports from source, and the compiler's freed memory changes how
# a worker's heap behaves (tests/test_cluster.py measures its page faults). The package's
# own modules (editable: pip never compiled them) save 0.15 s per process this way. A
# file that does not compile (pip skips those too) is compiled, or refused, on import.
.venv/bin/python -m compileall -q -j 0 dgl_chunked \
    "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null 2>&1 || true
rm -f "$log"
.venv/bin/python -c "import dgl_chunked"
