"""Results: the rows of one run (or of a saved file), as the Python API returns them.

The rows are the results model's own BenchmarkResult records; Results adds what a Python
caller does with them: iterate, look one up, save the results file the commands write,
turn them into plain records or a DataFrame, and show them (Rich in a terminal, HTML in a
notebook) through the same renderers as the commands.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeAlias, overload

from cudabench.analysis.compare import benchmark_text, twice_on_one_gpu
from cudabench.api.display import Printed, fragment, lines_html, plain_text
from cudabench.api.terms import DB_ARGUMENT, outcome_shown, python_terms, switch, terms_of
from cudabench.common.outfiles import check_output, names_a_folder
from cudabench.errors import CudabenchError, ExitCode, UsageError
from cudabench.render import terminal
from cudabench.render.fit import every_column
from cudabench.render.flag_names import flags_named
from cudabench.render.html_page import esc, run_table_html
from cudabench.render.html_sections import diagnostic_lines
from cudabench.render.run_table import build_tables, derived
from cudabench.results.loader import check_replaceable, load_results
from cudabench.results.model import (
    FAILING_STATUSES,
    BenchmarkResult,
    DeviceInfo,
    ResultsFile,
    RunOutcome,
)
from cudabench.results.writer import ResultsWriter, new_run_file

if TYPE_CHECKING:
    import numpy as np
    import pandas

PathLike = str | os.PathLike[str]
# NumPy's numbers are taken wherever a number is (a notebook's often are): typed so, too
Integer: TypeAlias = "int | np.integer[Any]"
Real: TypeAlias = "float | np.floating[Any] | np.integer[Any]"


def as_path(value: object, name: str, folder: bool = False) -> Path:
    """Return value as a Path, or raise UsageError naming the argument: a number or None
    where a path belongs, an empty path (Path("") is the current folder), or a file's
    name that ends with a slash (unless folder: Path drops it, and the file was written)."""
    if not isinstance(value, (str, os.PathLike)):
        raise UsageError(f"{name} {value!r}: expected a path (str or pathlib.Path)")
    text = str(os.fspath(value))
    if not text.strip():
        raise UsageError(f"{name} {text!r}: give a file name (an empty path is not one)")
    why = None if folder else names_a_folder(text)
    if why is not None:
        raise UsageError(f"{name} {why}")
    return Path(value).expanduser()  # "~/now.json" made a folder named ~ in the current one


# What a results file says of the run that measured it, kept when loaded rows are saved
# again (to_json, record): a re-saved file named this machine, this folder's commit, now.
WRITTEN_FRESH = ("kind", "schema_version", "updated", "complete")




@dataclass(frozen=True, eq=False)
class Results(Sequence[BenchmarkResult]):
    """The rows of a run, in the order they were measured; iterate them, or index them."""

    rows: tuple[BenchmarkResult, ...]
    notes: tuple[str, ...] = ()  # variants skipped and why
    command: tuple[str, ...] = ("cudabench",)  # the equivalent command, for results files
    versions: Mapping[str, str] = field(default_factory=dict)  # the engine's, its libraries'
    path: Path | None = None  # the results file the rows were written to or read from
    # When, where and from which commit the rows were measured (a loaded file's: also
    # whether its run completed), kept when they are saved again.
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: PathLike) -> Results:
        """Read a results file (any schema version cudabench reads); ResultsFileError if it
        is not one."""
        path = as_path(path, "load(path)")
        loaded = load_results(path)
        command = loaded.metadata.get("command")
        tool = loaded.metadata.get("tool")
        versions = {str(k): str(v) for k, v in tool.items() if k not in ("name", "version")
                    } if isinstance(tool, dict) else {}
        return cls(loaded.benchmarks, (), tuple(map(str, command)) if isinstance(command, list)
                   else ("cudabench",), versions, Path(path), dict(loaded.metadata))

    @property
    def complete(self) -> bool:
        """Return whether the run completed: False for a loaded file of a run that stopped
        early (Ctrl-C, a crash), which compare() fails and to_json() keeps marked."""
        return self.metadata.get("complete") is not False

    def __iter__(self) -> Iterator[BenchmarkResult]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: SupportsIndex) -> BenchmarkResult: ...  # np.int64(0) too

    @overload
    def __getitem__(self, index: slice) -> Results: ...

    @overload
    def __getitem__(self, index: str) -> BenchmarkResult: ...

    def __getitem__(self, index: SupportsIndex | slice | str) -> BenchmarkResult | Results:
        """Return one row (by position, or by name as row() finds it), or for a slice the
        rows as Results of their own (tables, to_records() and record() work on them); a
        slice has no file of its own, so record() writes one rather than naming the whole
        run's."""
        if isinstance(index, str):
            return self.row(index)
        if isinstance(index, slice):
            return Results(self.rows[index], self.notes, self.command, self.versions,
                           metadata=self.metadata)
        try:
            position = operator.index(index)  # NumPy's integers too
        except TypeError:
            raise UsageError(f"results[{index!r}]: expected a position, a slice or a variant "
                             "name") from None
        return self.rows[position]

    @property
    def outcome(self) -> RunOutcome:
        """Return the rows as the run outcome the renderers take."""
        return RunOutcome(self.rows, self.notes)

    @property
    def exit_code(self) -> ExitCode:
        """Return the command's exit code for these rows: 0, 2 (a row not compiled or run;
        no rows of a run that completed), 3 (a row failed verification, timed out or is a SUSPECT) or 130
        (a run that stopped early: the rows of KeyboardInterrupt.results, or of a file
        marked incomplete)."""
        if not self.complete:  # its rows passing says nothing of the rows it never ran (a
            # Ctrl-C before the first row left none: stopped, not "measured nothing")
            return max(self.outcome.exit_code, ExitCode.INTERRUPTED)
        if not self.rows:  # an empty slice, an empty file: nothing was measured
            return ExitCode.USAGE
        return self.outcome.exit_code

    @property
    def ok(self) -> bool:
        """Return whether the command would exit 0: no row failed, errored, timed out or
        is a SUSPECT, something was measured (not every row a SKIP), and the run completed."""
        return self.exit_code is ExitCode.OK

    @property
    def failures(self) -> tuple[BenchmarkResult, ...]:
        """Return the rows that failed, errored, timed out or are not believed."""
        return tuple(row for row in self.rows if row.status in FAILING_STATUSES)

    def row(self, variant: str, op: str | None = None) -> BenchmarkResult:
        """Return the one row named variant ("tiled", or "matmul/tiled"; op= names the op
        too); UsageError when there is none or more than one (a sweep: pick from the rows)."""
        if not isinstance(variant, str) or not (op is None or isinstance(op, str)):
            raise UsageError(f"row({variant!r}{'' if op is None else f', op={op!r}'}): "
                             "expected a variant name such as 'tiled' or 'matmul/tiled'")
        if "/" in variant:  # "matmul/tiled", with op= the same op or none
            named, variant = variant.split("/", 1)
            if op is not None and op != named:
                raise UsageError(f"row('{named}/{variant}', op={op!r}): two ops named; give "
                                 f"row('{named}/{variant}') or row({variant!r}, op={op!r})")
            op = named
        found = [r for r in self.rows if r.variant == variant and (op is None or r.op == op)]
        if len(found) != 1:
            names = sorted({f"{r.op}/{r.variant}" for r in self.rows})
            what = f"{op}/{variant}" if op else variant
            ops = sorted({r.op for r in found})
            if not found:
                why = f"no such row; the rows are {', '.join(names) or 'none'}"
            elif len(ops) > 1:
                why = (f"{len(found)} rows match, of the ops {', '.join(ops)}: name one, "
                       f"row('{ops[0]}/{variant}') or row({variant!r}, op='{ops[0]}')")
            elif len({r.key for r in found}) == 1:
                why = (f"{len(found)} rows of this one benchmark match (several GPUs, or runs "
                       "joined): pick one from the rows (iterate the results)")
            else:
                why = (f"{len(found)} rows match, of other sizes, types or parameters (a sweep "
                       "or several files): pick one from the rows (iterate the results)")
            raise UsageError(f"row {what!r}: {why}")
        return found[0]

    def to_json(self, path: PathLike) -> Path:
        """Write the rows as a results file (the format `cudabench compare`, `report` and
        `history import` read), atomically; return its path."""
        target = as_path(path, "to_json(path)")
        if not self.rows and self.complete:  # an empty slice over a results file would
            # leave it no rows; a run stopped before its first row is written as stopped
            raise UsageError(f"to_json({os.fspath(path)!r}): the results hold no rows: "
                             "nothing to write")
        check_output(target, "to_json(path)")  # a folder or an empty path: a clear error
        check_replaceable(target, "to_json(path)")  # notes, a history store: not replaced
        twice = twice_on_one_gpu(self.rows)
        if twice is not None:  # compare would refuse the file: refuse to write it
            raise UsageError(f"to_json({os.fspath(path)!r}): rows[{twice}], "
                             f"{benchmark_text(self.rows[twice])}, repeats a row measured on "
                             "the same GPU (two runs joined?); a results file holds each "
                             "benchmark once per GPU: save each run to a file of its own")
        writer = ResultsWriter(target, flag="to_json(path)", keep_unmeasured=False)
        writer.metadata["command"] = list(self.command)  # a pytest session's, say
        writer.metadata["tool"].update(self.versions)
        writer.metadata.update({key: value for key, value in self.metadata.items()
                                if key not in WRITTEN_FRESH})  # a loaded file's provenance
        writer.stopped_early = not self.complete
        try:
            for row in self.rows:
                writer.add(row, write=False)
            writer.write(complete=True)
        finally:  # another write of this process may follow
            writer.close()
        # `path` is the file the rows were written to: a compare after this names it, not
        # "(current run, not saved)"
        object.__setattr__(self, "path", target)
        return target

    def record(self, db: PathLike | None = None) -> Path:
        """Record the rows in the history store (default .cudabench/history.db, or
        $CUDABENCH_HISTORY_DB), as
        `cudabench history import` does; a run without a results file gets one in
        .cudabench/runs/ first (once: the results keep it as their path). Return the
        recorded file."""
        from cudabench.history import default_store

        with python_terms({"--db": DB_ARGUMENT}):  # the variable's errors, too
            store = as_path(db, "record(db)") if db is not None else default_store()
            return record_as(self, store)

    def _recorded_file(self, store: Path) -> Path | None:
        """Return the file a run without one was recorded from before, when the store has
        this run and the file is still there (record() twice wrote a second file)."""
        from cudabench.history.store import Store

        if not store.is_file():
            return None
        with Store.open(store, create=True) as opened:  # record() writes it: an older
            # store is upgraded, not refused
            known = opened.run_for(self.results_file(), "")
            where = next((run.source_path for run in opened.runs() if run.id == known),
                         None) if known is not None else None
        # the file must still hold these rows: a later run written over it (json= of the
        # same path) had its rows recorded as these
        return Path(where) if where and _holds(Path(where), self) else None

    def to_records(self) -> list[dict[str, Any]]:
        """Return one plain dict per row: names, status, median and spread in seconds,
        rates, verification and the raw samples (JSON-ready, for a DataFrame or a CSV);
        and what the tables compute: pct_of_peak, bound and in_l2 (where the roofline
        places the row), and "compared", its ratios to the rows beside it ({"vs cuBLAS":
        1.02, "% of memcpy_dtod": 97.1}, as the table shows them)."""
        computed, titles = derived(self.outcome)
        records = []
        for row in self.rows:
            values = computed.get(id(row), {})
            records.append({**record_of(row),
                            **{key: values.get(key) for key in ("pct_of_peak", "bound",
                                                                 "in_l2")},
                            "compared": {t: values[t] for t in titles if t in values}})
        return records

    def to_pandas(self) -> pandas.DataFrame:
        """Return the records as a pandas DataFrame (pandas is not a dependency: install it
        to use this)."""
        try:
            import pandas
        except ImportError:
            raise UsageError("to_pandas() needs pandas: pip install pandas (or use "
                             "to_records(), plain dicts)") from None
        return pandas.DataFrame.from_records(self.to_records())

    def results_file(self, label: str = "(this run)") -> ResultsFile:
        """Return the rows as a loaded results file (what compare and the reports take),
        named by its path, or by label when the rows were never written."""
        devices: dict[Any, DeviceInfo] = {}
        for row in self.rows:
            if row.device is not None:
                devices.setdefault(row.device.identity, row.device)
        where = str(self.path) if self.path is not None else label
        return ResultsFile(where, {**self.metadata, "command": list(self.command),
                                   "complete": self.complete},
                           tuple(devices.values()), self.rows, 0)

    def table(self, wide: bool = False) -> Printed:
        """Return the run's tables and diagnostics as a Rich renderable, as the command
        prints them: `rich.print(results.table())`; wide keeps every column however wide
        the console (the command's --wide)."""
        every = switch(wide, "wide")
        terms = terms_of(self.command)
        shown = outcome_shown(self.outcome, terms)

        def render(console: Any) -> None:
            with flags_named(terms), every_column(every):
                terminal.render_run(shown, console)
                terminal.render_diagnostics(shown, console)

        return Printed(render)

    def __rich__(self) -> Printed:
        return self.table()

    def __str__(self) -> str:
        return plain_text(self.table())

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.status.value] = counts.get(row.status.value, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in counts.items()) or "empty"
        return f"<Results: {len(self.rows)} rows ({summary})>"

    def _repr_html_(self) -> str:
        """Return the run's tables as the HTML report draws them (a notebook's display)."""
        terms = terms_of(self.command)
        shown = outcome_shown(self.outcome, terms)
        with flags_named(terms):
            tables = [run_table_html(table) for table in build_tables(shown)]
        return fragment([
            *(tables or ['<p class="note">No benchmarks.</p>']),
            lines_html(diagnostic_lines(shown)),
            f'<p class="note">{esc(repr(self))}</p>',
        ])


