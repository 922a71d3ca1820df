"""What a run that stops (Ctrl-C, SIGTERM, an error) keeps without a results file: its
--markdown and --csv, holding the rows measured so far (with --json or --record, the
results file streams them: results/writer.py)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path

from cudabench.common.lazy import signals_held
from cudabench.common.outfiles import PARTIAL, write_text
from cudabench.errors import CudabenchError
from cudabench.results import BenchmarkResult, RunOutcome
from cudabench.results.rounds import identity

STOPPED_MARKDOWN = "\n- incomplete: the run stopped; the rows above are those it measured\n"


class RowsSoFar:
    """The rows a run has measured, as they arrive; with rounds, a row pooled over one more
    round takes its earlier one's place (as the results file's writer does)."""

    def __init__(self, in_rounds: bool) -> None:
        self.in_rounds = in_rounds
        self._rows: dict[Hashable, BenchmarkResult] = {}

    def add(self, row: BenchmarkResult) -> None:
        """Keep one row."""
        self._rows[identity(row) if self.in_rounds else len(self._rows)] = row

    @property
    def rows(self) -> tuple[BenchmarkResult, ...]:
        """Return the rows kept, in arrival order."""
        return tuple(self._rows.values())


def keep_reports(reports: dict[str, Path | None], rows: tuple[BenchmarkResult, ...],
                 note: Callable[[str], None]) -> None:
    """Write a stopped run's rows to its reports (flag -> path; no results file holds the
    rows), and note where: a new file in place; beside an existing one, which stays as it
    was, as FILE.partial (never over one such: another stopped run's). Never raises but for
    a second Ctrl-C or SIGTERM, held until the rows are saved: the stop is what the command
    reports."""
    if not rows:
        return
    with signals_held():  # a second Ctrl-C: once the rows are saved
        from cudabench.render.csv_out import run_to_csv
        from cudabench.render.markdown import run_to_markdown

        outcome = RunOutcome(rows)
        render = {"--markdown": lambda: run_to_markdown(outcome) + STOPPED_MARKDOWN,
                  "--csv": lambda: run_to_csv(outcome)}
        for flag, path in reports.items():
            if path is not None:
                keep_stopped_text(flag, path, render[flag], f"{len(rows)} of its rows", note)


def keep_stopped_text(flag: str, path: Path, render: Callable[[], str], what: str,
                      note: Callable[[str], None]) -> None:
    """Write a stopped run's report (render's text; what: what it holds, for the note) at
    path where it is new, else beside it as PATH.partial (never over one such: another
    stopped run's), and note where. Never raises but for a second Ctrl-C or SIGTERM, held
    until the report is saved: the stop is what the command reports."""
    with signals_held():
        target = path.with_name(path.name + PARTIAL) if path.exists() else path
        if target.exists():
            note(f"the run stopped: {flag} {target} holds another stopped run's rows, "
                 "not written over; this run's rows were not saved there")
            return
        try:
            write_text(target, render(), flag)
        except (CudabenchError, OSError) as exc:
            note(f"the run stopped, and its rows could not be saved to {flag}: {exc}")
            return
        note(f"the run stopped: {what} are in {target} ({flag})"
             + (f"; {path} is as it was" if target != path else ""))
