"""Everything printed with Rich: run tables, the catalog, device info, comparisons.

User-provided text (paths, messages, names) goes in as rich.text.Text, never as markup.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.segment import Segments
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from cudabench.analysis.verdicts import REGRESSION, Comparison, Verdict
from cudabench.common.flag_terms import rename_flags
from cudabench.common.text import escape_controls
from cudabench.common.streams import lead_nowhere
from cudabench.errors import OutputNotWritten
from cudabench.render.comparison import (
    COLUMNS,
    RIGHT_ALIGNED,
    describe,
    gate_head,
    gpu_shown,
    row_cells,
    summary_text,
)
from cudabench.render.catalog import COLUMNS as CATALOG_COLUMNS
from cudabench.render.catalog import listings, shows_files
from cudabench.render.plain_table import table_segments
from cudabench.render.fit import BLANK, Layout, differing_params, layout, wide
from cudabench.render.run_table import (
    RunTable,
    build_tables,
    diagnostic_names,
    failure_line,
    split_to_fit,
)
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind, RunOutcome
from cudabench.common.units import format_bytes, format_seconds, shape_text

PARAMS_COLUMNS = ("params", "best params")  # cut to what differs in a narrow table
STATUS_STYLES = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold red", "REF": "cyan",
                 "TIMEOUT": "bold red", "SUSPECT": "bold yellow", "SKIP": "dim"}


def _width(stream: TextIO | None) -> int | None:
    """Return 200 columns when piped (tables are not squeezed), unless COLUMNS says. A
    COLUMNS that is no width (0, set by some shells; "abc") is taken as unset: Rich read
    0 as the width and printed nothing at all, errors included."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and not (columns.strip().isdigit() and int(columns) > 0):
        del os.environ["COLUMNS"]
        columns = None
    tty = stream is not None and not stream.closed and stream.isatty()
    return None if tty or columns else 200


