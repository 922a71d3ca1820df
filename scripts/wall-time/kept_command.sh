#!/usr/bin/env bash
# Where a command on a kept worker spends its wall time, on a GPU host: `cudabench matmul
# --size 1000 --tile 16 --keep-workers 60` run once untimed (it starts and keeps the
# worker), then timed three times, once under cProfile (the command's process: kept.prof)
# and once under -X importtime; beside them the interpreter's bare start and NVML's.
# Python's bytecode is kept in a folder of its own (a host that sets PYTHONDONTWRITEBYTECODE would
# compile every module in every process); HOST_BYTECODE=1 leaves it to the host.
#   kept_command.sh [OUT]        (default: $OUT, else /tmp/cudabench-kept-command)
# CUDABENCH overrides the timed command (default: python3 -m cudabench); the profiled and
# import-timed runs are python3's own -m cudabench.
set -uo pipefail
export LC_NUMERIC=C  # EPOCHREALTIME and awk agree on the decimal point
out=${1:-${OUT:-/tmp/cudabench-kept-command}}
mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
if [ "${HOST_BYTECODE:-0}" != 1 ]; then
    unset PYTHONDONTWRITEBYTECODE
    export PYTHONPYCACHEPREFIX="${TMPDIR:-/tmp}/cudabench-kept-command-pyc"
fi
args=(matmul --size 1000 --tile 16 --keep-workers 60 --quiet --profile-time)
summary="$out/summary.txt"
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } >"$summary"
$cb "${args[@]}" >"$out/untimed.log" 2>&1
for i in 1 2 3; do
    t0=$EPOCHREALTIME
    $cb "${args[@]}" --json "$out/kept$i.json" >"$out/kept$i.log" 2>&1
    echo "kept run $i: rc=$? $(since "$t0") s" >>"$summary"
    grep -E "start-up|planning|tables|warm-up|verify|batches|samples|recheck" "$out/kept$i.log" \
        | tr -s ' ' | head -12 >>"$summary"
done
python3 -m cProfile -o "$out/kept.prof" -m cudabench "${args[@]}" >"$out/profiled.log" 2>&1
python3 -X importtime -m cudabench "${args[@]}" 2>"$out/importtime.txt" >/dev/null
python3 - >>"$summary" <<'PY'
import time
t = time.perf_counter()
import pynvml
a = time.perf_counter()
pynvml.nvmlInit()
b = time.perf_counter()
pynvml.nvmlShutdown()
print(f"import pynvml {a - t:.3f} s, nvmlInit {b - a:.3f} s, shutdown {time.perf_counter() - b:.3f} s")
PY
for i in 1 2 3; do
    t0=$EPOCHREALTIME; python3 -c pass
    echo "python3 -c pass: $(since "$t0") s" >>"$summary"
    t0=$EPOCHREALTIME; $cb --help >/dev/null
    echo "cudabench --help: $(since "$t0") s" >>"$summary"
done
$cb workers --stop >>"$summary" 2>&1
python3 -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(45)" \
    "$out/kept.prof" >"$out/kept-prof.txt" 2>&1
cat "$summary"
