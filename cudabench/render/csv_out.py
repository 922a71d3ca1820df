"""CSV renderers: one row per benchmark of a run, one row per benchmark of a comparison.

For spreadsheets and scripts: numbers are left unformatted (seconds as floats, ratios as
plain numbers), and a value that does not apply is an empty cell.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from cudabench.analysis.verdicts import Comparison, Verdict
from cudabench.render.comparison import benchmark_name
from cudabench.render.flag_names import named
from cudabench.render.insight import (
    median_clock_mhz,
    rounds_spread,
    transfer_gbps,
    work_per_joule,
)
from cudabench.render.run_table import derived, table_groups
from cudabench.results.model import BenchmarkResult, RunOutcome
from cudabench.common.units import params_text, shape_text

RUN_LEADING = ("op", "variant", "kind", "params", "shape", "dtype", "hot", "l2_flush", "status",
               "device",
               "pci_bus_id", "median_s", "min_s", "max_s", "spread", "batch_median_s",
               "gflops", "gbps")
RUN_INSIGHT = ("pct_of_peak", "bound", "in_l2", "energy_j_per_launch")
# added last, each when it came, so that earlier columns keep their places
RUN_TRAILING = ("rel_error", "max_abs_error", "rounds", "writeback_s", "sm_mhz",
                "gflops_per_joule", "gb_per_joule", "rounds_spread")
# --transfers' figures (the "behind the times" table's), where a row of the run has them
TRANSFER_COLUMNS = tuple(f"{phase}_{kind}_gbps" for phase in ("h2d", "d2h")
                         for kind in ("pinned", "pageable")) + ("end_to_end_s",
                                                                "cpu_reference_s")
COMPARISON_COLUMNS = ("benchmark", "params", "shape", "dtype", "baseline_median_s",
                      "current_median_s", "change", "p_value", "verdict", "reason", "kind",
                      "regressed", "gpu", "threshold", "threshold_source", "detectable")


def _text(rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow(["" if value is None else _plain(value) for value in row])
    return buffer.getvalue()


def _plain(value: Any) -> Any:
    """Booleans as true/false, which spreadsheets and pandas both read as booleans; text
    that a spreadsheet would run as a formula (a pull request's kernel named
    `=HYPERLINK(...)`) behind a ' that makes it text (OWASP's advice for CSV)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value[:1] in _FORMULA_STARTS:
        return "'" + value
    return value


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def run_to_csv(outcome: RunOutcome) -> str:
    """Return every benchmark of a run as a CSV row, with the tables' comparison columns."""
    groups = table_groups(outcome.results)
    per_row, vs_titles = derived(outcome)
    metrics = list(dict.fromkeys(m for r in outcome.results for m in r.counters))
    units = {m: u for r in outcome.results for m, u in r.counters_units.items()}
    # a counter's column names its unit where ncu gave one: "dram__bytes_read.sum (byte)"
    titled = [f"{m} ({units[m]})" if units.get(m) else m for m in metrics]
    transfers = any(r.transfers for r in outcome.results)
    header = [*RUN_LEADING, *vs_titles, *RUN_INSIGHT, *titled, *RUN_TRAILING,
              *(TRANSFER_COLUMNS if transfers else ())]
    lines: list[Sequence[Any]] = [header]
    for rows in groups:
        for r in rows:
            lines.append([*_run_row(r, per_row[id(r)], list(vs_titles), metrics),
                          *(_transfer_cells(r) if transfers else ())])
    return _text(lines)


def _transfer_cells(r: BenchmarkResult) -> list[Any]:
    """Return a row's --transfers figures, in TRANSFER_COLUMNS order."""
    rates = [transfer_gbps(r, kind, phase) for phase in ("h2d", "d2h")
             for kind in ("pinned", "pageable")]
    return [*rates, r.transfers.get("end_to_end_s"), r.transfers.get("cpu_reference_s")]


