"""A/B: one variant's two copies measured interleaved in one process; pure logic, no CUDA.

Round r measures A's copy, then B's (B first every other round, so that whatever favours
the first or the second of two runs cancels), on the same inputs, in the same worker. The
statistic rests on the paired rounds: ratio_r = median(B_r) / median(A_r), and the estimate
is the median of those ratios. Drift between rounds (clocks, temperature, other tenants)
moves both copies of a round alike and cancels in its ratio; noise between samples does
not, which is why each round still takes several samples.

The interval is distribution-free, from the order statistics of the n ratios (the sign
test's interval): sorted r(1) <= ... <= r(n), [r(k), r(n+1-k)] holds the true median ratio
with probability 1 - 2 P(Bin(n, 1/2) <= k - 1), whatever the ratios' distribution, as long
as the rounds are independent. k is the largest whose coverage is at least 1 - alpha; with
alpha 0.05 and 10 rounds that is k = 2, a 97.9% interval; with 40 (the default) k = 14,
a 96.2% interval. It needs
`min_rounds(alpha)` rounds at least (6 for alpha 0.05).

Verdict (compare's words), first rule that applies:

- `failed`: B's copy failed (FAIL, ERROR, TIMEOUT, SUSPECT) in any round. A regression.
- `missing`: B's copy was skipped (SKIP: its header asks for another GPU, say) where A's
  ran: as a variant B lacks, a regression unless allow_missing. Both skipped: `noisy`.
- `fixed`: A's copy failed in some round and B's passed in all; but `slower` where A's
  timed rounds (its FAILs, timed as any row, and its passing rounds before an ERROR; a
  failed copy is not run again) give an interval that lies above 1 + max(threshold,
  compare's 5%), as `compare` judges a fix against a timed FAIL.
- `noisy`: A's copy was skipped where B's ran (nothing to compare B's with), or too few
  rounds with samples on both sides to make the interval.
- `slower`: the whole interval lies above 1 + threshold. A regression.
- `faster`: the whole interval lies below 1 - threshold.
- `noisy`: the median ratio is beyond +-threshold but the interval is not wholly so, or the
  interval reaches past +-threshold (wider than 2 x threshold, or off to one side): the
  rounds cannot tell a change of the threshold's size from none.
- `same`: otherwise: the whole interval lies within +-threshold, so the change, if any, is
  within it (an interval of +0.1% to +0.8% at a 0.5% threshold was `same`, where a 0.6%
  slowdown is not ruled out).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from cudabench.analysis.best import MIN_MARGIN
from cudabench.analysis.verdicts import DEFAULT_THRESHOLD as COMPARE_THRESHOLD
from cudabench.analysis.verdicts import REGRESSION, Verdict
from cudabench.errors import ExitCode, UsageError
from cudabench.results.model import FAILING_STATUSES, BenchmarkResult, Status
from cudabench.common.units import exceeds, format_change, format_percent

# The floor of a between-run difference worth naming on an H100 (analysis/best.py): A/B
# takes away the drift between runs, not the one within a run, so it cannot resolve less.
DEFAULT_THRESHOLD = MIN_MARGIN
FIX_THRESHOLD = COMPARE_THRESHOLD  # a fix against A's wrong copy, timed in one round only
DEFAULT_ALPHA = 0.05  # a ~95% interval (at least 95%: the sign test's levels are discrete)
MAX_ROUNDS = 1000
# Verdicts that give no change: a copy failed (or B's never ran), and its rounds before the
# failure, or those of a copy that passes beside it, time a kernel the verdict does not judge.
UNTIMED = frozenset({Verdict.FAILED, Verdict.FIXED, Verdict.MISSING})


@dataclass(frozen=True)
class Interval:
    """An interval of the median ratio, with its exact coverage."""

    low: float
    high: float
    coverage: float  # the probability that it holds the true median ratio
    # the probability that it misses it, exact where coverage rounds to 1.0 (55 rounds on)
    miss: float = 0.0

    @property
    def width(self) -> float:
        """Return high - low, in ratio units."""
        return self.high - self.low


@dataclass(frozen=True)
class ABResult:
    """One variant present in both folders, and the verdict on B against A."""

    op: str
    variant: str
    params_a: Mapping[str, int]
    params_b: Mapping[str, int]
    shape: tuple[int, ...]
    dtype: str
    a_medians_s: tuple[float, ...]  # per round with samples on both sides
    b_medians_s: tuple[float, ...]
    ratios: tuple[float, ...]  # b / a per round
    ratio: float | None  # the median of the ratios
    interval: Interval | None
    verdict: Verdict
    reason: str

    @property
    def change(self) -> float | None:
        """Return the median ratio - 1 (+3% means B takes 3% longer)."""
        return self.ratio - 1 if self.ratio is not None else None

    @property
    def a_median_s(self) -> float | None:
        """Return the median of A's round medians."""
        return statistics.median(self.a_medians_s) if self.a_medians_s else None

    @property
    def b_median_s(self) -> float | None:
        """Return the median of B's round medians."""
        return statistics.median(self.b_medians_s) if self.b_medians_s else None

    @property
    def regressed(self) -> bool:
        """Return whether this variant fails the gate: B slower, or B failing."""
        return self.verdict in REGRESSION


