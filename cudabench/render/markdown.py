"""Markdown renderers: a comparison (for a CI job summary) and run tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from cudabench.analysis.verdicts import Comparison
from cudabench.render.comparison import (
    COLUMNS,
    RIGHT_ALIGNED,
    describe,
    gate_head,
    gpu_shown,
    row_cells,
    summary_text,
)
from cudabench.render.run_table import build_tables, diagnostic_lines
from cudabench.results.model import RunOutcome


def markdown_cell(text: str) -> str:
    """Escape a markdown table cell: pipes split cells and newlines end rows; a results
    file's HTML and links (a pull request's) stay text in the job summary."""
    plain = " ".join(str(text).split()).replace("&", "&amp;").replace("<", "&lt;")
    return plain.replace(">", "&gt;").replace("[", "\\[").replace("]", "\\]").replace(
        "|", "\\|")


def to_markdown(comparison: Comparison) -> str:
    """Return the comparison as GitHub-flavoured markdown (for a CI job summary)."""
    c = comparison
    head, failed = gate_head(c)
    verdict_line = f"**{head}**" if failed else head
    lines = [
        "## cudabench compare",
        "",
        f"{verdict_line}: {markdown_cell(summary_text(c))}",
        "",
        f"Baseline: `{_code(c.baseline_path)}` ({markdown_cell(gpu_shown(c.baseline_gpu))}); "
        f"current: `{_code(c.current_path)}` ({markdown_cell(gpu_shown(c.current_gpu))})",
        "",
    ]
    if c.rows:
        right = RIGHT_ALIGNED
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|" + "|".join("---:" if name in right else "---" for name in COLUMNS)
                     + "|")
        for row in c.rows:
            cells = [markdown_cell(text) for text in row_cells(row, c.alpha)]
            if row.regressed:
                verdict = COLUMNS.index("verdict")
                cells[verdict] = f"**{cells[verdict]}**"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if c.setting_changes:
        lines += ["The cards differ, which can move every timing:", ""]
        lines += [f"- {markdown_cell(change)}" for change in c.setting_changes]
        lines.append("")
    if c.notes:
        lines += [f"- note: {markdown_cell(note)}" for note in c.notes] + [""]
    for title, results, gpu in (("Added", c.added, c.current_gpu),
                                ("Removed", c.removed, c.baseline_gpu)):
        if results:
            where = "current" if title == "Added" else "baseline"
            lines.append(f"### {title} (only in the {where} file)")
            lines.append("")
            lines += [f"- {markdown_cell(describe(result, gpu))}" for result in results]
            lines.append("")
    return "\n".join(lines)


def _code(text: str) -> str:
    """Keep a path inside an inline code span: backticks would end it."""
    return " ".join(str(text).split()).replace("`", "'")


def file_heading(path: object) -> str:
    """Return the heading of one file's tables: its path in a code span, where a name's
    HTML, links and emphasis (`<b>`, `[a](url)`, `*x*`) stay text."""
    return f"## `{_code(str(path))}`"


def table_lines(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]],
                right: Callable[[str], bool]) -> list[str]:
    """Return a titled markdown table's lines (right(name): is that column right-aligned)."""
    lines = [f"### {markdown_cell(title)}", "", "| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if right(name) else "---" for name in columns) + "|"]
    lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows]
    return lines + [""]


def run_to_markdown(outcome: RunOutcome, terms: Mapping[str, str] | None = None) -> str:
    """Return every run table as a markdown section (the same model the terminal shows),
    then the notes, warnings and why rows failed, as the HTML page lists them (a CI job
    summary's FAIL says why; the flags they name in terms where given)."""
    lines = []
    for table in build_tables(outcome):
        lines += table_lines(table.title, table.columns,
                             ([cell.text for cell in row] for row in table.rows),
                             table.right_aligned)
        lines += [f"_{markdown_cell(line)}_  " for line in table.caption.splitlines()]
        lines.append("")
    said = diagnostic_lines(outcome, terms)
    if said:
        lines += ["### Diagnostics", ""]
        lines += [f"- {markdown_cell(text)}" for text, _ in said]
    return "\n".join(lines).rstrip() + "\n"
