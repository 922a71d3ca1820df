#!/usr/bin/env bash
# One search spread three ways on a host with several GPUs (issue 28): one GPU, --devices
# all, and --cluster ray (a local Ray over this host's GPUs). Same space, strategy, budget
# and seed; --no-tune-cache so each measures everything. Logs and results under OUT.
#   bash scripts/tuning/spread.sh OUT [SIZE] [BUDGET]
set -u
out=${1:?usage: spread.sh OUT [SIZE] [BUDGET]}; size=${2:-2048}; budget=${3:-48}
mkdir -p "$out"
search=(matmul --size "$size" --variant async_double_buffer --best --strategy random
        --budget "$budget" --seed 1 --no-tune-cache --no-vendor --no-batch
        --min-samples 5 --max-time 0.1)
nvidia-smi -L > "$out/gpus.txt"
for how in "one:--device 0" "devices:--devices all" "ray:--cluster ray"; do
  name=${how%%:*}; flags=${how#*:}
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  cudabench "${search[@]}" $flags --json "$out/$name.json" --best-out "$out/$name.toml" \
    > "$out/$name.log" 2>&1
  code=$?
  echo "$name: exit $code, $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s" \
    | tee -a "$out/summary.txt"
  tail -4 "$out/$name.log" | sed 's/^/    /' >> "$out/summary.txt"
done
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for name in ("one", "devices", "ray"):
    path = out / f"{name}.json"
    if not path.exists():
        print(f"{name}: no results file"); continue
    data = json.loads(path.read_text())
    rows, devices = data["benchmarks"], data.get("devices") or []
    gpus = sorted({devices[r["device"]].get("index", "?") if r.get("device") is not None
                   else "?" for r in rows}, key=str)
    passed = [r for r in rows if r["status"] == "PASS" and r.get("stats")]
    best = min(passed, key=lambda r: r["stats"]["median_s"], default=None)
    print(f"{name}: {len(rows)} rows, {len(passed)} passed, devices {gpus}, best "
          f"{best['stats']['median_s'] * 1e3:.3f} ms {best['params']}" if best else f"{name}: none passed")
PY
