"""Errors and messages in Python's terms: the API's checks and messages are the commands'
own, whose texts name the command's flags; a caller of run() or compare() gave arguments,
not flags (and a switch given as "no" is no False)."""

from __future__ import annotations

import contextlib
import re
import dataclasses
from collections.abc import Iterator, Mapping, Sequence

from cudabench.analysis.verdicts import Comparison
from cudabench.common.flag_terms import LIVE_TERMS, SUITE_KEYS, rename_flags
from cudabench.errors import CudabenchError, UsageError
from cudabench.catalog import ALL_VARIANTS
from cudabench.results.model import BenchmarkResult, RunOutcome

# The command's flags as the arguments of run() and TimingPolicy name them: the checks are
# the command's own, and their messages name the flag they refuse.
RUN_ARGUMENTS = {
    "--size": "size", "--dtype": "dtype", "--variant": "variants", "--param": "params",
    "--kernels-dir": "kernels_dir", "--l2-flush": "l2_flush", "--json": "json",
    "--seed": "seed", "--device": "device", "--keep-workers": "keep_workers", "--hot": "hot",
    "--writeback": "writeback", "--full-check": "full_check=True", "--counters": "counters",
    "--energy": "energy", "--transfers": "transfers=True", "--sanitize": "sanitize",
    "--warmup": "TimingPolicy.warmup_s", "--min-samples": "TimingPolicy.min_samples",
    "--max-samples": "TimingPolicy.max_samples", "--precision": "TimingPolicy.precision",
    "--max-time": "TimingPolicy.max_time_s", "--timeout": "TimingPolicy.timeout_s",
    "--compile-timeout": "TimingPolicy.compile_timeout_s", "--rounds": "TimingPolicy.rounds",
}
# "pass --db with another path": a Python caller passes the argument, not a flag.
DB_ARGUMENT = "the db argument"
# compare's checks are the command's: its flags as compare()'s arguments name them.
COMPARE_ARGUMENTS = {"--threshold": "threshold", "--max-threshold": "max_threshold",
                     "--alpha": "alpha", "--db": DB_ARGUMENT,
                     "--allow-missing": "allow_missing=True",
                     "--allow-different-gpu": "allow_different_gpu=True"}
# What the rows' warnings and notes, shown to a Python caller, name in place of a flag: a
# warning's "drop --hot" is run()'s hot=True, its "raise --max-time" the TimingPolicy's,
# a footer's --wide the table's own argument.
SHOWN = {**RUN_ARGUMENTS, **COMPARE_ARGUMENTS, "--hot": "hot=True",
         "--wide": "table(wide=True)"}


@contextlib.contextmanager
def python_terms(arguments: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a cudabench error whose message names one of the command's flags
    (arguments: flag -> the argument, or TimingPolicy field, it stands for) with the
    argument's name in its place (a UsageError, or a GpuEnvironmentError: "--device 5:
    there are 1 GPU(s)"); any other error as it is."""
    token = LIVE_TERMS.set(arguments)  # the notes printed as the run goes, too
    try:
        yield
    except CudabenchError as exc:
        text = str(exc)
        # a Python caller has no --help to see: the docstrings and docs/python.md
        named = rename_flags(_phrased(text.replace(" (see --help)", "")), arguments)
        if named == text:
            raise
        exc.args = (named,)  # the same error, in Python's terms: its type and fields kept
        raise exc from None
    finally:
        LIVE_TERMS.reset(token)


# Whole phrases a flag-for-flag rename would garble: "--variant NAME or --variant all" is
# not "variants NAME or variants all" in Python.
_PHRASES = {re.escape(f"--variant NAME or --variant {ALL_VARIANTS}"):
            f'variants="NAME" or variants="{ALL_VARIANTS}"',
            r"--dtype (\w+) runs": r'dtype="\1" runs'}  # "dtype float16 runs them"


def _phrased(text: str) -> str:
    for phrase, python in _PHRASES.items():
        text = re.sub(phrase, python, text)
    return text


def switch(value: object, name: str) -> bool:
    """Return an argument given as True or False, else UsageError: "no" or 0 is not False
    here, and bool("no") would turn it on."""
    if not isinstance(value, bool):
        raise UsageError(f"{name} {value!r}: expected True or False")
    return value


# A suite's rows (run_suite(), or a loaded file of `cudabench run`): what their warnings
# name is set in the suite file, "raise timing.max_time", not run()'s TimingPolicy.
SUITE_SHOWN = {**SHOWN, **SUITE_KEYS, "--hot": "hot = true"}


def terms_of(command: Sequence[str]) -> Mapping[str, str]:
    """Return the terms a run's displays use, by the command its rows came from: a
    suite's keys for `cudabench run` (run_suite()), run()'s arguments for the rest."""
    return SUITE_SHOWN if tuple(command[1:2]) == ("run",) else SHOWN


def said(text: str, terms: Mapping[str, str] = SHOWN) -> str:
    """Return a message of the commands' with the flags it names in Python's terms (or
    in terms', a suite's keys, the pytest plugin's options)."""
    return rename_flags(_phrased(text) if terms is SHOWN else text, terms)


def outcome_shown(outcome: RunOutcome, terms: Mapping[str, str] = SHOWN) -> RunOutcome:
    """Return a run's rows as a Python caller is shown them: their warnings, errors and
    notes in Python's terms (terms_of). For display only: the rows themselves, and the
    results file, keep the commands' texts (one file, whichever wrote it)."""
    return RunOutcome(tuple(_row_shown(row, terms) for row in outcome.results),
                      tuple(said(note, terms) for note in outcome.notes))


def _row_shown(row: BenchmarkResult, terms: Mapping[str, str]) -> BenchmarkResult:
    def maybe(text: str | None) -> str | None:
        return None if text is None else said(text, terms)

    return dataclasses.replace(
        row, warnings=tuple(said(w, terms) for w in row.warnings), error=maybe(row.error),
        suspect=maybe(row.suspect), skipped=maybe(row.skipped))


def comparison_shown(judged: Comparison, terms: Mapping[str, str] = SHOWN) -> Comparison:
    """Return a comparison as a Python caller is shown it: its notes and each row's reason
    in Python's terms, or in terms (for display only, as outcome_shown; a threshold's
    source, a name the summary reads, is the renderer's to name: flags_named)."""
    rows = tuple(dataclasses.replace(row, reason=said(row.reason, terms)) for row in judged.rows)
    return dataclasses.replace(
        judged, rows=rows, notes=tuple(said(n, terms) for n in judged.notes),
        setting_changes=tuple(said(c, terms) for c in judged.setting_changes))
