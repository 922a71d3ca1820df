#!/usr/bin/env bash
# Issue 25's dot against the copy after each L2 flush (--l2-flush), alternated in one call on
# one GPU: "memset" (nvbench's: twice the L2 overwritten, which leaves it full of dirty lines
# that the timed kernel writes back) and "clean" (the default: twice the L2 read). The first
# run of this comparison (2026-11-27, docs/data/flush-2026-11-27/experiment-*) patched the
# clean flush in from outside as a memset followed by the read; cudabench's own is the read.
#   flush_check.sh [OUT] [ROUNDS]        (default: $OUT, else /tmp/cudabench-flush; 2 rounds)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-flush}}
rounds=${2:-2}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (bulk|deterministic|memcpy_dtod)" "$1" | tr -s ' '; }
for round in $(seq "$rounds"); do
    for method in memset clean; do
        log="$out/dot-$method-$round.txt"
        $cb dot --size '1<<26' --variant bulk --variant deterministic --no-vendor \
            --l2-flush "$method" >"$log" 2>&1
        echo "dot $method round $round: rc=$?" >>"$summary"; rows "$log" >>"$summary"
    done
done
cat "$summary"
