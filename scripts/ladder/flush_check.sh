#!/usr/bin/env bash
# Issue 25's dot against the copy under two cold-L2 flushes, alternated in one call on one
# GPU: "memset" (cudabench's and nvbench's: a memset of twice the L2, which leaves it full of
# dirty lines) and "clean" (the same memset, then a read of another buffer of twice the L2:
# flush_clean/sitecustomize.py, an experiment outside cudabench). Whether a read-only
# kernel's ratio to the copy depends on who writes the flush's dirty lines back.
#   flush_check.sh [OUT] [ROUNDS]        (default: $OUT, else /tmp/cudabench-flush; 2 rounds)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-flush}}
rounds=${2:-2}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (bulk|deterministic|evict_first|vectorized|memcpy_dtod)" "$1" | tr -s ' '; }
for round in $(seq "$rounds"); do
    for mode in memset clean; do
        log="$out/dot-$mode-$round.txt"
        if [ "$mode" = clean ]; then
            CUDABENCH_EXPERIMENT_FLUSH=clean CUDABENCH_EXPERIMENT_MARKS="$out/marks" \
                PYTHONPATH="$here/flush_clean${PYTHONPATH:+:$PYTHONPATH}" \
                $cb dot --size '1<<26' --variant bulk --variant deterministic --no-vendor \
                >"$log" 2>&1
        else
            $cb dot --size '1<<26' --variant bulk --variant deterministic --no-vendor >"$log" 2>&1
        fi
        echo "dot $mode round $round: rc=$?" >>"$summary"; rows "$log" >>"$summary"
    done
done
ls "$out/marks" 2>/dev/null | sed 's/^/patched process: /' >>"$summary"
cat "$summary"
