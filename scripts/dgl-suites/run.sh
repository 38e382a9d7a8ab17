#!/usr/bin/env bash
# Re-run DGL v2.1.0's own test suites against dgl_chunked's commands (see README.md here).
#
#   scripts/dgl-suites/run.sh DGL_SRC [all|pipeline|graphbolt|setup] [extra pytest args...]
#   DGL_SRC=... scripts/dgl-suites/run.sh [all|pipeline|graphbolt|setup] [extra pytest args...]
#
# DGL_SRC  a DGL source tree at tag v2.1.0 holding tools/ and tests/{tools,distributed,backend,utils}:
#          git clone --depth 1 --branch v2.1.0 https://github.com/dmlc/dgl
# modes    pipeline:  tests/tools/test_dist_part.py -k test_pipeline... (3 selections)
#          graphbolt: tests/distributed/test_partition.py -k graphbolt... (8 selections)
#          all (default): both; setup: only build the workspace
# extra    passed to every pytest run; a -k EXPR there is and-ed with each selection's own
#          expression, and selections it leaves empty are skipped.
#
# Environment:
#   DGLC_BIN  the dgl-chunked command under test (default: <repo>/.venv/bin/dgl-chunked)
#   DGL_PY    python with DGL 2.1.0 (default: the side venv of scripts/setup-real-dgl.sh);
#             pytest is installed into it if missing
#   WORK_DIR  workspace, pytest temp files (TMPDIR) and logs (default: a fresh `mktemp -d`);
#             its ws/ and tmp/ are rebuilt on each run
#   LOCK      a file to `flock` around each heavy step (DGL venv setup, pytest install,
#             every pytest run); no locking when unset
#
# What is ours (everything else, test files included, is DGL's, unchanged):
#   ws/tools/partition_algo/random_partition.py <- shims/random_partition.py  (dgl-chunked partition --method random)
#   ws/tools/dispatch_data.py                   <- shims/dispatch_data.py     (dgl-chunked dispatch)
#   ws/tests/distributed/conftest.py            <- shims/conftest_graphbolt.py (dgl-chunked convert-graphbolt)
# Exits non-zero if any selection fails.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MODES=" all pipeline graphbolt setup "

