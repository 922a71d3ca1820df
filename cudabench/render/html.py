"""HTML renderers: one self-contained page for saved runs, and one for a comparison.

Self-contained: CSS and SVG figures inline, no script, no font, nothing fetched, so the file
can be mailed, archived as a CI artifact and opened offline. Every user string (names,
paths, commands, messages) goes through html.escape. Tables sit in horizontally scrollable
wrappers with the first column pinned and a shadow at the edge while more columns are out
of sight, so a phone scrolls a wide table instead of the page; each figure panel is an SVG
of its own, two a row on a screen and one on a phone. What a reader looks for comes first:
figures and tables, then diagnostics, then the devices and where the files came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cudabench.analysis.verdicts import REGRESSION, Comparison, ComparisonRow
from cudabench.common.flag_terms import terms_of_file
from cudabench.common.units import params_text
from cudabench.errors import ResultsFileError
from cudabench.render import plot
from cudabench.render.comparison import (
    COLUMNS,
    RIGHT_ALIGNED,
    benchmark_name,
    describe,
    gate_head,
    gpu_shown,
    row_cells,
    summary_text,
)
from cudabench.render.origins import rows_of
from cudabench.render.run_table import build_tables
from cudabench.results.loader import load_results
from cudabench.results.model import DeviceInfo, ResultsFile, RunOutcome

if TYPE_CHECKING:
    pass
from cudabench.render.html_page import (
    PAGE_COLUMNS,
    VERDICT_CLASSES,
    class_attr,
    esc,
    page,
    run_table_html,
    table_html,
)
from cudabench.render.html_sections import (
    devices_html,
    diagnostic_lines,
    facts_html,
    figures_html,
    file_html,
    svg_figure,
)


def report_html(files: Sequence[ResultsFile], title: str) -> str:
    """Return one page for saved runs: devices, files, figures, every run table, diagnostics."""
    # Several files: each row named by its file, so that a figure draws one series per
    # file (not a vertical line between two runs' points) and a diagnostic says whose it is.
    outcome = RunOutcome(tuple(rows_of(files)),
                         tuple(dict.fromkeys(note for f in files for note in f.said)))
    devices: dict[Any, DeviceInfo] = {}
    for f in files:
        for device in (*f.devices, *(r.device for r in f.benchmarks if r.device)):
            devices.setdefault(device.identity, device)
    body = [f"<h1>{esc(title)}</h1>"]
    body.append(f'<p class="note">{len(outcome.results)} benchmark(s) from {len(files)} '
                f"file(s) on {len(devices)} device(s); the devices, their clocks and "
                'settings are <a href="#devices">below the tables</a>.</p>')
    body.append("<h2>Figures</h2>")
    body.append(figures_html(outcome))
    body.append("<h2>Tables</h2>")
    for f in files:  # each file's tables of its own: ratios and footers from its own rows
        if len(files) > 1:
            body.append(f"<h3>{esc(str(f.path))}</h3>")
        body += [run_table_html(table)
                 for table in build_tables(RunOutcome(tuple(f.benchmarks)))]
    if not outcome.results:
        body.append('<p class="note">No benchmarks.</p>')
    diagnostics = _diagnostics(files, outcome)
    if diagnostics:
        body.append("<h2>Diagnostics</h2>")
        body.append('<ul class="lines">' + "".join(
            f"<li{class_attr(style)}>{esc(text)}</li>" for text, style in diagnostics) + "</ul>")
    body.append('<h2 id="devices">Devices</h2>')
    body.append(devices_html(list(devices.values())))
    # Where the numbers came from matters less than the numbers: last, folded on a phone.
    body.append("<h2>Results files</h2>")
    body += [f"<details><summary class=\"mono\">{esc(f.path)}</summary>\n{file_html(f)}"
             "</details>" for f in files]
    return page(title, body)


def _diagnostics(files: Sequence[ResultsFile], outcome: RunOutcome) -> list[tuple[str, str]]:
    """Return each file's diagnostic lines in the terms its run showed them (a suite's
    keys for `cudabench run`); outcome holds the files' rows in order, named by file."""
    rows, notes, lines = iter(outcome.results), [], []
    for f in files:
        terms = terms_of_file(f.metadata.get("command"))
        notes += diagnostic_lines(RunOutcome((), f.said), terms)
        lines += diagnostic_lines(RunOutcome(tuple(next(rows) for _ in f.benchmarks)), terms)
    return list(dict.fromkeys(notes)) + lines  # a note two files kept, once


