#!/usr/bin/env bash
# Issue 37's table on a many-core machine: run --method random --num-parts 8 on
# 10M nodes / 100M edges / float32[16] (CSV edges, 40 files), input, staging and output
# under /dev/shm, at 1, 2, 4, 8, 16 workers (processes x 1 thread), the default (no
# cluster flag: cluster.choose_scheduler) and --workers 1 --threads-per-worker <cores>;
# prints benchmarks/bench_cores.py's table (per step tasks, work, longest task, idle;
# prediction beside measurement).
#
# A device machine starts bare, with no network: its python3 has numpy, pyarrow, fsspec,
# click, msgpack, psutil, cloudpickle, toolz, pyyaml (the device notes list them), not
# Dask or Zarr. So, here, once:
#     echo /.whl/ >> .git/info/exclude; bash benchmarks/device_cores.sh fetch
# downloads the missing wheels (CPython 3.12, manylinux x86-64) into .whl/; then the
# device run carries .whl and runs this script with no argument:
#     run(command="bash benchmarks/device_cores.sh", carry=[".whl"], timeout_s=600)
# It writes bench_cores.json and the logs to $OUT (or /tmp/dglc-cores) and takes about
# 4 minutes on 16 cores (2026-11-27: synth 8 s; the runs 59 s at 1 worker down to 7 s at
# 16, the CLI 18 s as typed, 42 s on threads). Set WORKERS, NODES, EDGES, PARTS and
# MODES (bench_cores.py --modes: default threads workers) to change the run.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(dask==2026.8.0 distributed==2026.8.0 zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1
    google-crc32c==1.9.0 tblib==3.2.2 zict==3.0.0 partd==1.4.2 locket==1.0.0 tornado==6.6.1
    sortedcontainers==2.4.0 importlib_metadata==10.2.0 zipp typing_extensions==4.16.0)
if [[ "${1:-}" == fetch ]]; then
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 --platform any -d .whl "${WHEELS[@]}"
    du -sh .whl
    exit 0
fi
OUT_DIR=${OUT:-/tmp/dglc-cores}
mkdir -p "$OUT_DIR"
if [[ -d .whl ]]; then  # the carried wheels, installed once per machine
    [[ -d /tmp/site/dask ]] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
NODES=${NODES:-10000000} EDGES=${EDGES:-100000000} PARTS=${PARTS:-8}
WORK=/dev/shm/dglc-cores
GRAPH=$WORK/graph
mkdir -p "$WORK"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -m); load $(cut -d' ' -f1-3 /proc/loadavg)"
$PY -c "import dask, distributed, zarr, numpy, pyarrow; print('dask', dask.__version__, 'zarr', zarr.__version__, 'numpy', numpy.__version__, 'pyarrow', pyarrow.__version__)"
if [[ ! -f $GRAPH/metadata.json ]]; then
    SECONDS=0
    $PY -m dgl_chunked synth --out-dir "$GRAPH" --num-nodes "$NODES" --num-edges "$EDGES" --feat-dim 16 \
        --num-chunks 40 --workers "$(nproc)" | tee "$OUT_DIR/synth.log"
    echo "synth: ${SECONDS} s"
fi
# shellcheck disable=SC2086
$PY benchmarks/bench_cores.py --graph "$GRAPH" --num-parts "$PARTS" --workers ${WORKERS:-1 2 4 8 16} \
    --modes ${MODES:-default threads workers} --work-dir "$WORK/runs" --json "$OUT_DIR/bench_cores.json" 2>&1 | tee "$OUT_DIR/bench_cores.log"
