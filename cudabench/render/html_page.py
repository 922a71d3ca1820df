"""The parts every HTML page of cudabench is built of: the inline CSS, escaping, the page
around a body, and tables (a scrollable wrapper, the first column pinned, cells classed by
status or verdict, never styled inline)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from cudabench import __version__
from cudabench.analysis.verdicts import Verdict
from cudabench.render.run_table import RunTable

if TYPE_CHECKING:
    pass


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

    head = "".join(f'<th scope="col"{class_attr(kind(name))}>{esc(name)}</th>' for name in columns)
    body = []
    for index, row in enumerate(rows):
        cells = "".join(
            f"<td{class_attr(' '.join(filter(None, [kind(name), style])))}>"
            f"{esc(text)}</td>" for name, (text, style) in zip(columns, row))
        row_class = row_classes[index] if index < len(row_classes) else ""
        body.append(f"<tr{class_attr(row_class)}>{cells}</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def class_attr(name: str) -> str:
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
