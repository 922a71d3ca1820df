"""What the history store holds, as Python sees it: a benchmark across runs, a recorded
run, a tracked series and its points; their encoding in rows; the store's constants."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cudabench.errors import CudabenchError, ResultsFileError
from cudabench.history import DEFAULT_PATH  # noqa: F401  (re-exported: its callers' name)
from cudabench.results.identity import measurements_digest
from cudabench.results.model import (
    DEFAULT_L2_FLUSH,
    BenchmarkResult,
    DeviceInfo,
    Kind,
    ResultsFile,
    Status,
)

QUICK_CHECK_MAX_BYTES = 256 * 2**20  # readers check stores up to this size at open
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another one before giving up
DEFAULT_VFS: str | None = None  # SQLite's own choice; tests name another to simulate NFS
APPLICATION_ID = 0x63624831  # "cbH1": marks the file as a cudabench history store
SQLITE_MAGIC = b"SQLite format 3\x00"
USABLE_STATUSES = (Status.PASS.value, Status.REF.value)  # timings worth a trend


class StoreError(CudabenchError):
    """A history store that cannot be used as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Benchmark:
    """What a benchmark is across runs: BenchmarkResult.key as named fields."""

    op: str
    variant: str
    params: tuple[tuple[str, int], ...]
    shape: tuple[int, ...]
    dtype: str
    hot: bool
    # The L2 flush of its cold samples: its times after one method are another benchmark's
    # than after the other ("clean", "memset"; "" when not flushed).
    l2_flush: str = ""
    # The parameters' names in the kernel header's order, as the run tables show them
    # (params is sorted: the benchmark's identity); () where the store did not keep it.
    order: tuple[str, ...] = field(default=(), compare=False, hash=False)

    @classmethod
    def of(cls, result: BenchmarkResult) -> Benchmark:
        """Return the benchmark a result measured."""
        return cls(result.op, result.variant, tuple(sorted(result.params.items())),
                   tuple(result.shape), result.dtype, result.hot, result.l2_flush,
                   tuple(result.params))

    @property
    def shown_params(self) -> tuple[tuple[str, int], ...]:
        """Return the parameters in the header's order where known, else by name."""
        values = dict(self.params)
        if sorted(self.order) != sorted(values):
            return self.params
        return tuple((name, values[name]) for name in self.order)

    @property
    def key(self) -> tuple[Any, ...]:
        """Return the same tuple as BenchmarkResult.key."""
        return (self.op, self.variant, self.params, self.shape, self.dtype, self.hot)

    def describe(self, flush: bool = False) -> str:
        """Return 'op/variant (hot) params shape dtype' for tables and messages; with flush,
        'op/variant (memset flush) ...' where the cold samples' flush tells two apart."""
        params = " ".join(f"{k}={v}" for k, v in self.shown_params)
        marks = " (hot)" if self.hot else ""
        marks += f" ({self.l2_flush} flush)" if flush and self.l2_flush else ""
        return " ".join(part for part in (
            f"{self.op}/{self.variant}" + marks, params,
            "x".join(map(str, self.shape)), self.dtype) if part)


@dataclass(frozen=True)
class RunInfo:
    """One recorded run (one results file)."""

    id: int
    commit: str | None
    branch: str | None
    dirty: bool | None
    created: str  # ISO 8601 in UTC: when the run was measured
    recorded: str  # when it was imported
    host: str | None
    tool_version: str | None
    source_path: str
    source_hash: str
    results: int
    gpu_models: tuple[str, ...]


@dataclass(frozen=True)
class Tracked:
    """A benchmark the store holds on one GPU model, with how many runs measured it."""

    benchmark: Benchmark
    gpu_model: str
    kind: str
    runs: int


