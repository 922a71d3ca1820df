"""The run-table model: what a benchmark's table shows, as plain text, for every renderer.

One table per device, op, shape, dtype and cache state. Comparison columns come from the
rows present, not from special cases: each reference row (the device-to-device copy) adds
a `% of NAME` column, each vendor row a `vs NAME` column, and a `naive` variant a
`vs naive` column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass
from typing import Any

from cudabench.analysis.spread import device_spreads
from cudabench.common.flag_terms import rename_flags
from cudabench.render.fit import layout
from cudabench.render.insight import (
    assessment,
    copy_bps,
    detail_columns,
    footer_lines,
    insight_columns,
    work_unit,
)
from cudabench.results.model import (
    FAILING_STATUSES,
    BenchmarkResult,
    DeviceInfo,
    Kind,
    RunOutcome,
    Status,
)
from cudabench.common.units import (
    format_amount,
    format_error,
    format_seconds,
    params_text,
    shape_text,
)

BASELINE_VARIANT = "naive"
LEFT_COLUMNS = frozenset({"variant", "params", "check", "shape", "dtype", "median per GPU",
                          "slowest"})


@dataclass(frozen=True)
class Cell:
    """One cell: its text and a semantic style (a status name, or '')."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class RunTable:
    """One table: a title, its columns, rows of cells, and a caption naming the device."""

    title: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    rate: str = ""  # the column that reads the op's throughput (counts_flops), if any
    # The leading columns that name a row, repeated where a table too wide for a terminal
    # continues in a second one (0: it does not, its columns left out are named instead).
    # Behind the times holds what was asked for (--energy, --counters...): none is dropped.
    continues_after: int = 0

    def right_aligned(self, column: str) -> bool:
        """Return whether a column holds numbers (aligned right)."""
        return column not in LEFT_COLUMNS


@dataclass(frozen=True)
class Comparator:
    """A column that relates each row's median to one other row's."""

    title: str
    median_s: float
    format: Callable[[float, float], str]  # (other median, this median) -> text


def table_groups(results: Sequence[BenchmarkResult]) -> list[list[BenchmarkResult]]:
    """Return the rows of each table: a (device, op, shape, dtype, hot) group, in run
    order (the CSV and the records relate a row to the same rows beside it)."""
    groups: dict[tuple[Any, ...], list[BenchmarkResult]] = {}
    for r in results:
        device = r.device.identity if r.device else None
        groups.setdefault((device, r.op, tuple(r.shape), r.dtype, r.hot), []).append(r)
    return list(groups.values())


def build_tables(outcome: RunOutcome) -> list[RunTable]:
    """Return one table per (device, op, shape, dtype, hot) group of results, in run order."""
    tables = []
    devices = {r.device.identity: r.device for r in outcome.results if r.device is not None}
    names = gpu_names(list(devices.values()))  # GPU 0 of two cluster nodes told apart
    for rows in table_groups(outcome.results):
        tables.append(build_table(rows, names))
        details = detail_table(rows, tables[-1].title)
        if details is not None:
            tables.append(details)
    spread = spread_table(outcome.results)
    return tables + ([spread] if spread is not None else [])


def gpu_names(devices: Sequence[DeviceInfo]) -> dict[tuple[Any, ...], str]:
    """Name each GPU by its index, adding the start of its UUID (or its bus id) where two
    share an index (GPU 0 of two cluster nodes)."""
    counts: dict[int, int] = {}
    for device in devices:
        counts[device.index] = counts.get(device.index, 0) + 1
    names = {}
    for device in devices:
        tag = (device.uuid or "")[:12] or device.pci_bus_id or device.name
        names[device.identity] = (f"GPU {device.index}" if counts[device.index] == 1
                                  else f"GPU {device.index} ({tag})")
    return names


