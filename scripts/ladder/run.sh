#!/usr/bin/env bash
# The CUDA-core ladder (issues 18, 25) on a GPU, in one batch: verify its rungs in kernels/
# (rungs.py: matmul blocktile2d, vectorized, warptile, async_double_buffer, and in float32
# prefetch_splitk, fragment_double_buffer; transpose vectorized, evict_first; transpose_inplace
# tile_pairs; dot vectorized_shuffle, deterministic, streaming, bulk) at default and odd shapes,
# every type, benchmark the goals beside cuBLAS and the copy, and count the 128-bit loads in
# their SASS.
#
#   [TAR=FILE] [DEADLINE=S] [KERNELS_DIR=DIR] scripts/ladder/run.sh OUT [PHASE...]
#
# Phases (default: bench verify determinism sass; bench first, so that the DEADLINE can cut
# only the checks, never the measurements):
#   verify       every ladder variant, default params, at the default and odd shapes, in
#                float32, int32, float16 and float64 (the four types run side by side:
#                correctness only, timings meaningless); exit 0 of each command = verified
#   determinism  the one-pass dot kernels launched many times with changing sizes, aligned
#                and misaligned: deterministic must give one bit pattern (determinism.py)
#   sanitize     compute-sanitizer memcheck, racecheck and synccheck on the checked launch,
#                float32 and float16, small odd shapes
#   params       non-default parameter combinations at odd shapes (long: run it alone)
#   bench        the goals, one run each, nothing else on the GPU: matmul 4096 and 1000,
#                transpose 8192, transpose --inplace 8192, dot 1<<26 (float32, cold L2,
#                --variant all: every variant of the type, those run on request too, with
#                the cuBLAS and copy rows), then summarize.py's verdicts
#   tune         --best sweeps of the ladder's parameters at the goal sizes (long)
#   sass         sass.py: LDG.E.128 / STG.E.128 / LDS.128 / LDGSTS / UBLKCP counts, registers and
#                spills of each variant's default build in each type (needs nvcc, cuobjdump)
#   dryrun       the verify phase's plans with --dry-run (no GPU: compiles only)
#
# Everything lands under OUT (default /tmp/cudabench-ladder): one .txt/.err per command,
# .json and .md for benchmarks, run.log (this script's own output); stdout gets one line
# per command and the summaries. With TAR=FILE the whole of OUT is packed into FILE at the
# end (the device tool brings back few files: TAR=$OUT/ladder.tgz). DEADLINE (seconds from
# the start, default 500) bounds the whole run: each command gets what is left (`timeout`),
# a phase that would start after it is skipped and counted failed, and the packing still
# happens, so a 600-second device call always gets its logs back. KERNELS_DIR adds a folder
# of draft variants (--kernels-dir) to every command. CUDABENCH overrides the command
# (default: python3 -m cudabench, run from the repository's root). ROUNDS=N measures each
# bench goal in N pooled rounds (--rounds: the ratio with placement and drift averaged out,
# at N times the GPU time). Where PyCUDA is not
# importable and .device-kit/setup.sh exists, it is sourced. Exit status: the number of
# failed commands (0: all passed), capped at 100.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 100
out=${1:-/tmp/cudabench-ladder}
shift || true
phases=${*:-bench verify determinism sass}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/run.log") 2>&1
RUN_T0=$(date +%s)
DEADLINE=${DEADLINE:-500}
export RUN_T0 DEADLINE
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
case " $phases " in
*" dryrun "*) ;;
*) if ! python3 -c 'import pycuda.driver' 2>/dev/null && [ -f .device-kit/setup.sh ]; then
       # shellcheck disable=SC1091
       . .device-kit/setup.sh
   fi ;;
esac
cb=${CUDABENCH:-python3 -m cudabench}
# Drafts of further rungs (a folder like kernels/, with <op>/ subfolders), or nothing.
kd=${KERNELS_DIR:+--kernels-dir $KERNELS_DIR}
failed=0

