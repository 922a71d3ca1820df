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

import html
import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cudabench import __version__
from cudabench.analysis.compare import REGRESSION, Comparison, ComparisonRow, Verdict
from cudabench.errors import ResultsFileError
from cudabench.insight import roofs
from cudabench.render import plot
from cudabench.render.comparison import (
    COLUMNS,
    RIGHT_ALIGNED,
    benchmark_name,
    describe,
    row_cells,
    summary_text,
)
from cudabench.render.run_table import RunTable, build_tables
from cudabench.results.loader import load_results
from cudabench.results.model import DeviceInfo, ResultsFile, RunOutcome, Status
from cudabench.common.units import format_bytes, format_error, params_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Semantic classes only: a cell's style is looked up here, never written into the page.
STATUS_CLASSES = {"PASS": "good", "FAIL": "bad", "ERROR": "bad", "TIMEOUT": "bad",
                  "SUSPECT": "warn", "SKIP": "muted", "REF": "info"}
VERDICT_CLASSES = {Verdict.FAILED: "bad", Verdict.SLOWER: "bad", Verdict.MISSING: "bad",
                   Verdict.UNTESTABLE: "bad", Verdict.NOISY: "warn",
                   Verdict.FASTER: "good", Verdict.FIXED: "good", Verdict.SAME: ""}
# The comparison's columns as a page shows them: the verdict and the change beside the name,
# where a phone shows them without scrolling; the long explanations last.
PAGE_COLUMNS = ("benchmark", "verdict", "change", "baseline", "current", "p-value", "params",
                "shape", "dtype", "reason", "threshold")
WRAPPED = frozenset({"reason", "threshold"})  # prose: wraps rather than widening the table

CSS = """
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #6a737d;
  --line: #d0d7de; --head: #f3f5f7; --good: #1a7f37; --good-bg: #dafbe1; --bad: #b42318;
  --bad-bg: #ffebe9; --warn: #7d5a00; --warn-bg: #fff3bf; --info: #0a6c8c; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8b949e; --line: #30363d; --head: #161b22;
    --good: #7ee787; --good-bg: #0f2e1a; --bad: #ff938a; --bad-bg: #3b1113; --warn: #f2cc60;
    --warn-bg: #3a2d05; --info: #79c0ff; }
  svg.figure { background: #ffffff; }
}
html { font-size: 100%; -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 80rem; padding: 1rem; color: var(--fg);
  background: var(--bg); line-height: 1.45;
  font: 1rem/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.5rem; margin: 0 0 0.5rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 0.5rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.5rem 0 0.5rem; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.85rem; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; max-width: 100%;
  width: fit-content; border: 1px solid var(--line); border-radius: 0.375rem;
  background: linear-gradient(to left, var(--bg) 40%, transparent) right / 1.5rem 100%
    no-repeat local,
    radial-gradient(farthest-side at 100% 50%, rgba(0, 0, 0, 0.28), transparent) right /
    0.75rem 100% no-repeat scroll; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { padding: 0.3rem 0.6rem; border-bottom: 1px solid var(--line); white-space: nowrap;
  text-align: left; }
th { background: var(--head); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th:first-child, td:first-child { position: sticky; left: 0; background: var(--bg); }
th:first-child { background: var(--head); }
th.wrap, td.wrap { white-space: normal; min-width: 12rem; }
td.differs { font-weight: 700; }
tr:last-child td { border-bottom: 0; }
td.good { color: var(--good); background: var(--good-bg); font-weight: 600; }
td.bad { color: var(--bad); background: var(--bad-bg); font-weight: 700; }
td.warn { color: var(--warn); background: var(--warn-bg); font-weight: 700; }
td.muted { color: var(--muted); }
td.info { color: var(--info); }
tr.regressed td { font-weight: 700; }
.caption { color: var(--muted); font-size: 0.8rem; margin: 0.4rem 0 0; padding: 0;
  list-style: none; overflow-wrap: anywhere; }
.note { color: var(--muted); font-size: 0.9rem; }
.summary { font-size: 1.05rem; }
.summary .bad { color: var(--bad); font-weight: 700; }
.summary .good { color: var(--good); font-weight: 700; }
ul.lines { padding-left: 1.2rem; font-size: 0.9rem; overflow-wrap: anywhere; }
ul.lines li.bad { color: var(--bad); }
ul.lines li.warn { color: var(--warn); }
a { color: var(--info); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem;
  font-size: 0.9rem; margin: 0.5rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.figures { display: grid; gap: 1rem; margin: 0.5rem 0;
  grid-template-columns: repeat(auto-fill, minmax(min(100%, 30rem), 1fr)); }
.figures figure { margin: 0; }
.figures.single { grid-template-columns: minmax(0, 40rem); }
svg.figure { width: 100%; height: auto; display: block; }
details { margin: 0.4rem 0; }
summary { cursor: pointer; }
footer { margin-top: 2rem; color: var(--muted); font-size: 0.8rem; }
@media (max-width: 40rem) {
  body { padding: 0.6rem; }
  h1 { font-size: 1.25rem; }
  table { font-size: 0.8rem; }
  th, td { padding: 0.25rem 0.45rem; }
  dl.facts { grid-template-columns: minmax(0, 2fr) 3fr; font-size: 0.85rem; }
}
"""