class _Console(Console):
    """Rich's console, for a reader that may stop reading (`cudabench compare A B | head`):
    the rest of the output is dropped and the command's own exit code stands, where Rich
    would exit 1 (compare's code for a regression)."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """Return a printed string as Rich's Text, its terminal controls written out as
        \\xNN (a line's tab and newline kept): an error or warning a results file holds
        could otherwise retitle or clear the terminal."""
        return super().render_str(escape_controls(text), **kwargs)

    def _check_buffer(self) -> None:
        """Write the buffer; an output that cannot take it (a full disk, a closed or
        failing descriptor, an encoding without its characters) is an environment error,
        exit 2, not a crash (exit 4)."""
        if self._buffer and self._file is None and self._buffer_index == 0 \
                and not self.stderr and sys.stdout is None:
            # started with stdout closed (`>&-`): Rich drops the tables without a word. A
            # closed stderr (`2>&-`) asks for its notes to be dropped: no error, which it
            # could not say anyway, and the run goes on to record what it measured.
            self.quiet = True
            del self._buffer[:]
            raise OutputNotWritten("cannot write to standard output: it is closed (redirect "
                                   "it to a file or /dev/null instead)")
        try:
            super()._check_buffer()
        except BrokenPipeError:  # Rich's on_broken_pipe has it; a reader gone
            raise
        except (OSError, UnicodeEncodeError, ValueError) as exc:
            self.quiet = True  # nothing more to it: it fails, and the error goes to stderr
            del self._buffer[:]
            where = "standard error" if self.stderr else "standard output"
            why = (f"its encoding ({exc.encoding}) lacks the characters the output uses; "
                   "set PYTHONIOENCODING=utf-8" if isinstance(exc, UnicodeEncodeError)
                   else getattr(exc, "strerror", None) or str(exc))
            raise OutputNotWritten(f"cannot write to {where}: {why}") from None

    def on_broken_pipe(self) -> None:
        self.quiet = True
        lead_nowhere(self.file)  # Python flushes the stream again at exit


def stdout_console() -> Console:
    """Return the console for results."""
    return _Console(highlight=False, width=_width(sys.stdout))


def stderr_console() -> Console:
    """Return the console for diagnostics."""
    return _Console(stderr=True, highlight=False, width=_width(sys.stderr))


@contextlib.contextmanager
def progress(total: int, console: Console, mode: bool | None = None, devices: int = 1
             ) -> Iterator[Callable[[BenchmarkResult], None]]:
    """Yield advance(result): a live bar with the current benchmark, count and ETA on a
    terminal; nothing otherwise (CI logs stay clean) unless mode is True, which prints a
    line per benchmark with the ETA; mode False (--quiet) is silent everywhere. With
    several devices each benchmark names its GPU."""

    def name(result: BenchmarkResult) -> str:
        where = f" on GPU {result.device.index}" if devices > 1 and result.device else ""
        return f"{result.op}/{result.variant}{where}"

    if mode is False or (mode is None and not console.is_terminal):
        yield lambda result: None
        return
    if console.is_terminal:
        columns = (TextColumn("{task.description}", markup=False), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("benchmarking", total=total)

            def advance(result: BenchmarkResult) -> None:
                bar.update(task, advance=1, description=name(result))

            yield advance
        return
    done, started = 0, time.monotonic()

    def log(result: BenchmarkResult) -> None:
        nonlocal done
        done += 1
        left = (time.monotonic() - started) / done * (total - done)
        console.print(Text(
            f"[{done}/{total}] {name(result)} {shape_text(result.shape)} "
            f"{result.dtype}: {result.status.value} {format_seconds(result.median_s)}"
            f"{f'; about {left:.0f} s left' if done < total else ''}"
        ))

    yield log


def render_run(outcome: RunOutcome, console: Console) -> None:
    """Print one table per (device, op, shape, dtype) group of results; on a terminal,
    the columns that fit its width whole (fit.py)."""
    width = terminal_width(console)
    for model in build_tables(outcome):
        for part in split_to_fit(model, width):
            table, below = rich_table(part, width)
            print_table(console, table, below, width)


def terminal_width(console: Console) -> int | None:
    """Return the width tables must fit: the terminal's, or the one COLUMNS names; None
    when the output is a file or a pipe and COLUMNS is unset, or with --wide (every
    column kept, each table printed as wide as it needs: never squeezed to the screen)."""
    if wide():
        return None
    return console.width if console.is_terminal or os.environ.get("COLUMNS") else None


def fitted_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Text]],
                 width: int | None, caption: str = "", right: Collection[str] = (),
                 noted_rows: Collection[int] | None = None, rate: str = ""
                 ) -> tuple[Table, list[str]]:
    """Return a table of the columns that fit width whole (every one when width is None;
    rate: its throughput column, kept before the other rate) and the lines to print under
    it: its caption, the columns left out, and the notes its long texts left out became."""
    plan = layout(columns, [[cell.plain for cell in row] for row in rows], width, noted_rows,
                  rate)
    shared = ""
    named = next((name for name in PARAMS_COLUMNS if name in columns), None)
    if named is not None and plan.fitted.left_out:
        rows, plan, shared = _differing_params(columns, rows, width, noted_rows, rate, plan,
                                               named)
    fitted = plan.fitted
    table = Table(title=Text(title))
    for index in fitted.kept:  # a first column wider than the terminal folds, never cut
        folds = index == fitted.kept[0] and fitted.first_width is not None
        table.add_column(columns[index], justify="right" if columns[index] in right else "left",
                         no_wrap=width is not None and not fitted.overflows and not folds,
                         overflow="fold", max_width=fitted.first_width if folds else None)
    for number, row in enumerate(rows):
        cells = [row[i].copy() for i in fitted.kept]
        if number in plan.marks:
            cells[0].append(f" {plan.marks[number]}")
        table.add_row(*cells)
    below = [line for line in (*caption.splitlines(), fitted.footer(), shared, *plan.notes)
             if line]
    return table, below


UNFITTED = 10_000  # the most columns an unfitted table (a pipe, --wide) is printed at
BELOW = "(below)"  # a params cell whose parameters, the same in every row, are under the table
# Set while printing for another Rich console (rich.print(results.table(wide=True))): it
# cuts every line at its width, so an unfitted table is drawn within it, not past it.
_within_width: contextvars.ContextVar[bool] = contextvars.ContextVar("within_width",
                                                                      default=False)


@contextlib.contextmanager
def within_width() -> Iterator[None]:
    """Draw the unfitted tables printed within (every column) at the console's width, their
    columns narrowed and cells folded by Rich, never wider than the console."""
    token = _within_width.set(True)
    try:
        yield
    finally:
        _within_width.reset(token)


def _differing_params(columns: Sequence[str], rows: Sequence[Sequence[Text]],
                      width: int | None, noted_rows: Collection[int] | None, rate: str,
                      plan: Layout, named: str = "params"
                      ) -> tuple[Sequence[Sequence[Text]], Layout, str]:
    """Fit the table again with its params (the column named) cut to those that differ
    between rows, where that keeps the column and more of the others (a sweep's rows look
    alike without it, and whole parameter lists push its numbers off); return the rows,
    the layout and the line naming the parameters cut, or the table as it was."""
    at = columns.index(named)
    cut = differing_params([row[at].plain for row in rows])
    if cut is None:
        return rows, plan, ""
    cells, same = cut
    # no parameter differs (a search's one best row; rows of one params text): "-" read
    # as none at all
    every = len({row[at].plain for row in rows if row[at].plain not in BLANK}) == 1
    if every:
        cells = [BELOW if row[at].plain not in BLANK else cell for cell, row in zip(cells, rows)]
    narrowed = [[*row[:at], Text(cells[number]), *row[at + 1:]]
                for number, row in enumerate(rows)]
    again = layout(columns, [[cell.plain for cell in row] for row in narrowed], width,
                   noted_rows, rate)
    if at not in again.fitted.kept or again.fitted.lost() >= plan.fitted.lost():
        return rows, plan, ""
    if every:
        return narrowed, again, f"{named} of {'the row' if len(rows) == 1 else 'every row'}: {same}"
    return narrowed, again, (f"{named}: those that differ between rows; the others, the "
                             f"same in every row that has them: {same}")


def print_table(console: Console, table: Table, below: Sequence[str] = (),
                width: int | None = None) -> None:
    """Print a table, then the lines under it at the console's width (a narrow table does
    not squeeze them into a column); an unfitted table (width None: a file or a pipe) at
    its full width, even past the console's, so that no cell is squeezed or cut (within
    within_width(): at the console's width, every column kept)."""
    full = width is None and not _within_width.get()
    drawn = table_segments(console, table,
                           max(console.width, UNFITTED) if full else console.width)
    if drawn is not None:  # a large table drawn by Rich took seconds
        console.print(Segments(drawn), crop=False)
    elif not full:
        console.print(table)
    else:
        # Rich prints a table no wider than it needs, so at this width it is as wide as it
        # needs; measuring it first (to widen the console just enough) measured every cell
        # twice more, a quarter of a large report's time
        saved = console.width
        console.width = max(saved, UNFITTED)
        try:
            console.print(table)
        finally:
            console.width = saved
    for line in below:
        console.print(Text(line))


