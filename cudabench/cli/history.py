"""`cudabench history`: record results files in a store, show trends, gate on history.

Each command parses its options, makes its library calls (cudabench.history) and prints
through render.terminal's consoles; user errors are UsageError/StoreError (exit 2).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from cudabench.analysis.verdicts import DEFAULT_ALPHA, Verdict, parse_threshold
from cudabench.cli.boundary import CheckedGroup
from cudabench.errors import ExitCode, UsageError
from cudabench.history.report import BAND_RUNS, DEFAULT_LAST, HistoryCheck, Trend, check, trends
from cudabench.history.steps import DEFAULT_THRESHOLD, Drift, Step
from cudabench.history import DEFAULT_HELP, default_store
from cudabench.history.records import Benchmark, StoreError, parse_time
from cudabench.history.store import Store
from cudabench.history.threshold import DEFAULT_CAP, DEFAULT_MIN_RUNS
from cudabench.common.outfiles import being_written, check_outputs
from cudabench.render import terminal
from cudabench.render.comparison import verdict_counts
from cudabench.render.plot import HINT as PLOT_HINT
from cudabench.results import ResultsFile, load_results
from cudabench.results.identity import searched
from cudabench.results.writer import CI_BRANCH_VARIABLES
from cudabench.results.loader import read_text
from cudabench.results.model import Kind
from cudabench.common.units import (
    exceeds,
    format_change,
    format_percent,
    format_seconds,
    gpu_text,
)

F = TypeVar("F", bound=Callable[..., Any])
SHOW_LAST = 100  # commits per benchmark that `show` looks at by default
MAX_PANELS = 20  # benchmarks `history plot` draws in one figure, a panel each
MAX_TICKS = 40  # commits a panel names on its axis (every second, third... past it)
MAX_MIN_RUNS = 1_000_000  # a bound for --min-runs 2^63, which no history could ever meet


def db_option(command: F) -> F:
    """Add --db (default .cudabench/history.db, or $CUDABENCH_HISTORY_DB)."""
    return click.option(
        "--db", "db", type=click.Path(path_type=Path), default=default_store,
        help=f"The history store (SQLite), created by the first import (default "
             f"{DEFAULT_HELP}).")(command)


@click.group("history", cls=CheckedGroup)
def history() -> None:
    """Record results files and follow each benchmark across commits.

    A store (SQLite, .cudabench/history.db) keeps every imported run; `show` prints each
    benchmark's trend with the commits where it stepped, and `check` gates a new results
    file on the last runs' medians (exit 1 on a regression, like compare).
    """


@history.command("import")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(path_type=Path, dir_okay=False))
@db_option
@click.option("--branch", default=None, callback=lambda ctx, param, value: plain_branch(value),
              help="The branch the runs were measured on.")
def import_command(files: tuple[Path, ...], db: Path, branch: str | None) -> int:
    """Record results files (any schema version); a file already recorded adds nothing
    (but --branch, to its run recorded without one)."""
    return record_files(files, db, branch)


def record_files(files: Sequence[Path], db: Path, branch: str | None = None,
                 say: bool = True) -> int:
    """Record results files in the store at db, all or none; say what each added (the
    command does; the Python API, whose caller has the returned path, says nothing). A
    file a running cudabench is writing is skipped (the API: refused): its rows so far are
    no run, and the whole run, recorded when it ends, would be another."""
    loaded: list[tuple[ResultsFile, str]] = []
    said: list[tuple[str, bool]] = []  # (line, a warning): printed once committed
    for path in files:  # every file checked before the store is touched: all or nothing
        writing = being_written(path)  # asked before the read and after: a run that ended
        results = load_results(path)  # meanwhile left the rows read, or a whole file
        if results.metadata.get("complete") is False:
            writing = writing or being_written(path)
            if writing and not say:
                raise UsageError(f"{path}: is {writing}: record it when that run ends")
            if writing:
                said.append((f"{path}: skipped: it is {writing}; import it when that run "
                             "ends", False))
                continue
        if not results.benchmarks:
            raise UsageError(f"{path}: holds no benchmarks (its run measured nothing): "
                             "nothing to record")
        if searched(results):  # as --record is refused with a search
            raise UsageError(f"{path}: a --best search's results (configurations measured "
                             "once each, some maybe copied from the tuning cache), not a run: "
                             "record a run of the chosen configuration (--best-out FILE, "
                             "then cudabench run FILE --record)")
        if _ab_results(results):  # its rows are two copies of each kernel, not benchmarks
            raise UsageError(f"{path}: an `ab` run's results (each variant as NAME@A and "
                             "NAME@B, two folders' copies), not a run of the benchmarks: "
                             "record a run of one folder (cudabench run ... --record)")
        loaded.append((results, read_text(path)))
    if not loaded:  # every file skipped: no store is made for nothing
        return _say(said) if say else int(ExitCode.OK)
    with Store.open(db, create=True) as store:
        with store.transaction():
            for results, source in loaded:
                run_id = store.record(results, source, branch=branch)
                if run_id is None:
                    said.append(_recorded_before(store, results, source, branch))
                    continue
                commit = results.metadata.get("git_commit")
                count = len(results.benchmarks)
                said.append((f"{results.path}: recorded as run {run_id}: {count} "
                             f"benchmark{'s' if count != 1 else ''} on "
                             f"{results.gpu_name or 'no GPU recorded'}, commit "
                             f"{commit[:7] if isinstance(commit, str) else 'unknown'}", False))
                if results.metadata.get("complete") is False:
                    said.append((f"{results.path} is incomplete (its run stopped early)", True))
    if store.wal_left is not None:  # recorded, but the store alone is not whole
        if not say:
            warnings.warn(store.wal_left, RuntimeWarning, stacklevel=2)
        said.append((store.wal_left, True))
    return _say(said) if say else int(ExitCode.OK)


def _recorded_before(store: Store, results: ResultsFile, source: str,
                     branch: str | None) -> tuple[str, bool]:
    """Return the line for a file whose run is already recorded: --branch is recorded on it
    where it has no branch (it was ignored, and the run left out of --branch's history),
    and a warning where it has another."""
    run = store.run_for(results, source)
    said = f"{results.path}: already recorded (run {run})"
    if branch is None or run is None:
        return said, False
    before = store.give_branch(run, branch)
    if before is None:
        return f"{said}: its branch set to {branch}", False
    if before != branch:
        return (f"{said} on branch {before}: --branch {branch} not applied (a run has one "
                "branch)", True)
    return said, False


def _ab_results(results: ResultsFile) -> bool:
    """Return whether a file is `cudabench ab`'s --json: its command, or every variant
    named for its side (NAME@A, NAME@B)."""
    command = results.metadata.get("command")
    if isinstance(command, list) and len(command) > 1 and command[1] == "ab":
        return True
    return all(row.variant.endswith(("@A", "@B")) for row in results.benchmarks)


def _say(said: list[tuple[str, bool]]) -> int:
    """Print record_files' lines: a warning on stderr, the others on stdout."""
    out, err = terminal.stdout_console(), terminal.stderr_console()
    for line, warning in said:
        if warning:
            err.print(f"warning: {line}", style="yellow", markup=False, soft_wrap=True)
        else:
            out.print(line, markup=False, soft_wrap=True)
    return int(ExitCode.OK)


def plain_branch(name: str | None) -> str | None:
    """Return a branch as --record records it (`git rev-parse --abbrev-ref HEAD`): CI's
    full ref (GitHub's `github.ref`, refs/heads/main) is the branch main, and so is a
    remote-tracking one (refs/remotes/origin/main, or origin/main where origin is a remote
    of the working folder's repository): read as a branch no run was recorded on, it
    turned the gate off. An empty name is refused."""
    if name is None:
        return None
    plain = name
    for prefix in ("refs/heads/", "refs/remotes/"):
        if plain.startswith(prefix):
            plain = plain[len(prefix):]
            if prefix == "refs/remotes/":  # its remote's name first, then the branch
                plain = plain.partition("/")[2]
            break
    else:
        remote, _, rest = plain.partition("/")
        if rest and remote in _git_remotes():
            plain = rest
    if not plain.strip("/"):
        raise UsageError(f"--branch {name!r}: names no branch: give the branch, e.g. "
                         "--branch main")
    return plain


def branch_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """The --branch option of the commands that read the store."""
    return click.option(
        "--branch", default=None, metavar="NAME",
        callback=lambda ctx, param, value: plain_branch(value),
        help="Only runs recorded on this branch (--record records the checked-out one; "
             "runs recorded without one are left out).")(function)


def only_branch(store: Store, db: Path, branch: str | None) -> bool:
    """Keep only branch's runs in store (None: every run); refuse a near miss of a recorded
    branch (mian: did you mean main?). Return whether branch is new: no run of a store
    that holds some was recorded on it."""
    if branch is None:
        return False
    known = store.branches()
    branch = _known_tracked(branch, known)
    new = branch not in known and bool(store.counts()["runs"])
    if new:
        import difflib

        # a typo (mian) left every row of check "too little history, not gated": passed,
        # and show and plot said only that nothing matched the filters; compared without
        # case, as MASTER is no match for master letter by letter
        folded = {name.casefold(): name for name in known}
        near = difflib.get_close_matches(branch.casefold(), list(folded), n=1)
        # a near miss that is a real branch is new, not a typo: its first CI job
        # (release-1.3 after release-1.2, feature-logout after feature-login) was refused
        if near and not _versions_of(branch, folded[near[0]]) and not _git_knows(branch):
            raise UsageError(f"--branch {branch}: no run in {db} was recorded on it; did you "
                             f"mean {folded[near[0]]}? (its runs' branches: {', '.join(known)})")
    store.only_branch(branch)
    return new


def _known_tracked(branch: str, known: Sequence[str]) -> str:
    """Return branch, or the recorded branch X it names as a remote's (origin/X, where the
    working folder has no such remote: a CI checkout without one) when X has runs and
    branch none, nor is a branch git knows."""
    rest = branch.partition("/")[2]
    if branch in known or rest not in known or _git_knows(branch):
        return branch
    terminal.stderr_console().print(
        f"note: --branch {branch}: read as {rest}, a recorded branch, as {branch} seems its "
        "remote-tracking name", markup=False, soft_wrap=True)
    return rest


def _git_remotes() -> set[str]:
    """Return the names of the working folder's repository's remotes (none outside one)."""
    try:
        done = subprocess.run(["git", "remote"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return set()
    return set(done.stdout.split()) if done.returncode == 0 else set()


def _versions_of(branch: str, known: str) -> bool:
    """Return whether two branch names differ only in their numbers (feature-43 and
    feature-42, release-2.0 and release-1.2): versions, not a typo."""
    return re.sub(r"\d+", "0", branch) == re.sub(r"\d+", "0", known)


def _git_knows(branch: str) -> bool:
    """Return whether branch is a real one: a local or remote-tracking branch of the working
    folder's repository, or the CI's branch ($GITHUB_REF_NAME, $GITHUB_HEAD_REF,
    $CI_COMMIT_REF_NAME)."""
    if branch in {os.environ.get(name) for name in CI_BRANCH_VARIABLES}:
        return True
    try:
        done = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/heads",
                               "refs/remotes"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    if done.returncode != 0:  # not a repository, or no git: no branch known
        return False
    for ref in done.stdout.splitlines():
        if ref == f"refs/heads/{branch}" or (ref.startswith("refs/remotes/")
                                             and ref.split("/", 3)[3:] == [branch]):
            return True
    return False


def _nothing_to_show(db: Path, store: Store, filters: tuple[object, ...]) -> UsageError:
    """Return the error of a show or plot that found no timing to follow: the filters'
    doing, or (with none given) a store whose runs timed nothing verified."""
    if any(value is not None for value in filters):
        return UsageError(f"{db}: no recorded run matches the filters (--op, --variant, "
                          "--gpu, --since, --branch)")
    runs = store.counts()["runs"]
    if not runs:
        return UsageError(f"{db}: no run is recorded yet (cudabench ... --record, or "
                          "`cudabench history import FILE`)")
    return UsageError(f"{db}: none of its {runs} recorded run{'s' if runs != 1 else ''} has "
                      "a verified timing to follow (every row failed, was skipped or was not "
                      "measured)")


@history.command("show")
@click.option("--op", default=None, help="Only this op.")
@click.option("--variant", default=None, help="Only this variant.")
@click.option("--gpu", default=None,
              help="Only this GPU model, as the tables name it (or NVML's full name).")
@click.option("--since", default=None, help="Only runs measured since this date (2024-06-01).")
@click.option("--last", type=click.IntRange(min=1), default=SHOW_LAST, show_default=True,
              help="Points per benchmark to look at: a commit's consecutive runs are one.")
@click.option("--threshold", default="5%", show_default=True,
              help="Smallest step reported, e.g. 5% or 0.05.")
@branch_option
@db_option
def show_command(op: str | None, variant: str | None, gpu: str | None, since: str | None,
                 last: int, threshold: str, branch: str | None, db: Path) -> int:
    """Show each benchmark's latest median, noise band, last change and steps, per GPU."""
    limit = parse_threshold(threshold)
    start = _since(since)
    with Store.open(db) as store:
        only_branch(store, db, branch)
        found = trends(store, op, variant, gpu, start, last, limit)
        if not found:
            raise _nothing_to_show(db, store, (op, variant, gpu, since, branch))
    twice = Counter(_unflushed(trend) for trend in found)
    title, columns, rows = one_gpu_in_title(
        f"cudabench history: {db}", ("benchmark", "GPU", "commits", "latest",
                                     # the band is the newest level's: Trend.band
                                     f"band (last {BAND_RUNS} since last change)",
                                     "last change", "steps"),
        [_trend_cells(trend, flush=twice[_unflushed(trend)] > 1) for trend in found])
    terminal.render_rows(title, columns, rows, terminal.stdout_console())
    return int(ExitCode.OK)


def one_gpu_in_title(title: str, columns: Sequence[str], rows: list[list[str]]
                     ) -> tuple[str, tuple[str, ...], list[list[str]]]:
    """Say a GPU column that holds one model in the title instead: on a narrow terminal
    the column is the first left out, and with it what the times were measured on."""
    at = list(columns).index("GPU")
    models = {row[at] for row in rows}
    if len(models) != 1:
        return title, tuple(columns), rows
    return (f"{title} ({models.pop()})", tuple(c for i, c in enumerate(columns) if i != at),
            [[cell for i, cell in enumerate(row) if i != at] for row in rows])


@history.command("check")
@click.argument("current", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--last", type=click.IntRange(min=1), default=DEFAULT_LAST, show_default=True,
              help="Recorded runs each benchmark is judged against.")
@click.option("--threshold", default="auto", show_default=True,
              help="Smallest change that counts: auto (from each benchmark's history), "
                   "or e.g. 5% or 0.05.")
@click.option("--alpha", type=float, default=DEFAULT_ALPHA, show_default=True,
              help="Significance level of a change against the history's spread.")
@click.option("--min-runs", type=click.IntRange(min=3, max=MAX_MIN_RUNS),
              default=DEFAULT_MIN_RUNS, show_default=True,
              help="Runs of history needed to judge a benchmark.")
@click.option("--allow-missing", is_flag=True,
              help="Pass although kernels that the history of CURRENT's command "
                   "measured are not in it (removed on purpose; newer runs without them "
                   "that passed the gate count once they are a level: 5 runs from 3 "
                   "commits).")
@click.option("--max-threshold", default=f"{DEFAULT_CAP:.0%}", show_default=True,
              help="The most --threshold auto may grow to from a noisy history.")
@branch_option
@db_option
def check_command(current: Path, last: int, threshold: str, alpha: float, min_runs: int,
                  allow_missing: bool, max_threshold: str, branch: str | None, db: Path) -> int:
    """Judge CURRENT against each benchmark's last runs; exit 1 on a regression."""
    from cudabench.cli.compare import refuse_idle_cap

    refuse_idle_cap(threshold)
    return check_file(current, db, last, threshold, alpha, min_runs, allow_missing,
                      max_threshold, branch=branch)


# What a capped threshold names as its cap where the command has no --max-threshold.
RECORD_CHECK_CAP = "the default cap; `cudabench history check --max-threshold` sets another"


def check_file(current: Path, db: Path, last: int = DEFAULT_LAST, threshold: str = "auto",
               alpha: float = DEFAULT_ALPHA, min_runs: int = DEFAULT_MIN_RUNS,
               allow_missing: bool = False, max_threshold: str = f"{DEFAULT_CAP:.0%}",
               cap_from: str = "--max-threshold", branch: str | None = None) -> int:
    """Judge a results file against the store's history, and record the verdict on its run
    where the store holds it (_record_gate); return compare's exit code."""
    from cudabench.cli.compare import check_thresholds

    _, cap = check_thresholds(threshold, max_threshold)  # bad values named before files read
    limit = None if threshold.strip().lower() == "auto" else parse_threshold(threshold)
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha!r}: must be between 0 and 1")
    if last < min_runs:  # else no row could ever have the history to judge: all would pass
        raise UsageError(f"--last {last} is below --min-runs {min_runs}: no benchmark could "
                         f"be judged on fewer runs than it needs; give --last {min_runs} or more")
    results = load_results(current)
    incomplete = results.metadata.get("complete") is False
    if not results.benchmarks and not incomplete:
        raise UsageError(f"{current}: holds no benchmarks (its run measured nothing): there "
                         "is nothing to judge")
    source = read_text(current)
    with Store.open(db) as store:
        if not results.benchmarks:  # stopped before its first row: as compare fails it
            return _fail_incomplete(current)
        if only_branch(store, db, branch):  # main's history, say, judges the file
            terminal.stderr_console().print(  # a new branch: its history starts now
                f"note: --branch {branch}: no run in {db} was recorded on it yet, so no "
                "row has the history to be judged", markup=False, soft_wrap=True)
        verdicts = check(store, results, source, last, limit, alpha, min_runs, allow_missing,
                         cap, cap_from)
        if not verdicts.regressions and not any(  # no kernel measured: as compare refuses it
                row.kind is Kind.VARIANT and row.verdict is not Verdict.MISSING
                for row in verdicts.rows):
            raise UsageError(f"{current}: no kernel was measured ({_unmeasured(results)}): "
                             "the gate would judge nothing; check the file the job passes (its "
                             "op, variants, sizes and types)")
        unrecorded = _record_gate(store, verdicts.recorded_run,
                                  not incomplete and not verdicts.regressions)
    _render_check(verdicts, db, incomplete=incomplete)
    if unrecorded:
        terminal.stderr_console().print(f"warning: {unrecorded}", style="yellow",
                                        markup=False, soft_wrap=True)
    if incomplete:  # a crashed run passes no gate, as in compare
        return _fail_incomplete(current)
    return int(verdicts.exit_code)


def _fail_incomplete(current: Path) -> int:
    """Say that an incomplete file fails the gate (a crashed run passes none, as in
    compare), and return the gate's exit code."""
    writing = being_written(current)  # or a run that goes on
    why = (f": it is {writing}, so it fails the gate; check it when that run ends"
           if writing else " (its run stopped before its last row): it fails the gate")
    terminal.stderr_console().print(f"error: {current} is incomplete{why}", markup=False,
                                    style="bold red", soft_wrap=True)
    return int(ExitCode.REGRESSION)


def _record_gate(store: Store, run: int | None, passed: bool) -> str | None:
    """Record the verdict on the file's run where the store holds it (`--record --check`
    records it first): the missing-kernel check passes over the runs that failed. Return
    why it could not be (a store locked too long): the verdict stands, said as a warning."""
    if run is None:
        return None
    try:
        store.record_gate(run, passed)
    except StoreError as exc:
        return f"the verdict on run {run} is not recorded in the store: {exc}"
    return None


def _unmeasured(results: ResultsFile) -> str:
    """Say what a file that measured no kernel holds: SKIPs, or only vendor or reference
    rows, which no gate judges (such a file was said to be "every one a SKIP")."""
    kernels = sum(1 for row in results.benchmarks if row.kind is Kind.VARIANT)
    others = Counter(row.kind.value for row in results.benchmarks if row.kind is not Kind.VARIANT)
    said = [f"its {kernels} kernel{'s are SKIPs' if kernels != 1 else ' is a SKIP'}"
            if kernels else "it holds no kernel row"]
    said += [f"{count} {kind} row{'s' if count != 1 else ''}" for kind, count in
             sorted(others.items())]
    return ", ".join(said) + (", which the gate does not judge" if others else "")


@history.command("plot")
@click.argument("output", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--op", default=None, help="Only this op.")
@click.option("--variant", default=None, help="Only this variant.")
@click.option("--gpu", default=None,
              help="Only this GPU model, as the tables name it (or NVML's full name).")
@click.option("--since", default=None, help="Only runs measured since this date.")
@click.option("--last", type=click.IntRange(min=1), default=SHOW_LAST, show_default=True,
              help="Points per benchmark to plot: a commit's consecutive runs are one.")
@branch_option
@db_option
def plot_command(output: Path, op: str | None, variant: str | None, gpu: str | None,
                 since: str | None, last: int, branch: str | None, db: Path) -> int:
    """Plot each benchmark's median per commit, steps and drifts marked, to OUTPUT (.png,
    .svg, .pdf or .jpg): at most 20 benchmarks, those that failed, stepped or drifted last
    first (the filters choose others)."""
    from cudabench.render.plot import check_suffix, save, text

    check_suffix(output, "OUTPUT")  # flag mistakes first, before reading the store
    check_outputs({"OUTPUT": output}, [db])  # never over the store it reads
    try:
        import matplotlib  # noqa: F401  (itself first: a cached submodule hides a block)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(f"history {PLOT_HINT}") from None
    start = _since(since)
    with Store.open(db) as store:
        only_branch(store, db, branch)
        found = trends(store, op, variant, gpu, start, last, DEFAULT_THRESHOLD)
        if not found:
            raise _nothing_to_show(db, store, (op, variant, gpu, since, branch))
    shown = _panels(found)
    # The Agg canvas directly, never pyplot: no display, no backend changed for a caller.
    figure = Figure(figsize=(10, 2.8 * len(shown)), layout="constrained")
    FigureCanvasAgg(figure)
    for ax, trend in zip(figure.subplots(len(shown), 1, squeeze=False)[:, 0], shown):
        xs = list(range(len(trend.points)))
        ax.plot(xs, [p.median_s * 1e6 for p in trend.points], marker=".")
        for step in trend.detection.steps:
            ax.axvline(step.index - 0.5, color="red", linestyle="--")
        for drift in trend.detection.drifts:
            ax.axvspan(drift.start - 0.5, drift.end + 0.5, color="orange", alpha=0.2)
        name = trend.tracked.benchmark.describe(flush=True)
        ax.set_title(text(f"{name} on {trend.tracked.gpu_model}"), fontsize=9)  # '$': literal
        ax.set_ylabel("median (us)")
        # every point's label took 15 s for 20 panels of 100; the newest always named
        ticks = xs[::-1][::-(-len(xs) // MAX_TICKS)][::-1]
        ax.set_xticks(ticks, [text(trend.label(i)) for i in ticks], rotation=90, fontsize=6)
    save(figure, output, "OUTPUT")
    left = len(found) - len(shown)
    if left:
        terminal.stderr_console().print(
            f"note: OUTPUT {output}: {left} of {len(found)} benchmarks left out (a figure "
            f"holds {MAX_PANELS}: those that stepped, drifted or failed last first, then in "
            "`history show`'s order); narrow it with --op, --variant, --gpu, --since or "
            "--branch", markup=False, soft_wrap=True)
    terminal.stdout_console().print(
        f"wrote {output}: {len(shown)} benchmark{'s' if len(shown) != 1 else ''}", markup=False)
    return int(ExitCode.OK)


def _panels(found: Sequence[Trend]) -> list[Trend]:
    """Return the trends a figure draws, in the table's order: all, or MAX_PANELS of them
    (a panel per benchmark without a bound made a figure of 41,580 px for 99, and ran out of
    memory for 882), those whose newest run failed or whose last step or drift is newest
    first, then the rest in the table's order."""
    if len(found) <= MAX_PANELS:
        return list(found)

    def news(trend: Trend) -> str:
        """Return when the trend's newest failure or change happened ('' where none)."""
        if trend.failing is not None:
            return trend.failing.created
        change = trend.detection.last_change
        if change is None:
            return ""
        return trend.points[change.index if isinstance(change, Step) else change.end].created

    when = [news(trend) for trend in found]
    newest = sorted((i for i in range(len(found)) if when[i]), key=when.__getitem__,
                    reverse=True)
    kept = (newest + [i for i in range(len(found)) if not when[i]])[:MAX_PANELS]
    return [found[i] for i in sorted(kept)]


def _since(text: str | None) -> str | None:
    """Parse --since into ISO 8601 UTC."""
    if text is None:
        return None
    moment = parse_time(text)
    if moment is None:
        raise UsageError(f"--since {text!r}: expected a date such as 2024-06-01 or a time "
                         "such as 2024-06-01T12:00:00+00:00")
    return moment


def _change_text(trend: Trend, change: Step | Drift | None) -> str:
    """Describe a step or drift with its commits and when."""
    if change is None:
        return "-"
    if isinstance(change, Step):
        when = trend.points[change.index].created[:10]
        return f"{format_change(change.change)} step at {change.label} ({when})"
    return (f"{format_change(change.change)} drift {change.first_label}..{change.last_label} "
            f"({format_change(change.per_point)}/commit)")


def _unflushed(trend: Trend) -> tuple[Benchmark, str]:
    """Return a trend's benchmark and GPU model without its L2 flush: two trends alike but
    for the flush are one benchmark recorded after both, told apart only by naming it."""
    return dataclasses.replace(trend.tracked.benchmark, l2_flush=""), trend.tracked.gpu_model


def _trend_cells(trend: Trend, flush: bool = False) -> list[str]:
    """Return a row of the show table; flush names its L2 flush (see _unflushed)."""
    tracked, detection = trend.tracked, trend.detection
    low, high = trend.band
    band = f"±{trend.spread:.1%} ({format_seconds(low)}..{format_seconds(high)})"
    steps = "; ".join(f"{s.label} {format_change(s.change)}" for s in detection.steps)
    extras = [f"{len(detection.outliers)} outlier run{'s' if len(detection.outliers) != 1 else ''}"
              ] if detection.outliers else []
    kind = "" if tracked.kind == "variant" else f" [{tracked.kind}]"
    return [tracked.benchmark.describe(flush=flush) + kind,
            gpu_text(tracked.gpu_model),
            # distinct commits: two branches' runs interleaved in one store (a, b, a, b)
            # are points of their own, but not more commits
            str(len({p.commit or f"run {p.run_id}" for p in trend.points})),
            _latest_text(trend), band,
            _change_text(trend, detection.last_change), "; ".join([steps or "-", *extras])]


def _latest_text(trend: Trend) -> str:
    """Return the newest usable median, and the newer run that failed, if one did."""
    latest = format_seconds(trend.latest_s)
    failing = trend.failing
    if failing is None:
        return latest
    at = failing.commit[:7] if failing.commit else f"run {failing.run_id}"
    return f"{latest} (newer: {failing.status} at {at})"


def _render_check(result: HistoryCheck, db: Path, incomplete: bool = False) -> None:
    """Print the check's table and its summary line (an incomplete current file fails the
    gate whatever its rows say, and the line says so first, as compare's does)."""
    rows = []
    for row in result.rows:
        band = (f"{format_seconds(row.band[0])}..{format_seconds(row.band[1])}"
                if row.band else "-")
        kind = "" if row.kind.value == "variant" else f" [{row.kind.value}]"
        rows.append([row.benchmark.describe() + kind, gpu_text(row.gpu_model), str(row.runs),
                     format_seconds(row.history_median_s), band,
                     format_seconds(row.current_median_s),
                     format_change(row.change, row.threshold), format_percent(row.threshold),
                     row.threshold_source, row.verdict.value, row.reason])
    out = terminal.stdout_console()
    title, columns, rows = one_gpu_in_title(
        f"cudabench history check: {result.current_path} against {db}",
        ("benchmark", "GPU", "runs", "history median", "band", "current", "change",
         "threshold", "threshold from", "verdict", "reason"), rows)
    terminal.render_rows(title, columns, rows, out,  # notes on a narrow terminal: not 'same' rows
                         noted_rows={index for index, row in enumerate(result.rows)
                                     if row.verdict is not Verdict.SAME})
    # a vendor or copy row's failure counted apart, as compare does: "no regression: 2
    # failed, ..." read as a gate that passed failures
    parts, ungated = verdict_counts(result.rows)
    summary = ", ".join(parts)
    little = sum(1 for row in result.rows if row.reason.startswith("too little history"))
    if little:
        summary += f" ({little} with too little history, not gated)"
    summary += ungated
    if result.excluded_run is not None:
        summary += f"; its own run {result.excluded_run} left out of its history"
    regressed = len(result.regressions)
    for row in result.rows:  # passed, and said so: as compare notes its noisy slowdowns
        if row.kind.value == "variant" and row.verdict is Verdict.NOISY and \
                row.change is not None and exceeds(row.change, row.threshold) and \
                "not significant against the history's" in row.reason:  # judged
            out.print(f"note: {row.benchmark.describe()}: "
                      f"{format_change(row.change, row.threshold)} but "
                      "not significant against the history's run-to-run spread, so the "
                      "gate passes it; a steadier history (more runs, steadier ones) or "
                      "more samples would judge it", style="yellow", markup=False,
                      soft_wrap=True)
    for change in result.setting_changes:  # as compare says them: a note, not a verdict
        out.print(f"the card differs: {change}", style="yellow", markup=False, soft_wrap=True)
    for note in result.notes:
        out.print(f"note: {note}", style="yellow", markup=False, soft_wrap=True)
    if incomplete:
        out.print(f"gate failed, the current run is incomplete: {summary}", style="bold red",
                  markup=False, soft_wrap=True)
    elif regressed:
        out.print(f"{regressed} regression{'s' if regressed != 1 else ''}: {summary}",
                  style="bold red", markup=False, soft_wrap=True)
    else:
        out.print(f"no regression: {summary}", style="green", markup=False, soft_wrap=True)

