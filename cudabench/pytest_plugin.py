"""The pytest plugin (entry point `pytest11`): a `cudabench` fixture, sweep and rounds
markers, and session options that save, compare and record every row the session measured.

Off unless used: without its options and its fixture the plugin adds nothing to a session
(its import is this module alone; cudabench's pipeline loads when a test first asks).

    def test_tiled(cudabench):
        results = cudabench.run("matmul", variants=["tiled"], size=1024)  # FAIL fails the test
        assert results.row("tiled").median_s < 1e-3

    @pytest.mark.cudabench_sweep(size=[256, 1024], TILE=[8, 16])
    def test_sizes(cudabench, cudabench_point):
        cudabench.run("matmul", variants=["tiled"], **cudabench_point)

    pytest --cudabench-json now.json --cudabench-compare base.json [--cudabench-threshold 5%]

A machine without a usable GPU skips the tests that use the fixture, saying why
(--cudabench-require-gpu fails them instead).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from cudabench.api import Comparison, Results
    from cudabench.results.model import BenchmarkResult
    from cudabench.results.writer import ResultsWriter

SWEEP_MARKER = "cudabench_sweep"
ROUNDS_MARKER = "cudabench_rounds"
POINT_FIXTURE = "cudabench_point"
# --cudabench-threshold, -alpha and -max-threshold as given when left out (compare's own);
# the option -max-threshold itself defaults to None (left out: refused by no threshold)
GATE_DEFAULTS = ("auto", 0.001, "25%")
RUN_AXES = ("size", "dtype")  # a sweep's axes that are run()'s own arguments, not params
# run()'s other arguments: a marker's variants=[...] was taken for a kernel parameter
RUN_ARGUMENTS = frozenset({
    "variants", "params", "kernels_dir", "sources", "device", "timing", "seed", "hot",
    "l2_flush", "vendor", "batch", "json", "progress", "keep_workers", "writeback",
    "full_check", "counters", "energy", "transfers", "sanitize"})


@dataclass
class SessionRows:
    """Every row the session's tests measured, and where they go at its end."""

    json_path: Path | None = None
    baseline: Path | None = None
    record_db: Path | None = None
    rows: list[BenchmarkResult] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    writer: ResultsWriter | None = None  # made when the session starts, writes from a row on
    gpu_reason: str | None = None  # why no GPU can be used ("" once one was found)
    run_gpu_reason: str | None = None  # the last test's GPU that could not be used
    comparison: Comparison | None = None
    messages: list[str] = field(default_factory=list)  # for the terminal summary
    measured_by: dict[tuple[object, ...], str] = field(default_factory=dict)  # row -> test
    where: dict[tuple[object, ...], int] = field(default_factory=dict)  # row -> its index
    start: Path = field(default_factory=Path.cwd)  # where pytest started: paths from here
    direct: list[str] = field(default_factory=list)  # kernels a direct run() measured, unsaid
    hearing: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    stray: bool = False  # a direct run no test was failed for: the session fails
    tests_left: bool = False  # a test was still to run after the last that ran

    def shown(self, path: Path | None) -> str:
        """Return a path as the summary names it: from where pytest started, if inside."""
        if path is None:
            return ""
        try:
            return str(path.relative_to(self.start))
        except ValueError:
            return str(path)

    @property
    def gathered(self) -> bool:
        """Return whether the session's rows go anywhere (a file, a comparison, a store)."""
        return bool(self.json_path or self.baseline or self.record_db)

    def add(self, results: Results, test: str) -> None:
        """Keep a run's rows; with --cudabench-json, rewrite the file after each run (as
        the commands do: a crash later loses nothing). The session's rows, like a
        command's, hold one row per benchmark, or no command could compare them: a kernel
        another test measured already is refused (UsageError); one the same test measured
        before (it calls run again, or is re-run) takes the place of its earlier row, as
        a measured kernel takes a SKIP's; a reference or vendor row, or a SKIP, that is
        there already is kept as first measured (the test's own Results keep theirs)."""
        from cudabench.common.units import params_text
        from cudabench.errors import UsageError
        from cudabench.results.model import Kind, Status

        fresh, again, taken = [], [], []
        for row in results.rows:
            key = (row.key, row.device.identity if row.device else None)
            at = self.where.get(key) if self.gathered else None
            if at is None:
                fresh.append((key, row))
            elif self.measured_by[key] == test or (
                    row.kind is Kind.VARIANT and row.status is not Status.SKIP
                    and self.rows[at].status is Status.SKIP):  # measured where it was skipped
                again.append((at, row))
                taken.append(key)
            elif row.kind is Kind.VARIANT and row.status is not Status.SKIP:
                raise UsageError(
                    f"{row.op}/{row.variant} {params_text(row.params)} {row.dtype} at "
                    f"{'x'.join(map(str, row.shape))}{' (hot)' if row.hot else ''} was "
                    f"measured already in this session by {self.measured_by[key]}; the "
                    "session's rows hold one per benchmark: give this test another size, "
                    "variant or parameter")
        for at, row in again:
            self.rows[at] = row
        for key in taken:  # the test that measured it: a later one of its own replaces it
            self.measured_by[key] = test
        for key, row in fresh:
            self.where[key] = len(self.rows)
            self.measured_by[key] = test
            self.rows.append(row)
        self.versions.update(results.versions)
        if self.writer is None:
            return
        self.writer.metadata["tool"].update(results.versions)
        for at, row in again:
            self.writer.replace(at, row)
        for _, row in fresh:
            self.writer.add(row, write=False)
        self.writer.write(complete=False)