@dataclass(frozen=True)
class SeriesPoint:
    """A benchmark's median in one run (the median of its rows when several GPUs of the
    model ran it)."""

    run_id: int
    commit: str | None
    created: str
    median_s: float
    status: str
    kind: str = "variant"  # the row's kind as recorded (a kernel, vendor or reference row)
    # the share of its samples at a slow SM clock, set aside or kept (None: before v7)
    slow_clock_share: float | None = None


Migration = Callable[[sqlite3.Connection], None]


def now_utc() -> str:
    """Return the current time as ISO 8601 in UTC, to the second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def parse_time(text: str) -> str | None:
    """Return an ISO date or time as ISO 8601 in UTC (naive: UTC); None if not one."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read Z
    try:
        moment = dt.datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    try:
        return moment.astimezone(dt.timezone.utc).isoformat(timespec="seconds")
    except OverflowError:  # 0001-01-01T00:00+01:00 is in UTC before year 1: no time to store
        return None


# A command's options that say where its output goes or how it is shown, not what it
# measures: two runs that differ only in these measured the same set.
_OUTPUT_VALUES = frozenset({"--json", "--markdown", "--csv", "--html", "--best-out", "--db",
                            "--keep-workers", "--cudabench-json", "--cudabench-compare",
                            "--cudabench-record", "--cudabench-db", "--cudabench-keep-workers",
                            "--basetemp", "--junitxml"})
_OUTPUT_FLAGS = frozenset({"--record", "--check", "--allow-missing", "--progress", "--quiet",
                           "--wide", "--traceback", "--profile-time"})


# A pytest session's options that judge, show or stop it, not what it measures (-k, -m,
# paths and --cudabench-rounds choose that): `-q` against `-v`, or another threshold, made
# another command, whose kernels the missing check then did not miss.
_PYTEST_VALUES = frozenset({"--cudabench-threshold", "--cudabench-alpha",
                            "--cudabench-max-threshold", "-p", "--tb", "--color", "-r",
                            "--maxfail", "--durations", "-W", "--capture", "-o",
                            "--override-ini", "--log-level", "--rootdir", "-c"})
_PYTEST_FLAGS = frozenset({"--cudabench-allow-missing", "--cudabench-allow-different-gpu",
                           "--cudabench-require-gpu", "-q", "--quiet", "-v", "--verbose",
                           "-s", "-x", "--exitfirst", "-l", "--showlocals", "--no-header",
                           "--no-summary", "--disable-warnings", "--strict-markers"})


def _pytest_option(word: str) -> tuple[bool, bool]:
    """Return whether a pytest word is an option _PYTEST_VALUES/_FLAGS leave out, and
    whether its value is the next word."""
    name = word.split("=", 1)[0]
    if name in _PYTEST_FLAGS or (len(name) > 2 and name[0] == "-" and name[1] != "-"
                                 and set(name[1:]) <= set("qvsxl")):
        return True, False  # -qq, -vv, -xvs
    if name in _PYTEST_VALUES:
        return True, "=" not in word
    attached = name[:2] in {"-r", "-p", "-W", "-o"} and len(name) > 2  # -rA, -pno:cache...
    return attached, False


def command_key(command: object) -> str | None:
    """Return a results file's command (its metadata's list of words) without the options
    that only choose outputs, as JSON; None when the file names no command. A pytest
    session's (the plugin's) leaves out the options that judge or show it too."""
    if not isinstance(command, list) or not all(isinstance(w, str) for w in command):
        return None
    pytest_session = "pytest" in command[:3]
    kept: list[str] = []
    words = iter(command)
    for word in words:
        name = word.split("=", 1)[0]
        if pytest_session:
            dropped, valued = _pytest_option(word)
            if dropped:
                if valued:
                    next(words, None)
                continue
        if name in _OUTPUT_FLAGS or (name in _OUTPUT_VALUES and "=" in word):
            continue
        if name in _OUTPUT_VALUES:
            next(words, None)  # its value
            continue
        kept.append(word)
    return json.dumps(kept)


