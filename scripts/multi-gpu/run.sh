#!/usr/bin/env bash
# Several GPUs and Ray on one host with two or more GPUs (the device tool's nvidia-h200-x2):
# the suite on one GPU, on every GPU (--devices all), every benchmark on every GPU
# (--replicate) and through a local Ray (--cluster ray); the wall time of each, and the
# per-device spread. Then --best over every GPU (close calls re-measured head to head on
# one GPU), one benchmark given several GPUs, and a GPU index the host lacks (exit 2). Results files go to OUT (default /tmp/cudabench-multi).
#   run.sh [OUT]      CUDABENCH overrides the command (default: python3 -m cudabench)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/cudabench-multi}; mkdir -p "$out"
cb=${CUDABENCH:-python3 -m cudabench}
nvidia-smi --query-gpu=index,name,pci.bus_id,uuid --format=csv,noheader
timed() {  # timed NAME ARGS...: run a command, print its wall time and exit code
    local name=$1; shift
    local start end code
    start=$(date +%s.%N)
    $cb "$@" >"$out/$name.txt" 2>"$out/$name.err"
    code=$?
    end=$(date +%s.%N)
    python3 -c "print(f'$name: {float($end) - float($start):.1f} s wall, exit $code')"
}
suite() {  # suite NAME ARGS...: the suite, its rows to NAME.json
    local name=$1; shift
    timed "$name" run "$here/suite.toml" --json "$out/$name.json" "$@"
}
suite one --device 0
suite all --devices all
suite ray --cluster ray
suite replicate --devices all --replicate
python3 - "$out" <<'PY'
import json, sys
from collections import defaultdict
out = sys.argv[1]
for name in ("one", "all", "ray", "replicate"):
    data = json.load(open(f"{out}/{name}.json"))
    per = defaultdict(int)
    for b in data["benchmarks"]:
        per[b.get("device")] += 1
    names = [f"GPU {d['index']} {d.get('pci_bus_id')} {d.get('uuid')}" for d in data["devices"]]
    print(f"{name}: {len(data['benchmarks'])} rows; rows per device {dict(per)}; devices {names}")
PY
grep -A40 "the same benchmarks on each GPU" "$out/replicate.txt" | head -60
# a search spreads its configurations over the GPUs (a -p sweep of one size is one benchmark,
# so one GPU): the winner is decided head to head on one GPU
timed best-devices matmul --size 1024 --tile 8,16,32 --variant tiled --best --strategy brute \
    --no-tune-cache --devices all --json "$out/best-devices.json"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('best-devices rows:',
    [(b['variant'], b.get('params'), 'GPU', b.get('device')) for b in d['benchmarks']])" \
    "$out/best-devices.json"
grep -A6 "best configuration per variant" "$out/best-devices.txt"
timed one-benchmark dot --size '1<<24' --devices all --json "$out/one-benchmark.json"
timed bad-index dot --size '1<<20' --devices 0,7
cat "$out/bad-index.err"