@dataclass(frozen=True)
class ABRun:
    """Every judged variant, the variants in one folder only, and the settings used."""

    results: tuple[ABResult, ...]
    added: tuple[str, ...]  # op/variant only in B
    removed: tuple[str, ...]  # op/variant only in A
    not_compared: tuple[str, ...]  # in both, but not run (the dtype), and why
    threshold: float
    alpha: float
    rounds: int
    allow_missing: bool = False  # a variant only in A passes (removed on purpose)
    dropped: tuple[str, ...] = ()  # in both, but B's copy no longer takes the dtype, and why
    # op/variant only in B whose one verified run failed, and why: a new kernel that is
    # wrong fails the gate (as compare fails one new in its current file)
    added_failed: tuple[str, ...] = ()

    @property
    def regressions(self) -> tuple[ABResult, ...]:
        """Return the variants that fail the gate (B's copy skipped: not with
        allow_missing)."""
        return tuple(result for result in self.results if result.regressed and not (
            self.allow_missing and result.verdict is Verdict.MISSING))

    @property
    def missing(self) -> tuple[str, ...]:
        """Return the variants of A that B lacks or no longer runs at the dtype, and that
        fail the gate (as compare fails a kernel its current file lacks: a slow kernel
        renamed, deleted or opted out of the run must not pass)."""
        return () if self.allow_missing else self.removed + self.dropped

    @property
    def exit_code(self) -> ExitCode:
        """Return ExitCode.REGRESSION when any variant regressed or is missing, else OK."""
        return (ExitCode.REGRESSION if self.regressions or self.missing or self.added_failed
                else ExitCode.OK)


def added_failure(row: BenchmarkResult) -> str | None:
    """Return why the one run of a variant only in B fails the gate ("FAIL: 4 of 4096
    elements wrong ..."), or None where it passed (or was not run: a SKIP)."""
    return f"{row.status.value}: {_failure(row)}" if row.status in FAILING_STATUSES else None


def coverage(n: int, k: int) -> float:
    """Return the coverage of [r(k), r(n+1-k)] for the median of n independent values."""
    tail = sum(math.comb(n, i) for i in range(k)) / (1 << n)
    return 1 - 2 * tail


def covers(n: int, k: int, alpha: float) -> bool:
    """Return whether [r(k), r(n+1-k)] of n values covers the median at 1 - alpha at least,
    in exact arithmetic: 1 - alpha in floats is 1.0 below alpha 1e-16, which every
    interval of 55 rounds reached."""
    share = Fraction(alpha)
    return 2 * sum(math.comb(n, i) for i in range(k)) * share.denominator <= (
        share.numerator << n)


def min_rounds(alpha: float) -> int:
    """Return the fewest rounds whose widest interval [r(1), r(n)] covers 1 - alpha."""
    n = 1
    while not covers(n, 1, alpha):
        n += 1
    return n


def level_text(alpha: float) -> str:
    """Return the level 1 - alpha as a reader reads it: 95%, or 1 - 1e-06 where a
    percentage would round to 100%."""
    text = format_percent(1 - alpha)
    return f"1 - {alpha:.3g}" if text.startswith("100") else text


def coverage_text(miss: float) -> str:
    """Return the coverage of an interval that misses with probability `miss` as a
    percentage that never rounds up to 100% (1 - 1e-18 where it would)."""
    for digits in range(1, 7):
        text = f"{1 - miss:.{digits}%}"
        if not text.startswith("100"):
            return text
    return f"1 - {miss:.2g}"


def miss_of(n: int, k: int) -> float:
    """Return the probability that [r(k), r(n+1-k)] of n values misses their median,
    computed exactly and then rounded: 1 - coverage(n, k) is 0.0 from 55 values on."""
    return float(Fraction(2 * sum(math.comb(n, i) for i in range(k)), 1 << n))