def spread_table(results: Sequence[BenchmarkResult]) -> RunTable | None:
    """Return the table of medians per GPU for benchmarks run on several (--replicate)."""
    spreads = device_spreads(results)
    if not spreads:
        return None
    devices = {device.identity: device for item in spreads for device, _ in item.medians}
    name = gpu_names(list(devices.values()))
    rows = []
    for item in spreads:
        r = item.result
        medians = ", ".join(f"{name[device.identity]}: {format_seconds(median)}"
                            for device, median in item.medians)
        rows.append((Cell(f"{r.op}/{r.variant}"), Cell(params_text(r.params)),
                     Cell(shape_text(r.shape)), Cell(r.dtype), Cell(medians),
                     Cell(f"{item.spread:.2%}"), Cell(name[item.slowest.identity])))
    worst = max(spreads, key=lambda item: item.spread)
    return RunTable(
        title="the same benchmarks on each GPU",
        caption=(f"spread: slowest GPU's median over the fastest's; largest "
                 f"{worst.spread:.2%} ({worst.result.op}/{worst.result.variant})"),
        columns=("variant", "params", "shape", "dtype", "median per GPU", "spread",
                 "slowest"),
        rows=tuple(rows))


def comparators(rows: Sequence[BenchmarkResult]) -> list[Comparator]:
    """Return the comparison columns the rows present allow."""
    found = []
    for r in rows:
        # a wrong result's time, or one faster than the GPU allows, is no yardstick: a
        # kernel "0.38x cuBLAS" against a SUSPECT cuBLAS row read as measured
        if r.median_s is None or r.status in FAILING_STATUSES:
            continue
        if r.kind is Kind.REFERENCE:
            found.append(Comparator(f"% of {r.variant}", r.median_s, _share))
        elif r.kind is Kind.VENDOR:
            found.append(Comparator(f"vs {r.variant}", r.median_s, _times))
    naive = baseline_rows(rows)
    if naive and naive[0].median_s is not None:
        found.append(Comparator(f"vs {BASELINE_VARIANT}", naive[0].median_s, _times))
    unique = {c.title: c for c in reversed(found)}  # the first row of a name sets its column
    return [c for c in found if unique[c.title] is c]


def _times(other_s: float, this_s: float) -> str:
    """Return a `vs` column's cell: the other row's time over this one's (0.0059x, not the
    0.01x that two decimals made of it)."""
    return f"{format_amount(other_s / this_s, 2, grouped=False)}x"


def _share(other_s: float, this_s: float) -> str:
    """Return a `% of` column's cell: the other row's time as a share of this one's."""
    return f"{format_amount(100 * other_s / this_s, 1, grouped=False)}%"


