"""Compare two results files benchmark by benchmark: pure logic and markdown, no Rich, no CUDA.

Benchmarks pair on BenchmarkResult.key: (op, variant, sorted params, shape, dtype, hot).
Benchmarks in only one file are listed as added or removed; they are not errors.

Verdict of a pair, first rule that applies:

- `failed`: the current run is FAIL or ERROR (whatever the baseline was: a run that is not
  verified cannot pass a gate, even if it already failed before). A regression.
- `fixed`: the baseline was FAIL or ERROR and the current run passes (PASS or REF).
- `noisy`: fewer than 3 samples on a side, too few to test.
- With medians m0 (baseline) and m1 (current): change = m1 / m0 - 1, and p the two-sided
  Mann-Whitney U p-value of the raw samples; a change is significant when p < alpha.
- `slower`: significant and change > threshold. A regression, for kernels: a slower
  reference row (the device-to-device copy) means the machine changed, and is not gated.
- `faster`: significant and change < -threshold.
- `noisy`: |change| > threshold but not significant, or either side's median is known only
  to more than threshold / 2 (95% half-width, stats.median_precision): the samples are
  too spread to resolve a change of threshold size.
- `same`: otherwise (no significant change, or a significant one within the threshold).

A change must pass both tests because they guard against different mistakes: the
threshold ignores real but unimportant shifts (clocks differ by a percent from run to run,
and with hundreds of samples that is significant), and the significance test ignores large
changes of the median that noise alone produces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cudabench.errors import ExitCode, ResultsFileError, UsageError
from cudabench.results import BenchmarkResult, ResultsFile
from cudabench.stats import mann_whitney_u, median_precision

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.001
MIN_SAMPLES = 3  # below this a rank test has nothing to say
MAX_THRESHOLD = 10.0  # 1000%: anything larger is a typo, not a tolerance

# Verdicts in the order summaries list them: worst first.
VERDICTS = ("failed", "slower", "noisy", "same", "faster", "fixed")
REGRESSION = frozenset({"slower", "failed"})
FAILING_STATUSES = frozenset({"FAIL", "ERROR"})

COLUMNS = ("benchmark", "params", "shape", "dtype", "baseline", "current", "change", "p-value",
           "verdict", "reason")

_NUMBER = re.compile(r"[+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


@dataclass(frozen=True)
class ComparisonRow:
    """One benchmark present in both files, and the verdict on its change."""

    op: str
    variant: str
    params: dict
    shape: tuple
    dtype: str
    hot: bool
    baseline_median_s: float | None
    current_median_s: float | None
    change: float | None  # current / baseline - 1
    p_value: float | None
    verdict: str
    reason: str
    kind: str = "kernel"  # "reference" rows (the device copy) inform but never gate

    @property
    def regressed(self) -> bool:
        """Return whether this row fails the gate: a kernel slower, or failing verification.

        A slower reference row (the device-to-device copy) says the machine changed, not a
        kernel: it is shown, and explains slower kernels, but does not fail the gate.
        """
        return self.verdict in REGRESSION and self.kind == "kernel"


@dataclass(frozen=True)
class Comparison:
    """Every paired row, the benchmarks in only one file, and the settings used."""

    rows: tuple[ComparisonRow, ...]
    added: tuple[BenchmarkResult, ...]  # only in current
    removed: tuple[BenchmarkResult, ...]  # only in baseline
    threshold: float
    alpha: float
    baseline_path: str
    current_path: str
    baseline_gpu: str
    current_gpu: str

    @property
    def regressions(self) -> tuple[ComparisonRow, ...]:
        """Return the rows that fail the gate."""
        return tuple(row for row in self.rows if row.regressed)

    @property
    def exit_code(self) -> ExitCode:
        """Return ExitCode.REGRESSION when any row regressed, else ExitCode.OK."""
        return ExitCode.REGRESSION if self.regressions else ExitCode.OK


def parse_threshold(text: str) -> float:
    """Parse --threshold ("5%", "5 %" or the fraction "0.05") into a fraction."""
    raw = str(text).strip()
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    hint = "expected a percentage such as 5% or a fraction such as 0.05"
    if not _NUMBER.fullmatch(number):
        raise UsageError(f"--threshold {text!r}: {hint}")
    value = float(number) / 100 if percent else float(number)
    if not percent and value >= 1:
        # A bare "5" almost always means 5%, not 500%: refuse rather than silently gate at 500%.
        raise UsageError(f"--threshold {text!r}: a bare number is a fraction; write "
                         f"{number}% for {number} percent, or {value / 100:g} as a fraction")
    if not 0 < value < MAX_THRESHOLD:
        raise UsageError(f"--threshold {text!r}: must be above 0% and below "
                         f"{MAX_THRESHOLD:.0%}; {hint}")
    return value


def compare(baseline: ResultsFile, current: ResultsFile, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = DEFAULT_ALPHA, allow_different_gpu: bool = False) -> Comparison:
    """Pair the benchmarks of two results files and judge each pair's change."""
    if not 0 < threshold < MAX_THRESHOLD:
        raise UsageError(f"--threshold {threshold!r}: must be above 0 and below {MAX_THRESHOLD}")
    if not 0 < alpha < 1:
        raise UsageError(f"alpha {alpha!r}: must be between 0 and 1")
    if baseline.gpu_name != current.gpu_name and not allow_different_gpu:
        raise UsageError(
            f"{baseline.path} was measured on {baseline.gpu_name or '(no GPU recorded)'!r} but "
            f"{current.path} on {current.gpu_name or '(no GPU recorded)'!r}: timings of "
            "different GPU models are not comparable; pass --allow-different-gpu to compare "
            "them anyway"
        )
    before = _index(baseline)
    after = _index(current)
    rows = tuple(_compare_pair(result, after[key], threshold, alpha)
                 for key, result in before.items() if key in after)
    return Comparison(
        rows=rows,
        added=tuple(result for key, result in after.items() if key not in before),
        removed=tuple(result for key, result in before.items() if key not in after),
        threshold=threshold,
        alpha=alpha,
        baseline_path=baseline.path,
        current_path=current.path,
        baseline_gpu=baseline.gpu_name,
        current_gpu=current.gpu_name,
    )