_SESSION = pytest.StashKey[SessionRows]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the cudabench options (all off by default)."""
    group = parser.getgroup("cudabench", "cudabench: verify and time CUDA kernels")
    group.addoption("--cudabench-json", metavar="FILE", default=None,
                    help="Write every row the session measured to this results file "
                    "(rewritten after each run).")
    group.addoption("--cudabench-compare", metavar="BASELINE", default=None,
                    help="Compare the session's rows with this results file as `cudabench "
                    "compare` does; a regression fails the session.")
    group.addoption("--cudabench-threshold", metavar="auto|PERCENT", default=GATE_DEFAULTS[0],
                    help="Smallest change that counts, e.g. 5%% or 0.05; auto (default): per "
                    "benchmark from the history store (--cudabench-db), at least 2%%.")
    group.addoption("--cudabench-alpha", metavar="P", type=float, default=GATE_DEFAULTS[1],
                    help="Significance level of the rank test on the raw samples "
                    "(default 0.001).")
    group.addoption("--cudabench-db", metavar="DB", default=None,
                    help="The history store --cudabench-threshold auto reads (default "
                    ".cudabench/history.db, or $CUDABENCH_HISTORY_DB).")
    group.addoption("--cudabench-allow-different-gpu", action="store_true",
                    help="Compare with a baseline measured on another GPU model.")
    group.addoption("--cudabench-allow-missing", action="store_true",
                    help="Pass although benchmarks of the baseline did not run in this "
                    "session (a -k selection, say); by default a missing one fails.")
    group.addoption("--cudabench-max-threshold", metavar="PERCENT", default=None,
                    help="The most --cudabench-threshold auto may grow to from a noisy "
                    "history (default 25%%).")
    group.addoption("--cudabench-record", metavar="DB", default=None,
                    help="Record the session's rows as one run in this history store.")
    group.addoption("--cudabench-keep-workers", metavar="SECONDS", type=float, default=0.0,
                    help="Keep the GPU worker between the session's runs (and for SECONDS "
                    "after the last): it starts once, not once per cudabench.run.")
    group.addoption("--cudabench-rounds", metavar="N", type=int, default=1,
                    help="Measure every run of the session in N pooled rounds (--rounds), "
                    "unless a test's own TimingPolicy sets rounds other than 1 or its "
                    f"{ROUNDS_MARKER}(N) marker says otherwise.")
    group.addoption("--cudabench-require-gpu", action="store_true",
                    help="Fail, rather than skip, the tests that need a GPU when none is "
                    "usable (a GPU CI job).")


def pytest_configure(config: pytest.Config) -> None:
    """Register the sweep marker; check the options (a bad one stops the session now)."""
    config.addinivalue_line(
        "markers", f"{SWEEP_MARKER}(size=[...], NAME=[...]): run the test once per point of "
        f"the product of sizes and parameter values; the test takes {POINT_FIXTURE} and "
        "passes it on: cudabench.run(op, **cudabench_point)")
    config.addinivalue_line(
        "markers", f"{ROUNDS_MARKER}(N): run the test's benchmarks in N pooled rounds, "
        "whatever --cudabench-rounds says (N=1: never in rounds)")
    rows = SessionRows()
    from cudabench.common.outfiles import names_a_folder
    from cudabench.planning.timing import MAX_ROUNDS

    rounds = config.getoption("cudabench_rounds")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise pytest.UsageError(f"--cudabench-rounds {rounds}: must be a whole number from 1 "
                                f"to {MAX_ROUNDS}")
    json_path = config.getoption("cudabench_json")
    baseline = config.getoption("cudabench_compare")
    record = config.getoption("cudabench_record")
    if (json_path or baseline or record) and _distributed(config):
        # Each pytest-xdist worker would write, compare and record its own share.
        raise pytest.UsageError("--cudabench-json, --cudabench-compare and --cudabench-record "
                                "gather one session's rows in one process: run without "
                                "pytest-xdist's -n (timings on one GPU in parallel would "
                                "disturb each other anyway)")
    keep = config.getoption("cudabench_keep_workers")
    if not 0 <= keep <= 86400:  # NaN too
        raise pytest.UsageError(f"--cudabench-keep-workers {keep:g}: expected the seconds an "
                                "idle worker is kept, 0 to 86400")
    for flag, given in (("--cudabench-json", json_path), ("--cudabench-compare", baseline),
                        ("--cudabench-record", record), ("--cudabench-db",
                                                         config.getoption("cudabench_db"))):
        why = names_a_folder(str(given)) if given is not None else None
        if why is not None:  # Path drops the slash, and the file before it was written
            raise pytest.UsageError(f"{flag} {why}")
    rows.json_path, rows.baseline, rows.record_db = (
        Path(given) if given is not None else None for given in (json_path, baseline, record))
    from cudabench.errors import CudabenchError

    _check_gate_options(config)
    if rows.baseline is not None:
        _check_compare_options(config, rows.baseline, rows.json_path)
    try:
        _check_outputs(config, rows)
    except CudabenchError as exc:  # the command's message, naming the plugin's options
        raise pytest.UsageError(plugin_terms(str(exc))) from None
    # From here on the paths are absolute, from where pytest started: a test may change
    # the current folder before the rows are written, compared or recorded.
    rows.json_path, rows.baseline, rows.record_db = (
        path.absolute() if path is not None else None
        for path in (rows.json_path, rows.baseline, rows.record_db))
    db = config.getoption("cudabench_db")
    if db is not None:
        config.option.cudabench_db = str(Path(db).absolute())
    flag = "--cudabench-json"
    if rows.json_path is None and rows.record_db is not None:
        # the store records a file: the rows stream to one from the first, as `--record`
        # without --json does (an interrupted session lost every row it measured)
        from cudabench.results.writer import new_run_file

        rows.json_path, flag = new_run_file().absolute(), "--cudabench-record"
        try:
            rows.json_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"--cudabench-record: cannot make {rows.json_path.parent} "
                                    f"for the session's results file: {exc.strerror or exc}; "
                                    "give --cudabench-json FILE") from None
    if rows.json_path is not None:
        from cudabench.results.writer import ResultsWriter

        try:  # refused where a stopped session's rows wait in FILE.partial
            rows.writer = ResultsWriter(rows.json_path, flag=flag)
        except CudabenchError as exc:
            raise pytest.UsageError(str(exc)) from None
        rows.writer.metadata["command"] = _command(config)
    # A test's json= or to_json() must replace neither the baseline nor the session's own
    # file (an interrupted session leaves that as it was; a complete one writes its rows).
    from cudabench.common.outfiles import keep_unwritten

    if rows.baseline is not None:
        keep_unwritten(rows.baseline, "the session's --cudabench-compare baseline")
    if rows.json_path is not None:
        keep_unwritten(rows.json_path, "the session's --cudabench-json file")
    config.stash[_SESSION] = rows


def pytest_unconfigure(config: pytest.Config) -> None:
    """Let outputs write the baseline and the session's file again: the session is over
    (another may run in this process, as pytester's do)."""
    rows = config.stash.get(_SESSION, None)
    if rows is not None:
        from cudabench.common.outfiles import release

        if rows.writer is not None:  # another session of this process may write the file
            rows.writer.close()
        for path in (rows.baseline, rows.json_path):
            if path is not None:
                release(path)


def _distributed(config: pytest.Config) -> bool:
    """Return whether pytest-xdist spreads this session over workers: in a worker, or in
    the controller that starts them (-n N; a --dist mode with workers, --tx, as xdist
    decides). A --dist mode alone (addopts' --dist loadfile, for the jobs that add -n)
    starts none: the session runs in this process."""
    if hasattr(config, "workerinput"):
        return True
    option = config.option
    return bool(getattr(option, "numprocesses", None)) or (
        getattr(option, "dist", "no") != "no" and bool(getattr(option, "tx", None)))


# The commands' flags where the plugin's options stand for them, in the messages it shows.
_FLAGS = ("json", "threshold", "max-threshold", "alpha", "db", "record", "allow-missing",
          "allow-different-gpu", "keep-workers")
_PLUGIN_OPTIONS = re.compile(rf"(?<![\w-])--({'|'.join(_FLAGS)})(?![\w-])")
# The same, for the comparison's table; a table too narrow for its columns has no --wide
PLUGIN_SHOWN = {**{f"--{flag}": f"--cudabench-{flag}" for flag in _FLAGS},
                "--wide": "a wider terminal (COLUMNS)"}


def plugin_terms(message: str) -> str:
    """Return a command's message with the plugin's option names for its flags."""
    return _PLUGIN_OPTIONS.sub(r"--cudabench-\1", message)


def _check_outputs(config: pytest.Config, rows: SessionRows) -> None:
    """Refuse, before any test runs, a results file or store the session could not write,
    or one it would write over that is not what it claims: a --cudabench-json that names
    a test, a kernel or any file but a results file would be replaced by the rows."""
    from cudabench.common.outfiles import check_outputs
    from cudabench.history.schema import precheck
    from cudabench.results.loader import check_replaceable

    check_outputs({"--cudabench-json": rows.json_path, "--cudabench-record": rows.record_db},
                  [path for path in (rows.baseline,) if path is not None])
    check_replaceable(rows.json_path, "--cudabench-json")
    if rows.record_db is not None:  # an existing file must be a history store
        with _db_is("--record"):
            precheck(rows.record_db, create=True)
    if config.getoption("cudabench_db") is not None:
        precheck(Path(config.getoption("cudabench_db")), create=True)


@contextlib.contextmanager
def _db_is(flag: str) -> Iterator[None]:
    """Name flag where a history store's error names --db (the store the error is about
    is the one flag gave: --cudabench-record's, not --cudabench-db's)."""
    from cudabench.errors import CudabenchError

    try:
        yield
    except CudabenchError as exc:
        exc.args = (re.sub(r"(?<![\w-])--db(?![\w-])", flag, str(exc)),)
        raise


def _check_gate_options(config: pytest.Config) -> None:
    """Refuse a bad threshold or alpha whether or not this session compares: a typo in a
    CI job's options must not wait for the day it adds --cudabench-compare."""
    threshold = str(config.getoption("cudabench_threshold"))
    alpha = config.getoption("cudabench_alpha")
    given = config.getoption("cudabench_max_threshold")
    db = config.getoption("cudabench_db")
    if (threshold, alpha) == GATE_DEFAULTS[:2] and given is None and db is None:
        return  # nothing given: nothing to check (and the compare module, 2 s, unloaded)
    from cudabench.api.comparison import refuse_idle_cap
    from cudabench.cli.compare import check_thresholds
    from cudabench.errors import CudabenchError

    try:
        check_thresholds(threshold, GATE_DEFAULTS[2] if given is None else str(given))
        # a cap or a store beside a fixed threshold, as compare refuses them: they did nothing
        idle = tuple(name for name, value in (("max_threshold", given), ("db", db))
                     if value is not None)
        if idle:
            refuse_idle_cap(threshold, idle)
    except CudabenchError as exc:
        raise pytest.UsageError(plugin_terms(str(exc))) from None
    if not 0 < alpha < 1:
        raise pytest.UsageError(f"--cudabench-alpha {alpha}: must be between 0 and 1")


def _check_compare_options(config: pytest.Config, baseline: Path, json_path: Path | None
                           ) -> None:
    from cudabench.errors import CudabenchError
    from cudabench.results.loader import load_results

    try:
        load_results(baseline)
    except CudabenchError as exc:
        raise pytest.UsageError(f"--cudabench-compare: {plugin_terms(str(exc))}") from None
    if json_path is not None and json_path.resolve() == baseline.resolve():
        raise pytest.UsageError(f"--cudabench-json {json_path}: is the baseline being "
                                "compared with; write the session's rows elsewhere")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a test marked cudabench_sweep over its points."""
    marker = metafunc.definition.get_closest_marker(SWEEP_MARKER)
    if marker is None:
        return
    if POINT_FIXTURE not in metafunc.fixturenames:
        return  # failed at its setup (pytest_runtest_setup): the file's other tests run
    where = metafunc.definition.nodeid
    try:
        if len(list(metafunc.definition.iter_markers(SWEEP_MARKER))) > 1:
            raise BadSweep(f"{where}: {SWEEP_MARKER} is given more than once (only the "
                           "nearest would sweep): give one marker with every axis")
        points = sweep_points(where, marker.args, marker.kwargs)
    except BadSweep as bad:  # this test's mistake: it errors, the session goes on
        metafunc.parametrize(POINT_FIXTURE, [bad], ids=["bad-sweep"])
        return
    metafunc.parametrize(POINT_FIXTURE, points, ids=[point_id(point) for point in points])


class BadSweep(Exception):
    """A sweep marker the plugin cannot take: the test's one point, failed at its setup."""


@pytest.hookimpl(tryfirst=True)  # before its fixtures are set up (a GPU probed)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test whose sweep marker is wrong, with the reason, and no other test; and
    the session for a direct run the test before left unsaid (_left_over)."""
    _left_over(item)  # before this test's own fixtures measure anything
    if (item.get_closest_marker(SWEEP_MARKER) is not None
            and POINT_FIXTURE not in getattr(item, "fixturenames", (POINT_FIXTURE,))):
        pytest.fail(f"{item.nodeid}: @pytest.mark.{SWEEP_MARKER} needs a {POINT_FIXTURE} "
                    f"argument (pass it on: cudabench.run(op, **{POINT_FIXTURE}))",
                    pytrace=False)
    callspec = getattr(item, "callspec", None)
    point = callspec.params.get(POINT_FIXTURE) if callspec is not None else None
    if isinstance(point, BadSweep):
        pytest.fail(str(point), pytrace=False)


def sweep_points(where: str, args: Sequence[Any], kwargs: Mapping[str, Any]
                 ) -> list[dict[str, Any]]:
    """Return the points of a sweep marker: per combination of its sizes, dtypes and
    parameter values, {"size": S, "dtype": D, "params": {NAME: V}}, each key only where the
    marker sweeps it (so a test may pass its own params= beside a sweep of sizes); BadSweep
    for a marker that is not one."""
    if args:
        raise BadSweep(f"{where}: {SWEEP_MARKER} takes keywords only: size=[...], "
                       "dtype=[...] and one NAME=[...] per kernel parameter")
    axes: dict[str, list[Any]] = {}
    for name, value in kwargs.items():
        if name in RUN_ARGUMENTS:
            raise BadSweep(f"{where}: {SWEEP_MARKER}({name}=...): {name} is an argument of "
                           f"cudabench.run(), not an axis: pass it there; a sweep's axes are "
                           "size, dtype and the kernels' parameters")
        values = list(value) if isinstance(value, (list, tuple, range)) else [value]
        if not values:
            raise BadSweep(f"{where}: {SWEEP_MARKER}({name}=[]) sweeps nothing")
        axes[name] = values
    run_axes = {name: axes.pop(name) for name in RUN_AXES if name in axes}
    points = []
    for run_combo in itertools.product(*run_axes.values()):
        for combo in itertools.product(*axes.values()):
            point: dict[str, Any] = dict(zip(run_axes, run_combo))
            if axes:
                point["params"] = dict(zip(axes, combo))
            points.append(point)
    return points


def point_id(point: Mapping[str, Any]) -> str:
    """Return a sweep point's test id: size:1024-dtype:float16-TILE:16 (pytest's -k takes a
    colon, not an equals sign; each axis ends at a - or the name's ]: -k "size:1024- or
    size:1024]")."""
    parts = [f"{name}:{point[name]}" for name in RUN_AXES if name in point]
    return "-".join(parts + [f"{k}:{v}" for k, v in point.get("params", {}).items()])


