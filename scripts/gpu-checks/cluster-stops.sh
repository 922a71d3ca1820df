#!/usr/bin/env bash
# --cluster ray on this machine's GPU(s), through the Ray kit (.ray-kit, carried): a run,
# then one stopped by SIGTERM while its benchmarks run (exit 143, the rows measured so far
# kept in a results file marked incomplete), then one stopped by SIGINT. Logs under OUT.
#   cluster-stops.sh [OUT]      (after `. .ray-kit/setup.sh`)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-cluster}}
STEP_PATTERN="rc [0-9]+ complete|error|Error"
. "$(dirname "$0")/steps.sh"
step cluster-run 150 cudabench dot --size '1<<20,1<<22' --cluster ray --json "$out/c.json"
for sig in TERM INT; do
    step "cluster-$sig" 150 python3 - "$sig" "$out/stopped-$sig.json" <<'PY'
import json, os, signal, subprocess, sys, time
sig, path = getattr(signal, "SIG" + sys.argv[1]), sys.argv[2]
run = subprocess.Popen(
    ["cudabench", "matmul", "--size", "1024,2048", "--cluster", "ray", "--json", path,
     "--max-time", "4", "--min-samples", "100000", "--max-samples", "200000"],
    stderr=subprocess.PIPE, text=True,
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
time.sleep(45)  # Ray started, a few rows measured, the rest running
run.send_signal(sig)
_, err = run.communicate(timeout=90)
print(err[-2000:])
expected = 143 if sig == signal.SIGTERM else 130
document = json.load(open(path))
rows = [(b["variant"], b["shape"]) for b in document["benchmarks"]]
print("rc", run.returncode, "complete", document.get("complete"), "rows", len(rows), rows)
sys.exit(0 if run.returncode == expected and document.get("complete") is False and rows
         else 1)
PY
done
exit $failed
