#!/usr/bin/env bash
# Does `cudabench compare` cry wolf? On a GPU machine:
#   1. ROUNDS times, run the suite twice back to back and compare the two (A/A): any
#      regression reported is a false alarm.
#   2. Run the suite with `probe` made ~20% slower (slow/) and compare with an A run: the
#      slowdown must be reported, exit code 1.
# Usage: scripts/aa-check/run.sh [ROUNDS] [OUTDIR]; CUDABENCH overrides the command.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-10}
out=${2:-/tmp/cudabench-aa}
cudabench=${CUDABENCH:-python3 -m cudabench}
mkdir -p "$out/base/matmul"
# The unchanged side: `probe` is tiled.cu itself under another name, made afresh each time.
sed 's/matmul_tiled/probe/g' "$here/../../kernels/matmul/tiled.cu" >"$out/base/matmul/probe.cu"
run() {  # run KERNELS_DIR JSON
    $cudabench run "$here/suite.toml" --kernels-dir "$1" --json "$2" >/dev/null 2>&1 ||
        { echo "suite run failed: $2" >&2; exit 2; }
}
false_alarms=0
for i in $(seq 1 "$rounds"); do
    run "$out/base" "$out/a$i.json"
    run "$out/base" "$out/b$i.json"
    $cudabench compare "$out/a$i.json" "$out/b$i.json" --markdown "$out/aa$i.md" >"$out/aa$i.txt"
    code=$?
    echo "A/A round $i: exit $code; $(tail -n 1 "$out/aa$i.txt")"
    [ "$code" -eq 0 ] || false_alarms=$((false_alarms + 1))
done
echo "A/A: $false_alarms false regression(s) in $rounds rounds"
run "$here/slow" "$out/slow.json"
$cudabench compare "$out/a1.json" "$out/slow.json" --markdown "$out/slow.md" >"$out/slow.txt"
code=$?
echo "deliberate ~20% slowdown of matmul/probe: compare exit $code (1 = caught)"
grep -E "probe" "$out/slow.md"
