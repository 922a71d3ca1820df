#!/usr/bin/env bash
# dot's bulk rung with 32 KB pieces (issue 25's last target, dot >= 1.00 of the copy), on
# an H100: verify 32 KB pieces in every type at odd lengths, sweep CHUNK x STAGES beside
# the copy, then three runs of the sweep's best against the defaults, each beside the copy.
# (With CHUNK=32768 the ring holds at most three stages: STAGES=4 builds the STAGES=3 kernel.)
#   dot_chunks.sh [OUT]        (default: $OUT, else /tmp/cudabench-dot-chunks)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-dot-chunks}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
rows() { grep -E "^│ (bulk|memcpy_dtod)" "$1" | tr -s ' '; }  # whole: cut splits box chars
for dtype in float32 float16 float64 int32; do
    for size in 1 7 1001 100003 '1<<22'; do
        $cb dot --size "$size" --dtype "$dtype" --variant bulk -p CHUNK=32768 -p STAGES=2,3 \
            --no-vendor --no-batch --max-time 0.05 >"$out/verify-$dtype-${size//</}.log" 2>&1
        echo "verify $dtype $size: rc=$?" >>"$summary"
    done
done
$cb dot --size '1<<26' --variant bulk -p CHUNK=8192,16384,32768 -p STAGES=2,3,4 \
    --no-vendor --wide >"$out/sweep.txt" 2>&1
echo "sweep rc=$?" >>"$summary"; rows "$out/sweep.txt" >>"$summary"
for i in 1 2 3; do
    $cb dot --size '1<<26' --variant bulk -p CHUNK=16384,32768 -p STAGES=3,4 --no-vendor --wide \
        >"$out/confirm$i.txt" 2>&1
    echo "confirm $i rc=$?" >>"$summary"; rows "$out/confirm$i.txt" >>"$summary"
done
cat "$summary"
