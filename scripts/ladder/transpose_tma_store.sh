#!/usr/bin/env bash
# Issue 25: the TMA draft's two store paths told apart (STORE_PATH 1: the TMA unit stores B's
# tile; 2: the threads do, STG.128), verified at odd shapes in every type and under
# racecheck, swept twice beside evict_first and the copy at 8192², then copy_paths.py (what
# the copy costs by each path, and whether it needs the SMs). One GPU, one call.
#   transpose_tma_store.sh [OUT]        (default: $OUT, else /tmp/cudabench-tma-store)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-tma-store}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir scripts/ladder/kernels)
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
log="$out/logs"
mkdir -p "$log"
for dtype in float32 float16 float64 int32; do
    $cb transpose "${kd[@]}" --variant tma -p STORE_PATH=2 -p OUT_BUFS=1,2 -p STORE_CACHE=1,2 \
        --dtype "$dtype" --size 3001,1000x40,40x1000,64x8,8x64,136x128,24x4104,4104x24 \
        --no-vendor --no-batch --max-time 0.05 >"$log/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$? PASS=$(grep -c '│ PASS' "$log/verify-$dtype.txt")" \
        "SKIP=$(grep -c '│ SKIP' "$log/verify-$dtype.txt") FAIL=$(grep -c '│ FAIL' "$log/verify-$dtype.txt")" >>"$summary"
done
$cb transpose "${kd[@]}" --variant tma -p STORE_PATH=2 -p OUT_BUFS=1,2 --size 136x128,1000x40 \
    --sanitize racecheck --no-vendor --no-batch --max-time 0.05 >"$log/racecheck.txt" 2>&1
echo "racecheck rc=$? $(grep -c 'racecheck: no error' "$log/racecheck.txt") clean" >>"$summary"
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant tma --variant evict_first -p STORE_PATH=1,2 \
        -p STORE_CACHE=1,2 -p STAGES=2,4 -p BLOCKS_PER_SM=8 -p THREADS=256 --no-vendor \
        --no-batch >"$log/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"
    grep -E "^│ (tma|evict_first|memcpy_dtod)" "$log/sweep$i.txt" | grep -E "PASS|REF" |
        tr -s ' ' | cut -c1-130 >>"$summary"
done
python3 scripts/ladder/copy_paths.py 8192 >>"$summary" 2>&1
tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$log"
cat "$summary"
