#!/usr/bin/env bash
# The pytest plugin on a GPU, with this example project:
#   1. its tests pass and write one results file (the baseline);
#   2. the same tests again, compared with the baseline (A/A: reported, should pass);
#   3. a copy with the probe planted ~3.5% slower (EXTRA_PERMILLE 35, a compile-time
#      define, so the benchmark keeps its name) fails the session against the baseline,
#      its tests passing; `cudabench compare` on the two files agrees.
# Usage: run-gpu-check.sh [OUT]   (default /tmp/cudabench-pytest-check; logs and files there)
# Exit 0 when 1 and 3 went as they should, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/cudabench-pytest-check}
mkdir -p "$out"
pytest=(python3 -m pytest -p no:cacheprovider --cudabench-require-gpu)
ok=1

echo "== 1. baseline: $here"
(cd "$here" && "${pytest[@]}" --cudabench-json "$out/base.json") >"$out/base.txt" 2>&1
code=$?
tail -n 15 "$out/base.txt"
rows=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['benchmarks']))" \
       "$out/base.json" 2>/dev/null || echo 0)
echo "baseline: exit $code, $rows rows in $out/base.json"
[ "$code" -eq 0 ] && [ "$rows" -gt 0 ] || { echo "FAIL: the baseline session did not pass"; ok=0; }

echo "== 2. A/A: the same tests against the baseline"
(cd "$here" && "${pytest[@]}" --cudabench-compare "$out/base.json" \
    --cudabench-json "$out/again.json") >"$out/again.txt" 2>&1
code=$?
grep -E "dot/probe|regression|cudabench:" "$out/again.txt" | tail -n 8
echo "A/A: exit $code (0: no false alarm)"

echo "== 3. planted: the probe ~3.5% slower"
work=$(mktemp -d)
cp -r "$here/pyproject.toml" "$here/tests" "$here/kernels" "$work/"
sed -i 's/^#ifndef EXTRA_PERMILLE$/#define EXTRA_PERMILLE 35\n#ifndef EXTRA_PERMILLE/' \
    "$work/kernels/dot/probe.cu"
grep -q "^#define EXTRA_PERMILLE 35" "$work/kernels/dot/probe.cu" || { echo "plant failed"; exit 1; }
(cd "$work" && "${pytest[@]}" --cudabench-compare "$out/base.json" \
    --cudabench-json "$out/slow.json") >"$out/slow.txt" 2>&1
code=$?
grep -E "dot/probe|regression|cudabench:" "$out/slow.txt" | tail -n 8
tail -n 1 "$out/slow.txt"
if [ "$code" -eq 1 ] && grep -q "the session fails: a regression" "$out/slow.txt" \
   && grep -E "dot/probe.*slower" "$out/slow.txt" >/dev/null \
   && ! tail -n 1 "$out/slow.txt" | grep -q failed; then
    echo "planted: exit 1, dot/probe slower, every test passed: the session failed on the gate"
else
    echo "FAIL: the planted slowdown did not fail the session as it should (exit $code)"; ok=0
fi
python3 -m cudabench compare "$out/base.json" "$out/slow.json" >"$out/compare.txt" 2>&1
echo "cudabench compare base.json slow.json: exit $? (1 expected)"
grep -E "dot/probe" "$out/compare.txt" | head -n 2
rm -rf "$work"
[ "$ok" -eq 1 ] && echo "GPU check: PASS" || echo "GPU check: FAIL"
[ "$ok" -eq 1 ]
