#!/usr/bin/env bash
# --writeback on one GPU in one call: its GPU tests, then evict_first with evict-last stores
# (STORE_CACHE=3, which the clean flush flatters: docs/kernels.md, it leaves 7-8 MB more of
# B dirty) beside its evict-first stores, vectorized and the copy, at 4096² and 8192² in
# pooled rounds, with the write-back timed.
#   writeback.sh [OUT]        (default: $OUT, else /tmp/cudabench-writeback)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-writeback}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
python3 -m pytest -m gpu tests/gpu/test_insight_gpu.py -q -p no:cacheprovider -k writeback \
    >"$out/test.txt" 2>&1
echo "test: rc=$? $(tail -1 "$out/test.txt")" >>"$summary"
for size in 4096 8192; do
    $cb transpose --size "$size" --variant evict_first -p STORE_CACHE=2,3 \
        --variant vectorized --no-vendor --rounds 5 --writeback \
        --json "$out/t$size.json" >"$out/t$size.txt" 2>&1
    echo "transpose $size: rc=$?" >>"$summary"
    grep -E "^│ (evict|vector|memcpy)|┃ variant" "$out/t$size.txt" | tail -4 >>"$summary"
done
$cb transpose --size 8192 --variant evict_first --no-vendor --writeback --l2-flush memset \
    --json "$out/memset.json" >"$out/memset.txt" 2>&1
echo "memset flush: rc=$?" >>"$summary"
grep -E "^│ (evict|memcpy)|┃ variant" "$out/memset.txt" | tail -3 >>"$summary"
cat "$summary"
