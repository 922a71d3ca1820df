"""`--sanitize`: each variant's checked launch run again under compute-sanitizer.

The sanitizer wraps a whole process, so the checked launch runs in a child process
(`python -m cudabench.observers.sanitizer PLAN_FILE`) under `compute-sanitizer --tool TOOL`;
kernels are built with -lineinfo, so findings name the source line. The row keeps the
first finding and the count; a finding fails the row.
"""

from __future__ import annotations

import dataclasses
import pickle
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cudabench.common.flag_terms import SUITE_KEYS, rename_flags
from cudabench.errors import UsageError
from cudabench.observers.toolkit import find_tool, places, run_tool
from cudabench.planning.plan import Insight, Plan, PlannedVariant
from cudabench.planning.timing import TimingPolicy

# The child process a tool (compute-sanitizer, ncu) wraps: named, not imported, so that the
# observers stay below the runner that the child uses.
CHILD_MODULE = "cudabench.runner.child"
# The child's exit status, and its stderr line, when the checked launch did not run to a
# verified result under the tool (runner/child.py).
NOT_RUN = 3
NOT_RUN_MARK = "cudabench child: the checked launch did not run:"

TIMEOUT_S = 600
# The least a run under the sanitizer needs: the warm-up's two launches, the checked one,
# one sample (memcheck makes kernels 10 to 100 times slower).
MINIMAL = TimingPolicy(warmup_s=0.0, min_samples=1, max_samples=1, precision=1.0,
                       max_time_s=1.0, timeout_s=TIMEOUT_S)
_SUMMARY = re.compile(r"(?:ERROR SUMMARY|RACECHECK SUMMARY)[^\d]*(\d+) (?:error|hazard)")
_FINDING = re.compile(r"^=+\s+((?:Invalid|Error|Race|Barrier|Uninitialized|Program hit|Warp|Trace"
                      r"|Illegal|Misaligned|Hardware|Out-of-range|Leaked)\b.*)$")
_WHERE = re.compile(r" in (\S+\.cuh?:\d+)")


@dataclass(frozen=True)
class Report:
    """What compute-sanitizer found in one variant's launches."""

    tool: str
    errors: int
    first: str  # the first finding, with its source line when the sanitizer gave one
    ran: bool = True  # False: the sanitizer could not run here (no device access, say)


def find_sanitizer(entry: str = "") -> str:
    """Return compute-sanitizer's path, or raise UsageError saying how to get it; entry:
    the suite entry that asks for it ("FILE: benchmark[i]"), named in its keys."""
    found = find_tool("compute-sanitizer")
    if found is None:
        text = ("--sanitize needs compute-sanitizer (part of the CUDA toolkit) "
                f"{places()}; install the toolkit or drop --sanitize")
        raise UsageError(f"{entry}: {rename_flags(text, SUITE_KEYS)}" if entry else text)
    return str(found)


def sanitizer_command(sanitizer: str, tool: str, plan_file: Path) -> list[str]:
    """Return the command that runs the child under the tool. API errors are not reported:
    the findings wanted are the kernel's, and CUDA Python's bindings (tensor maps) probe the
    driver with calls that fail on purpose (cuGetProcAddress, 35 "errors" a run). Kernel
    faults (out-of-bounds accesses, traps, asserts) are still findings; a checked launch
    that did not run under the tool is the child's exit status (parse)."""
    return [sanitizer, "--tool", tool, "--report-api-errors", "no", "--print-limit", "20",
            sys.executable, "-m", CHILD_MODULE, str(plan_file)]


def run(plan: Plan, planned: PlannedVariant, tool: str, device_index: int) -> Report:
    """Run the variant's checked launch under compute-sanitizer in a child process."""
    sanitizer = find_sanitizer()
    child_plan = dataclasses.replace(plan, timing=MINIMAL, variants=(planned,), sanitize=None,
                                     insight=Insight(vendor=False, batch=False))
    with tempfile.TemporaryDirectory() as work:
        plan_file = Path(work) / "plan.pickle"
        plan_file.write_bytes(pickle.dumps((child_plan, device_index)))
        command = sanitizer_command(sanitizer, tool, plan_file)
        try:
            done = run_tool(command, TIMEOUT_S)
        except subprocess.TimeoutExpired:  # the child it checked ended with it
            return Report(tool, 0, f"compute-sanitizer did not finish in {TIMEOUT_S} s",
                          ran=False)
    return parse(tool, done.stdout + done.stderr, done.returncode)


def parse(tool: str, output: str, returncode: int) -> Report:
    """Read compute-sanitizer's output: the count and the first finding with its line."""
    summary = _SUMMARY.search(output)
    if summary is None:
        last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
        return Report(tool, 0, f"compute-sanitizer could not run here (exit {returncode}): "
                      f"{last.strip('= ').strip()}", ran=False)
    errors = int(summary.group(1))
    lines = output.splitlines()
    not_run = next((line.split(NOT_RUN_MARK, 1)[1].strip() for line in lines
                    if NOT_RUN_MARK in line), None)
    if errors == 0 and (returncode != 0 or not_run is not None):
        return Report(tool, 0, f"compute-sanitizer {tool} checked nothing: the checked launch "
                      f"did not run under it (exit {returncode}): {not_run or 'no reason given'}",
                      ran=False)
    first = ""
    for index, line in enumerate(lines):
        match = _FINDING.match(line)
        if match:
            first = match.group(1).strip()
            where = next((m.group(1) for m in map(_WHERE.search, lines[index:index + 4]) if m),
                         None)
            if where and where not in first:
                first += f" (at {where})"
            break
    return Report(tool, errors, first)