def verdict_class(row: ComparisonRow) -> str:
    """Return a verdict cell's class: a slower reference row warns, as it is not gated."""
    if row.verdict in REGRESSION and not row.regressed:
        return "warn"
    return VERDICT_CLASSES.get(row.verdict, "")


def _compared_files(comparison: Comparison) -> list[ResultsFile]:
    """Read the two compared files again for their devices; a file that cannot be read
    now (moved, or a test's made-up path) just leaves its devices out."""
    files = []
    for path in dict.fromkeys((comparison.baseline_path, comparison.current_path)):
        try:
            files.append(load_results(path))
        except (ResultsFileError, OSError):
            continue
    return files


def _change_figure(comparison: Comparison) -> str:
    """Return the changes as one horizontal bar a row, coloured by verdict, over the band
    each row's threshold allows (plot.MAX_BARS at most: the regressions first, then the
    largest changes, a note saying the table holds the rest); '' without matplotlib or
    without a change to draw."""
    rows = [row for row in comparison.rows if row.change is not None]
    if not rows or not plot.available():
        return ""
    # named as the table names them: two GPUs' rows of one benchmark differ by the GPU
    bars = [plot.ChangeBar(
        f"{benchmark_name(row.op, row.variant, row.hot)}"
        f"{f' on {row.device}' if row.device else ''} {params_text(row.params)} "
        f"{plot.shape_label(row.shape)} {row.dtype}".replace(" - ", " "),
        row.change or 0.0, row.threshold, verdict_class(row), row.verdict.value)
        for row in rows]
    drawn = plot.bars_drawn(bars)
    note = (f'\n<p class="note">The figure draws {len(drawn)} of the {len(bars):,} changes: '
            "the regressions first, then the largest; the table above lists every one.</p>"
            if len(drawn) < len(bars) else "")
    return ('<div class="figures single">' + svg_figure(
        plot.change_figure(drawn), "change of each benchmark's median, current against "
        "baseline, with its threshold") + "</div>" + note)


def comparison_html(comparison: Comparison, files: Sequence[ResultsFile] | None = None) -> str:
    """Return one page for a comparison: the summary, the verdicts coloured, a figure of the
    changes, what differs between the cards, the benchmarks in only one file, and both
    files' devices. `files` are the two loaded files (None: read again from the paths)."""
    c = comparison
    head, failed = gate_head(c)
    status = f'<span class="{"bad" if failed else "good"}">{esc(head)}</span>'
    body = [
        "<h1>cudabench compare</h1>",
        f'<p class="summary">{status}: {esc(summary_text(c))}</p>',
        facts_html([("baseline", f"{c.baseline_path} ({gpu_shown(c.baseline_gpu)})"),
                    ("current", f"{c.current_path} ({gpu_shown(c.current_gpu)})")]),
    ]
    if c.setting_changes:
        body.append('<p class="note">The cards differ, which can move every timing:</p>')
        body.append('<ul class="lines">' + "".join(
            f'<li class="warn">{esc(change)}</li>' for change in c.setting_changes) + "</ul>")
    if c.rows:
        order = [COLUMNS.index(name) for name in PAGE_COLUMNS]
        rows = []
        for row in c.rows:
            cells = [(text, "") for text in row_cells(row, c.alpha)]
            verdict = COLUMNS.index("verdict")
            cells[verdict] = (cells[verdict][0], verdict_class(row))
            rows.append([cells[i] for i in order])
        body.append(table_html(PAGE_COLUMNS, rows, RIGHT_ALIGNED,
                               ["regressed" if row.regressed else "" for row in c.rows]))
        body.append(_change_figure(c))
    if c.notes:  # what the gate let through, rows set aside, GPU models only one file has
        body.append('<ul class="lines">' + "".join(
            f'<li class="warn">note: {esc(note)}</li>' for note in c.notes) + "</ul>")
    for title, results, gpu in (
            ("Added (only in the current file)", c.added, c.current_gpu),
            ("Removed (only in the baseline file)", c.removed, c.baseline_gpu)):
        if results:
            body.append(f"<h2>{esc(title)}</h2>")
            body.append('<ul class="lines">' + "".join(
                f"<li>{esc(describe(r, gpu))}</li>" for r in results) + "</ul>")
    loaded = list(files) if files is not None else _compared_files(c)
    devices: dict[Any, DeviceInfo] = {}
    for f in loaded:
        for device in (*f.devices, *(r.device for r in f.benchmarks if r.device)):
            devices.setdefault(device.identity, device)
    if devices:
        body.append('<h2 id="devices">Devices</h2>')
        body.append(devices_html(list(devices.values())))
    return page("cudabench compare", body)
