#!/usr/bin/env bash
# Create (or update) ./.venv with dgl_chunked installed in editable mode and its extras.
# Usage: scripts/setup-dev.sh [EXTRAS]   (default test,metis,s3; "" installs the package alone)
#
# .venv/.dglc-setup records the extras installed for the package's metadata (setup.cfg,
# pyproject.toml) and Python: a later call asking for no more skips pip (the README's
# test command, check.sh and docs.sh each call this script; pip's no-op took 15-19 s on
# 2 cores). A changed setup.cfg installs again. Delete .venv to start over.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1-test,metis,s3}"
spec="."
[ -z "$extras" ] || spec=".[${extras}]"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=.venv/.dglc-setup
key="$(cat setup.cfg pyproject.toml | sha256sum | cut -c1-32) $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])')"
installed=""
current=0
if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$key" ]; then
    current=1
    installed="$(sed -n 2p "$stamp")"
fi
needed=0
for extra in ${extras//,/ }; do
    case ",$installed," in *",$extra,"*) ;; *) needed=1 ;; esac
done
if [ "$current" = 0 ] || [ "$needed" = 1 ]; then
    log="$(mktemp)"
    if ! .venv/bin/pip install --disable-pip-version-check --no-compile -e "$spec" >"$log" 2>&1; then
        grep -v '^WARNING: Location' "$log" >&2
        echo "error: installing dgl_chunked${extras:+[$extras]} into .venv failed (log above)" >&2
        exit 1
    fi
    rm -f "$log"
    # The package's own modules too: editable, pip never compiled them (0.15 s per process).
    bash scripts/compile-venv.sh .venv/bin/python dgl_chunked
    union="$(printf '%s\n' ${installed//,/ } ${extras//,/ } | sort -u | paste -sd, -)"
    printf '%s\n%s\n' "$key" "$union" >"$stamp.tmp"
    mv "$stamp.tmp" "$stamp"
else
    # modules added since (a pull, a branch): compiled too; the rest is found current
    .venv/bin/python -m compileall -q -j 0 dgl_chunked >/dev/null 2>&1 || true
fi
.venv/bin/python -c "import dgl_chunked"
