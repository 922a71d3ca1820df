"""--rounds: each row's rounds pooled into one row, as they arrive and at the end.

A row measured in N rounds (measure/jobs.py runs them in alternating order, each on buffers
placed afresh) is reported as one row: every round's samples, batches and clocks in round
order, the median of each round beside them (`round_medians_s`, so the spread between
rounds stays visible), and the first round's counters, energy and transfers (measured in
the first round alone). A round that failed decides the row: its status, error and
verification, whatever the other rounds did, with a warning naming the round; a race that
shows in one round of five is a FAIL, not a fifth of the samples.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from cudabench.results.model import BenchmarkResult, Status

OnResult = Callable[[BenchmarkResult], None]
_NUMBER = re.compile(r"[0-9][0-9.,]*")
_TIMED = frozenset({Status.PASS, Status.SUSPECT, Status.REF})


def identity(row: BenchmarkResult) -> tuple[Hashable, ...]:
    """Return what makes rows the same row of different rounds: the benchmark, the kind of
    row, the GPU and the flush."""
    device = row.device.identity if row.device is not None else None
    return (row.key, row.kind, device, row.l2_flush)


def pooled(rows: Sequence[BenchmarkResult]) -> BenchmarkResult:
    """Return the rounds' rows (in round order) as one row."""
    first = rows[0]
    medians = tuple(statistics.median(row.samples_s) for row in rows if row.samples_s)
    failed = next((index for index, row in enumerate(rows) if row.status not in _TIMED
                   and row.status is not Status.SKIP), None)
    if failed is not None or first.status is Status.SKIP:
        base = rows[failed] if failed is not None else first
        warning = (f"round {failed + 1} of {len(rows)} is the one shown: "
                   f"{base.status.value}" if failed is not None and len(rows) > 1 else None)
        return dataclasses.replace(
            base, rounds=len(rows), round_medians_s=medians if len(rows) > 1 else (),
            warnings=_union([base.warnings, *([(warning,)] if warning else [])]))
    if len(rows) == 1:
        return first
    samples = tuple(s for row in rows for s in row.samples_s)
    clocks = tuple(c for row in rows for c in row.sample_clocks_mhz)
    return dataclasses.replace(
        first, samples_s=samples,
        # clocks pair with samples: kept only where every round recorded them
        sample_clocks_mhz=clocks if len(clocks) == len(samples) else (),
        slow_clock_samples_s=tuple(s for row in rows for s in row.slow_clock_samples_s),
        zero_input_samples_s=tuple(s for row in rows for s in row.zero_input_samples_s),
        batch_samples_s=tuple(s for row in rows for s in row.batch_samples_s),
        suspect=next((row.suspect for row in rows if row.suspect), None),
        warnings=_union(row.warnings for row in rows),
        phases=_summed([row.phases for row in rows]),
        rounds=len(rows), round_medians_s=medians)


def _union(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """Return the warnings of every round, each once: a warning a later round repeats with
    other numbers (its own median, say) is the first round's."""
    kept: dict[str, str] = {}
    for group in groups:
        for warning in group:
            kept.setdefault(_NUMBER.sub("#", warning), warning)
    return tuple(kept.values())


def _summed(phases: Sequence[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for mapping in phases:
        for name, seconds in mapping.items():
            total[name] = total.get(name, 0.0) + seconds
    return total


class RoundPool:
    """Rows pooled by identity as they arrive, in the order each was first seen."""

    def __init__(self) -> None:
        self._rounds: dict[tuple[Hashable, ...], list[BenchmarkResult]] = {}

    def add(self, row: BenchmarkResult) -> BenchmarkResult:
        """Take one round's row; return its row pooled over the rounds so far."""
        rows = self._rounds.setdefault(identity(row), [])
        rows.append(row)
        return pooled(rows)

    def rows(self) -> list[BenchmarkResult]:
        """Return every row pooled over all its rounds."""
        return [pooled(rows) for rows in self._rounds.values()]


def pool_all(rows: Iterable[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the rows with each row's rounds pooled (rows of one round pass unchanged)."""
    pool = RoundPool()
    for row in rows:
        pool.add(row)
    return pool.rows()


def pooling(on_result: OnResult) -> tuple[OnResult, RoundPool]:
    """Return a listener that passes each arriving row on pooled over its rounds so far,
    and the pool it fills."""
    pool = RoundPool()

    def listen(row: BenchmarkResult) -> None:
        on_result(pool.add(row))

    return listen, pool
