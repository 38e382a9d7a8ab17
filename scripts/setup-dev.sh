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
# The package's own modules too: editable, pip never compiled them (0.15 s per process).
bash scripts/compile-venv.sh .venv/bin/python dgl_chunked
rm -f "$log"
.venv/bin/python -c "import dgl_chunked"