class Bench:
    """The `cudabench` fixture: run benchmarks inside a test."""

    def __init__(self, config: pytest.Config, rows: SessionRows, rounds: int,
                 test: str = "", marked: bool = False) -> None:
        self._config = config
        self._rows = rows
        self._rounds = rounds  # the session's, or the test's marker's
        self._marked = marked  # rounds is the test's cudabench_rounds marker's
        self._test = test  # the test's node id

    def run(self, op: str, *, check: bool = True, **options: Any) -> Results:
        """Run op as cudabench.api.run does (same keywords); keep the rows for the
        session's file, comparison and record. A row that fails verification (or errors,
        times out or is not believed) fails the test with its message, and a run in which
        every variant is a SKIP (whatever cuBLAS or the copy did) skips it, unless check is
        False."""
        from cudabench.api import Results, run
        from cudabench.cli.commands import rows_heard_by
        from cudabench.errors import CudabenchError, GpuEnvironmentError
        from cudabench.results.model import Kind

        problem = _call_problem(run, op, options)
        own = getattr(options.get("timing"), "rounds", 1)
        if problem is None and self._marked and own not in (1, self._rounds):
            problem = (f"the test's {ROUNDS_MARKER}({self._rounds}) and its timing's "
                       f"rounds={own} disagree: give the rounds in one place")
        if problem is not None:  # the test's mistake: one line, not a traceback
            pytest.fail(f"cudabench: error: {problem}", pytrace=False)
        keep = self._config.getoption("cudabench_keep_workers")
        if keep and "keep_workers" not in options:
            options["keep_workers"] = keep
        if self._rounds != 1:  # where the test's own policy leaves rounds at 1
            options["timing"] = session_rounds(options.get("timing"), self._rounds)
        # pytest.fail and skip are called outside the except blocks: inside one, pytest
        # prints the error it handled before the one-line message, then the message again.
        failure = gpu_reason = None
        if not isinstance(check, bool):  # "no" or 0 is not False: bool("no") checked
            pytest.fail(f"cudabench: error: check {check!r}: expected True or False",
                        pytrace=False)
        heard: dict[tuple[object, ...], BenchmarkResult] = {}  # the rows so far, by benchmark

        def hear(row: BenchmarkResult) -> None:  # a later round's row replaces the earlier
            heard[(row.key, row.device.identity if row.device else None)] = row

        through = _THROUGH_THE_FIXTURE.set(True)
        try:
            with rows_heard_by(hear):
                results = run(op, **options)
        except GpuEnvironmentError as exc:  # this request's GPU: missing, lost, not usable
            gpu_reason = f"cudabench: no usable GPU: {exc}"
        except CudabenchError as exc:  # the test's own mistake: its message, no traceback
            failure = f"cudabench: error: {exc}"
        except BaseException:
            # Ctrl-C (or pytest.exit) mid-run: the rows it measured join the session's, its
            # file then marked incomplete, as a stopped command keeps them
            with contextlib.suppress(CudabenchError):
                if heard:
                    self._rows.add(Results(tuple(heard.values())), self._test)
            raise
        finally:
            _THROUGH_THE_FIXTURE.reset(through)
        if gpu_reason is not None:
            # This test's alone: another test may ask for another GPU (the session's probe,
            # in the fixture, decides whether any GPU is usable).
            self._rows.run_gpu_reason = gpu_reason
            if self._config.getoption("cudabench_require_gpu"):
                pytest.fail(f"{gpu_reason} (--cudabench-require-gpu)", pytrace=False)
            skip(gpu_reason)
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        try:
            self._rows.add(results, self._test)
        except CudabenchError as exc:  # a benchmark measured twice, a file that cannot be written
            failure = f"cudabench: error: {plugin_terms(str(exc))}"
        if failure is not None:
            pytest.fail(failure, pytrace=False)
        if check and results.failures:
            pytest.fail("\n".join(failure_message(row) for row in results.failures),
                        pytrace=False)
        if check and all(row.skipped is not None for row in results
                         if row.kind is Kind.VARIANT):
            # No kernel of the test's measured (every variant needs another GPU, say): a
            # skip, not a pass, though the cuBLAS or copy row beside them ran.
            reasons = sorted({f"{row.op}/{row.variant}: {row.skipped}" for row in results
                              if row.skipped is not None})
            skip("cudabench: nothing was measured: " + ("; ".join(reasons) or "no rows"))
        return results


