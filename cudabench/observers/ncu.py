"""`--counters`: hardware counters of each variant's checked run, read by Nsight Compute.

ncu wraps a whole process, so the run is the sanitizer's child (`python -m
cudabench.runner.child PLAN_FILE`: two warm-up runs, the checked run, one sample) under
`ncu --launch-skip 2L --launch-count L`, L being the variant's launches per run: exactly the
checked run's kernels are profiled. ncu never touches the clocks (`--clock-control none`),
so its kernel times stay comparable with the event-timed samples.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import pickle
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.errors import UsageError
from cudabench.observers.toolkit import find_tool, places, run_tool
from cudabench.insight.ncu_metrics import (  # noqa: F401  (re-exported: the table's side)
    DEFAULT_METRICS,
    DURATION,
    duration_outliers,
    short_label,
)
from cudabench.planning.plan import Plan, PlannedVariant
from cudabench.observers.sanitizer import CHILD_MODULE, MINIMAL

TIMEOUT_S = 600
WARMUP_RUNS = 2  # the child's warm-up: warmup_s 0 means exactly two runs (timing.warm_up)
PERMISSION_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
# Where ncu lives when it is not on PATH (tests point these elsewhere).
NSIGHT_ROOTS: tuple[Path, ...] = (Path("/opt/nvidia/nsight-compute"),)

_METRIC = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*\Z")
_UNKNOWN = re.compile(r"Failed to find metrics?:?\s+(\S+)")
_TO_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
          "s": 1e9, "second": 1e9}
# ncu's own wrap-up lines: they say that something failed, never what.
_GENERIC = ("An error occurred while trying to profile", "The application returned an error",
            "No kernels were profiled", "Profiling kernels launched by child processes")


@dataclass(frozen=True)
class CounterReport:
    """ncu's counters for one variant's checked run, or why there are none."""

    values: dict[str, float] = field(default_factory=dict)  # metric -> over the run's kernels
    units: dict[str, str] = field(default_factory=dict)
    per_kernel: tuple[dict[str, float], ...] = ()  # one per launch; n/a values left out
    duration_s: float | None = None  # the run's kernels' gpu__time_duration, summed
    ran: bool = True
    reason: str = ""  # why ncu did not run or gave nothing usable (ran False)
    kernels: tuple[str, ...] = ()  # the profiled kernels' names, in launch order


def parse_metrics(text: str | None) -> tuple[str, ...]:
    """Return the metrics `--counters [LIST]` asks for: None or blank means the default set."""
    if text is None or not text.strip():
        return tuple(DEFAULT_METRICS.values())
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name.endswith((".toml", ".json", ".cu", ".py")) or Path(name).is_file():
            # `run --counters suite.toml`: the optional value took the suite's path
            raise UsageError(f"--counters {text}: {name!r} is a file, not an ncu metric; give "
                             "the file before the option (cudabench run SUITE --counters) "
                             "or the metrics as --counters=NAMES")
        if not _METRIC.match(name):
            raise UsageError(f"--counters {text}: {name!r} is not an ncu metric name (letters, "
                             "digits, underscores and dots, e.g. sm__throughput.avg."
                             "pct_of_peak_sustained_elapsed)")
    return tuple(dict.fromkeys(names))


def find_ncu() -> str:
    """Return ncu's path, or raise UsageError saying how to get it (called before GPU work)."""
    found = find_tool("ncu", NSIGHT_ROOTS)
    if found is None:
        raise UsageError("--counters needs Nsight Compute's ncu (in the CUDA toolkit, or from "
                         f"https://developer.nvidia.com/nsight-compute) {places(NSIGHT_ROOTS)}"
                         "; install it or drop --counters")
    return str(found)


def command(ncu: str, metrics: Sequence[str], launches: int, plan_file: Path,
            hot: bool = False) -> list[str]:
    """Return the ncu command line that profiles exactly the checked run's launches."""
    return [ncu, "--clock-control", "none",  # never: clocks locked at base skew the times
            # Caches as the samples saw them: flushed before each run unless --hot.
            "--cache-control", "none" if hot else "all",
            "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(metrics),
            "--launch-skip", str(WARMUP_RUNS * launches), "--launch-count", str(launches),
            "--target-processes", "all",
            sys.executable, "-m", CHILD_MODULE, str(plan_file)]


def child_plan(plan: Plan, planned: PlannedVariant) -> Plan:
    """Return the plan the child runs: this variant only, minimal timing, no sanitizer."""
    # Counters left on would have the child profile itself again under ncu; the energy and
    # batch passes come after the checked run, and no one reads them.
    insight = dataclasses.replace(plan.insight, counters=(), energy_s=0.0, batch=False,
                                  writeback=False)
    return dataclasses.replace(plan, timing=MINIMAL, variants=(planned,), sanitize=None,
                               insight=insight)


def profile(plan: Plan, planned: PlannedVariant, device_index: int, metrics: Sequence[str]
            ) -> CounterReport:
    """Profile the variant's checked run under ncu in a child process; see the module doc."""
    ncu = find_ncu()
    wanted = tuple(dict.fromkeys((*metrics, DURATION)))
    entries = [launch.entry for launch in planned.variant.launches]
    with tempfile.TemporaryDirectory() as work:
        plan_file = Path(work) / "plan.pickle"
        plan_file.write_bytes(pickle.dumps((child_plan(plan, planned), device_index)))
        argv = command(ncu, wanted, len(entries), plan_file, plan.hot)
        try:
            done = run_tool(argv, TIMEOUT_S)
        except subprocess.TimeoutExpired:  # the profiled child ended with ncu, not after
            return CounterReport(ran=False, reason=f"ncu did not finish in {TIMEOUT_S} s; "
                                 "no counters for this variant")
    return parse(done.stdout + "\n" + done.stderr, done.returncode, wanted, entries)