def baseline_rows(rows: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """Return the timed naive rows that passed; `vs naive` is against the first."""
    return [r for r in rows if r.variant == BASELINE_VARIANT and r.kind is Kind.VARIANT
            and r.median_s and r.status not in FAILING_STATUSES]


def baseline_line(rows: Sequence[BenchmarkResult]) -> list[str]:
    """Say which naive row `vs naive` is against where the table holds several (a sweep of
    naive's own parameters: it read 1.92x for naive TILE=32, against TILE=8, unsaid); the
    column keeps its one name, which CSV readers and several files' tables share."""
    naive = baseline_rows(rows)
    if len({params_text(r.params) for r in naive}) < 2:
        return []
    return [f"vs {BASELINE_VARIANT}: against {BASELINE_VARIANT} "
            f"{params_text(naive[0].params)}, the first of the table"]


def _ratio(title: str, other_s: float, this_s: float) -> float:
    """Return a comparison column's number: a percentage for '% of', else a ratio."""
    return 100 * other_s / this_s if title.startswith("% of") else other_s / this_s


def derived(outcome: RunOutcome) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """Return what the tables compute per row (keyed by id(row)): its comparison columns
    ("vs cuBLAS", "% of memcpy_dtod", against the rows of its table) and where the roofline
    places it (pct_of_peak, bound, in_l2); and the comparison titles, in the tables' order."""
    per_row: dict[int, dict[str, Any]] = {}
    vs_titles: dict[str, None] = {}  # in first-seen order, as the tables add them
    for rows in table_groups(outcome.results):
        columns = comparators(rows)
        vs_titles.update(dict.fromkeys(c.title for c in columns))
        achievable = copy_bps(rows)
        for r in rows:
            a = assessment(r, achievable)
            median = r.median_s
            values: dict[str, Any] = {
                c.title: _ratio(c.title, c.median_s, median) for c in columns if median}
            if a is not None:
                values |= {"pct_of_peak": a.pct_of_peak, "bound": a.bound, "in_l2": a.in_l2}
            per_row[id(r)] = values
    return per_row, list(vs_titles)


def counts_flops(members: Sequence[BenchmarkResult]) -> bool:
    """Return whether rows read in FLOP/s: some row counts FLOPs and the op does more
    than a FLOP per byte. A streaming op (dot: 0.25 FLOP/byte) is read in GB/s, beside
    its copy row (the run table's rate column, the throughput figure's axis)."""
    counted = [r for r in members if r.flops]
    return bool(counted) and any(not r.bytes_moved or r.flops / r.bytes_moved >= 1
                                 for r in counted)


def build_table(rows: Sequence[BenchmarkResult],
                names: Mapping[tuple[Any, ...], str] | None = None) -> RunTable:
    """Build the table of one op at one shape and dtype on one device."""
    first = rows[0]
    show_flops = any(r.flops for r in rows)
    ops_rate = f"{work_unit(rows)}/s"  # GOP/s for int32, as the footer's TOPS
    columns_of = comparators(rows)
    insight = insight_columns(rows)
    columns = ["variant", "params", "check", "median", "spread"]
    columns += [ops_rate] if show_flops else []
    columns += ["GB/s"] + [c.title for c in columns_of]
    columns += [c.title for c in insight] + ["rel error", "max abs err"]

    table_rows = []
    for r in rows:
        stats = r.summary
        cells = [Cell(r.variant), Cell(params_text(r.params)),
                 Cell(r.status.value, r.status.value)]
        if stats:
            cells += [Cell(format_seconds(stats.median_s)), Cell(f"±{stats.spread:.1%}")]
            if show_flops:
                cells.append(Cell(format_amount(r.gflops) if r.gflops else "-"))
            cells.append(Cell(format_amount(r.gbps) if r.gbps else "-"))
            cells += [Cell(c.format(c.median_s, stats.median_s)) for c in columns_of]
        else:
            cells += [Cell("-")] * (len(columns) - 3 - 2 - len(insight))
        cells += [Cell(column.cell(r)) for column in insight]
        v = r.verification
        if v is not None and v.total_elements:
            cells += [Cell(format_error(v.rel_error)), Cell(format_error(v.max_abs_error))]
        else:
            cells += [Cell("-"), Cell("-")]
        table_rows.append(tuple(cells))

    title = (f"{first.op} {shape_text(first.shape)} ({'x'.join(first.dims)}) {first.dtype}"
             f"{' hot L2' if first.hot else ''}")
    # rows of no GPU: a GPU given up before it ran them (--devices), their errors say which
    where = ("(no GPU ran these rows: each row's error says why)"
             if first.device is None and all(r.status is Status.ERROR for r in rows)
             else describe_device(first.device, names))
    # the first row that has one: a first row that timed out read "-" for every row
    reference_s = next((r.cpu_reference_s for r in rows if r.cpu_reference_s is not None),
                       None)
    caption = "\n".join([
        f"{where} | CPU reference (NumPy, float64): {format_seconds(reference_s)}",
        *baseline_line(rows),
        *footer_lines(rows),
    ])
    rate = ops_rate if counts_flops(rows) else "GB/s"
    return RunTable(title, caption, tuple(columns), tuple(table_rows), rate)


def detail_table(rows: Sequence[BenchmarkResult], title: str) -> RunTable | None:
    """Return the table of what lies behind each row's time: its range, the SM clock,
    energy and counters (None when a plain run has nothing beyond the range to show)."""
    columns = detail_columns(rows)
    if not any(column.title not in ("min", "max") for column in columns):
        return None
    # A sweep has a variant in several configurations: its params tell the rows apart.
    configs = len({r.variant for r in rows}) < len(rows)
    lead = ("variant", "params") if configs else ("variant",)

    def named(r: BenchmarkResult) -> tuple[Cell, ...]:
        return (Cell(r.variant), Cell(params_text(r.params)))[:len(lead)]

    table_rows = tuple((*named(r), *(Cell(c.cell(r)) for c in columns)) for r in rows)
    return RunTable(f"{title}: behind the times", "", (*lead, *(c.title for c in columns)),
                    table_rows, continues_after=len(lead))


def split_to_fit(model: RunTable, width: int | None) -> list[RunTable]:
    """Return the table as tables that each fit width whole: a table that continues
    (continues_after) goes on in more tables of its naming columns and those left out;
    any other, or one with no room for more than its naming columns, stays whole."""
    if width is None or not model.continues_after:
        return [model]
    fitted = layout(model.columns, [[c.text for c in row] for row in model.rows], width,
                    rate=model.rate).fitted
    lead = range(model.continues_after)
    kept = sorted({*lead, *fitted.kept})
    rest = [i for i in range(len(model.columns)) if i not in kept]
    if not rest or len(kept) == len(lead):
        return [model]

    def part(indices: Sequence[int], title: str) -> RunTable:
        return dataclasses.replace(
            model, title=title, columns=tuple(model.columns[i] for i in indices),
            rows=tuple(tuple(row[i] for i in indices) for row in model.rows))

    title = model.title.removesuffix(" (continued)")
    return [part(kept, model.title),
            *split_to_fit(part([*lead, *rest], f"{title} (continued)"), width)]


def diagnostic_names(results: Sequence[BenchmarkResult]) -> list[str]:
    """Return the name each row's warnings and failures go by: op/variant, with its params,
    shape and dtype where the run holds that variant more than once (a sweep, a suite of
    sizes), whose warnings would otherwise not say which configuration they mean."""
    counts: dict[tuple[str, str], int] = {}
    gpus: dict[tuple[Any, ...], set[Any]] = {}  # a configuration's GPUs (--replicate)
    for r in results:
        counts[r.op, r.variant] = counts.get((r.op, r.variant), 0) + 1
        gpus.setdefault(r.key, set()).add(r.device.identity if r.device else None)
    named = gpu_names(list({r.device.identity: r.device for r in results
                            if r.device is not None}.values()))
    names = []
    for r in results:
        name = f"{r.op}/{r.variant}"
        if counts[r.op, r.variant] > 1:
            name = " ".join(part for part in (name, params_text(r.params), shape_text(r.shape),
                                              r.dtype, "(hot L2)" if r.hot else "")
                            if part and part != "-")
        if len(gpus[r.key]) > 1 and r.device is not None:  # which card throttled
            name += f" on {named[r.device.identity]}"
        names.append(name)
    return names


def failure_line(r: BenchmarkResult, name: str) -> str | None:
    """Return the line a failed row says under the tables, or None: `FAIL:` and why its
    result is wrong (the elements outside tolerance, or what its kernel did, a fault or a
    write past its result, which leaves no elements to count), `error:` and why a row could
    not be run or timed out."""
    if r.status is Status.FAIL and r.error:  # it counts as failed (exit 3), not an error
        return f"FAIL: {name}: {r.error}"
    if r.error:
        return f"error: {name}: {r.error}"
    if r.verification is not None and r.status is Status.FAIL:
        v = r.verification
        return (f"FAIL: {name}: {v.bad_elements} of {v.total_elements} elements outside "
                f"tolerance ({v.criterion}); relative error {format_error(v.rel_error)}")
    return None


def _named(text: str, terms: Mapping[str, str] | None) -> str:
    return rename_flags(text, terms) if terms else text


def diagnostic_lines(outcome: RunOutcome, terms: Mapping[str, str] | None = None
                     ) -> list[tuple[str, str]]:
    """Return (text, class) for each note, warning, SUSPECT, error and failure, as the
    terminal prints them after a run, for the HTML page and the markdown (the flags they
    name in terms where given); a row of one of several files (its origin) led by the
    file's name, as `report` of several files leads its lines."""
    lines = [(f"note: {_named(note, terms)}", "") for note in outcome.notes]
    for r, name in zip(outcome.results, diagnostic_names(outcome.results)):
        said: list[tuple[str, str]] = []
        said += [(f"warning: {name}: {warning}", "warn") for warning in r.warnings]
        if r.suspect:
            said.append((f"SUSPECT: {name}: {r.suspect}", "warn"))
        failed = failure_line(r, name)
        if failed:
            said.append((failed, "bad"))
        lead = f"{r.origin}: " if r.origin else ""
        lines += [(lead + _named(text, terms), style) for text, style in said]
    return lines


def describe_device(device: DeviceInfo | None,
                    names: Mapping[tuple[Any, ...], str] | None = None) -> str:
    """Name a device in a caption: model, capability, SMs, and which one it was (by names,
    gpu_names': the start of its UUID where two GPUs of the run share an index)."""
    if device is None:
        return "(device not recorded)"
    name = (names or {}).get(device.identity, f"GPU {device.index}")
    where = f", {name}" + (f" at {device.pci_bus_id}" if device.pci_bus_id else "")
    return f"{device.name} (cc {device.compute_capability}, {device.sm_count} SMs{where})"
