#!/usr/bin/env bash
# The README's two example outputs, measured again on this GPU as a 100-column terminal shows
# them ("Example output": the transpose; "Seeing why": matmul with counters and energy), so
# that the README can show what the commands print today. Logs under OUT.
#   readme-examples.sh [OUT]        (default: $OUT, else /tmp/cudabench-readme)
# Exit 1 when a command failed; the steps' limits add up to 300 s.
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-readme}}
STEP_PATTERN="NVML while sampling|error"
. "$(dirname "$0")/steps.sh"
export COLUMNS=100  # Rich reads the width from here when stdout is not a terminal
# the results files too: `cudabench report` shows them again at any width, on any machine
step transpose 90 python3 -m cudabench transpose --size 8192 --json "$out/transpose.json"
step matmul 210 python3 -m cudabench matmul --size 4096 --tile 32 --counters --energy \
    --json "$out/matmul.json"
exit $failed
