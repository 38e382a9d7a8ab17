#!/usr/bin/env bash
# Create (or reuse) the side virtualenv holding real DGL 2.1.0, which the test suite
# uses to load our output (docs/spec/index.md, "Versions"). It lives outside the
# repository and never shares packages with dgl_chunked's own environment (torch 2.2 needs numpy 1.x).
#
# Usage: scripts/setup-real-dgl.sh            -> prints the venv's python path on stdout
#        DGLC_DGL_VENV=/path scripts/setup-real-dgl.sh
set -euo pipefail
venv="${DGLC_DGL_VENV:-$HOME/.cache/dgl_chunked/dgl210}"
py="$venv/bin/python"
check='import os; os.environ.setdefault("DGLBACKEND", "pytorch"); import dgl, dgl.distributed; assert dgl.__version__ == "2.1.0", dgl.__version__'
if [ -x "$py" ] && "$py" -c "$check" >/dev/null 2>&1; then
    echo "$py"
    exit 0
fi
echo "setting up real DGL 2.1.0 in $venv (one time, about 2 minutes)" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
# --no-compile, then scripts/compile-venv.sh: each real-DGL check of the suite starts a
# process that imports torch and dgl.
"$venv/bin/pip" install -q --disable-pip-version-check --no-compile \
    torch==2.2.1 dgl==2.1.0 torchdata==0.7.1 'numpy<2' 'pandas<2.3' 'setuptools<70' \
    pydantic pyyaml 'pyarrow<21' psutil >&2
bash "$(dirname "$0")/compile-venv.sh" "$py"
"$py" -c "$check" >&2
echo "$py"