_FLUSH_FLAGS = frozenset({"--l2-flush"})  # with a value
_FLUSH_SWITCHES = frozenset({"--hot"})  # no L2 flush at all: the flush recorded is ""


def unflushed_key(key: str) -> str:
    """Return a command_key without the options that choose the L2 flush (--l2-flush X,
    --hot): the same command after another flush, whose history the flush keeps apart.
    A key cudabench did not write (a hand-edited store) is only itself."""
    try:
        decoded = json.loads(key)
    except (ValueError, TypeError, RecursionError):
        return key
    if not isinstance(decoded, list) or not all(isinstance(w, str) for w in decoded):
        return key
    words = iter(decoded)
    kept: list[str] = []
    for word in words:
        name = word.split("=", 1)[0]
        if name in _FLUSH_SWITCHES or (name in _FLUSH_FLAGS and "=" in word):
            continue
        if name in _FLUSH_FLAGS:
            next(words, None)
            continue
        kept.append(word)
    return json.dumps(kept)


DEFAULT_SUITE = "cudabench.toml"  # what `cudabench run` finds with no file named
PYPROJECT = "pyproject.toml"  # its [tool.cudabench], found where there is no DEFAULT_SUITE
# (cli/suite.py find_config)


def _without_runs(words: list[str]) -> list[str]:
    """Return calibrate's words without its --runs N (cli/calibrate.py run_argv)."""
    kept: list[str] = []
    remaining = iter(words)
    for word in remaining:
        if word == "--runs":
            next(remaining, None)
        elif not word.startswith("--runs="):
            kept.append(word)
    return kept


def comparable_key(key: str) -> str:
    """Return a command_key as the missing-kernel check compares it, so that a job that
    dropped a slow kernel cannot pass by rewording its command: `run`, `run cudabench.toml`
    and `run ./cudabench.toml` are one command (and `run pyproject.toml` where no
    cudabench.toml is in the working folder: bare `run` loads it; and `calibrate`, whose
    runs a store before run_argv keeps under its own words); `--device N` (the GPU
    model is compared apart) and a benchmark command's `--l2-flush clean` (its default) are
    left out; and the options are taken in any order. A key cudabench did not write (a
    hand-edited store) is only itself."""
    try:
        words = json.loads(key)
    except (ValueError, TypeError, RecursionError):
        return key
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words) \
            or len(words) < 2:
        return key
    # as command_key leaves them out now: a store's older keys kept a pytest session's -q
    words = json.loads(command_key(words) or "[]")
    if len(words) < 2:  # `pytest -q`: the session's command alone
        return json.dumps(words)
    if words[1] == "calibrate":  # a store's older calibrate runs: the suite's `run`
        words = ["cudabench", "run", *_without_runs(words[2:])]
    if words[1] == "run":
        # the suite bare `run` loads here: a key's words are relative to the working
        # folder, which the check shares with the run it checks
        defaults = {DEFAULT_SUITE} if os.path.isfile(DEFAULT_SUITE) else {DEFAULT_SUITE,
                                                                          PYPROJECT}
        suites = [os.path.normpath(w) if w.endswith(".toml") else w for w in words]
        words = [w for w in suites if w not in defaults]
    # --device and its one value, and a benchmark command's default flush, left out
    # before the words are grouped: a suite file after `--device 1` must not go with them
    rest: list[str] = []
    remaining = iter(_long_options(words[2:]))
    for word in remaining:
        name, equals, value = word.partition("=")
        if name == "--device" or (name == "--l2-flush" and words[1] != "run"):
            value = value if equals else next(remaining, "")
            if name == "--l2-flush" and value != DEFAULT_L2_FLUSH:
                rest += [name, value]  # another flush: another command
            continue
        rest.append(word)
    groups: list[list[str]] = []  # an option with the words after it (a negative number
    for word in rest:  # is a value), or the positional arguments before any option
        word_parts = word.split("=", 1) if word.startswith("--") else [word]
        if groups and not (word.startswith("-") and not word[1:2].isdigit()):
            groups[-1] += word_parts
        else:
            groups.append(word_parts)
    return json.dumps([*words[:2], *(w for group in sorted(groups) for w in group)])