def check_settings(rounds: int, threshold: float, alpha: float) -> None:
    """Raise UsageError naming the flag of a setting that cannot give a verdict."""
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha:g}: must be between 0 and 1 (0.05: a 95% interval)")
    if not 0 < threshold < 10:
        raise UsageError(f"--threshold {threshold!r}: must be above 0 and below 1000%")
    if not covers(MAX_ROUNDS, 1, alpha):
        raise UsageError(f"--alpha {alpha:.3g}: a {level_text(alpha)} interval needs more than "
                         f"the {MAX_ROUNDS} rounds ab runs at most; raise --alpha "
                         "(0.05: a 95% interval)")
    needed = min_rounds(alpha)
    if not needed <= rounds <= MAX_ROUNDS:
        raise UsageError(f"--rounds {rounds}: a {level_text(alpha)} interval from the "
                         f"rounds' order statistics needs {needed} to {MAX_ROUNDS} rounds")


def sign_interval(values: Sequence[float], alpha: float) -> Interval | None:
    """Return the order-statistic interval of the median at level >= 1 - alpha, or None
    when there are too few values for one."""
    n = len(values)
    if n == 0 or not covers(n, 1, alpha):
        return None
    k = 1
    while k + 1 <= (n + 1) // 2 and covers(n, k + 1, alpha):
        k += 1
    ordered = sorted(values)
    return Interval(ordered[k - 1], ordered[n - k], coverage(n, k), miss_of(n, k))


def judge(a_rounds: Sequence[BenchmarkResult], b_rounds: Sequence[BenchmarkResult],
          threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA) -> ABResult:
    """Judge B's copy of a variant against A's from their rows, paired by round."""
    if not a_rounds or len(a_rounds) != len(b_rounds):
        raise ValueError("judge needs one A row and one B row per round")
    first_a, first_b = a_rounds[0], b_rounds[0]
    pairs = [(statistics.median(a.samples_s), statistics.median(b.samples_s))
             for a, b in zip(a_rounds, b_rounds) if a.samples_s and b.samples_s]
    a_medians = tuple(a for a, _ in pairs)
    b_medians = tuple(b for _, b in pairs)
    ratios = tuple(b / a for a, b in pairs if a > 0)
    ratio = statistics.median(ratios) if ratios else None
    interval = sign_interval(ratios, alpha)
    verdict, reason = _verdict(a_rounds, b_rounds, ratio, interval, threshold, alpha)
    if verdict in UNTIMED:  # the rounds before a failure time a copy the verdict rejects
        ratio, interval = None, None
    elif ratio is not None:
        reason += _other_way(ratio, a_medians, b_medians)
    return ABResult(
        op=first_b.op, variant=first_b.variant, params_a=dict(first_a.params),
        params_b=dict(first_b.params), shape=tuple(first_b.shape), dtype=first_b.dtype,
        a_medians_s=a_medians, b_medians_s=b_medians, ratios=ratios, ratio=ratio,
        interval=interval, verdict=verdict, reason=reason)


