#!/usr/bin/env bash
# Issue 25's transpose: the store and load cache operators not yet measured. evict_first's
# STORE_CACHE measured plain (1), evict-first .cs (2) and evict-last-priority (3) stores,
# its LOAD_CACHE plain (which ptxas makes LDG.E.128.CONSTANT, the read-only path), .cs and
# an L2 256-byte prefetch. Left: write-through stores (st.global.wt: each line sent on
# to DRAM as it is written, not held dirty in the L2 until evicted, when B's 256-byte
# pieces of rows 32 KB apart leave in eviction order), cache-global stores (st.global.cg)
# and last-use loads (ld.global.lu).
#
# The draft `hints` is generated here from kernels/transpose/evict_first.cu (not kept as a
# copy): STORE_CACHE 4 (.wt) and 5 (.cg), LOAD_CACHE 4 (.lu). Verified at odd shapes
# (float32, float16), then swept with evict_first's own stores and loads (STORE_CACHE=2
# LOAD_CACHE=1) and the copy at 8192² in ten pooled rounds, twice, the batch
# (back-to-back) column beside the cold one.
#   transpose_store_hints.sh [OUT]        (default: $OUT, else /tmp/cudabench-hints)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-hints}}
mkdir -p "$out/kernels/transpose"
cb=${CUDABENCH:-python3 -m cudabench}
kd=(--kernels-dir "$out/kernels")
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
python3 - kernels/transpose/evict_first.cu "$out/kernels/transpose/hints.cu" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r"^// description: .*$", "// description: Draft (issue 25): evict_first with "
             "write-through (STORE_CACHE=4) or cache-global (5) stores, last-use loads "
             "(LOAD_CACHE=4).", src, count=1, flags=re.M)
src = src.replace("// param LOAD_CACHE: default 1; allowed 1, 2, 3",
                  "// param LOAD_CACHE: default 1; allowed 1, 2, 3, 4")
src = src.replace("// param STORE_CACHE: default 2; allowed 1, 2, 3",
                  "// param STORE_CACHE: default 2; allowed 1, 2, 3, 4, 5\n// run: on request")
src = src.replace("launch transpose_evict_first:", "launch transpose_hints:")
src = src.replace("transpose_evict_first(const", "transpose_hints(const")
loads = '''#elif LOAD_CACHE == 4
    const uint4 r = __ldlu(reinterpret_cast<const uint4*>(p));  // ld.global.lu.v4
    Vec v;
    memcpy(&v, &r, sizeof(v));
    return v;
#else
    return *reinterpret_cast<const Vec*>(p);'''
stores = '''#elif STORE_CACHE == 4
    uint4 r;
    memcpy(&r, &v, sizeof(r));
    __stwt(reinterpret_cast<uint4*>(p), r);  // st.global.wt.v4
#elif STORE_CACHE == 5
    uint4 r;
    memcpy(&r, &v, sizeof(r));
    __stcg(reinterpret_cast<uint4*>(p), r);  // st.global.cg.v4
#else
    *reinterpret_cast<Vec*>(p) = v;'''
old_load = "#else\n    return *reinterpret_cast<const Vec*>(p);"
old_store = "#else\n    *reinterpret_cast<Vec*>(p) = v;"
assert src.count(old_load) == 1 and src.count(old_store) == 1
src = src.replace(old_load, loads).replace(old_store, stores)
open(sys.argv[2], "w").write(src)
PY
grep -E "^// (param (LOAD|STORE)_CACHE|launch)" "$out/kernels/transpose/hints.cu" >>"$summary"
for dtype in float32 float16; do
    $cb transpose "${kd[@]}" --variant hints -p STORE_CACHE=4,5 -p LOAD_CACHE=1,4 --dtype "$dtype" \
        --size 3001,1000x37,37x1000,65x63,1x7,128x136,1024,256x4096 --no-vendor --no-batch \
        --max-time 0.05 >"$out/verify-$dtype.txt" 2>&1
    echo "verify $dtype: rc=$? ($(grep -c '│ hints' "$out/verify-$dtype.txt") rows, $(grep -c 'FAIL' "$out/verify-$dtype.txt") FAIL)" >>"$summary"
done
for i in 1 2; do
    # STORE_CACHE=2 LOAD_CACHE=1 is evict_first as it runs by default, in the same draft
    $cb transpose "${kd[@]}" --size 8192 --variant hints \
        -p STORE_CACHE=${STORES:-2,4,5} -p LOAD_CACHE=${LOADS:-1,4} --no-vendor --rounds 10 \
        --json "$out/sweep$i.json" >"$out/sweep$i.txt" 2>&1
    echo "sweep $i rc=$?" >>"$summary"
done
python3 - "$out" <<'PY' >>"$summary"
import json, pathlib, statistics, sys
def batch(row):
    samples = row.get("batch_samples_s") or []
    return statistics.median(samples) if samples else None
for path in sorted(pathlib.Path(sys.argv[1]).glob("sweep*.json")):
    rows = [r for r in json.loads(path.read_text())["benchmarks"] if r.get("stats")]
    copy = next(r for r in rows if r["variant"] == "memcpy_dtod")
    c, cb = copy["stats"]["median_s"], batch(copy)
    print(f"{path.stem}: copy {c * 1e6:.1f} us cold, batch {cb * 1e6 if cb else 0:.1f} us")
    for r in sorted(rows, key=lambda r: r["stats"]["median_s"]):
        if r["variant"] == "memcpy_dtod":
            continue
        p = r.get("params") or {}
        tag = " ".join(f"{k}={p[k]}" for k in ("LOAD_CACHE", "STORE_CACHE") if k in p)
        b = batch(r)
        print(f"  {r['variant']:12} {tag:28} cold {r['stats']['median_s'] * 1e6:7.1f} us "
              f"ratio {c / r['stats']['median_s']:.3f}  batch "
              f"{(b or 0) * 1e6:7.1f} us ratio {(cb / b) if b and cb else 0:.3f}  {r.get('status', '')}")
PY
cat "$summary"
