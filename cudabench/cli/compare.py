"""`cudabench compare`: judge a current results file against a baseline (the CI gate).

judge() is the one comparison the command, the Python API and the pytest plugin share:
--threshold auto reads each benchmark's gate from the history store.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import click

from cudabench.analysis.compare import benchmark_text, compare, same_key
from cudabench.analysis.verdicts import DEFAULT_ALPHA, Comparison, Verdict, parse_threshold
from cudabench.common.infiles import refuse_unreachable
from cudabench.common.outfiles import (
    EachWritten,
    being_written,
    check_outputs,
    write_text,
)
from cudabench.common.stats import relative_spread
from cudabench.errors import UsageError
from cudabench.history import DEFAULT_HELP, default_store
from cudabench.history.store import Store
from cudabench.history.threshold import (
    DEFAULT_CAP,
    DEFAULT_FLOOR,
    DEFAULT_MULTIPLE,
    auto_threshold,
    smallest_detectable,
)
from cudabench.render import terminal
from cudabench.render.csv_out import comparison_to_csv
from cudabench.render.html import comparison_html
from cudabench.render.markdown import to_markdown
from cudabench.results import BenchmarkResult, ResultsFile, load_results
from cudabench.results.identity import copied_row, may_hold_cached_rows, same_run
from cudabench.results.model import Kind


@click.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("current", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--threshold", default="auto", show_default=True,
              help="Smallest change that counts, e.g. 5% or 0.05; auto: per benchmark, "
              f"{DEFAULT_MULTIPLE:g} x the between-run spread of its medians in the history "
              f"store (--db), at least {DEFAULT_FLOOR:.0%} (the floor alone without history) "
              "and at most --max-threshold.")
@click.option("--alpha", type=float, default=0.001, show_default=True,
              help="Significance level of the Mann-Whitney U test on the raw samples.")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the comparison as GitHub-flavoured markdown (CI job summary).")
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the comparison as one self-contained HTML file.")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write one CSV row per compared benchmark.")
@click.option("--power", is_flag=True,
              help="Say per benchmark the smallest slowdown this gate would catch.")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help=f"The history store --threshold auto reads (default {DEFAULT_HELP}).")
@click.option("--allow-different-gpu", is_flag=True,
              help="Compare files measured on different GPU models.")
@click.option("--allow-missing", is_flag=True,
              help="Pass the gate although benchmarks of the baseline are missing from the "
              "current file or SKIP there (default: missing fails).")
@click.option("--max-threshold", default=f"{DEFAULT_CAP:.0%}", show_default=True,
              help="The most --threshold auto may grow to from a noisy history.")
def compare_command(baseline: Path, current: Path, threshold: str, alpha: float,
                    markdown_path: Path | None, html_path: Path | None, csv_path: Path | None,
                    power: bool, db: Path | None, allow_different_gpu: bool,
                    allow_missing: bool, max_threshold: str) -> int:
    """Compare two results files; exit 1 on a significant slowdown, a new failure, a
    benchmark missing from CURRENT or an incomplete CURRENT."""
    check_thresholds(threshold, max_threshold)  # bad values are named before files are read
    refuse_idle_cap(threshold, ("max_threshold", "db"))
    check_outputs({"--markdown": markdown_path, "--html": html_path, "--csv": csv_path},
                  [baseline, current, db or default_store()])
    before, after = load_results(baseline), load_results(current)
    refuse_the_same_run(baseline, current, (before, after))  # after the files' own errors
    comparison = judge(before, after, threshold, alpha, db, allow_different_gpu, power,
                       allow_missing, max_threshold)
    terminal.render_comparison(comparison, terminal.stdout_console())
    writing = being_written(current) if after.metadata.get("complete") is False else None
    if writing:  # its run goes on: not one to run again
        terminal.stderr_console().print(
            f"error: {after.path} is incomplete: it is {writing}, so it fails the gate; "
            "compare it when that run ends", markup=False, style="bold red", soft_wrap=True)
    elif after.metadata.get("complete") is False:  # a baseline's is one of the notes
        terminal.render_incomplete(after.path, terminal.stderr_console())
    # after the verdicts are shown: a report that cannot be written (a full disk) neither
    # hides them nor stops the next report
    writes = EachWritten()
    if markdown_path is not None:
        writes.attempt(lambda: write_text(markdown_path, to_markdown(comparison), "--markdown"))
    if html_path is not None:
        writes.attempt(lambda: write_text(html_path, comparison_html(comparison,
                                                                     (before, after)), "--html"))
    if csv_path is not None:
        writes.attempt(lambda: write_text(csv_path, comparison_to_csv(comparison), "--csv"))
    writes.raise_any()
    return int(comparison.exit_code)


def refuse_the_same_run(baseline: Path, current: Path,
                        loaded: tuple[ResultsFile, ResultsFile] | None = None) -> None:
    """Refuse to compare a file with itself, by any path, as a byte-for-byte copy, or as
    a copy in other clothes (compressed, re-indented, reordered, re-annotated: loaded,
    the two files read, hold the same measurements, raw samples and all): a CI job whose
    current file is the baseline (a wrong path, a cache restored) would pass every time
    without measuring anything."""
    # Bytes only of regular files: a pipe (`<(cat a.json)`) was read by the loader and
    # reads empty now. The rows are compared whatever the paths are.
    regular = baseline.is_file() and current.is_file()
    same = regular and os.path.samefile(baseline, current)
    if same or (regular and baseline.read_bytes() == current.read_bytes()):
        what = "the same file" if same else "copies of one file, byte for byte"
    elif loaded is not None and same_run(*loaded):
        refuse_a_cached_search(str(baseline), str(current), loaded[1])
        # in any order, whatever else was edited (a warning, a note): raw samples never
        # repeat to the last bit in a new run
        what = "copies of one run (the same rows and raw samples)"
    else:
        return
    raise UsageError(f"{baseline} and {current} are {what}: the current file must come "
                     "from a new run (check the paths the CI job passes)")


def refuse_a_cached_search(baseline: str, current: str, loaded: ResultsFile) -> None:
    """Refuse a current file of the baseline's rows that a search wrote again from the
    tuning cache (a new search, every row the cache's), saying so: not a copied file."""
    if may_hold_cached_rows(loaded):
        raise UsageError(f"every row of {current} is one of {baseline}'s, written again "
                         "from the tuning cache: its search measured nothing; run it "
                         "with --no-tune-cache for rows measured now")


# What each option of --threshold auto alone does, said where a fixed threshold idles it.
AUTO_ONLY = {"max_threshold": "--max-threshold caps --threshold auto only",
             "db": "--db names the history store of --threshold auto only"}


def refuse_idle_cap(threshold: str, options: tuple[str, ...] = ("max_threshold",)) -> None:
    """Refuse an option of --threshold auto alone (--max-threshold; compare's --db) given
    on the command line beside a fixed --threshold: it was ignored without a word."""
    context = click.get_current_context(silent=True)
    if context is None or threshold.strip().lower() == "auto":
        return
    for name in options:
        if context.get_parameter_source(name) in (click.core.ParameterSource.COMMANDLINE,
                                                  click.core.ParameterSource.ENVIRONMENT):
            raise UsageError(f"{AUTO_ONLY[name]}; with --threshold {threshold} it does "
                             "nothing: leave one of them out")


def check_thresholds(threshold: str, max_threshold: str) -> tuple[float, float]:
    """Return --threshold (the floor under auto) and --max-threshold, checked."""
    auto = threshold.strip().lower() == "auto"
    limit = DEFAULT_FLOOR if auto else parse_threshold(threshold)
    cap = parse_threshold(max_threshold, "--max-threshold")
    if auto and cap < DEFAULT_FLOOR:
        raise UsageError(f"--max-threshold {max_threshold}: below the {DEFAULT_FLOOR:.0%} floor "
                         "of --threshold auto")
    return limit, cap


def judge(before: ResultsFile, after: ResultsFile, threshold: str = "auto",
          alpha: float = DEFAULT_ALPHA, db: Path | None = None,
          allow_different_gpu: bool = False, power: bool = False,
          allow_missing: bool = False, max_threshold: str = f"{DEFAULT_CAP:.0%}"
          ) -> Comparison:
    """Compare two loaded results files as `cudabench compare` does (the CLI and the Python
    API alike): --threshold auto reads each benchmark's gate from the history store."""
    auto = threshold.strip().lower() == "auto"
    limit, cap = check_thresholds(threshold, max_threshold)
    if not after.benchmarks and after.metadata.get("complete") is not False:
        # a run stopped before its first row (Ctrl-C) is judged: it fails the gate (exit
        # 1) as any stopped run does, not as a file that is the user's mistake (exit 2)
        raise UsageError(f"{after.path}: holds no benchmarks (its run measured nothing): "
                         "there is nothing to judge")
    store_path = db or default_store()
    with contextlib.ExitStack() as stack:
        threshold_for = None
        if auto:
            # an empty file (made by `touch`, or a job's cache step) holds no history, as
            # no file does: the floor, not "the store is empty" (exit 2)
            refuse_unreachable(store_path, f"--db {store_path}" if db else str(store_path))
            held = store_path.exists() and (store_path.is_dir() or store_path.stat().st_size)
            store = stack.enter_context(Store.open(store_path)) if held else None
            threshold_for = auto_thresholds(store, after.gpu_name, store_path, cap,
                                            after.metadata.get("git_commit"))
        power_for = None
        if power:
            def power_for(gate: float, old: BenchmarkResult, new: BenchmarkResult) -> float:
                return smallest_detectable(gate, relative_spread(new.samples_s or (1.0,)),
                                           max(len(new.samples_s), 1),
                                           max(len(old.samples_s), 1), alpha)
        comparison = compare(before, after, limit, alpha, allow_different_gpu,
                             threshold_for, power_for, allow_missing)
    copied = copied_row(before, after)  # after compare's checks of each file on its own
    if copied is not None:
        raise UsageError(f"{after.path}: {benchmark_text(copied)} holds the raw samples of "
                         f"{before.path}'s row, to the last bit: a new run never repeats "
                         "them, so the row was copied from the baseline; the current file "
                         "must come from a new run")
    refuse_nothing_judged(comparison)
    return comparison


def refuse_nothing_judged(comparison: Comparison) -> None:
    """Refuse a comparison that paired no kernel: an empty or all-SKIP baseline, or two
    files with no benchmark in common (--allow-missing), passed the gate having judged
    nothing. (A regression, a missing kernel say, still fails it as one, and so does a
    current run that stopped before it reached any of the baseline's kernels.)"""
    judged = [row for row in comparison.rows
              if row.kind is Kind.VARIANT and row.verdict is not Verdict.MISSING]
    if judged or comparison.regressions:
        return
    if comparison.current_incomplete and any(old.kind is Kind.VARIANT
                                             for old in comparison.removed):
        return  # its run stopped before the baseline's kernels: it fails the gate as stopped
    refuse_other_models(comparison)
    raise UsageError(
        f"{comparison.baseline_path} and {comparison.current_path} have no measured kernel "
        f"in common ({len(comparison.added)} only in the current file, "
        f"{len(comparison.removed)} only in the baseline): the gate would judge nothing; "
        "check the files the job passes (same op, sizes, types and parameters), or, where "
        "the benchmarks changed on purpose, make the new run the baseline")


def refuse_other_models(comparison: Comparison) -> None:
    """Refuse, naming the GPU models, files whose kernels would have paired but for the
    model they ran on (--devices all put each size on whichever card was free): "check the
    op, sizes, types and parameters" sent the user after what was the same in both."""
    def model(row: BenchmarkResult) -> str:
        return row.device.name if row.device is not None else ""

    kernels = [new for new in comparison.added if new.kind is Kind.VARIANT and model(new)]
    olds = [old for old in comparison.removed if old.kind is Kind.VARIANT and model(old)]
    across = [(old, new) for old, news in same_key(olds, kernels) for new in news
              if model(new) != model(old)]
    if not across:
        return
    old, new = across[0]
    others = ", and maybe others" if len(across) > 1 else ""
    raise UsageError(
        f"{comparison.baseline_path} and {comparison.current_path} have no measured kernel "
        f"in common on one GPU model: {benchmark_text(old)} ran on {model(old)!r} in "
        f"the baseline but on {model(new)!r} in the current file{others}; compare pairs "
        "rows of one GPU model only: measure both on the same models (--devices), or pass "
        "--allow-different-gpu to compare them anyway")


def auto_thresholds(store: Store | None, gpu_model: str, store_path: Path,
                    cap: float = DEFAULT_CAP, commit: object = None
                    ) -> Callable[[BenchmarkResult], tuple[float, str]]:
    """Return --threshold auto: each benchmark's gate from the history store (at most cap;
    the runs of commit, the current file's, left out), else the floor, with where it came
    from."""
    def threshold_for(result: BenchmarkResult) -> tuple[float, str]:
        if store is None:
            what = "an empty file" if store_path.exists() else "no history store"
            return DEFAULT_FLOOR, f"floor: {what} at {store_path}"
        # each row's own GPU model: a file of two models (--devices all on a mixed host)
        # names them joined, which no history holds
        model = result.device.name if result.device is not None else gpu_model
        return auto_threshold(store, result, model, cap=cap, commit=commit)

    return threshold_for
