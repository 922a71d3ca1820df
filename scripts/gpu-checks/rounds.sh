#!/usr/bin/env bash
# --rounds on a GPU, in one device call: whether a spacer moves the next buffers (their
# addresses, through the PyCUDA engine), the GPU test of --rounds, and issue 25's transpose
# goal measured plainly and in 10 pooled rounds, twice each, in the same call. Logs under OUT.
#   rounds.sh [OUT]        (default: $OUT, else /tmp/cudabench-rounds)
# Exit 1 when a step failed; the steps' limits add up to 500 s (a device call has 600).
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-rounds}}
STEP_PATTERN="passed|failed|error|moved|ratio"
. "$(dirname "$0")/steps.sh"
step spacer 60 python3 - <<'PY'
from cudabench.engines.pycuda_engine import PycudaSpec
from cudabench.measure.placement import Spacer

engine = PycudaSpec(0).open()
n = 8192 * 8192 * 4
spacer, seen = Spacer(), []
for round_index in range(10):
    spacer.move(engine, round_index)
    a, b = engine.allocate(n), engine.allocate(n)
    seen.append((int(a), int(b)))
    print(f"round {round_index}: A at {int(a):#x}, B at {int(b):#x}")
    engine.free(a), engine.free(b)
spacer.release(engine)
engine.close()
print(f"moved: {len(set(seen))} placements in {len(seen)} rounds")
PY
step gpu-test 120 python3 -m pytest -m gpu tests/gpu/test_cli_gpu.py -q -p no:cacheprovider -rfE -k "rounds or command_passes"
for run in a b; do
    step "plain-$run" 60 python3 -m cudabench transpose --size 8192 --variant evict_first \
        --variant vectorized --json "$out/plain-$run.json"
    step "rounds10-$run" 120 python3 -m cudabench transpose --size 8192 --variant evict_first \
        --variant vectorized --rounds 10 --json "$out/rounds10-$run.json"
done
python3 - "$out" <<'PY' | tee -a "$summary"
import json, sys, pathlib
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    rows = {r["variant"]: r for r in json.loads(path.read_text())["benchmarks"]}
    copy = rows["memcpy_dtod"]["stats"]["median_s"]
    parts = []
    for name in ("evict_first", "vectorized"):
        row = rows[name]
        medians = row.get("round_medians_s") or []
        spread = f" rounds {min(medians) * 1e6:.1f}-{max(medians) * 1e6:.1f} us" if medians else ""
        parts.append(f"{name} {row['stats']['median_s'] * 1e6:.1f} us ratio {copy / row['stats']['median_s']:.3f}{spread}")
    cm = rows["memcpy_dtod"].get("round_medians_s") or []
    per_round = ""
    if cm:
        ef = rows["evict_first"]["round_medians_s"]
        per_round = " per-round ratios " + ",".join(f"{c / e:.3f}" for c, e in zip(cm, ef))
    print(f"{path.stem}: copy {copy * 1e6:.1f} us; " + "; ".join(parts) + per_round)
PY
exit $failed
