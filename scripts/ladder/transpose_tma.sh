#!/usr/bin/env bash
# Issue 25's transpose under the clean flush: the TMA draft
# (scripts/ladder/kernels/transpose/tma.cu) verified at odd shapes in every type (shapes whose
# rows are not 16-byte multiples are SKIP rows: a tensor map cannot describe them), checked
# under compute-sanitizer, then swept beside evict_first and the copy at 8192², twice, on one
# GPU in one call.
#   transpose_tma.sh [OUT]        (default: $OUT, else /tmp/cudabench-tma)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-tma}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir scripts/ladder/kernels)
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (tma|evict_first|memcpy_dtod)" "$1" | tr -s ' ' | cut -c1-120; }
metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,\
lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed
odd=3001,1000x40,40x1000,64x8,8x64,136x128,24x4104,4104x24,1x8
for dtype in float32 float16 float64 int32; do
    $cb transpose "${kd[@]}" --variant tma -p TR=64,128 -p TC=64,128 -p OUT_BUFS=1,2 \
        --dtype "$dtype" --size $odd --no-vendor --no-batch --max-time 0.05 \
        >"$out/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$? PASS=$(grep -c PASS "$out/verify-$dtype.txt")" \
        "SKIP=$(grep -c SKIP "$out/verify-$dtype.txt") FAIL=$(grep -c FAIL "$out/verify-$dtype.txt")" >>"$summary"
done
for tool in memcheck racecheck synccheck; do
    for dtype in float32 float16; do
        $cb transpose "${kd[@]}" --variant tma --dtype "$dtype" --size 136x128,1000x40 \
            -p TR=64,128 -p OUT_BUFS=1,2 \
            --sanitize $tool --no-vendor --no-batch --max-time 0.05 \
            >"$out/sanitize-$tool-$dtype.txt" 2>&1
        echo "sanitize $tool $dtype: rc=$?" >>"$summary"
    done
done
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant tma --variant evict_first \
        -p TR=64,128 -p TC=64,128 -p STAGES=1,2,4 -p OUT_BUFS=1,2 -p BLOCKS_PER_SM=2,8 \
        -p THREADS=256 \
        --no-vendor --no-batch >"$out/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"; rows "$out/sweep$i.txt" >>"$summary"
done
$cb transpose "${kd[@]}" --size 8192 --variant tma --variant evict_first --variant vectorized \
    --no-vendor --no-batch --counters "$metrics" >"$out/counters.txt" 2>&1
echo "counters rc=$?" >>"$summary"
grep -E "^│ (tma|evict_first|vectorized|memcpy_dtod)|┃" "$out/counters.txt" | tail -8 >>"$summary"
# The device tool brings back a few files: the logs go in one archive beside the summary.
tar -czf "$out/logs.tgz" -C "$out" --exclude logs.tgz --exclude summary.txt . 2>/dev/null &&
    find "$out" -maxdepth 1 -name '*.txt' ! -name summary.txt -delete
cat "$summary"