def esc(value: object) -> str:
    """Escape any value for element text and quoted attributes."""
    return html.escape(str(value), quote=True)


def page(title: str, body: Iterable[str]) -> str:
    """Return a whole HTML document: the head, inline CSS, and the body's parts."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        *body,
        f"<footer>made by cudabench {esc(__version__)}; self-contained: nothing is fetched"
        "</footer>",
        "</body>",
        "</html>",
        "",
    ])


def table_html(columns: Sequence[str], rows: Iterable[Sequence[tuple[str, str]]],
               right: Iterable[str] = (), row_classes: Sequence[str] = ()) -> str:
    """Return a table in its scrollable wrapper; each cell is (text, class)."""
    numeric = frozenset(right)

    def kind(name: str) -> str:
        return "num" if name in numeric else "wrap" if name in WRAPPED else ""

    head = "".join(f'<th scope="col"{_class(kind(name))}>{esc(name)}</th>' for name in columns)
    body = []
    for index, row in enumerate(rows):
        cells = "".join(
            f"<td{_class(' '.join(filter(None, [kind(name), style])))}>"
            f"{esc(text)}</td>" for name, (text, style) in zip(columns, row))
        row_class = row_classes[index] if index < len(row_classes) else ""
        body.append(f"<tr{_class(row_class)}>{cells}</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _class(name: str) -> str:
    return f' class="{esc(name)}"' if name else ""


def run_table_html(table: RunTable) -> str:
    """Return one run table: its title, the table with status cells coloured, its caption."""
    rows = [[(cell.text, STATUS_CLASSES.get(cell.style, "")) for cell in row]
            for row in table.rows]
    right = [name for name in table.columns if table.right_aligned(name)]
    caption = "".join(f"<li>{esc(line)}</li>" for line in table.caption.splitlines() if line)
    return "\n".join([
        "<section>",
        f"<h3>{esc(table.title)}</h3>",
        table_html(table.columns, rows, right),
        f'<ul class="caption">{caption}</ul>' if caption else "",
        "</section>",
    ])


def _facts(pairs: Iterable[tuple[str, object]]) -> str:
    items = "".join(f"<dt>{esc(key)}</dt><dd>{esc(value)}</dd>" for key, value in pairs)
    return f'<dl class="facts">{items}</dl>'


# NVML settings by their key in the file: a label, and how to show the value.
SETTINGS: dict[str, tuple[str, str]] = {
    "power_limit_w": ("power limit", "{:,.0f} W"),
    "ecc_enabled": ("ECC", ""),
    "mig_enabled": ("MIG", ""),
    "persistence_enabled": ("persistence mode", ""),
    "max_sm_clock_mhz": ("max SM clock", "{:,.0f} MHz"),
    "max_memory_clock_mhz": ("max memory clock", "{:,.0f} MHz"),
    "pcie_max_generation": ("PCIe generation (max)", "Gen {}"),
    "pcie_max_width": ("PCIe width (max)", "x{}"),
}


def _setting(key: str, value: Any) -> tuple[str, str]:
    """Return a setting's label and value as people read them (unknown keys as they are)."""
    label, template = SETTINGS.get(key, (key.replace("_", " "), ""))
    if key == "pcie_peak_bytes_per_s" and isinstance(value, (int, float)):
        return "PCIe peak", f"{value / 1e9:,.1f} GB/s"
    if isinstance(value, bool):
        return label, "on" if value else "off"
    if template and isinstance(value, (int, float)):
        return label, template.format(value)
    return label, f"{value:,.6g}" if isinstance(value, float) else str(value)