def _call_problem(run: Callable[..., Any], op: str, options: Mapping[str, Any]) -> str | None:
    """Return why run(op, **options) cannot be called (a misspelt keyword), naming the
    keyword run() takes that is nearest; None when it can."""
    import difflib
    import inspect

    try:
        inspect.signature(run).bind(op, **options)
    except TypeError as exc:
        taken = list(inspect.signature(run).parameters)
        unknown = [name for name in options if name not in taken]
        near = difflib.get_close_matches(unknown[0], taken, n=1) if unknown else []
        return f"cudabench.run(): {exc}" + (f"; did you mean {near[0]}=?" if near else "")
    return None


def skip(reason: str) -> NoReturn:
    """Skip the test, `-rs` naming the test's file and line, not this module's (as
    pytest's own skip marks do)."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


def session_rounds(timing: Any, rounds: int) -> Any:
    """Return the test's timing policy (None: the default one) with the session's rounds,
    unless it sets rounds other than 1 itself; anything else is left for run() to
    refuse."""
    from dataclasses import replace

    from cudabench.planning.timing import TimingPolicy

    policy = TimingPolicy() if timing is None else timing
    if not isinstance(policy, TimingPolicy) or policy.rounds != 1:
        return timing
    return replace(policy, rounds=rounds)


# Set while the fixture's run() measures: the rows measured otherwise (a direct
# cudabench.run()) are not the session's, and a gathering session says so (_direct_runs).
_THROUGH_THE_FIXTURE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cudabench_through_the_fixture", default=False)
_DIRECT = ("measured by a direct cudabench.run(), which this session's --cudabench-json, "
           "--cudabench-compare and --cudabench-record do not gather")


def pytest_sessionstart(session: pytest.Session) -> None:
    """In a session that gathers its rows, hear every kernel measured from now on: a
    direct cudabench.run() anywhere (a test, a fixture of any scope, a module imported at
    collection) is said, not left out of the file, the gate and the store unseen."""
    rows = session.config.stash.get(_SESSION, None)
    if rows is None or not rows.gathered or _ran_nothing(session.config):
        return
    from cudabench.cli.commands import rows_heard_by

    def hear(row: BenchmarkResult) -> None:  # the kernels, not the copy measured beside
        if not _THROUGH_THE_FIXTURE.get() and row.kind.value == "variant":
            rows.direct.append(f"{row.op}/{row.variant}")

    rows.hearing.enter_context(rows_heard_by(hear))


def _direct_names(rows: SessionRows | None) -> str:
    """Return the kernels direct runs measured since last asked ('' for none)."""
    if rows is None or not rows.direct:
        return ""
    names = ", ".join(dict.fromkeys(rows.direct))
    rows.direct.clear()
    return names


def _fail_direct(names: str) -> None:
    """Fail the test whose setup, body or teardown measured names by a direct run."""
    pytest.fail(f"cudabench: error: {names} {_DIRECT}: take the `cudabench` fixture and call "
                "its run()", pytrace=False)


@pytest.fixture(autouse=True)
def _direct_runs(request: pytest.FixtureRequest) -> None:
    """Error a test whose module- or session-scoped fixtures (set up before this one)
    measured by a direct cudabench.run() in a session that gathers its rows."""
    names = _direct_names(request.config.stash.get(_SESSION, None))
    if names:
        _fail_direct(names)


@pytest.hookimpl(trylast=True)  # after the fixtures this teardown ends
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Error a test that (or whose fixtures, set up or torn down) measured by a direct
    cudabench.run() in a session that gathers its rows."""
    names = _direct_names(item.config.stash.get(_SESSION, None))
    if names:
        _fail_direct(names)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Iterator[None]:
    """Note whether a test is left to run after this one: a session that -x or --maxfail
    stops there has rows of part of its tests only."""
    yield
    rows = item.config.stash.get(_SESSION, None)
    if rows is not None:
        rows.tests_left = nextitem is not None


