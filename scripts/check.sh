#!/usr/bin/env bash
# The README's static checks (CI runs them first): formatting, lint, types and
# the import layers of docs/architecture.md. Every gate runs; the script fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-dev.sh test,metis,kaminpar,s3,dev || exit 1
bin=.venv/bin
failed=()
run() {
    echo "== $*"
    "$@" || failed+=("$1")
}
run "$bin/ruff" format --check .
run "$bin/ruff" check .
run "$bin/mypy"
run "$bin/lint-imports"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "error: checks failed: ${failed[*]}" >&2
    exit 1
fi
echo "all checks passed"
