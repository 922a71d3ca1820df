"""`cudabench report` and `cudabench plot`: saved results shown again, with no GPU.

Both read results files only (any schema version the loader reads) and never import the
measurement code: a laptop without CUDA renders what an H100 measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
from rich.text import Text

from cudabench.errors import UsageError
from cudabench.common.flag_terms import terms_of_file
from cudabench.common.infiles import refuse_unreachable
from cudabench.common.outfiles import EachWritten, check_outputs, write_text
from cudabench.render import csv_out, plot, terminal
from cudabench.render.html import report_html
from cudabench.render.markdown import run_to_markdown
from cudabench.render.origins import rows_of
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, ResultsFile, RunOutcome

FILES = click.Path(path_type=Path, dir_okay=False)


def load_files(paths: Sequence[Path]) -> list[ResultsFile]:
    """Load each results file once (a path named twice would show every row twice)."""
    for path in paths:  # resolve() raises for a loop of links
        refuse_unreachable(path, str(path))
    unique = {path.resolve(): path for path in paths}
    files = [load_results(path) for path in unique.values()]
    if not any(f.benchmarks for f in files):
        names = ", ".join(str(path) for path in unique.values())
        raise UsageError(f"{names}: no benchmarks in {'it' if len(files) == 1 else 'them'} "
                         "(the run measured nothing): there is nothing to show")
    return files


def outcome_of(files: Sequence[ResultsFile]) -> RunOutcome:
    """Return the files' benchmarks as one run; an incomplete file is noted."""
    return RunOutcome(tuple(r for f in files for r in f.benchmarks),
                      tuple(dict.fromkeys(note for f in files for note in f.said)))


def default_title(files: Sequence[ResultsFile]) -> str:
    """Name a report by its GPUs."""
    gpus = sorted({f.gpu_name for f in files if f.gpu_name})
    return f"cudabench report: {', '.join(gpus)}" if gpus else "cudabench report"


@click.command("report")
@click.argument("files", nargs=-1, required=True, type=FILES, metavar="FILE...")
@click.option("--markdown", "markdown_path", type=FILES,
              help="Also write the tables as markdown (a CI job summary).")
@click.option("--html", "html_path", type=FILES,
              help="Also write one self-contained HTML page: devices, figures, tables.")
@click.option("--csv", "csv_path", type=FILES,
              help="Also write one CSV row per benchmark, numbers unformatted.")
@click.option("--title", help="The HTML page's title (default: the GPUs).")
def report_command(files: tuple[Path, ...], markdown_path: Path | None,
                   html_path: Path | None, csv_path: Path | None, title: str | None) -> int:
    """Show saved results (FILE...) as the run's tables, without a GPU."""
    if title is not None and html_path is None:  # it was ignored without a word
        raise UsageError("--title names the HTML page only; without --html it does nothing: "
                         "give --html FILE, or leave --title out")
    check_outputs({"--markdown": markdown_path, "--html": html_path, "--csv": csv_path},
                  files)
    loaded = load_files(files)
    # Each file's tables of its own: merged, a row's ratios came from another run's cuBLAS
    # or copy row, and its footer (the flush, the GPU) from another run's first row.
    console = terminal.stdout_console()
    markdown, csv_parts = [], []
    for one in loaded:
        outcome = outcome_of([one])
        if len(loaded) > 1:
            console.print(Text(f"{one.path}:", style="bold"), soft_wrap=True)
            markdown.append(f"## {one.path}\n\n")
        terminal.render_run(outcome, console)
        # several files: each line names its file, as stderr is read apart from the tables
        terms = terms_of_file(one.metadata.get("command"))
        terminal.render_diagnostics(outcome, terminal.stderr_console(),
                                    str(one.path) if len(loaded) > 1 else "", terms)
        if markdown_path is not None:  # each a second of a large file's: made when asked
            markdown.append(run_to_markdown(outcome, terms))
        if csv_path is not None:
            csv_parts.append(csv_out.run_to_csv(outcome))
    writes = EachWritten()  # one that cannot be written does not stop the next
    if markdown_path is not None:
        writes.attempt(lambda: write_text(markdown_path, "\n".join(markdown), "--markdown"))
    if csv_path is not None:
        writes.attempt(lambda: write_text(
            csv_path, csv_out.join(csv_parts, [one.path for one in loaded]), "--csv"))
    if html_path is not None:
        writes.attempt(lambda: write_text(
            html_path, report_html(loaded, title or default_title(loaded)), "--html"))
    writes.raise_any()
    # The run's verdicts were given when it ran: rendering them again succeeds.
    return 0


def _left_out(results: Sequence[BenchmarkResult], shown: Sequence[BenchmarkResult]) -> str:
    """Return what the figure leaves out, by status (SUSPECT, FAIL, SKIP...), or ''."""
    kept = {id(r) for r in shown}
    counts: dict[str, int] = {}
    for result in results:
        if id(result) not in kept:
            counts[result.status.value] = counts.get(result.status.value, 0) + 1
    return ", ".join(f"{count} {status} row{'s' if count > 1 else ''}"
                     for status, count in counts.items())


@click.command("plot")
@click.argument("files", nargs=-1, required=True, type=FILES, metavar="FILE...")
@click.option("-o", "--output", required=True, type=FILES,
              help="The figure to write: .png, .svg, .pdf or .jpg.")
@click.option("--kind", type=click.Choice(plot.KINDS), default="both", show_default=True,
              help="Throughput against problem size, the roofline, or both in one figure.")
def plot_command(files: tuple[Path, ...], output: Path, kind: str) -> int:
    """Plot saved results (FILE...): throughput by size, and the roofline."""
    plot.check_suffix(output)  # flag mistakes first, before reading any file
    plot.require()
    check_outputs({"-o": output}, files)
    loaded = load_files(files)
    results = rows_of(loaded)
    shown = plot.plotted(results)
    if not shown:
        raise UsageError("nothing to plot: no benchmark in the files was timed and verified")
    if kind == "roofline" and not any(r.flops for r in shown):
        # rows that count FLOPs but were not plotted (FAIL): their op is not the reason.
        # Before the notes: the one line says what was left out.
        failed = _left_out([r for r in results if r.flops], [])
        why = (f"none of the benchmarks that count FLOPs was timed and verified ({failed}: "
               "`cudabench report` says why)" if failed else "no timed, verified benchmark "
               "counts FLOPs (a copy or a transpose does no arithmetic)")
        raise UsageError(f"--kind roofline: {why}; use --kind throughput")
    left_out = _left_out(results, shown)
    if left_out:  # a figure without them, or "no roofline", must not read as all there was
        terminal.stderr_console().print(Text(f"note: not plotted: {left_out}"), soft_wrap=True)
    for text in outcome_of(loaded).notes:  # a stopped run's figure lacks what it never ran
        terminal.stderr_console().print(Text(f"note: {text}"), soft_wrap=True)
    plot.save(plot.figure_of(kind, results), output)
    terminal.stderr_console().print(Text(f"wrote {output}"), soft_wrap=True)
    return 0
