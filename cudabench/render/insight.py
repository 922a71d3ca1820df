"""The insight columns and footer of a run table: roofs, batches, clocks, energy, counters.

Each column appears only when some row of the table has its data, so a plain run keeps a
plain table. Everything here is computed from saved results (`cudabench report` renders
the same), with the roofs recomputed from the device recorded in the file.
"""

from __future__ import annotations

import collections
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cudabench.insight import ncu_metrics as counters, roofs
from cudabench.insight.throttling import throttle_causes
from cudabench.results.model import FAILING_STATUSES, SLOW_CLOCK, BenchmarkResult, Kind
from cudabench.common.units import format_amount, format_seconds, params_text


@dataclass(frozen=True)
class Column:
    """A column: its title and the text of its cell for a row ('-' when it has none)."""

    title: str
    cell: Callable[[BenchmarkResult], str]


def copy_bps(rows: Sequence[BenchmarkResult]) -> float | None:
    """Return the measured device-to-device copy's bytes/s: the achievable memory roof."""
    copy = next((r for r in rows if r.kind is Kind.REFERENCE and r.gbps
                 and r.status not in FAILING_STATUSES), None)  # a wrong copy is no roof
    return copy.gbps * 1e9 if copy is not None and copy.gbps else None


def assessment(row: BenchmarkResult, achievable: float | None) -> roofs.Assessment | None:
    """Place a row under its device's roofline (None without a median or a device)."""
    if row.device is None or row.kind is Kind.REFERENCE or not row.median_s:
        return None
    unit = row.unit or "cuda"
    return roofs.assess(row, roofs.Roofs.of(row.device), unit, row.compute_type, achievable)


def work_unit(rows: Sequence[BenchmarkResult]) -> str:
    """Return what the rows' counted operations are: "GFLOP" where each row that counts
    some does floating-point arithmetic, else "GOP" (int32's are no FLOPs: the footer's
    roof says TOPS, the roofline TOP/s; and GOP stays true of a table that mixes both)."""
    integer = [(r.compute_type or r.dtype).startswith(("int", "uint")) for r in rows if r.flops]
    return "GOP" if any(integer) else "GFLOP"


def insight_columns(rows: Sequence[BenchmarkResult]) -> list[Column]:
    """Return the insight columns that some row of the table fills."""
    achievable = copy_bps(rows)
    assessed = {id(r): assessment(r, achievable) for r in rows}

    def peak(r: BenchmarkResult) -> str:
        a = assessed[id(r)]
        if a is None or a.pct_of_peak is None:
            return "-"
        return f"{format_amount(a.pct_of_peak, grouped=False)}%"

    def bound(r: BenchmarkResult) -> str:
        a = assessed[id(r)]
        if a is None or a.bound is None:
            return "-"
        return f"{a.bound}{' (L2)' if a.in_l2 and a.bound == 'memory' else ''}"

    def batch(r: BenchmarkResult) -> str:
        return format_seconds(r.batch_median_s) if r.batch_median_s else "-"

    columns = []
    if any(r.batch_samples_s for r in rows):
        columns.append(Column("batch (warm)", batch))
    if any(a is not None and a.pct_of_peak is not None for a in assessed.values()):
        # The share of the achievable memory roof (the measured copy) is the table's
        # "% of memcpy_dtod" column: the same bytes, so the same ratio.
        columns += [Column("% of peak", peak), Column("bound", bound)]
    return columns