def device_facts(device: DeviceInfo) -> list[tuple[str, str]]:
    """Return a device's facts: model, clocks, memory, driver, NVML settings and roofs."""
    pairs: list[tuple[str, object]] = [
        ("compute capability", device.compute_capability),
        ("SMs", device.sm_count),
        ("SM clock (max)", f"{device.sm_clock_khz / 1e3:.0f} MHz"),
        ("memory clock", f"{device.memory_clock_khz / 1e3:.0f} MHz"),
        ("memory bus", f"{device.memory_bus_bits} bit"),
        ("memory", format_bytes(device.memory_bytes)),
        ("L2 cache", format_bytes(device.l2_bytes)),
        ("CUDA index", device.index),
        ("PCI bus id", device.pci_bus_id or "-"),
        ("UUID", device.uuid or "-"),
        ("driver (CUDA version it supports)", device.driver_version),
        ("CUDA the engine was built with", device.cuda_version),
    ]
    pairs += [_setting(key, value) for key, value in device.settings.items()]
    pairs.append(("roofs", roofs.describe(roofs.Roofs.of(device)).removeprefix("roofs: ")))
    return [(key, str(value)) for key, value in pairs]


def device_html(device: DeviceInfo) -> str:
    """Return one device's facts under its name."""
    return f"<h3>{esc(device.name)}</h3>\n{_facts(device_facts(device))}"


def device_label(device: DeviceInfo) -> str:
    """Name a device for a column head, briefly: CUDA index and the start of its UUID (the
    model is the table's first row)."""
    return f"GPU {device.index}{', ' + device.uuid[:12] if device.uuid else ''}"


def devices_html(devices: Sequence[DeviceInfo]) -> str:
    """Return the devices' facts: a list for one device; for several, a table with a column
    per device, a fact's row in bold where the devices differ (the roofs' long text under
    the table, once where they agree)."""
    if not devices:
        return '<p class="note">No device recorded (a file older than schema 2).</p>'
    if len(devices) == 1:
        return device_html(devices[0])
    facts = [{"model": device.name, **dict(device_facts(device))} for device in devices]
    keys = list(dict.fromkeys(key for fact in facts for key in fact if key != "roofs"))
    rows = []
    for key in keys:
        values = [fact.get(key, "-") for fact in facts]
        style = "differs" if len(set(values)) > 1 else ""
        rows.append([(key, "")] + [(value, style) for value in values])
    roof_lines = dict.fromkeys(fact["roofs"] for fact in facts)
    roof_text = "".join(f"<li>{esc(line)}</li>" for line in roof_lines)
    return (table_html(["", *map(device_label, devices)], rows)
            + f'\n<ul class="caption"><li>roofs{" (each device)" if len(roof_lines) > 1 else ""}'
              f':</li>{roof_text}</ul>')


def _file_html(results: ResultsFile) -> str:
    meta = results.metadata
    command = meta.get("command")
    pairs: list[tuple[str, object]] = [
        ("created", meta.get("created", "-")),
        ("command", shlex.join(map(str, command)) if isinstance(command, list) else "-"),
        ("host", meta.get("host", "-")),
        ("git commit", f"{meta.get('git_commit') or '-'}"
                       f"{' (dirty)' if meta.get('git_dirty') else ''}"),
        ("schema version", results.schema_version),
        ("benchmarks", len(results.benchmarks)),
    ]
    if meta.get("complete") is False:
        pairs.append(("complete", "no: its run stopped early"))
    return _facts(pairs)


def diagnostic_lines(outcome: RunOutcome) -> list[tuple[str, str]]:
    """Return (text, class) for each note, warning, SUSPECT, error and failure, as the
    terminal prints them after a run."""
    lines = [(f"note: {note}", "") for note in outcome.notes]
    for r in outcome.results:
        name = f"{r.op}/{r.variant}"
        lines += [(f"warning: {name}: {warning}", "warn") for warning in r.warnings]
        if r.suspect:
            lines.append((f"SUSPECT: {name}: {r.suspect}", "warn"))
        if r.error:
            lines.append((f"error: {name}: {r.error}", "bad"))
        elif r.verification is not None and r.status is Status.FAIL:
            v = r.verification
            lines.append((f"FAIL: {name}: {v.bad_elements} of {v.total_elements} elements "
                          f"outside tolerance ({v.criterion}); relative error "
                          f"{format_error(v.rel_error)}", "bad"))
    return lines


def svg_figure(figure: Figure, alt: str) -> str:
    """Return a matplotlib figure as an inline <svg> that scales to its box, named for a
    screen reader."""
    svg = plot.svg_text(figure)
    return ("<figure>" + svg.replace(
        "<svg", f'<svg class="figure" role="img" aria-label="{esc(alt)}"', 1) + "</figure>")


def figures_html(outcome: RunOutcome) -> str:
    """Return the throughput panels and a roofline per device as inline SVG (a note where
    there is no roofline), or a note without matplotlib (the page is still complete)."""
    if not plot.available():
        return f'<p class="note">No figures: {esc(plot.HINT)}.</p>'
    panels = plot.panel_figures(outcome.results)
    parts = []
    if panels:
        parts.append('<div class="figures">' + "".join(
            svg_figure(figure, alt) for alt, figure in panels) + "</div>")
    else:
        parts.append(f'<p class="note">No figures: {esc(plot.NO_THROUGHPUT)}.</p>')
    if panels and not plot.roofline_rows(outcome.results):
        parts.append(f'<p class="note">No {esc(plot.NO_ROOFLINE.removeprefix("no "))}.</p>')
    return "\n".join(parts)


