"""What a comparison of two results files says: the verdicts, a compared row, the whole
comparison and its exit code, and the threshold flag's grammar. analysis/compare.py makes
them; the renderers and the gates read them."""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

from cudabench.common.units import params_text, shape_text
from cudabench.errors import ExitCode, UsageError
from cudabench.results.model import (
    SLOW_CLOCK,
    BenchmarkResult,
    Kind,
)

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.001
MIN_SAMPLES = 3  # below this a rank test has nothing to say
MAX_THRESHOLD = 10.0  # 1000%: anything larger is a typo, not a tolerance



class Verdict(str, enum.Enum):
    """The judgement on one pair, in the order summaries list them: worst first."""

    FAILED = "failed"
    MISSING = "missing"
    SLOWER = "slower"
    UNTESTABLE = "untestable"
    NOISY = "noisy"
    SAME = "same"
    FASTER = "faster"
    FIXED = "fixed"


REGRESSION = frozenset({Verdict.SLOWER, Verdict.FAILED, Verdict.MISSING, Verdict.UNTESTABLE})

_NUMBER = re.compile(r"[+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


@dataclass(frozen=True)
class ComparisonRow:
    """One benchmark present in both files, and the verdict on its change."""

    op: str
    variant: str
    params: dict[str, int]
    shape: tuple[int, ...]
    dtype: str
    hot: bool
    baseline_median_s: float | None
    current_median_s: float | None
    change: float | None  # current / baseline - 1
    p_value: float | None
    verdict: Verdict
    reason: str
    kind: Kind = Kind.VARIANT  # reference rows (the device copy) inform but never gate
    threshold: float = DEFAULT_THRESHOLD  # the gate this row used...
    threshold_source: str = ""  # ...and where it came from ("--threshold", "floor", history)
    detectable: float | None = None  # --power: the smallest slowdown this gate would catch
    device: str = ""  # which GPU of the current file ("GPU 1"), when it used several

    @property
    def regressed(self) -> bool:
        """Return whether this row fails the gate: a kernel slower, or failing verification.

        A slower reference row (the device-to-device copy) says the machine changed, not a
        kernel: it is shown, and explains slower kernels, but does not fail the gate.
        """
        if self.verdict is Verdict.MISSING:  # a vendor row that vanished counts too
            return self.kind is not Kind.REFERENCE
        return self.verdict in REGRESSION and self.kind is Kind.VARIANT


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
    # What differs between the two files' cards: power limit, ECC, MIG, persistence, clocks,
    # driver: a change there can move every timing without any kernel changing.
    setting_changes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # GPU models only one file has (their rows are not paired)
    current_incomplete: bool = False  # the current run stopped before its last row
    gpus_named: bool = False  # the current file ran on several GPUs: rows name theirs

    @property
    def regressions(self) -> tuple[ComparisonRow, ...]:
        """Return the rows that fail the gate."""
        return tuple(row for row in self.rows if row.regressed)

    @property
    def missing(self) -> tuple[ComparisonRow, ...]:
        """Return the baseline benchmarks the current file lacks (they fail the gate)."""
        return tuple(row for row in self.rows if row.verdict is Verdict.MISSING)

    @property
    def exit_code(self) -> ExitCode:
        """Return ExitCode.REGRESSION when any row regressed or the current run is
        incomplete, else ExitCode.OK."""
        failed = self.regressions or self.current_incomplete
        return ExitCode.REGRESSION if failed else ExitCode.OK


def parse_threshold(text: str | float, flag: str = "--threshold") -> float:
    """Parse a threshold flag ("5%", "5 %" or the fraction "0.05"), or compare()'s number
    (named as given: 5, not '5'), into a fraction."""
    raw = str(text).strip()
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    hint = "expected a percentage such as 5% or a fraction such as 0.05"
    if not _NUMBER.fullmatch(number):
        raise UsageError(f"{flag} {text!r}: {hint}")
    value = float(number) / 100 if percent else float(number)
    if not percent and 1 <= value < MAX_THRESHOLD * 100:
        # A bare "5" almost always means 5%, not 500%: refuse rather than silently gate at 500%.
        # The fraction is a threshold too only below 100 (1e400 offered "inf as a fraction").
        fraction = f", or {value / 100:g} as a fraction" if value < 100 else ""
        raise UsageError(f"{flag} {text!r}: a bare number is a fraction; write "
                         f"{number}% for {number} percent{fraction}")
    if not 0 < value < MAX_THRESHOLD:
        raise UsageError(f"{flag} {text!r}: must be above 0% and below "
                         f"{MAX_THRESHOLD:.0%}; {hint}")
    return value


def ungated(kind: str) -> str:
    """Return what a regression verdict of a row that is not a kernel adds to its reason:
    the reference (the copy) moves with the GPU and its clocks, a vendor row with the
    library and the GPU; neither is gated."""
    if kind == "vendor":
        return "; a vendor row: the library or the GPU changed (not gated)"
    return "; a reference row: the GPU or its clocks changed (not gated)"



def throttled_by_kernel(row: BenchmarkResult, baseline_share: float) -> bool:
    """Whether row's kernel made the card throttle: at least half its samples ran below
    SLOW_CLOCK, where the baseline's share was at most half of that. Its set-aside
    samples are then its time, not the machine's accident: judged on the kept few, a
    kernel that throttles the card passed as `same`. (A kernel that throttled in the
    baseline too, a GEMM held at its power limit, is judged on the kept samples of both.)"""
    share = row.slow_clock_share
    return row.kind is Kind.VARIANT and share >= 0.5 and baseline_share <= share / 2


def at_slow_clock(row: BenchmarkResult) -> BenchmarkResult:
    """Return row as its samples at a slow clock alone would have it: what a kernel that
    throttles the card takes most of the time."""
    # a run keeps its slow samples where too few would remain without them: those too
    return dataclasses.replace(row, samples_s=row.slow_clock_samples_s + row.slow_kept_samples_s,
                               slow_clock_samples_s=(), sample_clocks_mhz=(),
                               round_medians_s=())


def worse(first: Verdict, second: Verdict) -> bool:
    """Whether first is a worse verdict than second (the enum lists the worst first)."""
    order = list(Verdict)
    return order.index(first) < order.index(second)


def throttled_text(row: BenchmarkResult, baseline: str) -> str:
    """Return what a reason adds for a row judged at its slow clock (throttled_by_kernel);
    baseline says how many samples the baseline set aside."""
    return (f"; judged on the {slow_clock_text(row)} samples that ran below {SLOW_CLOCK:.0%} "
            f"of the maximum SM clock ({baseline}): the card throttles under this kernel")


def set_aside_note(row: BenchmarkResult) -> str:
    """Return the note on a kernel judged on its kept samples whose run set samples aside
    as taken below SLOW_CLOCK of the maximum SM clock (compare and history check say it:
    set aside without a word, a change that makes the card throttle a little looked
    `same`)."""
    return (f"{row.op}/{row.variant} {params_text(row.params)} {shape_text(row.shape)} "
            f"{row.dtype}".replace(" - ", " ")
            + f": {set_aside_text(row)} samples of the current run ran below {SLOW_CLOCK:.0%} "
            f"of the maximum SM clock and were set aside: judged on the other "
            f"{len(row.samples_s)}; a kernel that makes the card throttle is slower than "
            "those say")


def slow_clock_text(row: BenchmarkResult) -> str:
    """Return how many of row's samples ran below SLOW_CLOCK, set aside or kept: "none",
    "4 of 8"."""
    slow = len(row.slow_clock_samples_s) + len(row.slow_kept_samples_s)
    return f"{slow} of {len(row.slow_clock_samples_s) + len(row.samples_s)}" if slow else "none"


def set_aside_text(row: BenchmarkResult) -> str:
    """Return how many of row's samples were set aside: "none", "3 of 40"."""
    slow = len(row.slow_clock_samples_s)
    return f"{slow} of {slow + len(row.samples_s)}" if slow else "none"
