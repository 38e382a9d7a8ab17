#!/usr/bin/env bash
# Build the documentation site (docs/_build/html) with warnings as errors, run the
# doctests of the documented docstrings, and check that every public name, every CLI
# command and every notebook (with a plot and a table) has its page.
# PYTHON=/path/to/python uses that interpreter instead of setting up ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
    bash scripts/setup-dev.sh docs
    PYTHON=.venv/bin/python
fi
out=docs/_build
rm -rf "$out/html" "$out/doctest" "$out/doctrees" "$out/doctrees-doctest" "$out/notebook-tmp"
# Notebooks find the kernel "python3"; register this interpreter's when none is installed.
"$PYTHON" - <<'PY'
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
try:
    KernelSpecManager().get_kernel_spec("python3")
except NoSuchKernel:
    from ipykernel.kernelspec import install
    install(user=True, kernel_name="python3")
PY
"$PYTHON" -m sphinx -W --keep-going -q -b html -d "$out/doctrees" docs "$out/html"
DGLC_DOCS_EXECUTE=off "$PYTHON" -m sphinx -W --keep-going -q -b doctest -d "$out/doctrees-doctest" docs "$out/doctest"
"$PYTHON" docs/_ext/dglc_docs.py "$out/html"
rm -rf "$out/notebook-tmp"  # the executed notebooks' scratch (docs/conf.py)
echo "docs: open $out/html/index.html"
