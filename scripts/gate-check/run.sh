#!/usr/bin/env bash
# The gates on a GPU: does compare's default (--threshold auto, after a calibration) cry
# wolf, does it catch a planted 3-4% slowdown, and does `cudabench ab` catch ~1%?
#   run.sh gates [PAIRS] [OUT]  calibrate, PAIRS A/A pairs, PAIRS planted-slowdown pairs
#   run.sh ab [RUNS] [OUT]      the planted slowdown's true size (many rounds), then RUNS
#                               `ab` runs against a ~1% slowdown and RUNS against a copy
#                               (seeds FIRST.., default 1; SKIP_TRUE=1 leaves out the true
#                               size: one device call can then take part of the runs)
# CUDABENCH overrides the command (default: python3 -m cudabench).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-gates}; count=${2:-20}; out=${3:-/tmp/cudabench-gates}
cb=${CUDABENCH:-python3 -m cudabench}
size=${SIZE:-1<<23}  # ab: each round prepares its inputs again, so a size that is quick to make
plant() {  # plant FOLDER PERMILLE
    mkdir -p "$out/$1"
    sed "s/@EXTRA@/$2/" "$here/probe.cu.in" >"$out/$1/probe.cu"
    cp "$here/../../kernels/dot/tree_reduce.cuh" "$out/$1/"
}
plant base 0; plant copy 0; plant slow 35; plant slow1 10
run() { $cb run "$here/suite.toml" --kernels-dir "$out/$1" --json "$2" --no-vendor --no-batch \
        >/dev/null 2>&1 || { echo "suite run failed: $2" >&2; exit 2; }; }
if [ "$what" = gates ]; then
    $cb calibrate "$here/suite.toml" --kernels-dir "$out/base" --runs 5 --db "$out/h.db" \
        >"$out/calibrate.txt" 2>&1 || { echo "calibrate failed" >&2; grep -iE "error|fail" "$out/calibrate.txt" | head; exit 2; }
    tail -n 12 "$out/calibrate.txt"
    run base "$out/a0.json"
    alarms=0; caught=0
    for i in $(seq 1 "$count"); do
        run base "$out/a$i.json"
        $cb compare "$out/a$((i - 1)).json" "$out/a$i.json" --db "$out/h.db" >"$out/aa$i.txt"
        [ $? -eq 0 ] || { alarms=$((alarms + 1)); grep -i slower "$out/aa$i.txt" | head -3; }
        run slow "$out/s$i.json"
        $cb compare "$out/a$i.json" "$out/s$i.json" --db "$out/h.db" >"$out/as$i.txt"
        code=$?
        [ $code -eq 1 ] && caught=$((caught + 1))
        grep "dot/probe" "$out/as$i.txt" | head -1
    done
    echo "A/A: $alarms false alarm(s) in $count pairs; planted slowdown caught in $caught of $count"
else
    if [ "${SKIP_TRUE:-0}" != 1 ]; then
        $cb ab "$out/base" "$out/slow1" --op dot --size "$size" --rounds 20 --samples 40 \
            >"$out/true1.txt" 2>&1; echo "true size of the ~1% plant (20 rounds x 40 samples):"
        grep probe "$out/true1.txt"
    fi
    hits=0; alarms=0; first=${FIRST:-1}
    for i in $(seq "$first" $((first + count - 1))); do
        $cb ab "$out/base" "$out/slow1" --op dot --size "$size" --seed "$i" >"$out/ab$i.txt" 2>&1
        [ $? -eq 1 ] && hits=$((hits + 1)); grep probe "$out/ab$i.txt" | head -1
        $cb ab "$out/base" "$out/copy" --op dot --size "$size" --seed "$i" >"$out/aa$i.txt" 2>&1
        [ $? -eq 0 ] || { alarms=$((alarms + 1)); grep probe "$out/aa$i.txt" | head -1; }
    done
    echo "ab (seeds $first..$((first + count - 1))): ~1% plant caught in $hits of $count; $alarms false alarm(s) in $count A/A runs"
fi