def _run_row(r: BenchmarkResult, computed: dict[str, Any], vs_titles: list[str],
             metrics: list[str]) -> list[Any]:
    stats, device, v = r.summary, r.device, r.verification
    energy = r.energy
    per_launch = energy["joules"] / energy["launches"] if energy.get("launches") else None
    checked = v is not None and v.total_elements
    return [
        r.op, r.variant, r.kind.value, params_text(r.params) if r.params else "",
        shape_text(r.shape), r.dtype, r.hot, r.l2_flush, r.status.value,
        device.name if device else None, device.pci_bus_id if device else None,
        r.median_s, stats.min_s if stats else None, stats.max_s if stats else None,
        stats.spread if stats else None, r.batch_median_s, r.gflops,
        r.gbps if r.bytes_moved else None,
        *(computed.get(title) for title in vs_titles),
        computed.get("pct_of_peak"), computed.get("bound"), computed.get("in_l2"), per_launch,
        *(r.counters.get(m) for m in metrics),
        v.rel_error if v is not None and checked else None,
        v.max_abs_error if v is not None and checked else None,
        r.rounds, r.writeback_s, median_clock_mhz(r),
        # the energy table's figure: GFLOP/J where the row counts FLOPs, else GB/J
        work_per_joule(r) if r.flops else None, None if r.flops else work_per_joule(r),
        rounds_spread(r),
    ]


def comparison_to_csv(comparison: Comparison) -> str:
    """Return a comparison as CSV: the paired rows, then the added and removed benchmarks
    (verdict 'added' or 'removed', with the one median there is). Each paired row keeps the
    table's threshold column as numbers: its threshold and --power's detectable change as
    fractions (inf: never), and where the threshold came from."""
    lines: list[Sequence[Any]] = [COMPARISON_COLUMNS]
    for row in comparison.rows:
        # a missing or new row was held against no threshold: the table's "-"
        gated = row.verdict is not Verdict.MISSING and row.threshold_source != "new"
        lines.append([
            benchmark_name(row.op, row.variant, row.hot), params_text(row.params) if row.params
            else "", shape_text(row.shape), row.dtype, row.baseline_median_s,
            row.current_median_s, row.change, row.p_value, row.verdict.value, row.reason,
            row.kind.value, row.regressed, row.device,
            *((row.threshold, named(row.threshold_source or "--threshold"), row.detectable)
              if gated else (None, None, None)),
        ])
    for verdict, results in (("added", comparison.added), ("removed", comparison.removed)):
        for r in results:
            before, after = (None, r.median_s) if verdict == "added" else (r.median_s, None)
            lines.append([
                benchmark_name(r.op, r.variant, r.hot), params_text(r.params) if r.params
                else "", shape_text(r.shape), r.dtype, before, after, None, None, verdict,
                f"only in the {'current' if verdict == 'added' else 'baseline'} file",
                r.kind.value, False,
                # the paired rows' form: "GPU 1" where the current file ran on several
                f"GPU {r.device.index}" if comparison.gpus_named and r.device else "",
                None, None, None,
            ])
    return _text(lines)


def join(parts: Sequence[str], sources: Sequence[str] = ()) -> str:
    """Return CSV texts as one: their columns in first-seen order (files compared with
    different rows have different comparison columns), each row under its own; with
    sources (one a part), a last column `file` says which each row came from (two runs'
    rows of one benchmark are otherwise the same but for their numbers)."""
    if len(parts) == 1 and not sources:
        return parts[0]
    tables = [list(csv.DictReader(io.StringIO(part))) for part in parts]
    names: dict[str, None] = {}
    for part in parts:
        names.update(dict.fromkeys(next(csv.reader(io.StringIO(part)), [])))
    if sources:
        names["file"] = None
        tables = [[{**row, "file": source} for row in table]
                  for table, source in zip(tables, sources)]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(names), lineterminator="\n")
    writer.writeheader()
    for table in tables:
        writer.writerows(table)
    return out.getvalue()