def _verdict(a_rounds: Sequence[BenchmarkResult], b_rounds: Sequence[BenchmarkResult],
             ratio: float | None, interval: Interval | None, threshold: float, alpha: float
             ) -> tuple[Verdict, str]:
    """Return the verdict and a short sentence saying why (the module docstring's rules)."""
    a_bad = _first_failing(a_rounds)
    b_bad = _first_failing(b_rounds)
    if b_bad is not None:
        was = f"A {a_bad.status.value}" if a_bad is not None else "A PASS"
        return Verdict.FAILED, f"B {b_bad.status.value} ({was}): {_failure(b_bad)}"
    b_skip = next((row for row in b_rounds if row.status is Status.SKIP), None)
    a_skip = next((row for row in a_rounds if row.status is Status.SKIP), None)
    if b_skip is not None and a_skip is None:  # B opted out where A ran: B lacks it here
        return Verdict.MISSING, (f"B's copy was not run ({b_skip.skipped}) where A's was: "
                                 "as a variant B lacks; --allow-missing passes it")
    if a_bad is not None:  # B passes, having run: not before the skips (a fix never ran)
        fix = f"B passes (A {a_bad.status.value}: {_failure(a_bad)})"
        # A FAIL was timed as any row (its result was wrong, not its clock), and so were
        # A's rounds before an ERROR (a worker lost: perhaps the machine, not the kernel):
        # as compare judges a fix, one much slower than the copy it replaces is `slower`.
        # A failed copy is not run again in later rounds (its row repeated): the drift
        # between rounds does not cancel, so only a change beyond compare's default is
        # judged. A SUSPECT's timing is not believed.
        timed = all(row.status in (Status.PASS, Status.FAIL) for row in a_rounds
                    if row.samples_s)
        margin = max(threshold, FIX_THRESHOLD)
        if timed and ratio is not None and interval is not None \
                and interval.low > 1 + margin:
            return Verdict.SLOWER, (f"{fix}, but {_timing(ratio, interval, margin)[1]} (A's "
                                    "copy was not run again after it failed)")
        return Verdict.FIXED, fix
    if b_skip is not None:
        return Verdict.NOISY, f"neither copy was run ({b_skip.skipped}): nothing to judge"
    if a_skip is not None:  # B's rounds alone read as enough rounds that made no interval
        return Verdict.NOISY, (f"A's copy was not run ({a_skip.skipped}) where B's was: "
                               "nothing to compare B's with")
    if ratio is None or interval is None:
        paired = sum(1 for a, b in zip(a_rounds, b_rounds) if a.samples_s and b.samples_s)
        return Verdict.NOISY, (f"{paired} round(s) with samples on both sides; a "
                               f"{level_text(alpha)} interval needs {min_rounds(alpha)}")
    return _timing(ratio, interval, threshold)


def _other_way(ratio: float, a_medians: Sequence[float], b_medians: Sequence[float]) -> str:
    """Return a note where the medians of A's and B's rounds, shown beside the change, differ
    the other way from it: the change is the median of the paired rounds' ratios, which
    cancels the drift between rounds that the two sides' medians keep."""
    unpaired = statistics.median(b_medians) / statistics.median(a_medians) - 1
    if min(abs(ratio - 1), abs(unpaired)) < 0.0005 or (ratio - 1 > 0) == (unpaired > 0):
        return ""  # alike, or one of them prints as 0.0%
    return (f" (the medians of A's and B's rounds differ by {format_change(unpaired)}: the "
            "change is the median of the rounds' B/A ratios, paired)")


def _timing(ratio: float, interval: Interval, threshold: float) -> tuple[Verdict, str]:
    """Return the verdict on the two copies' timings, and why (the docstring's last four rules)."""
    limit = format_percent(threshold)
    span = (f"{coverage_text(interval.miss)} interval "
            f"{format_change(interval.low - 1, threshold)} to "
            f"{format_change(interval.high - 1, threshold)}")
    if exceeds(interval.low - 1, threshold):
        return Verdict.SLOWER, f"the {span} lies above +{limit}"
    if exceeds(1 - interval.high, threshold):
        return Verdict.FASTER, f"the {span} lies below -{limit}"
    if exceeds(abs(ratio - 1), threshold):
        return Verdict.NOISY, (f"{format_change(ratio - 1, threshold)} but the {span} reaches "
                               f"inside ±{limit}")
    if exceeds(interval.width / 2, threshold):
        return Verdict.NOISY, f"the {span} is wider than ±{limit}: too noisy to tell"
    below = exceeds(1 - interval.low, threshold)
    if below or exceeds(interval.high - 1, threshold):
        # the end past it to two decimals: "-0.5% .. +0.3%" reaching past ±0.5% read wrong
        end = interval.low - 1 if below else interval.high - 1
        return Verdict.NOISY, (f"{format_change(ratio - 1, threshold)} but the {span} reaches "
                               f"past ±{limit} (to {end:+.2%}): a change of that size is not "
                               "ruled out")
    return Verdict.SAME, f"the {span} lies within ±{limit}"


def _first_failing(rows: Sequence[BenchmarkResult]) -> BenchmarkResult | None:
    """Return the first row that is not verified (the reason a side fails), if any."""
    return next((row for row in rows if row.status in FAILING_STATUSES), None)


def _failure(result: BenchmarkResult) -> str:
    """Say briefly why a row is not verified."""
    if result.error is not None:
        first = result.error.strip().splitlines()[0] if result.error.strip() else "error"
        return first if len(first) <= 120 else first[:117] + "..."
    if result.suspect is not None:
        return result.suspect
    v = result.verification
    if v is None:
        return "not verified"
    return f"{v.bad_elements} of {v.total_elements} elements wrong ({v.criterion})"
