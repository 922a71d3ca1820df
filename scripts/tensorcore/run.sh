#!/usr/bin/env bash
# Issue 26's tensor-core ladder on an H100, in one command (about 5 minutes; under 9):
# verify every rung at the default and odd shapes, benchmark 4096^3 float16 beside the
# cuBLAS row, count the SASS instructions, try the other parameters at 4096^3, and pack the
# logs.
#
#   scripts/tensorcore/run.sh [LOGS] [PHASE...]
#
# Phases (default: verify bench sass tune):
#   verify  each rung (kernels/matmul/mma_sync, mma_async, wgmma_async, wgmma_tma, wgmma_ws),
#           float16, at the default size and odd shapes (1s, primes, one tile and one past
#           it, K or N not a multiple of 8, thin and tall), default parameters and a second
#           set; the rungs run side by side (correctness only, timings meaningless). The TMA
#           rungs (wgmma_tma, wgmma_ws) SKIP where K or N is not a multiple of 8 (no tensor
#           map can describe rows that are not 16 bytes apart) and must PASS everywhere
#           else; the others must PASS everywhere. summarize.py checks every row.
#   bench   matmul 4096^3 float16, the five rungs at their defaults beside the cuBLAS row
#           (cublasGemmEx, float32 compute), cold L2, cudabench's defaults; alone on the
#           GPU. Then summarize.py's share of cuBLAS and the issue's targets.
#   sass    sass.py: registers, spills and HMMA / HGMMA / LDSM / LDGSTS / UTMALDG / SYNCS /
#           USETMAXREG / LDL / STL counts of each rung's default build for its targets.
#   tune    the rungs' other parameters at 4096^3 (--best), skipped once 6 minutes have
#           gone, so that the whole stays under 9.
#
# Everything lands under LOGS (default /tmp/tensorcore): one .txt/.err per command, .json
# and .md for benchmarks, summary.txt; with $OUT set (the device machine's folder of files
# that come back), LOGS is packed into $OUT/tensorcore.tar.gz at the end, or when a TERM
# (`timeout 550 scripts/tensorcore/run.sh`) stops it (TAR=FILE to choose another file).
# CUDABENCH overrides the command (default: python3 -m cudabench from the repository's
# root). Where PyCUDA is not importable and .device-kit/setup.sh exists, it is
# sourced. Exit status: the number of failed commands (0: all passed), capped at 100.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 100
logs=${1:-/tmp/tensorcore}
shift || true
phases=${*:-verify bench sass tune}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
tarball=${TAR:-${OUT:+$OUT/tensorcore.tar.gz}}
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
if ! python3 -c 'import pycuda.driver' 2>/dev/null && [ -f .device-kit/setup.sh ]; then
    # shellcheck disable=SC1091
    . .device-kit/setup.sh
fi
cb=${CUDABENCH:-python3 -m cudabench}
failed=0
started=$SECONDS

# pack: LOGS into the tarball (also when stopped: `timeout 550 run.sh` still brings back
# whatever was logged).
pack() {
    if [ -n "$tarball" ]; then
        tar czf "$tarball" -C "$logs" . && echo "packed into $tarball"
    fi
}
trap 'echo "=== stopped after $((SECONDS - started)) s"; pack; exit 124' TERM INT

# Shapes (MxKxN). ALL: the default, 1s, primes, one tile and one past it, K or N not a
# multiple of 8 (unaligned rows), thin and tall. TMA: K and N multiples of 8 with odd M and
# partial tiles everywhere, for the wgmma rungs (ALL's unaligned ones SKIP there).
ALL=1000,1x1x1,1x7x1,7x1x9,17x33x5,33x1x65,127x129x131,128x128x128,129x64x257,257x1001x255
ALL+=,200x1000x37,130x37x1000,96x24x260,64x4096x64,1999x1000x2001
TMA=1x8x8,17x8x24,67x40x136,129x72x264,255x1000x520,1000x40x1000,4097x64x136,130x4104x200
TMA+=,8x4096x8,2000x2056x1032
RUNGS=(mma_sync mma_async wgmma_async wgmma_tma wgmma_ws)
# a second parameter set per rung (the defaults are BN=128 for mma_*, BN=256 STAGES=4 for
# wgmma_*, BK=64 STAGES=3 for mma_async: its best at 4096^3 on an H100)
declare -A OTHER=([mma_sync]="-p BN=256" [mma_async]="-p BN=256 -p BK=32 -p STAGES=2,4"
                  [wgmma_async]="-p BN=128 -p STAGES=3" [wgmma_tma]="-p BN=128 -p STAGES=3"
                  [wgmma_ws]="-p BN=128 -p STAGES=3")
