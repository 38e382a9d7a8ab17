#!/usr/bin/env bash
# The README's first quick-start command: set up, make a synthetic heterogeneous chunked
# graph, partition and dispatch it into 2 DGL partitions, and verify the output.
set -euo pipefail
cd "$(dirname "$0")/.."
# the package alone: the test extras (pytest, moto, notebooks, ...) stay with scripts/test.sh
bash scripts/setup-dev.sh ""
out=example-out
rm -rf "$out"
.venv/bin/dgl-chunked synth --out-dir "$out/chunked" --preset heterogeneous --seed 0
.venv/bin/dgl-chunked validate --in-dir "$out/chunked"
.venv/bin/dgl-chunked run --in-dir "$out/chunked" --out-dir "$out/partitions" --num-parts 2 \
    --partitions-dir "$out/assignment" --save-orig-nids --save-orig-eids --workers 2
.venv/bin/dgl-chunked verify --in-dir "$out/chunked" --out-dir "$out/partitions"
echo "partition config for DistGraph: $out/partitions/metadata.json"
