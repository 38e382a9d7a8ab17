#!/usr/bin/env bash
# The README's test command: set up both environments, then run the whole suite,
# including the tier that loads our output with real DGL 2.1.0 in a subprocess.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-dev.sh test,metis,kaminpar,s3,dev
DGL_VENV_PYTHON="$(bash scripts/setup-real-dgl.sh)"
export DGL_VENV_PYTHON
export DGLC_REQUIRE_REAL_DGL="${DGLC_REQUIRE_REAL_DGL:-1}"
exec .venv/bin/python -m pytest "$@"
