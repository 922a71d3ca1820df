#!/usr/bin/env bash
# The pytest plugin stopped by Ctrl-C (SIGINT) in the middle of a test's run on a real GPU:
# the session's results file must hold the rows that run measured before the stop, marked
# incomplete (they were lost). Logs under OUT.
#   plugin-interrupt.sh [OUT]     (default: $OUT, else /tmp/cudabench-plugin-interrupt)
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-plugin-interrupt}}
mkdir -p "$out"
work=$(mktemp -d)
cat > "$work/test_long.py" <<'PY'
from cudabench.api import TimingPolicy

def test_long(cudabench):
    cudabench.run("matmul", variants=["naive", "tiled"], size="256..8192:x2", vendor=False,
                  timing=TimingPolicy(max_time_s=2.0))
PY
(cd "$work" && timeout -s INT "${STOP_AFTER_S:-8}" python3 -m pytest -q -p no:cacheprovider \
    test_long.py --cudabench-json now.json) > "$out/pytest.log" 2>&1
echo "pytest rc=$?" | tee -a "$out/pytest.log"
python3 - "$work/now.json" <<'PY' | tee "$out/rows.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
print("complete:", doc["complete"], "rows:", len(doc["benchmarks"]))
for b in doc["benchmarks"]:
    print(b["variant"], "x".join(map(str, b["shape"])), b["status"], len(b["samples_s"]))
PY
