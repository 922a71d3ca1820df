"""--rounds: each row's rounds pooled into one row, as they arrive and at the end.

A row measured in N rounds (measure/jobs.py runs them in alternating order, each on buffers
placed afresh) is reported as one row: every round's samples, batches, write-back flushes
and clocks in round order, the median of each round beside them (`round_medians_s`, so the
spread between rounds stays visible), NVML's readings over all of them, and the first
round's counters, energy and transfers (measured in the first round alone). A warning a
round gave says which round (its numbers are that round's). A round that failed decides
the row: its status, error and verification, whatever the other rounds did, with a warning
naming the round; a race that shows in one round of five is a FAIL, not a fifth of the
samples. Such a row is not run again in the later rounds (measure/jobs.py's remaining).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from cudabench.results.model import BenchmarkResult, Status

OnResult = Callable[[BenchmarkResult], None]
_NUMBER = re.compile(r"[0-9][0-9.,]*")
_TIMED = frozenset({Status.PASS, Status.SUSPECT, Status.REF})


def identity(row: BenchmarkResult) -> tuple[Hashable, ...]:
    """Return what makes rows the same row of different rounds: the benchmark, the kind of
    row, the GPU and the flush."""
    device = row.device.identity if row.device is not None else None
    return (row.key, row.kind, device, row.l2_flush)


def remeasured(key: tuple[Hashable, ...]) -> tuple[Hashable, ...]:
    """Return an identity without its GPU: what a re-measure on another GPU (--best's
    head-to-head) measured again."""
    benchmark, kind, _, flush = key
    return benchmark, kind, flush


def pooled(rows: Sequence[BenchmarkResult]) -> BenchmarkResult:
    """Return the rounds' rows (in round order) as one row."""
    first = rows[0]
    if len(rows) == 1:
        return first
    failed = next((index for index, row in enumerate(rows)
                   if row.status not in _TIMED and row.status is not Status.SKIP), None)
    # the rounds after a failed one repeat its row, unmeasured: no median of their own
    timed = rows if failed is None else rows[:failed + 1]
    medians = tuple(statistics.median(row.samples_s) for row in timed if row.samples_s)
    if failed is not None or first.status is Status.SKIP:
        base = rows[failed] if failed is not None else first
        note = () if failed is None else (
            f"round {failed + 1} of {len(rows)} is the one shown ({base.status.value}); "
            "a failed row is not measured again in later rounds",)
        return dataclasses.replace(base, rounds=len(rows), round_medians_s=medians,
                                   round_index=first.round_index,
                                   warnings=(*base.warnings, *note))
    samples = tuple(s for row in rows for s in row.samples_s)
    clocks = tuple(c for row in rows for c in row.sample_clocks_mhz)
    return dataclasses.replace(
        first, samples_s=samples,
        # clocks pair with samples: kept only where every round recorded them
        sample_clocks_mhz=clocks if len(clocks) == len(samples) else (),
        slow_clock_samples_s=tuple(s for row in rows for s in row.slow_clock_samples_s),
        zero_input_samples_s=tuple(s for row in rows for s in row.zero_input_samples_s),
        batch_samples_s=tuple(s for row in rows for s in row.batch_samples_s),
        writeback_after_run_s=tuple(s for row in rows for s in row.writeback_after_run_s),
        writeback_baseline_s=tuple(s for row in rows for s in row.writeback_baseline_s),
        # a round faster than the device allows makes the row suspect: its samples are here
        suspect=next((row.suspect for row in rows if row.suspect), None),
        warnings=_by_round([row.warnings for row in rows]),
        telemetry=merged_telemetry([row.telemetry for row in rows]),
        phases=_summed([row.phases for row in rows]),
        rounds=len(rows), round_medians_s=medians)


def _by_round(groups: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Return every round's warnings, each once, saying which rounds gave it: a warning a
    later round repeats with other numbers (its own median, say) keeps the first round's
    text, and that round's number."""
    seen: dict[str, tuple[str, list[int]]] = {}
    for index, group in enumerate(groups):
        for warning in group:
            seen.setdefault(_NUMBER.sub("#", warning), (warning, []))[1].append(index + 1)
    total = len(groups)
    notes = []
    for warning, rounds in seen.values():
        if len(rounds) == total:
            where = f"in every round (round {rounds[0]}'s numbers)" if total > 1 else ""
        else:
            where = "in round" + ("s " if len(rounds) > 1 else " ") + ", ".join(
                map(str, rounds)) + f" of {total}"
        notes.append(f"{where}: {warning}" if where else warning)
    return tuple(notes)


def merged_telemetry(readings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return NVML's readings over several rounds as over one: clock ranges widened, the
    hottest temperature, the mean power, every throttle reason, violation times and polls
    added up."""
    seen = [r for r in readings if r]
    if not seen:
        return {}
    merged: dict[str, Any] = dict(seen[0])
    for key in ("sm_clock_mhz", "memory_clock_mhz"):
        ranges = [r[key] for r in seen if isinstance(r.get(key), Mapping)]
        lows = [x["min"] for x in ranges if x.get("min") is not None]
        highs = [x["max"] for x in ranges if x.get("max") is not None]
        if ranges:
            merged[key] = {"min": min(lows) if lows else None,
                           "max": max(highs) if highs else None}
    temperatures = [r["temperature_c"] for r in seen if r.get("temperature_c") is not None]
    merged["temperature_c"] = max(temperatures) if temperatures else None
    powers = [r["power_w"] for r in seen if r.get("power_w") is not None]
    merged["power_w"] = statistics.fmean(powers) if powers else None
    merged["throttle_reasons"] = sorted({reason for r in seen
                                         for reason in r.get("throttle_reasons") or []})
    for key in ("power_violation_s", "thermal_violation_s", "polls"):
        values = [r[key] for r in seen if r.get(key) is not None]
        merged[key] = sum(values) if values else None
    return merged


def _summed(phases: Sequence[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for mapping in phases:
        for name, seconds in mapping.items():
            total[name] = total.get(name, 0.0) + seconds
    return total


class RoundPool:
    """Rows pooled over their rounds as they arrive, in the order each was first seen.

    A row of round 0 starts a row of its own (two suite entries of one benchmark stay two
    rows, and a sweep's SKIP rows, which no job measured, are never pooled); a row of round
    r joins the latest row of its identity that holds r rounds."""

    def __init__(self) -> None:
        self._rows: list[tuple[tuple[Hashable, ...], list[BenchmarkResult]]] = []

    def add(self, row: BenchmarkResult) -> BenchmarkResult:
        """Take one round's row; return its row pooled over the rounds so far."""
        key = identity(row)
        rounds = next((rows for seen, rows in reversed(self._rows)
                       if row.round_index and seen == key and len(rows) == row.round_index),
                      None)
        if rounds is None:
            rounds = []
            self._rows.append((key, rounds))
        rounds.append(row)
        return pooled(rounds)

    def rows(self) -> list[BenchmarkResult]:
        """Return every row pooled over all its rounds."""
        return [pooled(rows) for _key, rows in self._rows]


def pool_all(rows: Iterable[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the rows with each row's rounds pooled (rows of one round pass unchanged)."""
    pool = RoundPool()
    for row in rows:
        pool.add(row)
    return pool.rows()


def pooling(on_result: OnResult) -> OnResult:
    """Return a listener that passes each arriving row on pooled over its rounds so far."""
    pool = RoundPool()

    def listen(row: BenchmarkResult) -> None:
        on_result(pool.add(row))

    return listen
