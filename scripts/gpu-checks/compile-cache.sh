#!/usr/bin/env bash
# Compile ahead and the compile cache on a GPU (issue 29, item 3). The 48-configuration
# `--best` sweep of the ladder's blocktile2d, timed with --profile-time:
#   cold       an empty compile cache: every cubin built, all at once while measuring
#   warm       the same run again: every cubin read from the cache
#   dry-cold   `--dry-run --arch sm_90` into a second, empty cache (no GPU touched)
#   dry-warm   the same dry run again
#   after-dry  the sweep on the cache the dry run filled: its compiles must all be hits
# Each run's wall time, its exit code and its `compile` phase (summed over rows, from the
# results file's profile) go to summary.txt; stdout, stderr and the results files beside it.
#   compile-cache.sh [OUT]        (default: $OUT, else /tmp/cudabench-compile-cache)
# CUDABENCH overrides the command (default: python3 -m cudabench).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-/tmp/cudabench-compile-cache}}
cb=${CUDABENCH:-python3 -m cudabench}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
sweep=(matmul --size 1000 --variant blocktile2d
       -p BM=64,128 -p BN=64,128 -p BK=8,16,32 -p TM=4,8 -p TN=4,8 --best --no-vendor)

{
    echo "cores: $(nproc) (python sees $(python3 -c 'import os; print(len(os.sched_getaffinity(0)))'))"
    nvidia-smi -L 2>/dev/null | head -1
    nvcc --version 2>/dev/null | tail -1
    git -C "$root" log --oneline -1 2>/dev/null
} | tee -a "$summary"

timed() {  # timed NAME CACHE_DIR ARGS...: run the command, record its wall time
    local name=$1 cache=$2
    shift 2
    local start end code
    start=$(date +%s.%N)
    CUDABENCH_CACHE_DIR="$cache" $cb "$@" >"$out/$name.txt" 2>"$out/$name.err"
    code=$?
    end=$(date +%s.%N)
    local compile
    compile=$(python3 - "$out/$name.json" <<'PY'
import json, sys
try:
    profile = json.load(open(sys.argv[1]))["profile"]
    rows = profile["row_phases"]
    print(f"compile {rows.get('compile', 0.0):.2f} s of the rows' phases; profile wall "
          f"{profile['wall_s']:.2f} s; GPU sampling {profile['gpu_sampling_s']:.3f} s")
except (OSError, ValueError, KeyError):
    print("no profile (a dry run, or the run failed)")
PY
)
    local cubins
    cubins=$(find "$cache/cubins" -name '*.cubin' 2>/dev/null | wc -l)
    printf '%-9s exit %s, wall %6.2f s, %s cubins in the cache; %s\n' "$name" "$code" \
        "$(python3 -c "print($end - $start)")" "$cubins" "$compile" | tee -a "$summary"
}

rm -rf "$out/cache" "$out/cache-dry"
timed cold "$out/cache" "${sweep[@]}" --profile-time --json "$out/cold.json"
timed warm "$out/cache" "${sweep[@]}" --profile-time --json "$out/warm.json"
timed dry-cold "$out/cache-dry" "${sweep[@]}" --dry-run --arch sm_90
timed dry-warm "$out/cache-dry" "${sweep[@]}" --dry-run --arch sm_90
timed after-dry "$out/cache-dry" "${sweep[@]}" --profile-time --json "$out/after-dry.json"

# the time profile tables (stderr) of the three GPU runs, for the record
for name in cold warm after-dry; do
    echo "== $name: time profile" >>"$summary"
    grep -v '^\s*$' "$out/$name.err" | tail -n 40 >>"$summary"
done
# the winner must be the same configuration every time (the cache changes no result)
grep -h -i "best" "$out/cold.txt" "$out/warm.txt" "$out/after-dry.txt" | head -6 | tee -a "$summary"
