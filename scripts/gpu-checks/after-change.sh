#!/usr/bin/env bash
# The first GPU call after code that runs on the GPU changed: the whole GPU test suite, the
# architecture tests twice more (the tensor-map test kernel faulted there about one
# run in four until its stray wgmma fence went: tma_loop.py, docs/measurements.md), and the
# TMA transpose at 2048x2048 under compute-sanitizer's memcheck (kernel accesses: the API
# errors cuda-bindings provokes by probing, cuGetProcAddress and cuFuncGetParamInfo, are not
# reported). Logs under OUT.
#   after-change.sh [OUT]        (default: $OUT, else /tmp/cudabench-after-change)
# Exit 1 when a step failed; the steps' limits add up to 520 s (a device call has 600).
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-after-change}}
. "$(dirname "$0")/steps.sh"
step suite 340 python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -rfE
for i in 1 2; do
    step "arch$i" 40 python3 -m pytest -m gpu tests/gpu/test_arch_gpu.py -q -p no:cacheprovider
done
if command -v compute-sanitizer >/dev/null; then
    step memcheck-tma 100 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        python3 -m pytest -m gpu tests/gpu/test_arch_gpu.py -q -p no:cacheprovider -k "tma_loaded and 2048"
fi
exit $failed