def _stopped_early(session: pytest.Session, rows: SessionRows) -> str | None:
    """Return why the session stopped before its last test (-x, --maxfail, a plugin's
    stop: pytest's words), else None (a Ctrl-C is pytest's INTERRUPTED)."""
    why = session.shouldfail or session.shouldstop
    return str(why) if why and rows.tests_left else None


def _left_over(item: pytest.Item) -> None:
    """Fail the session for a direct run the last test's teardown left unsaid (a fixture's
    teardown that raised ends the hooks before pytest_runtest_teardown's): this test's
    setup was blamed for it."""
    _stray(item.config.stash.get(_SESSION, None),
           f"in the test before {item.nodeid} or its fixtures")


def _stray(rows: SessionRows | None, where: str) -> None:
    """Fail the session for the direct runs no test is to blame for, saying where."""
    names = _direct_names(rows)
    if names and rows is not None:
        rows.stray = True
        rows.messages.append(f"cudabench: error: {names} {_DIRECT}, {where}: measure in a "
                             "test, with the `cudabench` fixture's run()")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Fail the session where collecting a file (its import) measured by a direct
    cudabench.run(): no test is to blame."""
    yield
    _stray(collector.config.stash.get(_SESSION, None), f"at the import of {collector.nodeid}")


@pytest.fixture
def cudabench(request: pytest.FixtureRequest) -> Bench:
    """Run cudabench benchmarks in a test: `cudabench.run("matmul", size=1024)`. Skipped,
    with the reason, where no GPU is usable."""
    config = request.config
    rows = config.stash[_SESSION]
    if rows.gpu_reason is None:
        rows.gpu_reason = gpu_unavailable_reason()
    if rows.gpu_reason:
        if config.getoption("cudabench_require_gpu"):
            pytest.fail(f"{rows.gpu_reason} (--cudabench-require-gpu)", pytrace=False)
        skip(rows.gpu_reason)
    return Bench(config, rows, rounds_of(request.node), request.node.nodeid,
                 marked=request.node.get_closest_marker(ROUNDS_MARKER) is not None)


def rounds_of(node: pytest.Item) -> int:
    """Return the rounds a test's runs take: its cudabench_rounds marker's, else the
    session's --cudabench-rounds."""
    marker = node.get_closest_marker(ROUNDS_MARKER)
    if marker is None:
        return int(node.config.getoption("cudabench_rounds"))
    from cudabench.planning.timing import MAX_ROUNDS

    rounds = marker.args[0] if len(marker.args) == 1 and not marker.kwargs else None
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= MAX_ROUNDS:
        pytest.fail(f"{node.nodeid}: {ROUNDS_MARKER} takes one whole number from 1 to "
                    f"{MAX_ROUNDS}, e.g. @pytest.mark.{ROUNDS_MARKER}(1)", pytrace=False)
    return rounds