FAST=(--no-vendor --no-batch --warmup 0 --min-samples 3 --max-samples 3 --max-time 0.05)

# step DIR NAME ARGS...: run cudabench ARGS into DIR/NAME.txt and .err; print one line.
step() {
    local dir=$1 name=$2
    shift 2
    mkdir -p "$dir"
    local start=$SECONDS
    $cb "$@" >"$dir/$name.txt" 2>"$dir/$name.err"
    local code=$?
    echo "$name: exit $code ($((SECONDS - start)) s)"
    if [ "$code" -ne 0 ]; then
        grep -hE "FAIL|ERROR|TIMEOUT|SUSPECT|error|Error" "$dir/$name.txt" "$dir/$name.err" |
            cut -c1-400 | head -n 8 | sed 's/^/    /'
        return 1
    fi
}

for phase in $phases; do
    echo "=== $phase ($(date +%H:%M:%S), $((SECONDS - started)) s in)"
    case $phase in
    verify)
        v="$logs/verify"
        pids=() names=()
        for rung in "${RUNGS[@]}"; do
            sizes=$ALL
            [[ $rung == wgmma* ]] && sizes=$ALL,$TMA
            # shellcheck disable=SC2086
            ( step "$v" "${rung}_defaults" matmul --dtype float16 --variant "$rung" \
                  --size "$sizes" --json "$v/${rung}_defaults.json" "${FAST[@]}"
              a=$?
              step "$v" "${rung}_other" matmul --dtype float16 --variant "$rung" \
                  ${OTHER[$rung]} --size "$sizes" --json "$v/${rung}_other.json" "${FAST[@]}"
              exit $((a + $?)) ) >"$v.$rung.log" 2>&1 &
            pids+=($!) names+=("$rung")
        done
        for i in "${!pids[@]}"; do
            wait "${pids[$i]}"
            failed=$((failed + $?))
            cat "$v.${names[$i]}.log"
        done
        python3 scripts/tensorcore/summarize.py --verify "$v"/*.json | tee "$logs/verify.txt"
        failed=$((failed + ${PIPESTATUS[0]}))
        ;;
    bench)
        b="$logs/bench"
        args=()
        for rung in "${RUNGS[@]}"; do args+=(--variant "$rung"); done
        step "$b" matmul_4096 matmul --dtype float16 --size 4096 "${args[@]}" \
            --json "$b/matmul_4096.json" --markdown "$b/matmul_4096.md" ||
            failed=$((failed + 1))
        ;;
    sass)
        python3 scripts/tensorcore/sass.py --out "$logs/sass" 2>&1 | tee "$logs/sass.txt"
        failed=$((failed + ${PIPESTATUS[0]}))
        ;;
    tune)
        if [ $((SECONDS - started)) -gt 360 ]; then
            echo "tune: skipped ($((SECONDS - started)) s gone; the run must stay under 9 min)"
            continue
        fi
        t="$logs/tune"
        step "$t" mma_4096 matmul --dtype float16 --size 4096 --variant mma_sync \
            --variant mma_async -p BN=128,256 -p BK=32,64 -p STAGES=3,4 --best --no-vendor \
            --json "$t/mma_4096.json" || failed=$((failed + 1))
        step "$t" wgmma_4096 matmul --dtype float16 --size 4096 --variant wgmma_async \
            --variant wgmma_tma --variant wgmma_ws -p BN=128,256 -p STAGES=3,4 --best \
            --no-vendor --json "$t/wgmma_4096.json" || failed=$((failed + 1))
        ;;
    *)
        echo "unknown phase $phase (verify bench sass tune)"
        failed=$((failed + 1))
        ;;
    esac
done

echo "=== summary ($((SECONDS - started)) s)"
{
    [ -f "$logs/verify.txt" ] && cat "$logs/verify.txt"
    benches=$(ls "$logs"/bench/*.json "$logs"/tune/*.json 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$benches" ] && python3 scripts/tensorcore/summarize.py --bench $benches
    [ -f "$logs/sass.txt" ] && grep -E "^(build|mma|wgmma)|failed their" "$logs/sass.txt"
} | tee "$logs/summary.txt"
echo "=== done: $failed failed command(s); everything under $logs"
pack
[ "$failed" -gt 100 ] && failed=100
exit "$failed"
