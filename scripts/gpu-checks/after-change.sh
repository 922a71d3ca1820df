#!/usr/bin/env bash
# The first GPU call after code that runs on the GPU changed: the whole GPU test suite, the
# architecture tests three more times (an intermittent fault showed there once), and the
# TMA transpose at 2048x2048 under compute-sanitizer's memcheck (kernel accesses: the API
# errors cuda-bindings provokes by probing, cuGetProcAddress and cuFuncGetParamInfo, are not
# reported). Logs under OUT.
#   after-change.sh [OUT]        (default: $OUT, else /tmp/cudabench-after-change)
# Exit 1 when a step failed; the steps' limits add up to 520 s (a device call has 600).
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-after-change}}
mkdir -p "$out"
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } | tee "$summary"
step() {  # step NAME SECONDS COMMAND...: run it with a limit, log it, note its last line
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc $((SECONDS - t0)) s | $(grep -E 'passed|failed|error|ERROR SUMMARY' "$out/$name.log" | tail -1)" | tee -a "$summary"
    [ "$rc" -eq 0 ] || failed=1
}
failed=0
step suite 300 python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rfE
for i in 1 2 3; do
    step "arch$i" 40 python3 -m pytest -m gpu tests/gpu/test_arch_gpu.py -q -p no:cacheprovider
done
if command -v compute-sanitizer >/dev/null; then
    step memcheck-tma 100 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        python3 -m pytest -m gpu tests/gpu/test_arch_gpu.py -q -p no:cacheprovider -k "tma_loaded and 2048"
fi
exit $failed