def detail_columns(rows: Sequence[BenchmarkResult]) -> list[Column]:
    """Return the columns behind the times: range, SM clock, energy and counters."""
    def extreme(pick: str) -> Callable[[BenchmarkResult], str]:
        def cell(r: BenchmarkResult) -> str:
            return format_seconds(getattr(r.summary, pick)) if r.summary else "-"
        return cell

    def clock(r: BenchmarkResult) -> str:
        median = median_clock_mhz(r)
        return f"{median:,.0f}" if median is not None else "-"

    def joules(r: BenchmarkResult) -> str:
        e = r.energy
        if not e.get("launches"):
            return "-"
        joules = e["joules"] / e["launches"]
        return f"{joules:.3g} J" if joules >= 1 else f"{joules * 1e3:.3g} mJ"

    def per_joule(r: BenchmarkResult) -> str:
        value = work_per_joule(r)
        if value is None:
            return "-"
        return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"  # small ones not 0.0

    columns = [Column("min", extreme("min_s")), Column("max", extreme("max_s"))]
    if any(c is not None for r in rows for c in r.sample_clocks_mhz):
        columns.append(Column("SM MHz", clock))
    if any(r.energy.get("launches") for r in rows):
        unit = f"{work_unit(rows)}/J" if any(r.flops for r in rows) else "GB/J"
        columns += [Column("energy/launch", joules), Column(unit, per_joule)]
    if any(r.writeback_s is not None for r in rows):
        columns += [Column("write-back", _writeback_cell),
                    Column("median + write-back", _paid_cell)]
    if any(r.transfers for r in rows):
        columns += _transfer_columns()
    if any(r.rounds > 1 for r in rows):
        columns.append(Column("rounds", _rounds_cell))
    metrics = list(dict.fromkeys(m for r in rows for m in r.counters))
    units = {m: u for r in rows for m, u in r.counters_units.items()}
    columns += [Column(counters.column_title(m, units.get(m, "")), _counter_cell(m))
                for m in metrics]
    return columns


def _writeback_cell(r: BenchmarkResult) -> str:
    """Return what the next flush paid for the row's dirty lines (signed: noise can make
    a row that leaves nothing read a little below zero)."""
    wb = r.writeback_s
    if wb is None:
        return "-"
    return ("+" if wb >= 0 else "-") + format_seconds(abs(wb))


def _paid_cell(r: BenchmarkResult) -> str:
    """Return the row's median with its own write-back paid."""
    wb, median = r.writeback_s, r.median_s
    return format_seconds(median + max(wb, 0.0)) if wb is not None and median else "-"


def _rounds_cell(r: BenchmarkResult) -> str:
    """Return a pooled row's rounds and the spread of their medians."""
    if r.rounds <= 1:
        return "-"
    spread = rounds_spread(r)
    return str(r.rounds) if spread is None else f"{r.rounds}: ±{spread:.2%}"


def rounds_spread(r: BenchmarkResult) -> float | None:
    """Return half the range of a pooled row's round medians, against its median: how far
    one round alone could have put it (None for one round)."""
    medians, median = r.round_medians_s, r.median_s
    if r.rounds <= 1 or len(medians) < 2 or not median:
        return None
    return (max(medians) - min(medians)) / 2 / median


def work_per_joule(r: BenchmarkResult) -> float | None:
    """Return a row's GFLOP (GOP) per joule where it counts operations, else its GB per
    joule (None without --energy)."""
    e = r.energy
    if not e.get("joules") or not e.get("launches"):
        return None
    work = r.flops / 1e9 if r.flops else r.bytes_moved / 1e9
    return float(work * e["launches"] / e["joules"])


def median_clock_mhz(r: BenchmarkResult) -> float | None:
    """Return the median SM clock (MHz) of a row's samples, where they recorded it."""
    known = [c for c in r.sample_clocks_mhz if c is not None]
    return statistics.median(known) if known else None


def transfer_gbps(r: BenchmarkResult, kind: str, phase: str) -> float | None:
    """Return a --transfers copy's rate: kind "pinned" or "pageable", phase "h2d" or
    "d2h" (None where the row has no such figure)."""
    value = r.transfers.get(kind, {}).get(f"{phase}_gbps")
    return float(value) if value is not None else None


