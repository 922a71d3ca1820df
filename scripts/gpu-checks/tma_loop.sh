#!/usr/bin/env bash
# tma_loop.py in each MODE (kernel, checked, settled), PROCESSES processes each (default 4),
# ITERATIONS launches a process (default 50000), DTYPE (default int32), VARIANT (default
# tma_base; tma_fence is the kernel before its fix); one line per process.
#   tma_loop.sh [OUT]  (default $OUT, else /tmp/cudabench-tma-loop)
# Needs cudabench importable (pip install -e ., as the device kit's setup does).
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-tma-loop}}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
{ nvidia-smi -L 2>/dev/null | head -1; } | tee "$out/summary.txt"
for process in $(seq 1 "${PROCESSES:-4}"); do
    for mode in ${MODES:-kernel checked settled}; do
        line=$(cd "$here" && timeout 120 python3 tma_loop.py "$mode" "${ITERATIONS:-50000}" \
            "${DTYPE:-int32}" "${VARIANT:-tma_base}" 2>>"$out/errors.log" | tail -1)
        echo "process $process rc=$? $line" | tee -a "$out/summary.txt"
    done
done