# The shapes: defaults, 1s, odd extents, aligned and misaligned rows for 16-byte vectors
# (K or N, COLS or ROWS, not a multiple of 4 floats / 8 halves / 2 doubles), one tile and
# one past it.
MATMUL_SIZES=1000,17x33x5,1x1x1,1x7x1,7x1x9,33x1x65,127x129x131,128x128x128,257x1001x255,200x1000x37,130x37x1000,96x24x260,64x4096x64
TRANSPOSE_SIZES=3001,1000x37,37x1000,1x1,1x7,7x1,65x63,64x64,1024x1024,1000x1004,2048x1000
INPLACE_SIZES=3001,1,2,17,31,32,33,63,64,65,1000,1004,1024
DOT_SIZES='1<<24,1,2,3,5,7,31,1000,1001,1000003,1048579'
SMALL_MATMUL=17x33x5,1x7x1,67x45x131,130x37x132
SMALL_TRANSPOSE=1000x37,37x1000,65x63,128x136
SMALL_INPLACE=1,17,65,136
SMALL_DOT=1,7,1001,100003
MATMUL_V=(--variant blocktile2d --variant vectorized --variant warptile --variant async_double_buffer)
# The matmul rungs written for float32 alone (the CUDA-core SGEMMs), added in float32 only.
MATMUL_F32_V=(--variant prefetch_splitk --variant fragment_double_buffer)
TRANSPOSE_V=(--variant vectorized --variant evict_first)
INPLACE_V=(--variant tile_pairs)
DOT_V=(--variant vectorized_shuffle --variant deterministic --variant streaming --variant bulk)
FAST=(--no-vendor --no-batch --warmup 0 --min-samples 3 --max-samples 3 --max-time 0.05)

# left: the seconds before DEADLINE (0 when past it).
left() {
    local rest=$((DEADLINE - ($(date +%s) - RUN_T0)))
    echo $((rest > 0 ? rest : 0))
}

# step DIR NAME ARGS...: run cudabench ARGS, output to DIR/NAME.txt and .err; one line.
step() {
    local dir=$1 name=$2
    shift 2
    mkdir -p "$dir"
    local start=$SECONDS budget
    budget=$(left)
    if [ "$budget" -lt 10 ]; then
        echo "$name: not run (DEADLINE ${DEADLINE} s reached)"
        return 1
    fi
    # shellcheck disable=SC2086
    timeout -k 5 "$budget" $cb "$@" $kd >"$dir/$name.txt" 2>"$dir/$name.err"
    local code=$?
    echo "$name: exit $code ($((SECONDS - start)) s)$([ "$code" -eq 124 ] &&
        echo ", stopped at the DEADLINE")"
    if [ "$code" -ne 0 ]; then
        grep -hE "FAIL|ERROR|TIMEOUT|SUSPECT|error|Error" "$dir/$name.txt" "$dir/$name.err" |
            cut -c1-400 | head -n 8 | sed 's/^/    /'
        return 1
    fi
}

# one_type DIR DTYPE [EXTRA...]: the four ops at their shapes in one type.
one_type() {
    local dir=$1 dtype=$2
    shift 2
    local bad=0
    local only32=()  # prefetch_splitk and fragment_double_buffer: float32 alone
    [ "$dtype" = float32 ] && read -r -a only32 <<<"$MATMUL_F32_V_W"
    step "$dir" "matmul_$dtype" matmul "${MATMUL_V[@]}" "${only32[@]}" \
        --size "$MATMUL_SIZES" --dtype "$dtype" "$@" || bad=$((bad + 1))
    step "$dir" "transpose_$dtype" transpose "${TRANSPOSE_V[@]}" \
        --size "$TRANSPOSE_SIZES" --dtype "$dtype" "$@" || bad=$((bad + 1))
    step "$dir" "transpose_inplace_$dtype" transpose --inplace \
        "${INPLACE_V[@]}" --size "$INPLACE_SIZES" --dtype "$dtype" "$@" || bad=$((bad + 1))
    step "$dir" "dot_$dtype" dot "${DOT_V[@]}" --size "$DOT_SIZES" \
        --dtype "$dtype" "$@" || bad=$((bad + 1))
    return $bad
}