def record_as(results: Results, store: Path) -> Path:
    """Record results in the store, as Results.record does, its errors in the commands'
    terms (--db): everything is checked before a results file is written for them, and
    the file written is kept as their path, so that another store records the same file."""
    from cudabench.cli.history import record_files
    from cudabench.history.schema import precheck

    if not results.rows:
        raise UsageError("record(): the results hold no rows: nothing to record")
    precheck(store, create=True)  # a folder, or a file that is no store: before any file
    path = results.path if results.path is not None and _holds(results.path, results) else (
        results._recorded_file(store))
    if path is None:
        path = results.to_json(new_run_file())
        # the rows were written to it: it is their file now (frozen: the one field set late)
        object.__setattr__(results, "path", path)
    record_files([path], store, say=False)
    return path


def _holds(path: Path, results: Results) -> bool:
    """Return whether the file at path holds exactly these rows: another run may have
    written over it since (record() recorded that run's rows as these)."""
    try:
        return load_results(path).benchmarks == results.rows
    except (OSError, CudabenchError):  # gone, or no longer a results file
        return False


def record_of(row: BenchmarkResult) -> dict[str, Any]:
    """Return one row as a flat, JSON-ready dict (seconds, no units in the values)."""
    summary = row.summary
    verification = row.verification
    return {
        "op": row.op, "variant": row.variant, "kind": row.kind.value,
        "params": dict(row.params), "shape": list(row.shape), "dims": list(row.dims),
        "dtype": row.dtype, "hot": row.hot, "l2_flush": row.l2_flush,
        "status": row.status.value,
        "median_s": row.median_s,
        "min_s": summary.min_s if summary else None,
        "max_s": summary.max_s if summary else None,
        "spread": summary.spread if summary else None,
        "samples": len(row.samples_s), "samples_s": list(row.samples_s),
        "batch_median_s": row.batch_median_s, "writeback_s": row.writeback_s,
        "gflops": row.gflops, "gbps": row.gbps,
        "flops": row.flops, "bytes_moved": row.bytes_moved,
        # inf (nothing written, a fault) is null, as in the results file: JSON has no inf
        "rel_error": (verification.rel_error if verification
                      and math.isfinite(verification.rel_error) else None),
        "bad_elements": verification.bad_elements if verification else None,
        "error": row.error, "skipped": row.skipped, "suspect": row.suspect,
        "warnings": list(row.warnings),
        "device": row.device.name if row.device else None,
        "device_index": row.device.index if row.device else None,
        "source": row.source,
    }
