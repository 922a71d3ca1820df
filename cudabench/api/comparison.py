"""compare(): judge a run against a baseline as `cudabench compare` does, from Python.

The verdicts and the exit code are analysis.compare's, reached through the command's own
judge() (threshold auto from the history store, the empty-file check); the Comparison
returned shows itself as the command prints it, and as the HTML report draws it.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudabench.analysis import compare as analysis
from cudabench.api.display import Printed, fragment, plain_text
from cudabench.api.results import Real, Results, as_path
from cudabench.api.terms import COMPARE_ARGUMENTS, SHOWN, comparison_shown, python_terms, switch
from cudabench.errors import ExitCode, UsageError
from cudabench.history.threshold import DEFAULT_CAP
from cudabench.render import terminal
from cudabench.render.fit import every_column
from cudabench.render.flag_names import flags_named
from cudabench.render.comparison import gate_head, summary_text
from cudabench.render.html import comparison_html
from cudabench.render.markdown import to_markdown
from cudabench.results.identity import same_run
from cudabench.results.loader import load_results
from cudabench.results.model import BenchmarkResult, ResultsFile

PathLike = str | os.PathLike[str]
_BODY_START, _BODY_END = "<body>", "<footer>"


@dataclass(frozen=True)
class Comparison:
    """A baseline and a current run judged benchmark by benchmark."""

    judged: analysis.Comparison  # the rows, verdicts and settings, as the command has them
    files: tuple[ResultsFile, ResultsFile]  # baseline, current

    @property
    def rows(self) -> tuple[analysis.ComparisonRow, ...]:
        """Return every benchmark present in both, with its verdict."""
        return self.judged.rows

    @property
    def regressions(self) -> tuple[analysis.ComparisonRow, ...]:
        """Return the rows that fail the gate (slower kernels, failed verifications)."""
        return self.judged.regressions

    @property
    def added(self) -> tuple[BenchmarkResult, ...]:
        """Return the benchmarks only the current run has."""
        return self.judged.added

    @property
    def removed(self) -> tuple[BenchmarkResult, ...]:
        """Return the benchmarks only the baseline has."""
        return self.judged.removed

    @property
    def exit_code(self) -> ExitCode:
        """Return `cudabench compare`'s exit code: 1 on a regression or an incomplete
        current run, else 0."""
        return self.judged.exit_code

    @property
    def ok(self) -> bool:
        """Return whether the gate passed: nothing regressed and the current run
        completed."""
        return self.exit_code is ExitCode.OK

    @property
    def summary(self) -> str:
        """Return the one-line summary the command ends with: whether the gate failed and
        why ("2 regressions", "gate failed, the current run is incomplete"), then the
        counts per verdict."""
        head, _ = gate_head(self.judged)
        return f"{head}: {summary_text(self.judged)}"

    def to_markdown(self) -> str:
        """Return the comparison as GitHub-flavoured markdown (a CI job summary)."""
        return to_markdown(self.judged)

    def to_html(self) -> str:
        """Return the comparison as one self-contained HTML page (`compare --html`)."""
        return comparison_html(self.judged, self.files)

    def table(self, wide: bool = False) -> Printed:
        """Return the comparison as a Rich renderable, as `cudabench compare` prints it;
        wide keeps every column however wide the console (the command's --wide)."""
        return comparison_printed(self.judged, SHOWN, switch(wide, "wide"))

    def __rich__(self) -> Printed:
        return self.table()

    def __str__(self) -> str:
        return plain_text(self.table())

    def __repr__(self) -> str:
        return (f"<Comparison: {len(self.regressions)} regression(s) in {len(self.rows)} "
                f"rows; {self.summary}>")

    def _repr_html_(self) -> str:
        """Return the body of the HTML comparison page, its stylesheet scoped to it."""
        with flags_named(SHOWN):
            page = comparison_html(comparison_shown(self.judged), self.files)
        body = page[page.index(_BODY_START) + len(_BODY_START):page.index(_BODY_END)]
        return fragment([body])


def comparison_printed(judged: analysis.Comparison, terms: Mapping[str, str],
                       wide: bool = False) -> Printed:
    """Return a comparison as `cudabench compare` prints it, the flags its texts name in
    terms (compare()'s arguments; the pytest plugin's options)."""
    shown = comparison_shown(judged, terms)

    def render(console: Any) -> None:
        with flags_named(terms), every_column(wide):
            terminal.render_comparison(shown, console)

    return Printed(render)


def compare(baseline: Results | PathLike, current: Results | PathLike, *,
            threshold: str | Real = "auto", alpha: Real = analysis.DEFAULT_ALPHA,
            db: PathLike | None = None, allow_different_gpu: bool = False,
            power: bool = False, allow_missing: bool = False,
            max_threshold: str | Real | None = None) -> Comparison:
    """Judge current against baseline (Results or results files) with the verdicts of
    `cudabench compare`: threshold "auto" (per benchmark, from the history store db, the
    2% floor without one, at most max_threshold, 25% when None), a percentage "5%" or a
    fraction 0.05 (and then no max_threshold nor db: they serve auto only);
    alpha the significance level; a baseline benchmark missing from current fails unless
    allow_missing. Raise UsageError or ResultsFileError on bad input."""
    with python_terms(COMPARE_ARGUMENTS):
        return compare_in_flags(baseline, current, threshold, alpha, db,
                                switch(allow_different_gpu, "allow_different_gpu"),
                                switch(power, "power"), switch(allow_missing, "allow_missing"),
                                max_threshold, db_auto_only=True)


def compare_in_flags(baseline: Results | PathLike, current: Results | PathLike,
                     threshold: str | Real, alpha: Real, db: PathLike | None,
                     allow_different_gpu: bool, power: bool, allow_missing: bool,
                     max_threshold: str | Real | None, db_auto_only: bool = False
                     ) -> Comparison:
    """compare()'s work, its errors naming the command's flags (the pytest plugin names
    its own options for them); max_threshold None: not given, the default cap;
    db_auto_only: refuse a db beside a fixed threshold, as the command refuses --db."""
    cap_given = max_threshold is not None
    if max_threshold is None:
        max_threshold = f"{DEFAULT_CAP:.0%}"
    for value, name in ((threshold, "threshold"), (max_threshold, "max_threshold")):
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
            raise UsageError(f"{name} {value!r}: expected 'auto', a percentage such as "
                             "'5%' or a fraction such as 0.05")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise UsageError(f"alpha {alpha!r}: expected a number between 0 and 1")
    from cudabench.analysis.verdicts import parse_threshold
    from cudabench.cli.compare import (
        check_thresholds,
        judge,
        refuse_a_cached_search,
        refuse_the_same_run,
    )

    # NumPy's numbers as Python's (np.float32(0.05) was refused, np.float64 taken), each
    # checked as given: a bare 5 is named 5 (the text '5.0' is not what the caller gave)
    texts = []
    for value, flag in ((threshold, "--threshold"), (max_threshold, "--max-threshold")):
        if not isinstance(value, str):
            value = int(value) if isinstance(value, numbers.Integral) else float(value)
            parse_threshold(value, flag)
        texts.append(str(value))
    threshold, max_threshold = texts
    alpha = float(alpha)
    check_thresholds(threshold, max_threshold)  # named before files are read
    refuse_idle_cap(threshold, (("max_threshold",) if cap_given else ())
                    + (("db",) if db_auto_only and db is not None else ()))
    files = _file(baseline, "baseline"), _file(current, "current")
    if isinstance(baseline, (str, os.PathLike)) and isinstance(current, (str, os.PathLike)):
        refuse_the_same_run(Path(baseline), Path(current), files)  # as the command does
    elif baseline is current or same_run(*files):
        if baseline is not current:  # two loads of one search's files
            refuse_a_cached_search("baseline", "current", files[1])
        # a run compared with itself, its own file, or a copy (raw samples and all: no
        # two runs on a GPU give the same)
        raise UsageError("baseline and current are the same run: compare a new run with a "
                         "baseline measured before it")
    judged = judge(files[0], files[1], str(threshold), alpha,
                   as_path(db, "db") if db is not None else None, allow_different_gpu, power,
                   allow_missing, str(max_threshold))
    return Comparison(judged, files)


def refuse_idle_cap(threshold: str, given: tuple[str, ...] = ("max_threshold",)) -> None:
    """Refuse options of threshold auto alone given beside threshold (max_threshold, db)
    as `cudabench compare` refuses --max-threshold and --db beside a fixed --threshold:
    they did nothing."""
    import click

    from cudabench.cli import compare as command

    # the command's check reads whether an option was given from its click context: one
    # that says it was, as a command line's --max-threshold or --db does
    with click.Context(command.compare_command) as context:
        for name in given:
            context.set_parameter_source(name, click.core.ParameterSource.COMMANDLINE)
        command.refuse_idle_cap(threshold, given)


def _file(what: Results | PathLike, role: str) -> ResultsFile:
    if isinstance(what, Results):
        return what.results_file(f"({role} run, not saved)")
    if isinstance(what, (str, os.PathLike)):
        return load_results(as_path(what, role))
    raise UsageError(f"{role} {what!r}: expected Results or the path of a results file")
