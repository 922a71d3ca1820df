#!/usr/bin/env bash
# Issue 25: the TMA draft's two store paths told apart (STORE_PATH 1: the TMA unit stores B's
# tile; 2: the threads do, STG.128), verified at odd shapes in every type and under
# racecheck, swept twice beside evict_first and the copy at 8192², then copy_paths.py (what
# the copy costs by each path, and whether it needs the SMs). One GPU, one call.
# With DRAFT=tma_store: the draft tma_store.cu instead (evict_first's loads, the TMA store),
# verified, under compute-sanitizer, and swept the same way.
#   [DRAFT=tma_store] transpose_tma_store.sh [OUT]   (default: $OUT, else /tmp/cudabench-tma-store)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-tma-store}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir scripts/ladder/kernels)
draft=${DRAFT:-tma}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
log="$out/logs"
mkdir -p "$log"
if [ "$draft" = tma ]; then
    verify_p=(-p STORE_PATH=2 -p OUT_BUFS=1,2 -p STORE_CACHE=1,2)
    check_p=(-p STORE_PATH=2 -p OUT_BUFS=1,2)
    sweep_p=(-p STORE_PATH=1,2 -p STORE_CACHE=1,2 -p STAGES=2,4 -p BLOCKS_PER_SM=8 -p THREADS=256)
    tools=(racecheck)
else
    verify_p=(-p TILE=64,128 -p STORE_CACHE=1,2)
    check_p=()
    sweep_p=(-p TILE=32,64,128 -p THREADS=64,128,256 -p STORE_CACHE=1,2)
    tools=(memcheck racecheck synccheck)
fi
for dtype in float32 float16 float64 int32; do
    $cb transpose "${kd[@]}" --variant "$draft" "${verify_p[@]}" --dtype "$dtype" \
        --size 3001,1000x40,40x1000,64x8,8x64,136x128,24x4104,4104x24,40x37,8x3,4104x1 \
        --no-vendor --no-batch --max-time 0.05 >"$log/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$? PASS=$(grep -c '│ PASS' "$log/verify-$dtype.txt")" \
        "SKIP=$(grep -c '│ SKIP' "$log/verify-$dtype.txt") FAIL=$(grep -c '│ FAIL' "$log/verify-$dtype.txt")" >>"$summary"
done
for tool in "${tools[@]}"; do
    $cb transpose "${kd[@]}" --variant "$draft" "${check_p[@]}" --size 136x128,1000x40,40x37 \
        --sanitize "$tool" --no-vendor --no-batch --max-time 0.05 >"$log/$tool.txt" 2>&1
    echo "$tool rc=$? $(grep -c "$tool: no error" "$log/$tool.txt") clean" >>"$summary"
done
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant "$draft" --variant evict_first "${sweep_p[@]}" \
        --no-vendor --no-batch >"$log/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"
    grep -E "^│ ($draft|evict_first|memcpy_dtod) " "$log/sweep$i.txt" | grep -E "PASS|REF" |
        tr -s ' ' | cut -c1-130 >>"$summary"
done
[ "$draft" = tma ] && python3 scripts/ladder/copy_paths.py 8192 >>"$summary" 2>&1
tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$log"
cat "$summary"
