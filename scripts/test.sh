#!/usr/bin/env bash
# The README's test command: set up both environments, then run the whole suite,
# including the tier that loads our output with real DGL 2.1.0 in a subprocess.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-dev.sh test,metis,kaminpar,s3,dev
DGL_VENV_PYTHON="$(bash scripts/setup-real-dgl.sh)"
export DGL_VENV_PYTHON
export DGLC_REQUIRE_REAL_DGL="${DGLC_REQUIRE_REAL_DGL:-1}"
# Two pytest processes (pytest-xdist), each given whole test files so that a file's
# module-scoped clusters start once: the suite waits on subprocesses (real DGL, Dask
# workers, S3 servers) much of the time, so 2 processes on 2 cores take about 1.4x less
# wall than one. DGLC_TEST_PROCESSES=0 runs everything in this process (pdb, -x order).
exec .venv/bin/python -m pytest -n "${DGLC_TEST_PROCESSES:-2}" --dist loadfile "$@"