def _index(results: ResultsFile) -> dict[tuple, BenchmarkResult]:
    """Map each benchmark's key to it, in file order; a key twice is an error."""
    index: dict[tuple, BenchmarkResult] = {}
    for i, result in enumerate(results.benchmarks):
        if result.key in index:
            raise ResultsFileError(
                f"{results.path}: benchmarks[{i}]: {describe(result)} appears twice; a results "
                "file holds each benchmark once, so it cannot be paired"
            )
        index[result.key] = result
    return index


def _compare_pair(before: BenchmarkResult, after: BenchmarkResult, threshold: float,
                  alpha: float) -> ComparisonRow:
    """Judge one pair by the rules of the module docstring."""
    m0, m1 = before.median_s, after.median_s
    change = m1 / m0 - 1 if m0 and m1 else None
    enough = min(len(before.samples_s), len(after.samples_s)) >= MIN_SAMPLES
    p = mann_whitney_u(before.samples_s, after.samples_s) if enough else None
    verdict, reason = _verdict(before, after, change, p, threshold, alpha)
    if after.kind == "reference" and verdict in REGRESSION:
        reason += "; a reference row: the GPU or its clocks changed (not gated)"
    return ComparisonRow(
        op=after.op, variant=after.variant, params=dict(after.params), shape=tuple(after.shape),
        dtype=after.dtype, hot=after.hot, baseline_median_s=m0, current_median_s=m1,
        change=change, p_value=p, verdict=verdict, reason=reason, kind=after.kind,
    )


def _verdict(before: BenchmarkResult, after: BenchmarkResult, change: float | None,
             p: float | None, threshold: float, alpha: float) -> tuple[str, str]:
    """Return the verdict and a short sentence saying why."""
    was, now = before.status, after.status
    if now in FAILING_STATUSES:
        why = _failure(after)
        if was in FAILING_STATUSES:
            return "failed", f"still {now} (was {was}): {why}"
        return "failed", f"now {now} (was {was}): {why}"
    if was in FAILING_STATUSES:
        return "fixed", f"now {now} (was {was})"
    if p is None or change is None:
        return "noisy", (f"too few samples to test ({len(before.samples_s)} and "
                         f"{len(after.samples_s)}; at least {MIN_SAMPLES} a side)")
    significant = p < alpha
    test = f"p={format_p_value(p)} {'<' if significant else '>='} {alpha:g}"
    shift, limit = format_change(change), format_percent(threshold)
    if significant and change > threshold:
        return "slower", f"{shift} exceeds the {limit} threshold, {test}"
    if significant and change < -threshold:
        return "faster", f"{shift} exceeds the {limit} threshold, {test}"
    if abs(change) > threshold:
        return "noisy", f"{shift} but not significant ({test})"
    precision, side = max((median_precision(before.samples_s), "baseline"),
                          (median_precision(after.samples_s), "current"))
    if precision > threshold / 2:
        return "noisy", (f"{side} median known only to ±{precision:.1%}, too spread to "
                         f"resolve a {limit} change")
    if significant:
        return "same", f"{shift} is significant ({test}) but within ±{limit}"
    return "same", "no significant change"