usage() {
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# --- arguments -----------------------------------------------------------------------------
SRC=${DGL_SRC:-}
if [ $# -ge 1 ] && [[ $MODES != *" $1 "* ]] && [[ $1 != -* ]]; then
    SRC=$1
    shift
fi
WHICH=all
if [ $# -ge 1 ] && [[ $1 != -* ]]; then
    [[ $MODES == *" $1 "* ]] || { echo "unknown mode: $1" >&2; usage; }
    WHICH=$1
    shift
fi
[ -n "$SRC" ] || { echo "no DGL source tree given (argument or DGL_SRC)" >&2; usage; }
# split a user -k out of the extra pytest args: it narrows each selection
USER_K=
EXTRA=()
while [ $# -gt 0 ]; do
    case $1 in
        -k) [ $# -ge 2 ] || { echo "-k needs an expression" >&2; exit 2; }
            USER_K=$2; shift 2 ;;
        -k*) USER_K=${1#-k}; USER_K=${USER_K#=}; shift ;;
        *) EXTRA+=("$1"); shift ;;
    esac
done

locked() {  # locked CMD...: run CMD under `flock $LOCK` when LOCK is set
    if [ -n "${LOCK:-}" ]; then flock "$LOCK" "$@"; else "$@"; fi
}

# --- inputs --------------------------------------------------------------------------------
[ -d "$SRC" ] || { echo "no such directory: $SRC" >&2; exit 2; }
SRC=$(cd "$SRC" && pwd)
for d in tools tests/tools tests/distributed tests/backend tests/utils; do
    [ -d "$SRC/$d" ] || {
        echo "$SRC/$d missing: DGL_SRC must be a DGL v2.1.0 source tree" \
            "(git clone --depth 1 --branch v2.1.0 https://github.com/dmlc/dgl)" >&2
        exit 2
    }
done
if [ -e "$SRC/.git" ]; then
    tag=$(git -C "$SRC" describe --tags --exact-match 2>/dev/null || echo "not a tag")
    [ "$tag" = v2.1.0 ] || echo "warning: $SRC is at $tag, not v2.1.0" >&2
fi
export DGLC_BIN=${DGLC_BIN:-$REPO/.venv/bin/dgl-chunked}
[ -x "$DGLC_BIN" ] || { echo "no dgl-chunked at $DGLC_BIN (bash scripts/setup-dev.sh, or set DGLC_BIN)" >&2; exit 2; }
if [ -z "${DGL_PY:-}" ]; then
    DGL_PY=$(locked bash "$REPO/scripts/setup-real-dgl.sh") || { echo "scripts/setup-real-dgl.sh failed" >&2; exit 2; }
fi
[ -x "$DGL_PY" ] || { echo "no python at $DGL_PY" >&2; exit 2; }
if ! "$DGL_PY" -c "import pytest" 2>/dev/null; then
    echo "installing pytest into $("$DGL_PY" -c 'import sys; print(sys.prefix)')" >&2
    locked "$DGL_PY" -m pip install -q --disable-pip-version-check pytest >&2 || exit 2
fi

# --- the workspace: DGL's files + our three shims ------------------------------------------
if [ -n "${WORK_DIR:-}" ]; then
    mkdir -p "$WORK_DIR" && WORK=$(cd "$WORK_DIR" && pwd) || exit 2
else
    WORK=$(mktemp -d -t dgl-suites.XXXXXX) || exit 2
fi
WS=$WORK/ws
TMPD=$WORK/tmp
LOGS=$WORK/logs
rm -rf "$WS" "$TMPD"
mkdir -p "$WS/tests" "$TMPD" "$LOGS"
cp -r "$SRC/tools" "$WS/tools"
for d in tools distributed backend utils; do cp -r "$SRC/tests/$d" "$WS/tests/$d"; done
cp "$HERE/shims/random_partition.py" "$WS/tools/partition_algo/random_partition.py"
cp "$HERE/shims/dispatch_data.py" "$WS/tools/dispatch_data.py"
cp "$HERE/shims/conftest_graphbolt.py" "$WS/tests/distributed/conftest.py"
printf '[pytest]\n' >"$WS/pytest.ini" # pins rootdir to WS
# the test files and DGL helpers are DGL's, byte for byte:
for f in tests/tools/test_dist_part.py tests/tools/pytest_utils.py tests/distributed/test_partition.py \
    tests/distributed/utils.py tools/verification_utils.py; do
    cmp -s "$SRC/$f" "$WS/$f" || { echo "workspace copy of $f differs from DGL's" >&2; exit 2; }
done

if [ "$WHICH" = setup ]; then
    echo "workspace ready: $WS"
    exit 0
fi
echo "dgl-chunked: $DGLC_BIN"
echo "DGL python:  $DGL_PY"
echo "workspace:   $WS (logs: $LOGS)"
cd "$WS" || exit 2
export DGLBACKEND=pytorch
export PYTHONPATH=tools:tools/distpartitioning:tests${PYTHONPATH:+:$PYTHONPATH} # as DGL's CI script
PATH="$(dirname "$DGL_PY"):$PATH" # `python3 tools/...` in the tests -> DGL's venv
export PATH
export TMPDIR=$TMPD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1

RC=0
RAN=0
run() { # run FILE KEXPR LABEL
    local file=$1 kexpr=$2 label=$3 log="$LOGS/$3.log" rc
    [ -z "$USER_K" ] || kexpr="($kexpr) and ($USER_K)"
    echo "=== $label: pytest $file -k '$kexpr' (log: $log)"
    locked timeout 900 "$DGL_PY" -m pytest -p no:cacheprovider -rfEs --basetemp="$TMPD/pytest-$label" \
        "$file" -k "$kexpr" ${EXTRA[@]+"${EXTRA[@]}"} >"$log" 2>&1
    rc=$?
    if [ $rc -eq 5 ] && [ -n "$USER_K" ]; then # no test left by the user's -k
        echo "(no tests selected: skipped)"
        return
    fi
    RAN=$((RAN + 1))
    [ $rc -eq 0 ] || RC=1
    grep -E '^(FAILED|ERROR|SKIPPED) |\[dgl_chunked shim\]|collected ' "$log"
    tail -n 1 "$log"
}

if [ "$WHICH" = pipeline ] || [ "$WHICH" = all ]; then
    F=tests/tools/test_dist_part.py
    run $F "test_pipeline_basics" pipeline-basics
    run $F "test_pipeline_formats or test_pipeline_feature_format" pipeline-formats
    run $F "test_pipeline_arbitrary_chunks" pipeline-arbitrary
fi
if [ "$WHICH" = graphbolt ] || [ "$WHICH" = all ]; then
    F=tests/distributed/test_partition.py
    for fn in test_dgl_partition_to_graphbolt_homo test_dgl_partition_to_graphbolt_hetero \
        test_partition_graph_graphbolt_homo test_partition_graph_graphbolt_hetero; do
        for part in metis random; do
            run $F "graphbolt and $fn and $part" "gb-${fn#test_}-$part"
        done
    done
fi
if [ $RAN -eq 0 ]; then
    echo "error: no selection ran any test (-k '$USER_K')" >&2
    exit 1
fi
if [ $RC -eq 0 ]; then
    echo "all selections passed (logs: $LOGS)"
else
    echo "error: some selections failed (logs: $LOGS)" >&2
fi
exit $RC