def rich_table(model: RunTable, width: int | None = None) -> tuple[Table, list[str]]:
    """Turn a run-table model into a Rich table and the lines under it; user text never
    becomes markup. With a width, only the columns that fit whole (the rest named)."""
    rows = [[Text(cell.text, style=STATUS_STYLES.get(cell.style, "")) for cell in row]
            for row in model.rows]
    right = [name for name in model.columns if model.right_aligned(name)]
    return fitted_table(model.title, model.columns, rows, width, model.caption, right,
                        rate=model.rate)


def render_diagnostics(outcome: RunOutcome, console: Console, origin: str = "",
                       terms: Mapping[str, str] | None = None) -> None:
    """Print notes, measurement warnings, failures and errors (to stderr), each line led by
    origin (`report` of several files: the file's name) where given; the flags they name
    in terms where given (a suite's keys: "raise timing.max_time", not --max-time)."""
    # On a terminal, long lines wrap at words; piped, each stays one line (one per grep).
    soft = not console.is_terminal
    lead = f"{origin}: " if origin else ""

    def say(text: str, style: str = "") -> None:
        if terms:
            text = rename_flags(text, terms)
        console.print(Text(lead + text, style=style), soft_wrap=soft)

    for note in outcome.notes:
        say(f"note: {note}")
    for r, name in zip(outcome.results, diagnostic_names(outcome.results)):
        for warning in r.warnings:
            say(f"warning: {name}: {warning}", "yellow")
        if r.suspect:
            say(f"SUSPECT: {name}: {r.suspect}: a result this fast is not believed (a kernel "
                "that skips work, or a roof this GPU exceeds)", "yellow")
        if r.skipped and r.kind is not Kind.VENDOR:  # a vendor's: under its table
            say(f"SKIP: {name}: {r.skipped}")
        failed = failure_line(r, name)
        if failed:
            say(failed, "red")