def _failure(result: BenchmarkResult) -> str:
    """Say briefly why a benchmark is not verified."""
    if result.error is not None:
        first = result.error.strip().splitlines()[0] if result.error.strip() else "error"
        return first if len(first) <= 120 else first[:117] + "..."
    v = result.verification
    if v is None:
        return "not verified"
    return f"{v.bad_elements} of {v.total_elements} elements wrong ({v.criterion})"


# -- formatting shared by markdown and the Rich table (report.render_comparison) --------------

def format_seconds(seconds: float | None) -> str:
    """Format a duration with a unit that keeps 3-4 significant digits."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def format_change(change: float | None) -> str:
    """Format a relative change as a signed percentage."""
    if change is None:
        return "-"
    return "0.0%" if abs(change) < 0.0005 else f"{change:+.1%}"  # never "-0.0%"


def format_percent(fraction: float) -> str:
    """Format a fraction such as a threshold as a percentage: 0.05 -> 5%."""
    return f"{fraction * 100:.4g}%"


def format_p_value(p: float | None) -> str:
    """Format a p-value with two significant digits."""
    if p is None:
        return "-"
    return "<1e-99" if p < 1e-99 else f"{p:.2g}"


def benchmark_name(op: str, variant: str, hot: bool) -> str:
    """Name a benchmark as op/variant, marked when measured with a hot cache."""
    return f"{op}/{variant}{' (hot)' if hot else ''}"


def params_text(params: Mapping[str, int]) -> str:
    """Format parameters as NAME=value pairs."""
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def shape_text(shape: Iterable[int]) -> str:
    """Format a shape as 1000x1000x1000."""
    return "x".join(map(str, shape)) or "-"


def row_cells(row: ComparisonRow) -> list[str]:
    """Return a row's cells, in COLUMNS order."""
    return [
        benchmark_name(row.op, row.variant, row.hot), params_text(row.params),
        shape_text(row.shape), row.dtype, format_seconds(row.baseline_median_s),
        format_seconds(row.current_median_s), format_change(row.change),
        format_p_value(row.p_value), row.verdict, row.reason,
    ]


def describe(result: BenchmarkResult) -> str:
    """Describe a benchmark in one line: name, params, shape, dtype, status and median."""
    return (f"{benchmark_name(result.op, result.variant, result.hot)} "
            f"{params_text(result.params)} {shape_text(result.shape)} {result.dtype} "
            f"({result.status}, median {format_seconds(result.median_s)})")


def summary_text(comparison: Comparison) -> str:
    """Return the one-line summary: counts per verdict, settings and both GPUs."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for row in comparison.rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    parts = [f"{count} {verdict}" for verdict, count in counts.items() if count]
    parts += [f"{len(comparison.added)} added"] if comparison.added else []
    parts += [f"{len(comparison.removed)} removed"] if comparison.removed else []
    gpus = (comparison.baseline_gpu if comparison.baseline_gpu == comparison.current_gpu
            else f"{comparison.baseline_gpu} -> {comparison.current_gpu}")
    counted = ", ".join(parts) or "nothing to compare"
    return (f"{counted}; threshold {format_percent(comparison.threshold)}, "
            f"alpha {comparison.alpha:g}; GPU {gpus or '(none recorded)'}")


def _cell(text: str) -> str:
    """Escape a markdown table cell: pipes split cells and newlines end rows."""
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(comparison: Comparison) -> str:
    """Return the comparison as GitHub-flavoured markdown (for a CI job summary)."""
    c = comparison
    regressed = len(c.regressions)
    verdict_line = (f"**{regressed} regression{'s' if regressed != 1 else ''}**" if regressed
                    else "no regression")
    lines = [
        "## cudabench compare",
        "",
        f"{verdict_line}: {_cell(summary_text(c))}",
        "",
        f"Baseline: `{_code(c.baseline_path)}` ({_cell(c.baseline_gpu)}); "
        f"current: `{_code(c.current_path)}` ({_cell(c.current_gpu)})",
        "",
    ]
    if c.rows:
        right = {"baseline", "current", "change", "p-value"}
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|" + "|".join("---:" if name in right else "---" for name in COLUMNS)
                     + "|")
        for row in c.rows:
            cells = [_cell(text) for text in row_cells(row)]
            if row.regressed:
                verdict = COLUMNS.index("verdict")
                cells[verdict] = f"**{cells[verdict]}**"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    for title, results in (("Added", c.added), ("Removed", c.removed)):
        if results:
            where = "current" if title == "Added" else "baseline"
            lines.append(f"### {title} (only in the {where} file)")
            lines.append("")
            lines += [f"- {_cell(describe(result))}" for result in results]
            lines.append("")
    return "\n".join(lines)


def _code(text: str) -> str:
    """Keep a path inside an inline code span: backticks would end it."""
    return " ".join(str(text).split()).replace("`", "'")
