#!/usr/bin/env bash
# Issue 25's transpose (>= 0.97 of the copy at 8192², cold L2) under the clean L2 flush, the
# default since 2026-11-27: sweep evict_first's geometry and store policy beside the copy,
# then three runs of the defaults and the sweep's best, each beside the copy, after each
# flush (clean, memset), on one GPU in one call.
#   transpose_sweep.sh [OUT] [EXTRA -p ...]   (default: $OUT, else /tmp/cudabench-transpose)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-transpose}}
shift || true
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (evict_first|vectorized|memcpy_dtod)" "$1" | tr -s ' ' | cut -c1-150; }
$cb transpose --size 8192 --variant evict_first -p TILE=64,128 -p BLOCK_ROWS=8,16,32 \
    -p STORE_CACHE=1,2 -p GROUP=1,8 --no-vendor --no-batch --wide "$@" >"$out/sweep.txt" 2>&1
echo "sweep rc=$?" >>"$summary"; rows "$out/sweep.txt" >>"$summary"
for i in 1 2 3; do
    for method in clean memset; do
        $cb transpose --size 8192 --variant evict_first --variant vectorized --no-vendor \
            --no-batch --l2-flush "$method" >"$out/confirm-$method-$i.txt" 2>&1
        echo "confirm $method $i rc=$?" >>"$summary"; rows "$out/confirm-$method-$i.txt" >>"$summary"
    done
done
cat "$summary"
