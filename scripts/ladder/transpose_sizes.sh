#!/usr/bin/env bash
# Issue 25: is 8192 (rows of B 32 KiB apart, a power of two) a hard size for the transpose?
# evict_first and vectorized beside the copy at 8192 and at sizes whose row strides are
# not powers of two, then the copy's paths (scripts/ladder/copy_paths.py), one GPU, one call.
#   transpose_sizes.sh [OUT]        (default: $OUT, else /tmp/cudabench-sizes)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-sizes}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
for i in 1 2; do
    $cb transpose --size 8192,8200,8320,8448,16384x4096,4096x16384 --variant evict_first \
        --variant vectorized --no-vendor --no-batch >"$out/sizes$i.txt" 2>&1
    echo "sizes $i rc=$?" >>"$summary"
    grep -E "^│ (evict_first|vectorized|memcpy_dtod)|^ *transpose [0-9]" "$out/sizes$i.txt" |
        grep -v "behind" | tr -s ' ' | cut -c1-110 >>"$summary"
done
for n in 8192 8200; do
    python3 scripts/ladder/copy_paths.py $n >>"$summary" 2>&1
done
cat "$summary"
