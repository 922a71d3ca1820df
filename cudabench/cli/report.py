"""`cudabench report` and `cudabench plot`: saved results shown again, with no GPU.

Both read results files only (any schema version the loader reads) and never import the
measurement code: a laptop without CUDA renders what an H100 measured.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.text import Text

from cudabench.errors import UsageError
from cudabench.common.flag_terms import terms_of_file
from cudabench.common.infiles import refuse_unreachable
from cudabench.common.outfiles import EachWritten, check_outputs, write_text
from cudabench.ops.sizes import expand_values
from cudabench.render import csv_out, plot, terminal
from cudabench.render.html import report_html
from cudabench.render.markdown import file_heading, run_to_markdown
from cudabench.render.origins import rows_of
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, ResultsFile, RunOutcome

FILES = click.Path(path_type=Path, dir_okay=False)
F = TypeVar("F", bound=Callable[..., Any])


def choice_options(verb: str) -> Callable[[F], F]:
    """Add --variant and -p, as the run commands name them: which kernel rows to show."""
    def decorate(function: F) -> F:
        function = click.option(
            "--param", "-p", "params", multiple=True, metavar="NAME=VALUE",
            help=f"{verb} only the configurations with NAME at VALUE (repeatable; a list: -p "
            "TILE=8,16); a variant without NAME is kept whole.")(function)
        return click.option(
            "--variant", "variants", multiple=True, metavar="NAME",
            help=f"{verb} only this variant (repeatable; all: every one), with its op's "
            "cuBLAS and copy rows.")(function)
    return decorate


def parse_choice(variants: tuple[str, ...], params: tuple[str, ...]) -> plot.Choice:
    """Return the rows --variant and -p choose. Not cli/options' parse_params: that module
    brings the measurement code, which these commands never import; the values read alike."""
    parsed: dict[str, tuple[int, ...]] = {}
    for text in params:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or not value.strip():
            raise UsageError(f"-p {text!r}: expected NAME=VALUE, e.g. -p TILE=16 (or a list: "
                             "-p TILE=8,16)")
        if name in parsed:
            raise UsageError(f"-p {name} given twice; give each parameter once (a list "
                             f"chooses several values: -p {name}=8,16)")
        longest = max(re.split(r"[^0-9A-Za-z_]+", value), key=len)
        if len(longest) > 40:  # int() refuses 4300 digits: no parameter is that long
            raise UsageError(f"-p {name}: {longest[:20]!r}... is a number of {len(longest)} "
                             "characters; parameters are integers such as 16")
        parsed[name] = tuple(expand_values(value, f"-p {name}"))
    return plot.Choice(variants, tuple(parsed.items()))


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


def chosen_files(files: Sequence[ResultsFile], choice: plot.Choice) -> list[ResultsFile]:
    """Return the files with the rows a choice keeps; a file left without any is left out,
    a note on stderr saying so."""
    if not choice.narrows:
        return list(files)
    tagged = rows_of(files)  # each row named by its file: a yardstick of its own run
    kept = {id(r) for r in choice.rows(tagged)}
    chosen, position = [], 0
    for one in files:
        rows = tuple(r for i, r in enumerate(one.benchmarks, position) if id(tagged[i]) in kept)
        position += len(one.benchmarks)
        if rows:
            chosen.append(dataclasses.replace(one, benchmarks=rows))
        else:
            terminal.stderr_console().print(Text(
                f"note: {one.path}: left out, none of its rows is among those "
                f"{choice.flags()} chose"), soft_wrap=True)
    return chosen


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
@choice_options("Show")
def report_command(files: tuple[Path, ...], markdown_path: Path | None,
                   html_path: Path | None, csv_path: Path | None, title: str | None,
                   variants: tuple[str, ...], params: tuple[str, ...]) -> int:
    """Show saved results (FILE...) as the run's tables, without a GPU."""
    if title is not None and html_path is None:  # it was ignored without a word
        raise UsageError("--title names the HTML page only; without --html it does nothing: "
                         "give --html FILE, or leave --title out")
    check_outputs({"--markdown": markdown_path, "--html": html_path, "--csv": csv_path},
                  files)
    choice = parse_choice(variants, params)
    given = load_files(files)
    loaded = chosen_files(given, choice)
    # several files given: each file's rows named as such, though --variant or -p left
    # one (the CSV's file column, the headings, the lines' origins)
    several = len(given) > 1
    # Each file's tables of its own: merged, a row's ratios came from another run's cuBLAS
    # or copy row, and its footer (the flush, the GPU) from another run's first row.
    console = terminal.stdout_console()
    markdown, csv_parts = [], []
    for one in loaded:
        outcome = outcome_of([one])
        if several:
            console.print(Text(f"{one.path}:", style="bold"), soft_wrap=True)
            markdown.append(f"{file_heading(one.path)}\n\n")
        terminal.render_run(outcome, console)
        # several files: each line names its file, as stderr is read apart from the tables
        terms = terms_of_file(one.metadata.get("command"))
        terminal.render_diagnostics(outcome, terminal.stderr_console(),
                                    str(one.path) if several else "", terms)
        if markdown_path is not None:  # each a second of a large file's: made when asked
            markdown.append(run_to_markdown(outcome, terms))
        if csv_path is not None:
            csv_parts.append(csv_out.run_to_csv(outcome))
    writes = EachWritten()  # one that cannot be written does not stop the next
    if markdown_path is not None:
        writes.attempt(lambda: write_text(markdown_path, "\n".join(markdown), "--markdown"))
    if csv_path is not None:
        writes.attempt(lambda: write_text(
            csv_path, csv_out.join(csv_parts, [one.path for one in loaded] if several else ()),
            "--csv"))
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
@choice_options("Draw")
def plot_command(files: tuple[Path, ...], output: Path, kind: str, variants: tuple[str, ...],
                 params: tuple[str, ...]) -> int:
    """Plot saved results (FILE...): throughput by size, and the roofline."""
    plot.check_suffix(output)  # flag mistakes first, before reading any file
    choice = parse_choice(variants, params)
    plot.require()
    check_outputs({"-o": output}, files)
    loaded = load_files(files)
    results = choice.rows(rows_of(loaded))
    shown = plot.plotted(results)
    if not shown:
        among = f" among those {choice.flags()} chose" if choice.narrows else ""
        raise UsageError(f"nothing to plot: no benchmark in the files{among} was timed and "
                         "verified")
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
    plot.save(plot.figure_of(kind, results, choice), output)
    terminal.stderr_console().print(Text(f"wrote {output}"), soft_wrap=True)
    return 0
