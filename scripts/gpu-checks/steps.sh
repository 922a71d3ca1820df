# Shared by the gpu-checks scripts (sourced, after `out` is set): a summary file headed by the
# GPU and the commit, and `step NAME SECONDS COMMAND...`, which runs a command with a time
# limit, logs it to $out/NAME.log, notes its last line matching STEP_PATTERN in the summary,
# and sets failed=1 when it fails.
mkdir -p "$out"
summary="$out/summary.txt"
{ nvidia-smi -L 2>/dev/null | head -1; git log --oneline -1 2>/dev/null | cut -c1-60; } | tee "$summary"
STEP_PATTERN=${STEP_PATTERN:-passed|failed|error|ERROR SUMMARY}
failed=0
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc $((SECONDS - t0)) s | $(grep -E "$STEP_PATTERN" "$out/$name.log" | tail -1)" | tee -a "$summary"
    [ "$rc" -eq 0 ] || failed=1
}
