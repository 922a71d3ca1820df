#!/usr/bin/env bash
# Issue 25's transpose: tile orders the GROUP parameter cannot express. Row-major (GROUP=1),
# column-major (GROUP>=tile rows) and balanced groups (GROUP=16: slower) were measured; the
# diagonal order of Ruetsch and Micikevicius' transpose note (the classic answer to DRAM
# partition camping) and a Morton (Z) order were not.
#
# The draft `order` is generated here from kernels/transpose/evict_first.cu (not kept as a
# copy): the same kernel whose block k takes its tile by ORDER:
#   0  evict_first's own order (GROUP=1: row-major);
#   1  diagonal: tile row k % TR, tile column (k / TR + k % TR) % TC. The resident ~1,060
#      blocks cover a diagonal band: every tile row of A gets ~8 neighbouring tiles (2 KB
#      runs of A's rows at TILE 64 float32) and every tile row of B the same;
#   2  the same band the other way round (tile column k % TC, row (k / TC + k % TC) % TR);
#   3  Morton (Z) order on a square power-of-two tile grid (row-major on any other grid).
# Each is a bijection of the tiles. (The draft's STORE_CACHE 3 and 4, evict-last stores
# for every line or half of them, were measured with this script on 2026-11-27; the first
# is now evict_first's own STORE_CACHE 3, the second, no different, was dropped:
# docs/kernels.md, "Evict-last stores".)
# Verified at odd shapes (float32, float16), then swept
# beside evict_first and the copy at 8192² in ten pooled rounds, twice, on one GPU
# (ORDERS, STORES and LOADS choose the sweep's ORDER, STORE_CACHE and LOAD_CACHE values).
#   transpose_order.sh [OUT]        (default: $OUT, else /tmp/cudabench-order)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-order}}
mkdir -p "$out/kernels/transpose"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir "$out/kernels")
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
python3 - kernels/transpose/evict_first.cu "$out/kernels/transpose/order.cu" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r"^// description: .*$", "// description: Draft (issue 25): evict_first with its "
             "tiles taken in ORDER (0 its own, 1 diagonal, 2 diagonal by columns, 3 Morton).",
             src, count=1, flags=re.M)
src = re.sub(r"^(// param STORE_CACHE: .*)$",
             r"\1\n// param ORDER: default 0; allowed 0, 1, 2, 3\n// run: on request",
             src, count=1, flags=re.M)
src = src.replace("launch transpose_evict_first:", "launch transpose_order:")
src = src.replace("transpose_evict_first(const", "transpose_order(const")
orders = '''
// The tile block `id` moves under ORDER (see scripts/ladder/transpose_order.sh).
__device__ __forceinline__ void tile_by_order(unsigned id, int tiles_r, int tiles_c, int& tr, int& tc)
{
#if ORDER == 1
    tr = (int)(id % (unsigned)tiles_r);
    tc = (int)((id / (unsigned)tiles_r + (unsigned)tr) % (unsigned)tiles_c);
#elif ORDER == 2
    tc = (int)(id % (unsigned)tiles_c);
    tr = (int)((id / (unsigned)tiles_c + (unsigned)tc) % (unsigned)tiles_r);
#elif ORDER == 3
    if (tiles_r == tiles_c && (tiles_r & (tiles_r - 1)) == 0) {
        unsigned r = 0, c = 0;  // even bits of id: column, odd bits: row
        for (int b = 0; b < 16; ++b) {
            c |= ((id >> (2 * b)) & 1u) << b;
            r |= ((id >> (2 * b + 1)) & 1u) << b;
        }
        tr = (int)r;
        tc = (int)c;
    } else {
        tile_of(id, tiles_r, tiles_c, tr, tc);
    }
#else
    tile_of(id, tiles_r, tiles_c, tr, tc);
#endif
}

extern "C" __global__'''
src = src.replace('\nextern "C" __global__', orders, 1)
src = src.replace("tile_of(blockIdx.x, tiles_r, tiles_c, tr, tc);",
                  "tile_by_order(blockIdx.x, tiles_r, tiles_c, tr, tc);")
assert src.count("tile_by_order(") == 2 and "ORDER" in src
open(sys.argv[2], "w").write(src)
PY
grep -E "^// (param ORDER|launch)" "$out/kernels/transpose/order.cu" >>"$summary"
for dtype in float32 float16; do
    $cb transpose "${kd[@]}" --variant order -p ORDER=0,1,2,3 -p STORE_CACHE=1,3 --dtype "$dtype" \
        --size 3001,1000x37,37x1000,65x63,1x7,128x136,1024,256x4096 --no-vendor --no-batch \
        --max-time 0.05 >"$out/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$?" >>"$summary"
done
for i in 1 2; do
    $cb transpose "${kd[@]}" --size 8192 --variant order --variant evict_first \
        -p ORDER=${ORDERS:-0,1,2,3} -p STORE_CACHE=${STORES:-2} -p LOAD_CACHE=${LOADS:-1} --no-vendor --no-batch --rounds 10 \
        --json "$out/sweep$i.json" >"$out/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"
done
python3 - "$out" <<'PY' >>"$summary"
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("sweep*.json")):
    rows = [r for r in json.loads(path.read_text())["benchmarks"] if r.get("stats")]
    copy = next(r for r in rows if r["variant"] == "memcpy_dtod")["stats"]["median_s"]
    print(f"{path.stem}: copy {copy * 1e6:.1f} us")
    for r in sorted(rows, key=lambda r: r["stats"]["median_s"]):
        if r["variant"] == "memcpy_dtod":
            continue
        p = r.get("params") or {}
        tag = " ".join(f"{k}={p[k]}" for k in ("ORDER", "LOAD_CACHE", "STORE_CACHE") if k in p)
        print(f"  {r['variant']:12} {tag:38} {r['stats']['median_s'] * 1e6:7.1f} us"
              f"  ratio {copy / r['stats']['median_s']:.3f}  {r.get('status', '')}")
PY
cat "$summary"