def render_catalog(catalog: Mapping[str, Mapping[str, Any]], ops: Mapping[str, Any],
                   console: Console) -> None:
    """Print one table per op (catalog.py): its variants, dtypes, defaults, allowed values
    and files, each row on one line; on a terminal, the long texts that do not fit become
    notes and the files a line per folder. Under the table, the op's line (what it
    computes, its types, its kernels' signature), then those lines."""
    for item in listings(catalog, ops):
        width = terminal_width(console)
        columns: Sequence[str] = CATALOG_COLUMNS
        rows, caption = item.rows, ""
        if not shows_files(rows, width):
            columns, rows = columns[:-1], tuple(row[:-1] for row in rows)
            caption = "\n".join(item.folders)
        table, below = fitted_table(item.op, columns, [[Text(c) for c in row] for row in rows],
                                    width, caption)
        print_table(console, table, (), width)
        console.print(Text(item.about), soft_wrap=width is None)  # a pipe: one line, whole
        for line in below:
            console.print(Text(line))


def render_device(info: DeviceInfo, versions: Mapping[str, str], console: Console) -> None:
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
        ("CUDA index", str(info.index)),
        ("PCI bus id", info.pci_bus_id or "-"),
        ("UUID", info.uuid or "- (needs nvidia-ml-py)"),  # short: 80 columns hold the row
        ("max threads per block", str(info.max_threads_per_block)),
        ("max shared memory per block", format_bytes(info.max_shared_bytes_per_block)),
        ("driver (CUDA version it supports)", info.driver_version),
        ("CUDA the engine was built with", info.cuda_version),
        *((key.replace("_", " "), value) for key, value in versions.items()),
    ]
    for key, value in rows:
        table.add_row(key, Text(value))
    console.print(table)


VERDICT_STYLES = {Verdict.SLOWER: "bold red", Verdict.FAILED: "bold red",
                  Verdict.MISSING: "bold red", Verdict.UNTESTABLE: "bold red",
                  Verdict.FASTER: "green", Verdict.FIXED: "green", Verdict.NOISY: "yellow",
                  Verdict.SAME: ""}


def render_rows(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                console: Console, noted_rows: Collection[int] | None = None) -> None:
    """Print a plain table of text (user text is never markup); on a terminal, the
    columns that fit its width whole, and the long texts left out as notes for the rows
    in noted_rows (every row when None)."""
    width = terminal_width(console)
    table, below = fitted_table(title, columns, [[Text(cell) for cell in row] for row in rows],
                                width, noted_rows=noted_rows)
    print_table(console, table, below, width)


def render_incomplete(path: str, console: Console) -> None:
    """Say that the current results file stopped early: it fails the gate (an incomplete
    baseline is a note of the comparison's)."""
    console.print(Text(f"error: {path} is incomplete (its run stopped before its last row): "
                       "it fails the gate; run the benchmarks again", style="bold red"),
                  soft_wrap=True)


def render_comparison(comparison: Comparison, console: Console) -> None:
    """Print a comparison: its table, added and removed benchmarks, and a summary line."""
    c = comparison
    rows = []
    for row in c.rows:
        cells = [Text(text) for text in row_cells(row, c.alpha)]
        ungated = row.verdict in REGRESSION and not row.regressed  # a reference row
        cells[COLUMNS.index("verdict")].stylize(
            "yellow" if ungated else VERDICT_STYLES.get(row.verdict, ""))
        rows.append(cells)
    caption = (f"baseline {c.baseline_path} ({gpu_shown(c.baseline_gpu)}) | "
               f"current {c.current_path} ({gpu_shown(c.current_gpu)})")
    width = terminal_width(console)
    # Only rows that are not 'same' have reasons worth a note; with --power every row's
    # threshold note says what its gate catches, which was asked for.
    table, below = fitted_table("cudabench compare", COLUMNS, rows, width, caption,
                                RIGHT_ALIGNED, noted_rows={i for i, row in enumerate(c.rows)
                                                           if row.verdict is not Verdict.SAME
                                                           or row.detectable is not None})
    if c.rows:
        print_table(console, table, below, width)
    soft = not console.is_terminal  # piped: one line each; on a terminal: wrapped at words
    for change in c.setting_changes:
        console.print(Text(f"the card differs: {change}", style="yellow"), soft_wrap=soft)
    for note in c.notes:
        console.print(Text(f"note: {note}", style="yellow"), soft_wrap=soft)
    for title, results, gpu in (("added (only in current)", c.added, c.current_gpu),
                                ("removed (only in baseline)", c.removed, c.baseline_gpu)):
        if results:
            console.print(Text(f"{title}:", style="bold"))
            for result in results:
                console.print(Text(f"  {describe(result, gpu)}"))
    head, failed = gate_head(c)
    status = Text(f"{head}: ", style="bold red" if failed else "green")
    console.print(status + Text(summary_text(c)))
