#!/usr/bin/env bash
# Issue 25's transpose: does evict_first get nearer the copy with fewer blocks resident an
# SM? At TILE 64 float32 its 60 registers a thread let 8 blocks share an SM (its 16.6 KB of
# shared memory alone would let 12; this script's header first said 13): about 1,060 blocks
# on an H100, 17 MB of loads in flight, all over A's and B's rows at once. Fewer blocks keep
# fewer DRAM pages open. OCC 8 and above change nothing: registers hold the kernel to 8.
#
# The draft `occupancy` is generated here from kernels/transpose/evict_first.cu (not kept as a
# copy): the same kernel, with a parameter OCC that pads each block's dynamic shared memory to
# 233,472 / OCC - 1,024 bytes (an H100 SM's shared memory, less the 1 KB reserved a block), so
# that at most OCC blocks fit an SM (OCC=32: no padding, evict_first itself). It is verified
# at odd shapes, then swept beside evict_first and the copy at 8192² in ten pooled rounds
# (`--rounds 10`: ratios with placement and drift averaged out), twice, on one GPU in one call.
#   transpose_occupancy.sh [OUT]        (default: $OUT, else /tmp/cudabench-occupancy)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-occupancy}}
mkdir -p "$out/kernels/transpose"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir "$out/kernels")
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
sed -e 's|^// description: .*|// description: Draft (issue 25): evict_first with at most OCC blocks an SM, by padding its dynamic shared memory (OCC=32: no padding).|' \
    -e 's|^// param STORE_CACHE: .*|&\n// param OCC: default 32; allowed 1..32\n// run: on request|' \
    -e 's|launch transpose_evict_first:|launch transpose_occupancy:|' \
    -e 's|dynamic_shared TILE \* (TILE + 1) \* ELEM_SIZE$|dynamic_shared max(TILE * (TILE + 1) * ELEM_SIZE, 233472 // OCC - 1024)|' \
    -e 's|transpose_evict_first(const|transpose_occupancy(const|' \
    kernels/transpose/evict_first.cu >"$out/kernels/transpose/occupancy.cu"
grep -E "^// (param OCC|launch)" "$out/kernels/transpose/occupancy.cu" >>"$summary"
for dtype in float32 float16; do
    $cb transpose "${kd[@]}" --variant occupancy -p OCC=4,32 --dtype "$dtype" \
        --size 3001,1000x37,37x1000,65x63,1x7,128x136 --no-vendor --no-batch \
        --max-time 0.05 >"$out/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$?" >>"$summary"
done
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant occupancy --variant evict_first \
        -p OCC=2,3,4,6,8,10,13,32 -p BLOCK_ROWS=8,16 --no-vendor --no-batch --rounds 10 \
        --json "$out/sweep$i.json" >"$out/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"
done
python3 - "$out" <<'PY' >>"$summary"
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("sweep*.json")):
    rows = json.loads(path.read_text())["benchmarks"]
    copy = next(r for r in rows if r["variant"] == "memcpy_dtod")["stats"]["median_s"]
    print(f"{path.stem}: copy {copy * 1e6:.1f} us")
    for r in sorted(rows, key=lambda r: r["stats"]["median_s"]):
        if r["variant"] == "memcpy_dtod":
            continue
        p = r.get("params") or {}
        tag = " ".join(f"{k}={p[k]}" for k in ("OCC", "BLOCK_ROWS") if k in p)
        print(f"  {r['variant']:12} {tag:20} {r['stats']['median_s'] * 1e6:7.1f} us"
              f"  ratio {copy / r['stats']['median_s']:.3f}  {r.get('status', '')}")
PY
cat "$summary"
