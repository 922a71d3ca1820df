#!/usr/bin/env bash
# tma_stress.py in PROCESSES fresh processes (default 24) over VARIANTS (default tma_base;
# tma_stress.py lists the others; tma_fence is the kernel before its fix), PASSES passes each
# (default 1): every fault seen came at 2048x2048. The row of a fault names the step
# where it surfaced ("seen in the ..."). Not CUDA_LAUNCH_BLOCKING=1: every timed run is
# queued behind a kernel that waits for the host, and the engine refuses it.
#   tma_stress.sh [OUT] (default $OUT, else /tmp/cudabench-tma-stress); SIZES as tma_stress.py
# Needs cudabench importable (pip install -e ., as the device kit's setup does).
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-tma-stress}}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
{ nvidia-smi -L 2>/dev/null | head -1; } | tee "$out/summary.txt"
for process in $(seq 1 "${PROCESSES:-24}"); do
    for variant in ${VARIANTS:-tma_base}; do
        timeout 60 python3 "$here/tma_stress.py" "$variant" "${PASSES:-1}" \
            >>"$out/$variant.log" 2>&1
        echo "process $process rc=$? $(grep -E 'PASS|FAULT' "$out/$variant.log" | tail -1)" | tee -a "$out/summary.txt"
    done
done
grep -c FAULT "$out"/*.log | tee -a "$out/summary.txt"