def gpu_unavailable_reason() -> str:
    """Return why the engine cannot run here ('' when a GPU is usable): it cannot count the
    GPUs (no PyCUDA, no driver) or counts none."""
    from cudabench.cli import commands
    from cudabench.errors import GpuEnvironmentError

    try:
        count = commands.engine_spec(0).count_devices()
    except GpuEnvironmentError as exc:
        return f"cudabench: no usable GPU: {exc}"
    if count < 1:
        return "cudabench: no usable GPU: the CUDA driver sees no device"
    return ""


def failure_message(row: BenchmarkResult) -> str:
    """Return one line saying which row failed and why."""
    from cudabench.common.units import format_error, params_text, shape_text

    name = f"{row.op}/{row.variant} {params_text(row.params)} {shape_text(row.shape)} " \
           f"{row.dtype}".replace(" - ", " ")
    v = row.verification
    if row.error:
        why = row.error
    elif row.timed_out:
        why = "did not finish within the timeout (killed)"
    elif v is not None and not v.passed:
        why = (f"{v.bad_elements} of {v.total_elements} elements outside tolerance "
               f"({v.criterion}); relative error {format_error(v.rel_error)}")
    else:
        why = row.suspect or "failed"
    return f"cudabench: {name}: {row.status.value}: {why}"


