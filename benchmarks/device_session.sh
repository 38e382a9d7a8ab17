#!/usr/bin/env bash
# One device call for issues 37 and 38 (a device machine is lent for 15 minutes in all,
# at most 10 per call): benchmarks/device_cores.sh's table first (37: 10M / 100M, 8 parts,
# 1 to 16 workers, the default and threads), then lp, METIS and KaMinPar at 16 workers and
# lp at 2 on the 1M / 10M planted-community graph (38), then lp at 16 workers on
# 10M / 100M with whatever time is left. Every step stops by BUDGET seconds (default 560)
# after the start, so the call ends inside its limit and $OUT keeps the logs of every step
# that ran.
#     bash benchmarks/device_cores.sh fetch; bash benchmarks/device_lp.sh fetch   # here, once
#     run(command="bash benchmarks/device_session.sh", carry=[".whl"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
export DEADLINE=$(($(date +%s) + ${BUDGET:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
timeout "$(($(left) - 200))" bash benchmarks/device_cores.sh
echo "== cores table done, $(left) s left"
LABEL=1m NODES=1000000 EDGES=10000000 WORKERS=16 METHODS=lp,metis,kaminpar bash benchmarks/device_lp.sh
LABEL=1m NODES=1000000 EDGES=10000000 WORKERS=2 METHODS=lp bash benchmarks/device_lp.sh
echo "== 1M / 10M done, $(left) s left"
LABEL=10m WORKERS=16 METHODS=lp bash benchmarks/device_lp.sh
echo "== end, $(left) s left"