# parallel LABEL CMD...: run each "CMD ARG" (one per argument after --) in the background,
# print their logs in order, add their failures to $failed.
run_parallel() {
    local label=$1
    shift
    local pids=() logs=() i=0
    for job in "$@"; do
        logs+=("$out/.$label.$i.log")
        bash -c "$job" >"${logs[$i]}" 2>&1 &
        pids+=($!)
        i=$((i + 1))
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}"
        failed=$((failed + $?))
        cat "${logs[$i]}"
        rm -f "${logs[$i]}"
    done
}

export -f left step one_type
export cb kd MATMUL_SIZES TRANSPOSE_SIZES INPLACE_SIZES DOT_SIZES
export MATMUL_F32_V_W="${MATMUL_F32_V[*]}"  # arrays do not cross `bash -c`: as words

for phase in $phases; do
    echo "=== $phase ($(date +%H:%M:%S), $(($(date +%s) - RUN_T0)) s in)"
    if [ "$(left)" -lt 10 ]; then
        echo "$phase: not run (DEADLINE ${DEADLINE} s reached)"
        failed=$((failed + 1))
        continue
    fi
    case $phase in
    verify | dryrun)
        extra=("${FAST[*]}")
        [ "$phase" = dryrun ] && extra=("--dry-run --arch sm_90")
        # Arrays do not cross `bash -c`: pass the variant lists as words.
        export MATMUL_V_W="${MATMUL_V[*]}" TRANSPOSE_V_W="${TRANSPOSE_V[*]}" \
            INPLACE_V_W="${INPLACE_V[*]}" DOT_V_W="${DOT_V[*]}"
        jobs=()
        for dtype in float32 int32 float16 float64; do
            jobs+=("MATMUL_V=(\$MATMUL_V_W); TRANSPOSE_V=(\$TRANSPOSE_V_W); \
INPLACE_V=(\$INPLACE_V_W); DOT_V=(\$DOT_V_W); one_type '$out/$phase' $dtype ${extra[*]}")
        done
        run_parallel "$phase" "${jobs[@]}"
        ;;
    determinism)
        timeout -k 5 "$(left)" python3 scripts/ladder/determinism.py --launches 50 2>&1 |
            tee "$out/determinism.txt"
        failed=$((failed + ${PIPESTATUS[0]}))
        ;;
    sanitize)
        jobs=()
        for tool in memcheck racecheck synccheck; do
            job="bad=0"
            for dtype in float32 float16; do
                f32=""
                [ "$dtype" = float32 ] && f32="${MATMUL_F32_V[*]}"
                job+="; step '$out/sanitize' matmul_${tool}_$dtype matmul \
${MATMUL_V[*]} $f32 --size $SMALL_MATMUL --dtype $dtype --sanitize $tool ${FAST[*]} || bad=\$((bad+1))"
                job+="; step '$out/sanitize' transpose_${tool}_$dtype transpose \
${TRANSPOSE_V[*]} --size $SMALL_TRANSPOSE --dtype $dtype --sanitize $tool ${FAST[*]} \
|| bad=\$((bad+1))"
                job+="; step '$out/sanitize' transpose_inplace_${tool}_$dtype transpose --inplace \
${INPLACE_V[*]} --size $SMALL_INPLACE --dtype $dtype --sanitize $tool \
${FAST[*]} || bad=\$((bad+1))"
                job+="; step '$out/sanitize' dot_${tool}_$dtype dot \
${DOT_V[*]} --size $SMALL_DOT --dtype $dtype --sanitize $tool ${FAST[*]} || bad=\$((bad+1))"
            done
            jobs+=("$job; exit \$bad")
        done
        run_parallel sanitize "${jobs[@]}"
        ;;
    params)
        p="$out/params"
        odd=67x45x131,130x37x132,1x1x1
        run_parallel params \
            "step '$p' blocktile2d matmul --variant blocktile2d --size $odd \
-p BM=64,128 -p BN=64,128 -p BK=8,32 -p TM=4,8 -p TN=4,8 ${FAST[*]}" \
            "step '$p' vectorized matmul --variant vectorized --size $odd \
-p BM=64,128 -p BN=64,128 -p BK=8,32 -p TM=4,8 -p TN=4,8 -p MIN_BLOCKS=2 ${FAST[*]}" \
            "step '$p' warptile matmul --variant warptile --size $odd \
-p BM=64,128 -p BN=64,128 -p BK=8,32 -p WM=32,64 -p WN=32,64 -p MIN_BLOCKS=1 ${FAST[*]}" \
            "step '$p' async_double_buffer matmul --variant async_double_buffer \
--size $odd -p BM=64,128 -p BN=64,128 -p BK=8,32 -p WM=32,64 -p WN=32,64 -p STAGES=3 ${FAST[*]}" \
            "step '$p' fragment_double_buffer matmul --variant fragment_double_buffer \
--size $odd,257x1001x255 -p BK=8,16,32 -p GROUP_M=1,16 -p MIN_BLOCKS=1,2 -p SPLIT_MAX=1,8 \
${FAST[*]}" \
            "step '$p' evict_first transpose --variant evict_first \
--size 1000x37,37x1000,65x63,130x136,1x7 -p TILE=8,64,128 -p GROUP=1,16 -p LOAD_CACHE=1,2 \
-p STORE_CACHE=1,2,3 ${FAST[*]}" \
            "step '$p' bulk dot --variant bulk --size 7,1001,1000003,1048579 \
-p CHUNK=1024,16384 -p STAGES=2,8 -p BLOCKS_PER_SM=1,2 -p LOAD_CACHE=1,2 ${FAST[*]}" \
            "step '$p' async_stages_f16 matmul --variant async_double_buffer \
--size $odd,96x24x260 --dtype float16 -p STAGES=2,3,4 -p MIN_BLOCKS=1,2 ${FAST[*]} && \
step '$p' async_stages_f64 matmul --variant async_double_buffer \
--size $odd --dtype float64 -p STAGES=2,4 -p BK=8,32 ${FAST[*]}" \
            "bad=0; for d in float32 float16 float64; do step '$p' transpose_\$d transpose \
--variant vectorized --size 1000x37,65x63,130x136 --dtype \$d \
-p TILE=32,64 -p BLOCK_ROWS=4,8,16,32 ${FAST[*]} || bad=\$((bad+1)); step '$p' inplace_\$d \
transpose --inplace --variant tile_pairs --size 65,136,1 --dtype \$d \
-p TILE=32,64 -p BLOCK_ROWS=4,8,16,32 ${FAST[*]} || bad=\$((bad+1)); step '$p' dot_\$d dot \
${DOT_V[*]} --size 1001,1000003 --dtype \$d -p BLOCK=32,1024 \
-p UNROLL=1,8 -p BLOCKS_PER_SM=1,64 ${FAST[*]} || bad=\$((bad+1)); done; exit \$bad"
        ;;
    bench)
        b="$out/bench"
        for spec in "matmul_4096:matmul --size 4096" "matmul_1000:matmul --size 1000" \
            "transpose_8192:transpose --size 8192" \
            "transpose_inplace_8192:transpose --inplace --size 8192" \
            "dot_1_26:dot --size 1<<26"; do
            name=${spec%%:*}
            read -r -a args <<<"${spec#*:}"
            step "$b" "$name" "${args[@]}" --variant all ${ROUNDS:+--rounds "$ROUNDS"} \
                --json "$b/$name.json" \
                --markdown "$b/$name.md" || failed=$((failed + 1))
        done
        python3 scripts/ladder/summarize.py "$b"/*.json | tee "$out/summary.txt"
        ;;
    tune)
        t="$out/tune"
        for size in 1000 4096; do
            step "$t" "matmul_tiles_$size" matmul "${MATMUL_V[@]}" \
                --size $size -p BM=64,128 -p BN=64,128 --best --json "$t/matmul_tiles_$size.json" ||
                failed=$((failed + 1))
        done
        step "$t" matmul_async_4096 matmul --variant async_double_buffer \
            --size 4096 -p BK=8,16,32 -p STAGES=2,3,4 -p MIN_BLOCKS=1,2 --best \
            --json "$t/matmul_async_4096.json" || failed=$((failed + 1))
        step "$t" matmul_fragment_4096 matmul --variant fragment_double_buffer \
            --size 4096 -p BK=8,16,32 -p GROUP_M=1,8,16 -p MIN_BLOCKS=1,2 --best \
            --json "$t/matmul_fragment_4096.json" || failed=$((failed + 1))
        step "$t" matmul_warptile_4096 matmul --variant warptile \
            --size 4096 -p BK=8,16,32 -p WM=32,64 -p WN=32,64 -p MIN_BLOCKS=1,2 --best \
            --json "$t/matmul_warptile_4096.json" || failed=$((failed + 1))
        step "$t" transpose_8192 transpose --variant vectorized --size 8192 \
            -p TILE=32,64 -p BLOCK_ROWS=4,8,16,32 --best --json "$t/transpose_8192.json" ||
            failed=$((failed + 1))
        step "$t" transpose_evict_first_8192 transpose --variant evict_first --size 8192 \
            -p GROUP=1,16 -p LOAD_CACHE=1,2 -p STORE_CACHE=1,2 --best \
            --json "$t/transpose_evict_first_8192.json" || failed=$((failed + 1))
        step "$t" transpose_inplace_8192 transpose --inplace \
            --variant tile_pairs --size 8192 -p TILE=32,64 -p BLOCK_ROWS=4,8,16,32 --best \
            --json "$t/transpose_inplace_8192.json" || failed=$((failed + 1))
        step "$t" dot_1_26 dot "${DOT_V[@]}" --size '1<<26' \
            -p BLOCK=128,256,512,1024 -p BLOCKS_PER_SM=1,2,4,8 -p UNROLL=2,4,8 --best \
            --json "$t/dot_1_26.json" || failed=$((failed + 1))
        step "$t" dot_bulk_1_26 dot --variant bulk --size '1<<26' \
            -p BLOCKS_PER_SM=1,2 -p CHUNK=8192,16384 -p STAGES=3,4,6 --best \
            --json "$t/dot_bulk_1_26.json" || failed=$((failed + 1))
        grep -h -A3 -i "best" "$t"/*.txt | head -n 80
        ;;
    sass)
        timeout -k 5 "$(left)" python3 scripts/ladder/sass.py --out "$out/sass" 2>&1 |
            tee "$out/sass.txt"
        failed=$((failed + ${PIPESTATUS[0]}))
        echo "128-bit global loads and stores (cache hints included: STG.E.EF.128 is an"
        echo "evict-first store) and bulk copies (UBLKCP) per kernel file (grep, default params):"
        for f in "$out"/sass/*.sass; do
            printf '  %-55s LDG.128 %3d  STG.128 %3d  LDGSTS.128 %3d  UBLKCP %3d\n' \
                "$(basename "$f" .sass)" "$(grep -cE 'LDG\.E(\.[A-Z]+)*\.128' "$f")" \
                "$(grep -cE 'STG\.E(\.[A-Z]+)*\.128' "$f")" \
                "$(grep -cE 'LDGSTS\.E(\.BYPASS)?\.128' "$f")" "$(grep -c 'UBLKCP' "$f")"
        done | tee -a "$out/sass.txt"
        ;;
    *)
        echo "unknown phase $phase (verify determinism sanitize params bench tune sass dryrun)"
        failed=$((failed + 1))
        ;;
    esac
done
echo "=== done ($(date +%H:%M:%S), $(($(date +%s) - RUN_T0)) s): $failed failed command(s);" \
    "everything under $out"
if [ -n "${TAR:-}" ]; then
    tar czf "$TAR" -C "$out" . && echo "packed into $TAR"
fi
[ "$failed" -gt 100 ] && failed=100
exit "$failed"