# The benchmark commands' short options: `-s 64` is `--size 64`, one command.
_SHORT_OPTIONS = {"-s": "--size", "-p": "--param"}


def _long_options(words: list[str]) -> list[str]:
    """Return words with each short option written long (`-s64` and `-s 64`: `--size 64`)."""
    long: list[str] = []
    for word in words:
        name, attached = word[:2], word[2:]
        if name in _SHORT_OPTIONS:
            long += [_SHORT_OPTIONS[name], *([attached] if attached else [])]
        else:
            long.append(word)
    return long


def source_hash(source: str) -> str:
    """Return the SHA-256 of a results file's text: the same file twice is one run."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def run_hashes(results: ResultsFile, source: str) -> tuple[str, ...]:
    """Return the hashes a recorded run is known by, the one it is recorded under first:
    its measurements' (results.identity: a re-indented, reordered or re-annotated copy of
    the file is the same run, not one more run of an "established level") and its text's
    (what stores recorded by before; a file that measured nothing has only this)."""
    digest = measurements_digest(results)
    text = source_hash(source)
    return (f"rows:{digest}", text) if digest is not None else (text,)


def device_key(device: DeviceInfo) -> tuple[str, str, str, str]:
    return (device.name, device.uuid or "", device.pci_bus_id or "",
            device.compute_capability or "")


def encode_benchmark(bench: Benchmark) -> tuple[str, str, str, str, str, int, str]:
    """Return a benchmark as the results table's key columns."""
    return (bench.op, bench.variant, json.dumps(dict(bench.params), sort_keys=True),
            json.dumps(list(bench.shape)), bench.dtype, int(bench.hot), bench.l2_flush)


def decode_benchmark(row: Sequence[Any], order: str | None = None) -> Benchmark:
    """Return the benchmark of the results table's key columns, in encode_benchmark's
    order; order, the param_order column (schema version 4), names its parameters in the
    header's order."""
    params = json.loads(row[2])
    names = tuple(str(name) for name in json.loads(order)) if order else ()
    return Benchmark(row[0], row[1], tuple(sorted((str(k), int(v)) for k, v in params.items())),
                     tuple(int(x) for x in json.loads(row[3])), row[4], bool(row[5]),
                     str(row[6]), names)


def worst_status(statuses: Sequence[str]) -> str:
    """Return the status that matters most of a run's rows: a failure over a pass."""
    order = ["FAIL", "ERROR", "TIMEOUT", "SUSPECT", "PASS", "REF", "SKIP"]
    return min(statuses, key=lambda s: order.index(s) if s in order else len(order))


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def one_row_each(results: ResultsFile, skip_skipped: bool = False) -> list[BenchmarkResult]:
    """Return the rows to record or judge: each benchmark once per GPU model, as the store
    keeps them. A kernel twice on one model (a --replicate run, a hand-merged file) is a
    ResultsFileError: a gate could not tell which to judge. A reference or vendor row
    twice (pytest sessions before 0.1 measured the copy beside every test) keeps its
    first. skip_skipped: SKIP rows (nothing measured) are left out."""
    seen: set[tuple[object, ...]] = set()
    rows = []
    for i, result in enumerate(results.benchmarks):
        if skip_skipped and result.status is Status.SKIP:
            continue
        gpu = result.device.name if result.device is not None else ""
        if (result.key, gpu) in seen:
            if result.kind is not Kind.VARIANT:
                continue
            raise ResultsFileError(
                f"{results.path}: benchmarks[{i}]: {Benchmark.of(result).describe()} appears "
                f"twice on {gpu or 'one GPU'}: the history keeps one row per benchmark and "
                "GPU model (a --replicate run measures each on every GPU)")
        seen.add((result.key, gpu))
        rows.append(result)
    return rows
