#!/usr/bin/env bash
# The Python API's and the pytest plugin's GPU path, after they changed: run()'s
# measurements beyond the samples (tests/gpu/test_api_gpu.py: energy, transfers, the full
# check, counters, compute-sanitizer), then the plugin's example project end to end
# (examples/pytest/run-gpu-check.sh: a baseline, an A/A session, a planted 3.5% slowdown
# that must fail its session). Logs under OUT.
#   api-and-plugin.sh [OUT]        (default: $OUT, else /tmp/cudabench-api-plugin)
# Exit 1 when a step failed.
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-api-plugin}}
. "$(dirname "$0")/steps.sh"
step api 240 python3 -m pytest -m gpu tests/gpu/test_api_gpu.py -q -p no:cacheprovider -rsfE
STEP_PATTERN="GPU check:" step plugin 300 bash examples/pytest/run-gpu-check.sh "$out/plugin"
exit $failed
