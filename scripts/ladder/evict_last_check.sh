#!/usr/bin/env bash
# Issue 25's transpose: evict_first with evict-last stores (STORE_CACHE=3, B's lines held in
# the L2 at evict-last priority; first the draft evict_last) checked on one GPU in one call,
# and whether its gain is real or write-back moved past the end of the timed launch (back
# to back it gains nothing: docs/kernels.md, "Evict-last stores"):
#   - flush_evict_last.py: does a line kept at evict-last priority outlive the L2 flush?
#   - verified at odd shapes in every type and parameter, and under compute-sanitizer;
#   - 8192² float32 in ten pooled rounds beside evict-first stores, vectorized and the copy,
#     twice, with the batch column (back-to-back launches: there a write-back left behind
#     is paid by the next launch, so a deferral gains nothing);
#   - a sweep of LOAD_CACHE and GROUP;
#   - flush_debt.py (what the next flush pays for each operation's dirty lines);
#   - the counters (DRAM bytes read and written inside the launch);
#   - other sizes and types.
#   evict_last_check.sh [OUT]        (default: $OUT, else /tmp/cudabench-evict-last)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-evict-last}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
here=$(cd "$(dirname "$0")" && pwd)
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
step() {  # step NAME COMMAND...: run, log to NAME.txt, note the exit code
    local name=$1; shift
    "$@" >"$out/$name.txt" 2>&1
    echo "$name: rc=$?" >>"$summary"
}
last=(--variant evict_first -p STORE_CACHE=3)
both=(--variant evict_first -p STORE_CACHE=2,3)
(cd "$here" && python3 flush_evict_last.py) >"$out/flush-evict-last.txt" 2>&1
echo "flush-evict-last: rc=$?" >>"$summary"
cat "$out/flush-evict-last.txt" >>"$summary"
odd=(--size 3001,1000x37,37x1000,65x63,1x7,7x1,128x136 --no-vendor --no-batch --max-time 0.05)
for dtype in float32 float16 float64 int32; do
    step "verify-$dtype" $cb transpose "${last[@]}" -p LOAD_CACHE=1,2 --dtype "$dtype" \
        "${odd[@]}"
done
step verify-tiles $cb transpose "${last[@]}" -p TILE=8,16,32,128 -p BLOCK_ROWS=4,32 \
    -p GROUP=1,8 "${odd[@]}"
step sanitize $cb transpose "${last[@]}" --size 1000x37,65x63,256 --no-vendor --no-batch \
    --max-time 0.05 --sanitize memcheck
grep -h "FAIL\|ERROR" "$out"/verify-*.txt "$out/sanitize.txt" | head -5 >>"$summary"
for i in 1 2; do
    step "rounds$i" $cb transpose --size 8192 "${both[@]}" --variant vectorized --no-vendor \
        --rounds 10 --json "$out/rounds$i.json"
done
step sweep $cb transpose --size 8192 "${last[@]}" -p LOAD_CACHE=1,2 -p GROUP=1,128 \
    --no-vendor --no-batch --rounds 5 --json "$out/sweep.json"
step sizes $cb transpose --size 2048,4096,8320,16384x4096,4096x16384 "${both[@]}" \
    --no-vendor --no-batch --rounds 5 --json "$out/sizes.json"
for dtype in float16 float64; do
    step "types-$dtype" $cb transpose --size 8192 --dtype "$dtype" "${both[@]}" --no-vendor \
        --no-batch --rounds 5 --json "$out/types-$dtype.json"
done
metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sectors_op_write.sum
step counters $cb transpose --size 8192 "${both[@]}" --no-vendor --no-batch \
    --counters "$metrics"
grep -E "^│ evict_first|┃ variant" "$out/counters.txt" | tail -3 | cut -c1-220 >>"$summary"
(cd "$here" && python3 flush_debt.py 8192) >"$out/flush-debt.txt" 2>&1
echo "flush-debt: rc=$?" >>"$summary"
grep -E "evict|memcpy" "$out/flush-debt.txt" >>"$summary"
python3 - "$out" <<'PY' >>"$summary"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
for name in ("rounds1", "rounds2", "sweep", "sizes", "types-float16", "types-float64"):
    path = out / f"{name}.json"
    if not path.exists():
        print(f"{name}: no results")
        continue
    rows = [r for r in json.loads(path.read_text())["benchmarks"] if r.get("stats")]
    for key in sorted({(r["dtype"], tuple(r["shape"])) for r in rows}):
        group = [r for r in rows if (r["dtype"], tuple(r["shape"])) == key]
        copy = next((r for r in group if r["variant"] == "memcpy_dtod"), None)
        if copy is None:
            continue
        cold = copy["stats"]["median_s"]
        warm = statistics.median(copy["batch_samples_s"]) if copy.get("batch_samples_s") else None
        print(f"{name} {key[0]} {'x'.join(map(str, key[1]))}: copy {cold * 1e6:.1f} us"
              + (f", batch {warm * 1e6:.1f} us" if warm else ""))
        for r in sorted(group, key=lambda r: r["stats"]["median_s"]):
            if r is copy:
                continue
            p = r.get("params") or {}
            tag = " ".join(f"{k}={p[k]}" for k in ("LOAD_CACHE", "GROUP", "STORE_CACHE")
                           if k in p)
            t = r["stats"]["median_s"]
            line = f"  {r['variant']:12} {tag:34} {t * 1e6:7.1f} us  ratio {cold / t:.3f}"
            if warm and r.get("batch_samples_s"):
                b = statistics.median(r["batch_samples_s"])
                line += f" | batch {b * 1e6:7.1f} us ratio {warm / b:.3f}"
            print(line + f"  {r.get('status', '')}")
PY
cat "$summary"
