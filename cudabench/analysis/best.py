"""`--best`: per variant and size, the fastest configuration that passed, or a tie.

Picking the minimum of noisy medians favours whichever candidate got lucky (the winner's
curse). So the candidates within the noise of the fastest are measured again, head to head
and interleaved, and one is named only if it is faster than each of the others beyond the
noise and significantly; otherwise the result is a tie among them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudabench.common.stats import mann_whitney_u, relative_spread
from cudabench.results.model import BenchmarkResult, Kind, Status

MIN_MARGIN = 0.005  # faster by less than this is never a win: between-run noise on an H100
ALPHA = 0.01


@dataclass(frozen=True)
class Choice:
    """The outcome for one variant at one shape and dtype."""

    op: str
    variant: str
    shape: tuple[int, ...]
    dtype: str
    best: BenchmarkResult  # the fastest (first among a tie)
    tied: tuple[BenchmarkResult, ...] = ()  # others no measurably slower than best
    runner_up: BenchmarkResult | None = None
    margin: float | None = None  # runner-up median / best median - 1, of the samples that decided
    median_s: float | None = None  # best's median in the samples that decided (head to head)
    # why a close call was decided on the run's own samples, not re-measured as asked (every
    # GPU given up during --best's head-to-head); "": settled as usual
    unsettled: str = ""

    @property
    def is_tie(self) -> bool:
        """Return whether no single configuration could be named."""
        return bool(self.tied)


def groups(results: Sequence[BenchmarkResult]) -> dict[tuple[object, ...], list[BenchmarkResult]]:
    """Return the passing variant rows by (op, variant, shape, dtype, hot), in run order."""
    found: dict[tuple[object, ...], list[BenchmarkResult]] = {}
    for r in results:
        if r.kind is Kind.VARIANT and r.status is Status.PASS and r.samples_s:
            found.setdefault((r.op, r.variant, tuple(r.shape), r.dtype, r.hot), []).append(r)
    return found


def noise(result: BenchmarkResult) -> float:
    """Return a row's relative noise: its spread, at least the between-run floor."""
    return max(relative_spread(result.samples_s), MIN_MARGIN)


def candidates(rows: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the fastest row and those within the noise of it (fastest first)."""
    ordered = sorted(rows, key=lambda r: r.median_s or float("inf"))
    fastest = ordered[0]
    limit = (fastest.median_s or 0) * (1 + 2 * max(noise(fastest), MIN_MARGIN))
    return [r for r in ordered if (r.median_s or 0) <= limit]


def decide(rows: Sequence[BenchmarkResult],
           rematch: Mapping[int, Sequence[float]] | None = None) -> Choice:
    """Name the best of one group's rows; rematch maps a row's index in rows to its samples
    from the head-to-head re-measurement, which then decide among the candidates."""
    samples = {id(r): tuple((rematch or {}).get(i, ())) or r.samples_s
               for i, r in enumerate(rows)}

    def middle(r: BenchmarkResult) -> float:
        return statistics.median(samples[id(r)])

    # The head-to-head's contenders decide when there was one; else the first run's.
    contenders = [rows[i] for i in sorted(rematch)] if rematch else candidates(rows)
    ordered = sorted(contenders, key=middle)
    best = ordered[0]
    first = rows[0]
    # The runner-up and margin from the samples that decided: mixing the head-to-head's
    # with the first run's showed a slower runner-up "faster" (+-4.2%) when clocks moved.
    others = ordered[1:] or [r for r in rows if r is not best]
    runner = min(others, key=middle) if others else None
    margin = (middle(runner) / middle(best) - 1) if runner else None
    tied = []
    for other in ordered[1:]:
        gap = middle(other) / middle(best) - 1
        beyond = gap > max(MIN_MARGIN, noise(best), noise(other))
        if not beyond or mann_whitney_u(samples[id(best)], samples[id(other)]) >= ALPHA:
            tied.append(other)
    return Choice(first.op, first.variant, tuple(first.shape), first.dtype, best, tuple(tied),
                  runner, margin, middle(best))
