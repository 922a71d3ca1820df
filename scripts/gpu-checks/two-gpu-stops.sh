#!/usr/bin/env bash
# Ctrl-C on several GPUs (--devices all), on a host of two or more: the command must end 130
# within seconds every time, keep the rows measured so far (marked incomplete) and leave no
# worker process behind; with a kernel that never returns on each GPU (the spinning matmul of
# tests/helpers.py), the command still ends, its stuck workers killed after the 2 s grace
# (runner/gpus.py). Then a --replicate run at 80 columns. Logs under OUT.
#   two-gpu-stops.sh [OUT]     (default: $OUT, else /tmp/cudabench-two-gpu-stops)
# Exit 1 when a step failed.
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-two-gpu-stops}}
. "$(dirname "$0")/steps.sh"
STEP_PATTERN="passed|failed|error|stops:"
cat > "$out/stops.py" <<'PY'
"""Send SIGINT to a --devices all run's process group N times; say how each ended."""
import json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, "tests")
from helpers import write_spinning_matmul

def once(extra, wait_for_row=True):
    work = Path(tempfile.mkdtemp())
    args = [sys.executable, "-m", "cudabench", "matmul", "--size", "256..4096:x2",
            "--variant", "naive", "--variant", "tiled", "--no-vendor", "--devices", "all",
            "--json", str(work / "r.json"), *extra(work)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=work,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while wait_for_row and time.monotonic() < deadline and process.poll() is None:
        if (work / "r.json").exists() and (work / "r.json").stat().st_size:
            break
        time.sleep(0.05)
    if not wait_for_row:
        time.sleep(15)  # started, each GPU stuck in the spinning kernel
    stopped = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return "HANG (60 s after SIGINT)"
    took = time.monotonic() - stopped
    for _ in range(50):  # multiprocessing's resource tracker ends just after the command
        ps = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(process.pid)],
                            capture_output=True, text=True).stdout.splitlines()
        left = [line.strip() for line in ps if line.split()[1:2] != ["Z"]]  # zombies: gone
        if not left:
            break
        time.sleep(0.1)
    rows = "-"
    if (work / "r.json").exists():
        doc = json.loads((work / "r.json").read_text())
        rows = f"{len(doc['benchmarks'])} rows, complete={doc['complete']}"
    return (f"rc={process.returncode} in {took:.1f} s; {rows}; processes left: "
            f"{left or 'none'}; {err.strip().splitlines()[-1:]}")

plain = lambda work: []
spinning = lambda work: ["--kernels-dir", str(write_spinning_matmul(work / "k").parents[1]),
                         "--variant", "aaa_spins", "--timeout", "300"]
results = [once(plain) for _ in range(int(sys.argv[1]))]
results += [once(spinning, wait_for_row=False)]
for line in results:
    print(line)
ok = all(line.startswith("rc=130") and "processes left: none" in line for line in results)
print(f"stops: {'all ended 130 with no process left' if ok else 'NOT ALL CLEAN'}")
sys.exit(0 if ok else 1)
PY
step stops 400 python3 "$out/stops.py" 6
# the spread table at 80 columns (each row's medians per GPU a numbered note) and its CSV
step replicate 150 env COLUMNS=80 python3 -m cudabench transpose --size 4096 --devices all \
    --replicate --no-vendor --json "$out/replicate.json" --csv "$out/replicate.csv"
exit $failed
