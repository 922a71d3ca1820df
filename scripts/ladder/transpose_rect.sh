#!/usr/bin/env bash
# Issue 25's transpose under the clean flush: the rectangular-tile draft
# (scripts/ladder/kernels/transpose/rect.cu) verified at odd shapes in every type, then swept
# beside evict_first and the copy at 8192², twice, on one GPU in one call.
#   transpose_rect.sh [OUT]        (default: $OUT, else /tmp/cudabench-rect)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-rect}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir scripts/ladder/kernels)
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (rect|evict_first|memcpy_dtod)" "$1" | tr -s ' ' | cut -c1-110; }
for dtype in float32 float16 float64 int32; do
    $cb transpose "${kd[@]}" --variant rect -p TR=32,128 -p TC=32,128 --dtype "$dtype" \
        --size 3001,1000x37,37x1000,65x63,1x7,7x1,128x136 --no-vendor --no-batch \
        --max-time 0.05 >"$out/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$?" >>"$summary"
done
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant rect --variant evict_first \
        -p TR=32,64,128 -p TC=32,64,128 -p NT=128,256 --no-vendor --no-batch \
        >"$out/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"; rows "$out/sweep$i.txt" >>"$summary"
done
cat "$summary"
