"""Everything printed with Rich: run tables, the catalog, device info, comparisons.

User-provided text (paths, messages, names) goes in as rich.text.Text, never as markup.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator, Mapping

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from cudabench import compare
from cudabench.bench import COPY_VARIANT, RunOutcome
from cudabench.compare import Comparison, format_seconds, params_text, shape_text
from cudabench.results import BenchmarkResult, DeviceInfo

BASELINE_VARIANT = "naive"
STATUS_STYLES = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold red", "REF": "cyan"}


def stdout_console() -> Console:
    """Return the console for results; wide when piped so tables are not squeezed."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def stderr_console() -> Console:
    """Return the console for diagnostics."""
    return Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 200)


@contextlib.contextmanager
def progress(total: int, console: Console) -> Iterator[Callable[[BenchmarkResult], None]]:
    """Yield advance(result): a live bar on a terminal, a line per benchmark otherwise."""
    if console.is_terminal:
        columns = (TextColumn("{task.description}", markup=False), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("benchmarking", total=total)

            def advance(result: BenchmarkResult) -> None:
                bar.update(task, advance=1, description=f"{result.op}/{result.variant}")

            yield advance
        return
    done = 0

    def log(result: BenchmarkResult) -> None:
        nonlocal done
        done += 1
        console.print(Text(
            f"[{done}/{total}] {result.op}/{result.variant} {shape_text(result.shape)} "
            f"{result.dtype}: {result.status} {format_seconds(result.median_s)}"
        ))

    yield log


def format_bytes(count: int) -> str:
    """Format a byte count in binary units, up to GiB."""
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{value:.4g} {unit}"


def _error_text(value: float) -> str:
    return f"{value:.2e}" if math.isfinite(value) else "inf"


def render_run(outcome: RunOutcome, console: Console) -> None:
    """Print one table per (op, shape, dtype) group of results."""
    groups: dict[tuple, list[BenchmarkResult]] = {}
    for result in outcome.results:
        groups.setdefault((result.op, tuple(result.shape), result.dtype, result.hot), []).append(
            result)
    for rows in groups.values():
        console.print(run_table(rows, outcome.device))


def run_table(rows: list[BenchmarkResult], device: DeviceInfo) -> Table:
    """Build the comparison table of one op at one shape and dtype."""
    first = rows[0]
    medians = {r.variant: r.median_s for r in rows if r.median_s}
    baseline = medians.get(BASELINE_VARIANT)
    copy = next((medians.get(r.variant) for r in rows if r.variant == COPY_VARIANT), None)
    show_flops = any(r.flops for r in rows)

    table = Table(
        title=Text(f"{first.op} {shape_text(first.shape)} ({'x'.join(first.dims)}) {first.dtype}"
                   f"{' hot L2' if first.hot else ''}"),
        caption=Text(
            f"{device.name} (cc {device.compute_capability}, {device.sm_count} SMs) | "
            f"CPU reference (NumPy, float64): {format_seconds(first.cpu_reference_s)}"
        ),
    )
    columns = ["variant", "params", "check", "median", "spread", "min", "max"]
    columns += ["GFLOP/s"] if show_flops else []
    columns += ["GB/s"] + (["% of copy"] if copy else [])
    columns += [f"vs {BASELINE_VARIANT}"] if baseline else []
    columns += ["rel error", "max abs err"]
    for name in columns:
        left = name in ("variant", "params", "check")
        table.add_column(name, justify="left" if left else "right")

    for r in rows:
        stats = r.summary
        cells = [Text(r.variant), Text(params_text(r.params)),
                 Text(r.status, style=STATUS_STYLES[r.status])]
        if stats:
            cells += [format_seconds(stats.median_s), f"±{stats.spread:.1%}",
                      format_seconds(stats.min_s), format_seconds(stats.max_s)]
            if show_flops:
                cells.append(f"{r.gflops:,.1f}" if r.gflops else "-")
            cells.append(f"{r.gbps:,.1f}")
            if copy:
                cells.append(f"{100 * copy / stats.median_s:.1f}%")
            if baseline:
                cells.append(f"{baseline / stats.median_s:.2f}x")
        else:
            cells += ["-"] * (len(columns) - 3 - 2)
        if r.verification is not None and r.verification.total_elements:
            cells += [_error_text(r.verification.rel_error),
                      _error_text(r.verification.max_abs_error)]
        else:
            cells += ["-", "-"]
        table.add_row(*cells)
    return table


def render_diagnostics(outcome: RunOutcome, console: Console) -> None:
    """Print notes, measurement warnings, failures and errors (to stderr)."""
    for note in outcome.notes:
        console.print(Text(f"note: {note}"), soft_wrap=True)
    for r in outcome.results:
        name = f"{r.op}/{r.variant}"
        for warning in r.warnings:
            console.print(Text(f"warning: {name}: {warning}", style="yellow"), soft_wrap=True)
        if r.error:
            console.print(Text(f"error: {name}: {r.error}", style="red"), soft_wrap=True)
        elif r.verification is not None and not r.verification.passed:
            v = r.verification
            console.print(Text(
                f"FAIL: {name}: {v.bad_elements} of {v.total_elements} elements outside "
                f"tolerance ({v.criterion}); relative error {_error_text(v.rel_error)}",
                style="red",
            ), soft_wrap=True)


def render_catalog(catalog: Mapping[str, Mapping], ops: Mapping, console: Console) -> None:
    """Print the ops, their variants, parameters and files."""
    table = Table(title="cudabench kernels")
    for name in ("op", "variant", "params (default; allowed)", "dtypes", "file"):
        table.add_column(name)
    for op_name, variants in catalog.items():
        if not variants:
            table.add_row(Text(op_name), Text("(none)"), "", "", "")
        for variant in variants.values():
            params = "\n".join(f"{p.name}={p.default}; {p.describe_allowed()}"
                               for p in variant.params) or "-"
            table.add_row(Text(op_name), Text(variant.name), Text(params),
                          Text(", ".join(variant.dtypes)), Text(str(variant.path)))
    console.print(table)
    for op_name, op in ops.items():
        console.print(Text(f"{op_name}: {op.summary}; kernels take {op.signature}"))


def render_device(info: DeviceInfo, console: Console) -> None:
    """Print a GPU's properties."""
    table = Table(title="GPU", show_header=False)
    table.add_column("property")
    table.add_column("value")
    rows = [
        ("name", info.name),
        ("compute capability", info.compute_capability),
        ("SMs", str(info.sm_count)),
        ("memory", format_bytes(info.memory_bytes)),
        ("L2 cache", format_bytes(info.l2_bytes)),
        ("SM clock", f"{info.sm_clock_khz / 1e3:.0f} MHz"),
        ("memory clock", f"{info.memory_clock_khz / 1e3:.0f} MHz"),
        ("memory bus", f"{info.memory_bus_bits} bit"),
        ("max threads per block", str(info.max_threads_per_block)),
        ("max shared memory per block", format_bytes(info.max_shared_bytes_per_block)),
        ("driver (CUDA version it supports)", info.driver_version),
        ("CUDA PyCUDA was built with", info.cuda_version),
        ("PyCUDA", info.pycuda_version),
    ]
    for key, value in rows:
        table.add_row(key, Text(value))
    console.print(table)


VERDICT_STYLES = {"slower": "bold red", "failed": "bold red", "faster": "green", "fixed": "green",
                  "noisy": "yellow", "same": ""}


def render_comparison(comparison: Comparison, console: Console) -> None:
    """Print a comparison: its table, added and removed benchmarks, and a summary line."""
    c = comparison
    table = Table(
        title=Text("cudabench compare"),
        caption=Text(f"baseline {c.baseline_path} ({c.baseline_gpu}) | "
                     f"current {c.current_path} ({c.current_gpu})"),
    )
    right = {"baseline", "current", "change", "p-value"}
    for name in compare.COLUMNS:
        table.add_column(name, justify="right" if name in right else "left")
    verdict = compare.COLUMNS.index("verdict")
    for row in c.rows:
        cells = [Text(text) for text in compare.row_cells(row)]
        ungated = row.verdict in compare.REGRESSION and not row.regressed  # a reference row
        style = "yellow" if ungated else VERDICT_STYLES.get(row.verdict, "")
        cells[verdict].stylize(style)
        table.add_row(*cells)
    if c.rows:
        console.print(table)
    for title, results in (("added (only in current)", c.added),
                           ("removed (only in baseline)", c.removed)):
        if results:
            console.print(Text(f"{title}:", style="bold"))
            for result in results:
                console.print(Text(f"  {compare.describe(result)}"))
    regressed = len(c.regressions)
    status = (Text(f"{regressed} regression{'s' if regressed != 1 else ''}: ", style="bold red")
              if regressed else Text("no regression: ", style="green"))
    console.print(status + Text(compare.summary_text(c)))
