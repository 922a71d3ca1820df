#!/usr/bin/env bash
# --cluster ray after the cluster's actors were kept warm over a command's runs: a plain run,
# a search with --best (its hand-outs and head-to-head on the same actors: the time and the
# count of worker processes say so), a sweep's --best on the cluster, --profile-time's
# accounting of several actors' phases, and --replicate on one GPU refused. Logs under OUT.
#   ray-search.sh [OUT]      (after `. .ray-kit/setup.sh`)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-ray-search}}
STEP_PATTERN="evaluated|best|error|Error|wall|rc="
. "$(dirname "$0")/steps.sh"
step ray-run 120 cudabench dot --size '1<<20,1<<22' --cluster ray --json "$out/run.json"
step ray-search 150 cudabench dot --size 16777216 --variant atomic --best --strategy random \
    --budget 48 --no-tune-cache --cluster ray --json "$out/search.json"
step ray-sweep-best 120 cudabench matmul --size 2048 -p TILE=8,16,32 --best --cluster ray \
    --json "$out/sweep.json"
step ray-profile 120 cudabench dot --size '1<<20,1<<22' --cluster ray --profile-time
step replicate-one 30 bash -c 'cudabench dot --size 1048576 --devices 0 --replicate; echo rc=$?'
exit $failed