def _transfer_columns() -> list[Column]:
    """Return the --transfers columns: each copy's GB/s and the trip against the CPU."""
    def rate(kind: str, phase: str) -> Callable[[BenchmarkResult], str]:
        def cell(r: BenchmarkResult) -> str:
            value = transfer_gbps(r, kind, phase)
            return format_amount(value) if value else "-"
        return cell

    def trip(r: BenchmarkResult) -> str:
        t = r.transfers
        if not t.get("end_to_end_s") or not t.get("cpu_reference_s"):
            return "-"
        speedup = t["cpu_reference_s"] / t["end_to_end_s"]
        return f"{format_seconds(t['end_to_end_s'])} ({format_amount(speedup, grouped=False)}x)"

    return [Column("H2D pinned GB/s", rate("pinned", "h2d")),
            Column("H2D pageable GB/s", rate("pageable", "h2d")),
            Column("D2H pinned GB/s", rate("pinned", "d2h")),
            Column("D2H pageable GB/s", rate("pageable", "d2h")),
            Column("GPU trip (vs CPU ref)", trip)]


def _counter_cell(metric: str) -> Callable[[BenchmarkResult], str]:
    def cell(r: BenchmarkResult) -> str:
        value = r.counters.get(metric)
        if value is None:
            return "-"
        if metric == counters.DURATION:
            return format_seconds(value / 1e9)
        return format_amount(value) if value % 1 else f"{value:,.0f}"

    return cell


FLUSH_TEXT = {  # --l2-flush, as the footer says it
    "clean": "flushed by reading twice its size",
    "memset": "flushed by a memset of twice its size, as nvbench does: each sample also "
              "writes back the dirty lines the flush leaves",
}


def footer_lines(rows: Sequence[BenchmarkResult]) -> list[str]:
    """Return what the table's numbers rest on: roofs, routines, clocks, throttling."""
    lines = []
    device = next((r.device for r in rows if r.device is not None), None)
    if device is not None:
        lines.append(roofs.describe(roofs.Roofs.of(device)))
    for r in rows:
        if r.kind is Kind.VENDOR and r.source and r.source != r.variant:
            lines.append(f"{r.variant}: {r.source}")
        if r.kind is Kind.VENDOR and r.skipped:
            lines.append(f"{r.variant}: {r.skipped}")
    flush = FLUSH_TEXT.get(next((r.l2_flush for r in rows if r.l2_flush), ""), "")
    if any(r.batch_samples_s for r in rows):
        lines.append("batch (warm): back-to-back launches queued behind a blocking kernel, "
                     "per launch, warm L2; the other times are single launches, cold L2"
                     + (f" ({flush})" if flush else "")
                     if not rows[0].hot else "batch (warm): back-to-back launches, per launch")
    elif any(r.l2_flush == "memset" for r in rows):  # not the default: say so
        lines.append(f"cold L2: {flush}")
    if any(r.writeback_s is not None for r in rows):
        most = max(len(r.writeback_baseline_s) for r in rows)
        lines.append("write-back (behind the times): how much longer the L2 flush after a "
                     "run took than one after no run (medians of up to "
                     f"{most} pairs, taken in turns): the row's dirty lines, which its "
                     "cold samples leave for the next flush to write back, off their "
                     "clock; median + write-back charges each row its own")
    rounds = max((r.rounds for r in rows), default=1)
    if rounds > 1:
        once = [name for name, taken in (("counters", any(r.counters for r in rows)),
                                         ("energy", any(r.energy for r in rows)),
                                         ("transfers", any(r.transfers for r in rows)))
                if taken]  # said of what the run measured, not of every run with rounds
        lines.append(f"rounds: each row pools {rounds} rounds, run in alternating order, each "
                     "on buffers placed afresh (behind the times: half the range of the "
                     "rounds' medians)" + (f"; {_listed(once)} from the first round"
                                           if once else ""))
    lines += _telemetry_lines(rows)
    link = next((r.transfers.get("link_peak_bytes_per_s") for r in rows if r.transfers), None)
    if any(r.transfers for r in rows):
        settings = device.settings if device is not None else {}
        lines.append(
            "transfers: host<->device copies timed with events; the link's peak is "
            + (f"{link / 1e9:,.1f} GB/s per direction (PCIe gen "
               f"{settings.get('pcie_max_generation')} x{settings.get('pcie_max_width')}, "
               "its maximum)" if link else "unknown (no NVML)")
            + "; GPU trip = pinned copies + kernel, against the NumPy reference")
    # each configuration its own pair: a sweep's rows share a variant's name
    named = collections.Counter(r.variant for r in rows)
    pairs = {f"{r.variant} {params_text(r.params)}" if named[r.variant] > 1 else r.variant:
             (r.median_s, r.counters[counters.DURATION] / 1e9) for r in rows
             if r.median_s and r.counters.get(counters.DURATION)}
    lines += [f"{name}: {text}" for name, text in counters.duration_outliers(pairs).items()]
    lines += _counters_notes(rows, named)
    return lines


