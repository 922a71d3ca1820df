#!/usr/bin/env bash
# matmul's randomized check against the full one on a GPU (docs/verification.md): the same
# kernels (the built-in ones, the ladder's, cuBLAS's tensor-core rows) at sizes where the
# randomized check is the default, run again with --full-check. Every row's verdict must
# be the same, a correct kernel must get no block flagged, and the CPU time each check
# took (cpu_reference_s, the wall time) is printed side by side. Then tests/gpu's tests of
# kernels written wrong on purpose. Results go to OUT (default /tmp/cudabench-verification).
#   run.sh [OUT]      CUDABENCH overrides the command (default: python3 -m cudabench)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-/tmp/cudabench-verification}; mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
quick=(--warmup 0.02 --min-samples 5 --max-time 0.1 --no-batch)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timed() {  # timed NAME ARGS...: one command, its wall time and exit code
    local name=$1; shift
    local start end code
    start=$(date +%s.%N)
    $cb "$@" --json "$out/$name.json" >"$out/$name.txt" 2>"$out/$name.err"
    code=$?
    end=$(date +%s.%N)
    python3 -c "print(f'$name: {float($end) - float($start):.1f} s wall, exit $code')"
}
for dtype in float32 float16 float64 int32; do
    for size in 1000 2048; do
        timed "matmul-$size-$dtype" matmul --size $size --dtype $dtype "${quick[@]}"
        timed "matmul-$size-$dtype-full" matmul --size $size --dtype $dtype "${quick[@]}" \
            --full-check
    done
done
ladder=(--variant tiled --variant vectorized --variant blocktile2d --variant warptile
        --variant async_double_buffer)
timed matmul-4096-ladder matmul --size 4096 "${ladder[@]}" "${quick[@]}"
timed matmul-4096-ladder-full matmul --size 4096 "${ladder[@]}" "${quick[@]}" --full-check
timed matmul-odd-float16 matmul --size 1999x1537x1031 --dtype float16 "${quick[@]}"
timed matmul-odd-float16-full matmul --size 1999x1537x1031 --dtype float16 "${quick[@]}" \
    --full-check
python3 - "$out" <<'PY'
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
bad = 0
for fast_path in sorted(out.glob("matmul-*.json")):
    if fast_path.stem.endswith("-full"):
        continue
    full_path = fast_path.with_name(fast_path.stem + "-full.json")
    if not full_path.exists():
        print(f"{fast_path.stem}: no --full-check run"); bad += 1; continue
    fast = {b["variant"]: b for b in json.loads(fast_path.read_text())["benchmarks"]}
    full = {b["variant"]: b for b in json.loads(full_path.read_text())["benchmarks"]}
    for name, row in fast.items():
        v, w = row.get("verification"), (full.get(name) or {}).get("verification")
        if v is None or w is None:
            continue
        flagged = re.search(r"(\d+) flagged", v["criterion"])
        same = v["passed"] == w["passed"]
        quiet = flagged is None or not v["passed"] or flagged.group(1) == "0"
        bad += (not same) + (not quiet)
        print(f"{fast_path.stem:28} {name:22} randomized {'PASS' if v['passed'] else 'FAIL'} "
              f"({flagged.group(1) if flagged else '-'} flagged, cpu {row['cpu_reference_s'] or 0:.3f} s)"
              f"  full {'PASS' if w['passed'] else 'FAIL'} (cpu {full[name]['cpu_reference_s'] or 0:.3f} s)"
              f"{'' if same else '  VERDICTS DIFFER'}{'' if quiet else '  FLAGGED A CORRECT KERNEL'}")
print(f"{bad} disagreement(s)")
PY
cd "$root" && python3 -m pytest -q -p no:cacheprovider tests/gpu/test_kernels.py \
    -k "wrong_kernel or matches_reference" 2>&1 | tail -5