def report_html(files: Sequence[ResultsFile], title: str) -> str:
    """Return one page for saved runs: devices, files, figures, every run table, diagnostics."""
    outcome = RunOutcome(tuple(r for f in files for r in f.benchmarks),
                         tuple(f"{f.path} is incomplete: its run stopped early" for f in files
                               if f.metadata.get("complete") is False))
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
    body += [run_table_html(table) for table in build_tables(outcome)] or [
        '<p class="note">No benchmarks.</p>']
    diagnostics = diagnostic_lines(outcome)
    if diagnostics:
        body.append("<h2>Diagnostics</h2>")
        body.append('<ul class="lines">' + "".join(
            f"<li{_class(style)}>{esc(text)}</li>" for text, style in diagnostics) + "</ul>")
    body.append('<h2 id="devices">Devices</h2>')
    body.append(devices_html(list(devices.values())))
    # Where the numbers came from matters less than the numbers: last, folded on a phone.
    body.append("<h2>Results files</h2>")
    body += [f"<details><summary class=\"mono\">{esc(f.path)}</summary>\n{_file_html(f)}"
             "</details>" for f in files]
    return page(title, body)


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
    each row's threshold allows; '' without matplotlib or without a change to draw."""
    rows = [row for row in comparison.rows if row.change is not None]
    if not rows or not plot.available():
        return ""
    bars = [plot.ChangeBar(
        f"{benchmark_name(row.op, row.variant, row.hot)} {params_text(row.params)} "
        f"{plot.shape_label(row.shape)} {row.dtype}".replace(" - ", " "),
        row.change or 0.0, row.threshold, verdict_class(row), row.verdict.value)
        for row in rows]
    return ('<div class="figures single">' + svg_figure(
        plot.change_figure(bars), "change of each benchmark's median, current against "
        "baseline, with its threshold") + "</div>")


def comparison_html(comparison: Comparison, files: Sequence[ResultsFile] | None = None) -> str:
    """Return one page for a comparison: the summary, the verdicts coloured, a figure of the
    changes, what differs between the cards, the benchmarks in only one file, and both
    files' devices. `files` are the two loaded files (None: read again from the paths)."""
    c = comparison
    regressed = len(c.regressions)
    status = (f'<span class="bad">{regressed} regression{"s" if regressed != 1 else ""}</span>'
              if regressed else '<span class="good">no regression</span>')
    body = [
        "<h1>cudabench compare</h1>",
        f'<p class="summary">{status}: {esc(summary_text(c))}</p>',
        _facts([("baseline", f"{c.baseline_path} ({c.baseline_gpu or 'no GPU recorded'})"),
                ("current", f"{c.current_path} ({c.current_gpu or 'no GPU recorded'})")]),
    ]
    if c.setting_changes:
        body.append('<p class="note">The cards differ, which can move every timing:</p>')
        body.append('<ul class="lines">' + "".join(
            f'<li class="warn">{esc(change)}</li>' for change in c.setting_changes) + "</ul>")
    if c.rows:
        order = [COLUMNS.index(name) for name in PAGE_COLUMNS]
        rows = []
        for row in c.rows:
            cells = [(text, "") for text in row_cells(row)]
            verdict = COLUMNS.index("verdict")
            cells[verdict] = (cells[verdict][0], verdict_class(row))
            rows.append([cells[i] for i in order])
        body.append(table_html(PAGE_COLUMNS, rows, RIGHT_ALIGNED,
                               ["regressed" if row.regressed else "" for row in c.rows]))
        body.append(_change_figure(c))
    for title, results in (("Added (only in the current file)", c.added),
                           ("Removed (only in the baseline file)", c.removed)):
        if results:
            body.append(f"<h2>{esc(title)}</h2>")
            body.append('<ul class="lines">' + "".join(
                f"<li>{esc(describe(r))}</li>" for r in results) + "</ul>")
    loaded = list(files) if files is not None else _compared_files(c)
    devices: dict[Any, DeviceInfo] = {}
    for f in loaded:
        for device in (*f.devices, *(r.device for r in f.benchmarks if r.device)):
            devices.setdefault(device.identity, device)
    if devices:
        body.append('<h2 id="devices">Devices</h2>')
        body.append(devices_html(list(devices.values())))
    return page("cudabench compare", body)