def _counters_notes(rows: Sequence[BenchmarkResult], named: Mapping[str, int]) -> list[str]:
    """Return a line per reason the counters were not read, naming its rows (a note every
    profiled row shares, such as ncu missing, names none)."""
    profiled = sum(1 for r in rows if r.counters or r.counters_note)
    by_note: dict[str, list[str]] = {}
    for r in rows:
        if r.counters_note:
            by_note.setdefault(r.counters_note, []).append(
                f"{r.variant} {params_text(r.params)}" if named[r.variant] > 1 else r.variant)
    return [f"counters: {note}" if len(names) == profiled else
            f"counters of {', '.join(dict.fromkeys(names))}: {note}"
            for note, names in sorted(by_note.items())]


def _summed(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the rows' telemetry as one: every throttle reason, the violation seconds
    added up (a list of each row's seconds read as causes of their own)."""
    total: dict[str, Any] = {"throttle_reasons": sorted(
        {str(reason) for t in summaries for reason in t.get("throttle_reasons") or []})}
    for key in ("power_violation_s", "thermal_violation_s"):
        total[key] = sum(t.get(key) or 0.0 for t in summaries)
    return total


def _telemetry_lines(rows: Sequence[BenchmarkResult]) -> list[str]:
    """Return one line of NVML readings over the table's rows, and any throttling."""
    seen = [r.telemetry for r in rows if r.telemetry]
    if not seen:
        return []
    # NVML's polls, and the clock each sample saw (a window of one poll can miss a
    # throttled stretch its samples ran in: 1,980-1,980 MHz over samples at 1,445)
    clocks = [t["sm_clock_mhz"][k] for t in seen for k in ("min", "max")
              if isinstance(t.get("sm_clock_mhz"), dict) and t["sm_clock_mhz"].get(k)]
    sampled = [clock for r in rows if r.telemetry for clock in r.sample_clocks_mhz if clock]
    if clocks and sampled:  # the samples' clocks are estimates, a little high: below only
        clocks.append(min(min(sampled), min(clocks)))
    temps = [t["temperature_c"] for t in seen if t.get("temperature_c") is not None]
    powers = [t["power_w"] for t in seen if t.get("power_w") is not None]
    parts = []
    if clocks:
        parts.append(f"SM clock {min(clocks):,.0f}-{max(clocks):,.0f} MHz")
    if temps:
        parts.append(f"up to {max(temps):.0f} C")
    if powers:
        parts.append(f"{min(powers):,.0f}-{max(powers):,.0f} W")
    reasons = throttle_causes(_summed(seen))  # one cause once, the rows' seconds summed
    slow = sum(len(r.slow_clock_samples_s) for r in rows)
    line = "NVML while sampling: " + (", ".join(parts) or "no readings")
    line += f"; THROTTLED: {', '.join(reasons)}" if reasons else "; no throttling"
    if slow:
        line += f"; {slow} sample(s) below {SLOW_CLOCK:.0%} of the max SM clock set aside"
    # kept where too few would remain without them: the rows' medians mix the two clocks
    kept = sum(len(r.slow_kept_samples_s) for r in rows)
    if kept:
        line += (f"; {kept} sample(s) below {SLOW_CLOCK:.0%} of the max SM clock kept (too "
                 "few at full clock to set them aside)")
    return [line]


def _listed(names: list[str]) -> str:
    """Return names as prose: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