def _command(config: pytest.Config) -> list[str]:
    return ["python", "-m", "pytest", *map(str, config.invocation_params.args)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Finish the results file, compare with the baseline, record in the history store."""
    rows = session.config.stash.get(_SESSION, None)
    if rows is None or not rows.gathered or _ran_nothing(session.config):
        return
    rows.hearing.close()
    _stray(rows, "in a fixture's teardown")  # a module- or session-scoped fixture's last
    if rows.stray:
        _fail(session)
    from cudabench.api import Results
    from cudabench.api.comparison import compare_in_flags
    from cudabench.api.results import record_as
    from cudabench.errors import CudabenchError

    # Ctrl-C, or -x / --maxfail with tests left: the rows of part of the session, whose
    # other benchmarks would read as added (not gated) were its file made a baseline
    early = _stopped_early(session, rows)
    stopped = exitstatus == pytest.ExitCode.INTERRUPTED or early is not None
    how = f"stopped early, tests left unrun ({early})" if early else "was interrupted"
    if not rows.rows:
        nothing = "no benchmark ran in this session: nothing written, compared or recorded"
        if rows.baseline is None or stopped or \
                session.config.getoption("cudabench_allow_missing"):
            rows.messages.append(f"cudabench: {nothing}")
            return
        # A gate that measured nothing (every benchmark test deselected or skipped) must
        # not pass: every row of the baseline is missing, as for a partial selection.
        reason = rows.gpu_reason or rows.run_gpu_reason
        why = f" ({reason.removeprefix('cudabench: ')})" if reason else ""
        rows.messages.append(f"cudabench: error: {nothing}{why}: every benchmark of "
                             f"{rows.shown(rows.baseline)} is missing; pass "
                             "--cudabench-allow-missing if that is meant")
        _fail(session)
        return
    if rows.writer is not None:
        # stopped: the file says it is incomplete (and an existing one is not replaced)
        try:
            rows.writer.write(complete=not stopped)
        except CudabenchError as exc:  # the disk filled up, say: say so, fail the session
            rows.messages.append(f"cudabench: error: {plugin_terms(str(exc))}")
            _fail(session)
            return
        where = rows.shown(rows.writer.streams_to if stopped else rows.json_path)
        rows.messages.append(f"cudabench: {rows.writer.kept_note}" if rows.writer.kept_note
                             else f"cudabench: {len(rows.rows)} rows written to {where}"
                             + (f" (incomplete: the session {how})" if stopped else ""))
    if stopped and (rows.baseline is not None or rows.record_db is not None):
        # part of a session is no run to judge or to keep (a compare would fail it as
        # missing rows anyway, and the record would take the file the rows did not reach)
        later = ""
        if rows.record_db is not None and rows.writer is not None:
            where = rows.shown(rows.writer.streams_to)
            later = (f"; record its rows with `cudabench history import {where} --db "
                     f"{rows.shown(rows.record_db)}`")
        rows.messages.append(f"cudabench: the session {how}: nothing compared or "
                             f"recorded{later}")
        return
    kept = rows.writer is not None and rows.writer.kept_note is not None
    results = Results(tuple(rows.rows), (), tuple(_command(session.config)), rows.versions,
                      None if kept else rows.json_path)  # kept: the file is an older run's
    failed = False
    try:
        if rows.baseline is not None:
            config = session.config
            db = config.getoption("cudabench_db")
            # its errors name compare's flags, which plugin_terms makes this plugin's
            rows.comparison = compare_in_flags(
                rows.baseline, results, config.getoption("cudabench_threshold"),
                config.getoption("cudabench_alpha"), db,
                config.getoption("cudabench_allow_different_gpu"), False,
                config.getoption("cudabench_allow_missing"),
                config.getoption("cudabench_max_threshold"))
            failed = not rows.comparison.ok
        from cudabench.results.model import RunOutcome

        if rows.record_db is not None and (kept or not RunOutcome(results.rows)
                                           .measured_something):
            rows.messages.append("cudabench: nothing was measured: nothing recorded")
        elif rows.record_db is not None:
            with _db_is("--record"):
                recorded = record_as(results, rows.record_db)
            rows.messages.append(f"cudabench: {rows.shown(recorded)} recorded in "
                                 f"{rows.shown(rows.record_db)}")
    except CudabenchError as exc:
        rows.messages.append(f"cudabench: error: {plugin_terms(str(exc))}")
        failed = True
    if failed:
        _fail(session)


def _ran_nothing(config: pytest.Config) -> bool:
    """Return whether the session only lists or plans its tests (--collect-only,
    --setup-only, --setup-plan, --fixtures): there is nothing to write, judge or record."""
    option = config.option
    return any(getattr(option, name, False) for name in (
        "collectonly", "setuponly", "setupplan", "showfixtures", "show_fixtures_per_test"))


def _fail(session: pytest.Session) -> None:
    """Fail a session that passed its tests (a regression, a gate with nothing to judge)."""
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    """Print the comparison (as `cudabench compare` prints it) and what was written."""
    rows = config.stash.get(_SESSION, None)
    if rows is None or not (rows.comparison is not None or rows.messages):
        return
    terminalreporter.section("cudabench")
    if rows.comparison is not None:
        from cudabench.api.comparison import comparison_printed
        from cudabench.api.display import plain_text

        # Fitted to pytest's terminal, or every column in a CI log, as the commands print;
        # in the plugin's options, not compare()'s arguments (allow_missing=True)
        tty = bool(terminalreporter.isatty)  # a bool, or pytest 8's callable bool
        terminalreporter.write(plain_text(
            comparison_printed(rows.comparison.judged, PLUGIN_SHOWN),
            config.get_terminal_writer().fullwidth if tty else None, tty))
        verdict = ("cudabench: the session fails: a regression against "
                   f"{rows.shown(rows.baseline)}" if not rows.comparison.ok
                   else f"cudabench: no regression against {rows.shown(rows.baseline)}")
        terminalreporter.write_line(verdict, red=not rows.comparison.ok,
                                    green=rows.comparison.ok, bold=True)
    for message in rows.messages:
        terminalreporter.write_line(message, red=message.startswith("cudabench: error"))