def parse(output: str, returncode: int, metrics: Sequence[str], entries: Sequence[str]
          ) -> CounterReport:
    """Read ncu's raw CSV page and messages; raise UsageError for a metric ncu lacks."""
    if "ERR_NVGPUCTRPERM" in output:
        return CounterReport(ran=False, reason=(
            "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as "
            "root, or load the nvidia kernel module with NVreg_RestrictProfilingToAdminUsers=0;"
            f" see {PERMISSION_URL}"))
    unknown = _UNKNOWN.search(output)
    if unknown:
        name = _requested(unknown.group(1), metrics)
        raise UsageError(f"--counters: ncu has no metric {name} on this GPU "
                         "(`ncu --query-metrics` lists them)")
    table = _table(output)
    if not table:
        return CounterReport(ran=False, reason=f"ncu could not profile here (exit {returncode}):"
                             f" {_why(output)}; the run goes on without counters")
    header, units_row, rows = table
    kernels = tuple(row.get("Kernel Name", "") for row in rows)
    names = tuple(_bare(kernel) for kernel in kernels)
    if len(rows) < len(entries):  # the child stopped early: part of a run is no run
        return CounterReport(ran=False, kernels=kernels, reason=(
            f"ncu profiled {len(rows)} of the checked run's {len(entries)} launches (exit "
            f"{returncode}): {_why(output)}; the run goes on without counters"))
    if len(rows) > len(entries) or any(not _is(n, e) for n, e in zip(names, entries)):
        return CounterReport(ran=False, kernels=kernels, reason=(
            f"ncu profiled {', '.join(names)}, not the checked run's {', '.join(entries)}: "
            "the counters would be other launches'"))
    units = {m: units_row.get(m, "") for m in metrics if m in header}
    per_kernel = tuple(_values(row, metrics, units) for row in rows)
    units = {m: "nsecond" if u in _TO_NS else u for m, u in units.items()}
    values = {m: v for m in metrics if (v := combine(m, per_kernel)) is not None}
    duration = values.get(DURATION)
    return CounterReport(values, units, per_kernel, None if duration is None else duration * 1e-9,
                         kernels=kernels)


def combine(metric: str, per_kernel: Sequence[Mapping[str, float]]) -> float | None:
    """Return the run's value of metric: summed counts and times, max registers (and other
    launch settings), else an average weighted by each kernel's duration."""
    present = [(k[metric], k.get(DURATION, 0.0)) for k in per_kernel if metric in k]
    if not present:
        return None
    values = [value for value, _ in present]
    rollups = metric.split(".")[1:]
    if metric.startswith("launch__") or rollups == ["max"]:
        return max(values)
    if rollups == ["min"]:
        return min(values)
    if rollups == ["sum"]:
        return math.fsum(values)
    weights = [weight for _, weight in present]
    if not all(w > 0 for w in weights):  # no durations: the kernels count alike
        weights = [1.0] * len(values)
    return math.fsum(v * w for v, w in zip(values, weights)) / math.fsum(weights)


def _table(output: str) -> tuple[list[str], dict[str, str], list[dict[str, str]]] | None:
    """Return the raw page's header, units and kernel rows, or None when there is none."""
    lines = [line for line in output.splitlines() if line.startswith('"')]
    for index, line in enumerate(lines):
        header = next(csv.reader([line]))
        if header[:1] != ["ID"] or "Kernel Name" not in header:
            continue
        units: dict[str, str] = {}
        rows = []
        for cells in csv.reader(lines[index + 1:]):
            if len(cells) != len(header):
                break
            if not cells[0]:
                units = dict(zip(header, cells))
            elif cells[0].isdigit():
                rows.append(dict(zip(header, cells)))
            else:
                break
        return (header, units, rows) if rows else None
    return None


def _values(row: Mapping[str, str], metrics: Sequence[str], units: Mapping[str, str]
            ) -> dict[str, float]:
    """Return a kernel's numbers, times in nanoseconds; "n/a" and blanks left out."""
    values = {}
    for metric in metrics:
        text = row.get(metric, "").replace(",", "").strip()
        try:
            value = float(text)
        except ValueError:
            continue
        if math.isfinite(value):
            values[metric] = value * _TO_NS.get(units.get(metric, ""), 1.0)
    return values


def _why(output: str) -> str:
    """Return the most telling line of a failed ncu run: a specific error first."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    specific = [line for line in errors if not any(g in line for g in _GENERIC)]
    if specific:
        return specific[0].removeprefix("==ERROR==").strip()
    # The child's own last word (a traceback's last line, say); the CSV table is not one.
    own = [line for line in lines if not line.startswith(("==", '"'))]
    if own:
        return own[-1]
    flagged = errors or [line for line in lines if line.startswith("==WARNING==")]
    return flagged[0].split("==", 2)[-1].strip() if flagged else "no output"


def _requested(reported: str, metrics: Sequence[str]) -> str:
    """Return the requested metric behind ncu's name for it (a regex, at times)."""
    base = reported.removeprefix("regex:").lstrip("^")
    base = re.split(r"\\\.|\(|\$", base)[0].replace("\\", "")
    return next((m for m in metrics if m == base or m.startswith(base + ".")), base)


def _bare(kernel: str) -> str:
    """Return a kernel's name without its parameter list."""
    return kernel.split("(")[0].strip()


def _is(name: str, entry: str) -> bool:
    return name == entry or name.endswith("::" + entry) or name.endswith(" " + entry)
