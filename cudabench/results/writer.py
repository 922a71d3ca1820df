"""Write a results file as benchmarks are measured, atomically: after every one (past
1 MB, within a time budget: ResultsWriter._due), and whole on a stop, so a crash loses at
most the rows of its last moments.

A file that exists before the run (a baseline, last run's results) is never replaced by a
run that stops: the rows stream to PATH.partial beside it, which replaces PATH only when
the run completes. A new path streams in place.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudabench import __version__
from cudabench.common.outfiles import (
    CODE_SUFFIXES,
    PARTIAL,
    check_output,
    claim_output,
    replacing,
)
from cudabench.errors import UsageError
from cudabench.results.codec import (
    FILE_KIND,
    SCHEMA_VERSION,
    benchmark_to_dict,
    device_to_dict,
)
from cudabench.results.model import BenchmarkResult, DeviceInfo, Kind
from cudabench.results.rounds import identity, remeasured



# The CI's variables that name a detached checkout's branch, the first set wins (a pull
# request's head branch before the ref GitHub names it by)
CI_BRANCH_VARIABLES = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")


def provenance() -> dict[str, Any]:
    """Return when, where and at which commit a run is measured (taken as it starts: a
    commit made while it runs, or rows saved later, is not theirs)."""
    return {"created": _now(), "host": platform.node(), **git_commit(Path.cwd())}


def git_commit(directory: Path) -> dict[str, Any]:
    """Return the commit checked out in directory, whether the tree is dirty (a tracked
    file changed, or an untracked source file) and the branch, each None where git (or,
    for a detached checkout, the CI's variables) cannot say."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=directory, capture_output=True,
                                  text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {"git_commit": None, "git_dirty": None, "git_branch": None}
    # A detached checkout (a CI job's) names its branch in the CI's variables only.
    branch = (git("symbolic-ref", "--short", "-q", "HEAD")
              or next((os.environ[name] for name in CI_BRANCH_VARIABLES
                       if os.environ.get(name)), None))
    changed = git("status", "--porcelain", "--untracked-files=no")
    untracked = git("ls-files", "--others", "--exclude-standard")
    if changed is None or untracked is None:
        return {"git_commit": commit, "git_dirty": None, "git_branch": branch}
    # An untracked file makes the tree dirty only where it can change what is measured (a
    # new kernel or op): the baseline.json a CI job restores, or the history store's
    # folder, marked every run of a clean checkout dirty.
    new_code = any(Path(name).suffix.lower() in CODE_SUFFIXES for name in untracked.splitlines())
    return {"git_commit": commit, "git_dirty": bool(changed) or new_code, "git_branch": branch}


RUNS_DIR = Path(".cudabench") / "runs"  # a run recorded without a file of its own keeps one


def new_run_file(prefix: str = "") -> Path:
    """Return a fresh path in RUNS_DIR for a run's results file (--record without --json,
    record(), calibrate, the pytest plugin's --cudabench-record): stamped to the
    microsecond, with the process, so that runs started together never share one."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return RUNS_DIR / f"{prefix}{stamp}-{os.getpid()}.json"


class ResultsWriter:
    """Collects benchmarks and rewrites the whole file after each one (temp file + rename)."""

    def __init__(self, path: Path, argv: list[str] | None = None, flag: str = "--json",
                 keep_unmeasured: bool = True) -> None:
        self.path = Path(path)
        self.flag = flag  # what the user gave the path as, for the error messages
        if self.path.name.endswith(PARTIAL):  # another run's rows stream under such names
            check_output(self.path, flag)
        # an existing file is replaced only by a complete run: the rows stream beside it
        self.streams_to = (self.path.with_name(self.path.name + PARTIAL)
                           if self.path.exists() else self.path)
        stamped = provenance()  # before the claim: git may be slow, or be stopped (Ctrl-C)
        # Another run writing this file now would replace this one's rows, or remove the
        # .partial this one keeps its rows in: held until this writer is closed or gone.
        self._claim = claim_output(self.path, flag)
        if self.streams_to != self.path and self.streams_to.exists():
            self.close()  # no writer: a later one must not be refused
            # a stopped run's rows, which the tool said it kept there: never written over
            raise UsageError(f"{flag} {path}: {self.streams_to} holds the rows of a run that "
                             "stopped; move it away or delete it first")
        self.written = 0  # rows in the file at streams_to (what a stopped run left there)
        # rows measured again (a later round pooled in) since the last write that worked
        self._behind: set[int] = set()
        self.stream_error: str | None = None  # why the last write failed (a full disk)
        # the last stream write's end, seconds and size, for _due
        self._last_end, self._last_cost, self._last_bytes = 0.0, 0.0, 0
        # Which rows hold samples, for `measured` (a run of SKIPs holds none)
        self._kernel_rows = self._kernel_sampled = self._any_sampled = False
        # A run that measured nothing leaves an existing file (a command's output); an
        # explicit export (Results.to_json) writes whatever it is given.
        self.keep_unmeasured = keep_unmeasured
        self.kept_note: str | None = None  # why an existing file was left as it was
        self.stopped_early = False  # rows of a run that stopped (a loaded file's, saved
        # again): even the complete write marks the file incomplete
        # the (device, inode) of the last complete file written, for a stop in its rename
        self._complete_id: tuple[int, int] | None = None
        self.metadata: dict[str, Any] = {  # in the order files have always had
            "kind": FILE_KIND,
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "cudabench", "version": __version__},
            "created": stamped.pop("created"),
            "command": ["cudabench", *(sys.argv[1:] if argv is None else argv)],
            "host": stamped.pop("host"),
            "python": platform.python_version(),
            **stamped,  # the git commit, whether the tree was dirty, the branch
        }
        self.devices: list[DeviceInfo] = []
        self.benchmarks: list[dict[str, Any]] = []
        self._encoded: list[str] = []  # each benchmark's JSON text, made once
        # each benchmark's identity and rounds: a later round's row replaces its earlier one
        self._rounds: list[tuple[tuple[Hashable, ...], int]] = []

    def close(self) -> None:
        """Let another writer, of this process too, write the path: this one is done (its
        claim is released when it is garbage, too, or its process ends)."""
        if self._claim is not None:
            self._claim.close()

    def start(self, engine_versions: Mapping[str, str]) -> None:
        """Record the engine's versions. Nothing is written yet: a run that measures
        nothing leaves an existing file as it was (the path was checked up front)."""
        self.metadata["tool"].update(engine_versions)

    def add(self, result: BenchmarkResult, write: bool = True, replace: bool = False) -> None:
        """Append one benchmark (its device listed once) and rewrite the file (unless write
        is False: a caller adding many rows at once writes once after them). With replace,
        a row pooled over one more round (--rounds, as it streams) takes the place of the
        row of its earlier rounds."""
        row, encoded = self._encode(result)
        earlier = (identity(result), result.rounds - 1)
        if replace and result.rounds > 1 and earlier in self._rounds:
            at = len(self._rounds) - 1 - self._rounds[::-1].index(earlier)
            self.benchmarks[at], self._encoded[at] = row, encoded
            self._rounds[at] = (earlier[0], result.rounds)
            self._behind.add(at)
        else:
            self.benchmarks.append(row)
            self._encoded.append(encoded)
            self._rounds.append((identity(result), result.rounds))
        if write and self._due():  # tried again at the next row: a disk full for a while
            self._stream()  # loses nothing after it

    def reorder(self, order: list[int]) -> None:
        """Put the rows in this order (their indices as added; each once), for the next
        write: rows streamed as they came, kept in the order a reader expects."""
        if sorted(order) != list(range(len(self.benchmarks))):
            raise ValueError("reorder takes every row's index once")
        self._behind = {order.index(i) for i in self._behind}
        self.benchmarks = [self.benchmarks[i] for i in order]
        self._encoded = [self._encoded[i] for i in order]
        self._rounds = [self._rounds[i] for i in order]

    def follow(self, rows: Sequence[BenchmarkResult]) -> None:
        """Put the rows in the order of rows (the run's, as its tables and CSV list them),
        for the next write: several GPUs' rows streamed as they came, and `report` of the
        file listed them in another order than the run. A row not in rows stays last."""
        rank = {identity(row): at for at, row in enumerate(rows)}
        self.reorder(sorted(range(len(self._rounds)),
                            key=lambda at: rank.get(self._rounds[at][0], len(rows))))

    def flush(self) -> None:
        """Write the rows so far, marked incomplete (a caller that added or replaced rows
        without writing: ab's pooled rows, after each round)."""
        self._stream()

    def _due(self) -> bool:
        """Return whether the rows so far are written now, after a row. A rewrite costs the
        whole file: after every row, a 2000-row run spent 69 s of its time writing (7.6 MB
        by the end). A small file is written after each row; a larger one once the time
        since its last write is STREAM_BUDGET times that write's: writing stays a few
        percent of the run, a kill -9 loses the rows of its last moments only, and a stop
        (Ctrl-C, SIGTERM, an error) or the end writes every row."""
        if self._last_bytes < STREAM_FREE_BYTES:
            return True
        return time.monotonic() - self._last_end >= STREAM_BUDGET * self._last_cost

    def _stream(self) -> None:
        """Write the rows so far (incomplete); keep why it failed, until one write works."""
        try:
            self.write(complete=False)
        except UsageError as exc:  # the run goes on; the next row's write tries again
            self.stream_error = str(exc)
        else:
            self.stream_error = None
            self._behind.clear()

    def replace(self, at: int, result: BenchmarkResult) -> None:
        """Put result in the place of the row added at'th (a pytest test run again, whose
        rows take the place of its earlier ones); the file is written by the next add or
        write."""
        self.benchmarks[at], self._encoded[at] = self._encode(result)
        self._rounds[at] = (identity(result), result.rounds)
        self._behind.add(at)

    def put(self, result: BenchmarkResult) -> None:
        """Put a row in the place of the row it measured again (the same benchmark and
        flush, on whichever GPU: --best's head-to-head runs on the first of a search's
        GPUs, and its wrong result is the configuration's verdict), else add it; the file
        is written by the next write."""
        again = [at for at, (key, _) in enumerate(self._rounds)
                 if remeasured(key) == remeasured(identity(result))]
        if again:
            self.replace(again[-1], result)
        else:
            self.add(result, write=False)

    def _encode(self, result: BenchmarkResult) -> tuple[dict[str, Any], str]:
        """Return a row as the file holds it and its JSON text (its device listed once).

        Encoded once, as json.dump nests it (indent 1, two levels down): rewriting the file
        after each row then costs the small head, not every row again (a Python encode of
        the whole file per row was ~0.05 s a row by the end of a long suite). Encoded before
        it is kept: a row that cannot be written leaves the lists as they were."""
        index = None
        if result.device is not None:
            known = [device.identity for device in self.devices]
            if result.device.identity not in known:
                self.devices.append(result.device)
                known.append(result.device.identity)
            index = known.index(result.device.identity)
        row = benchmark_to_dict(result, index)
        text = json.dumps(row, indent=1, allow_nan=False)
        kernel = result.kind is Kind.VARIANT
        self._kernel_rows = self._kernel_rows or kernel
        self._kernel_sampled = self._kernel_sampled or (kernel and bool(result.samples_s))
        self._any_sampled = self._any_sampled or bool(result.samples_s)
        return row, "\n".join("  " + line for line in text.split("\n"))

    @property
    def measured(self) -> bool:
        """Return whether the run measured something, as RunOutcome.nothing_measured
        counts: a kernel's samples where it has kernel rows (the cuBLAS or copy row
        measured beside kernels that all SKIPped is no run of them), else any row's."""
        return self._kernel_sampled if self._kernel_rows else self._any_sampled

    def document(self, complete: bool) -> dict[str, Any]:
        """Return the file's content as it stands."""
        return {**self.metadata, "updated": _now(),
                "complete": complete and not self.stopped_early,
                "devices": [device_to_dict(d) for d in self.devices],
                "benchmarks": self.benchmarks}

    def write(self, complete: bool = True) -> None:
        """Write the file atomically: a reader sees the old or the new file, never half.
        The text is json.dump's (indent 1), the benchmarks' parts encoded once each. An
        incomplete file goes to streams_to; the complete one to the path, unless that
        replaces an existing file with a run that measured nothing (every row a SKIP, or an
        ERROR before its first sample): the old file stays, and kept_note says so."""
        if complete and self.streams_to != self.path and not self.measured \
                and self.keep_unmeasured:
            self.streams_to.unlink(missing_ok=True)  # this run's own stream, if any
            self.kept_note = ("nothing was measured (no kernel's row has samples): "
                              f"{self.path} is as it was")
            return
        begun = time.monotonic()
        head = {**self.document(complete), "benchmarks": _ROWS}
        text = json.dumps(head, indent=1, allow_nan=False)
        rows = "[\n" + ",\n".join(self._encoded) + "\n ]" if self._encoded else "[]"
        before, marker, after = text.rpartition(json.dumps(_ROWS))
        whole = (before + rows + after if marker else text) + "\n"
        where = self.path if complete else self.streams_to
        packed = where.name.endswith((".gz", ".gz" + PARTIAL))  # as its name says: the
        held = None  # the new file, open: the claim locks it by its inode too (follow)
        try:
            with replacing(where, self.flag, "wb" if packed else "w") as stream:  # readers
                written = os.fstat(stream.fileno())  # take either
                # known before the rename: a stop right after it finds every row there
                self._complete_id = (written.st_dev, written.st_ino) if complete else None
                held = os.dup(stream.fileno()) if self._claim is not None else None
                # mtime 0: the same rows give the same bytes. Rewritten after every row, the
                # stream is packed fast (level 9 took 1.6 s per 10 MB), the end well
                stream.write(gzip.compress(whole.encode("utf-8"), 6 if complete else 1,
                                           mtime=0) if packed else whole)
        except BaseException:
            if held is not None:
                os.close(held)
            if not self.complete_written:  # its file is gone: another may get its inode
                self._complete_id = None
            raise
        if self._claim is not None and held is not None:
            self._claim.follow(held)
        if complete and self.streams_to != self.path:
            self.streams_to.unlink(missing_ok=True)  # its rows are in the path now
        if not complete:
            self.written = len(self._encoded)
            self._last_end = time.monotonic()
            self._last_cost, self._last_bytes = self._last_end - begun, len(whole)

    def finish(self) -> str | None:
        """Write the complete file; return why it could not be (a full disk), with where
        the rows streamed so far are, or None. The command shows its tables first, then
        raises ResultsNotWritten with this."""
        try:
            self.write(complete=True)
        except UsageError as exc:
            return str(exc) + self.streamed_note()
        return None

    def streamed_note(self) -> str:
        """Return, for an error that kept the complete file from being written, where the
        rows streamed so far are ("" when none were)."""
        if not self.written or not self.streams_to.exists():
            return ""
        return (f"; {self.written} of the run's {len(self._encoded)} rows are in "
                f"{self.streams_to}{self._behind_text()}")

    def _behind_text(self) -> str:
        """Return what the file at streams_to lacks of rows it holds: those measured again
        (a later round pooled in) since the last write that worked."""
        behind = len([at for at in self._behind if at < self.written])
        return (f" ({behind} of them without the rounds measured after the last write)"
                if behind else "")

    @property
    def complete_written(self) -> bool:
        """Return whether the path holds this writer's complete file (a stop that came as
        it was renamed there, or after)."""
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        return self._complete_id == (now.st_dev, now.st_ino)

    def stopped_note(self) -> str | None:
        """Return where a run that stopped left its rows, when it left any beside an
        existing file or in a new one (None otherwise: nothing written)."""
        if self.complete_written:  # stopped as the end's write ended: every row is there
            if self.streams_to != self.path:
                self.streams_to.unlink(missing_ok=True)
            return (f"the run stopped once its results file was written: its "
                    f"{len(self._encoded)} rows are in {self.path}")
        if self.written < len(self._encoded) or self._behind:
            # stopped while a row streamed (Ctrl-C mid-write), or after a failed write (a
            # disk full for a while): write them now, not lose them
            self._stream()
        if not self.streams_to.exists():
            return None
        lost = len(self._encoded) - self.written
        if self.streams_to == self.path:  # a new file: its rows, marked incomplete
            if not self.written:
                return None
            return (f"the run stopped: {self.written} of its rows are in {self.path}, marked "
                    "incomplete" + self._behind_text()
                    + (f" ({lost} could not be written: {self.stream_error})" if lost else ""))
        return (f"the run stopped: {self.written} of its rows are in {self.streams_to}"
                + self._behind_text()
                + (f" ({lost} could not be written: {self.stream_error})" if lost else "")
                + f"; {self.path} is as it was")


STREAM_FREE_BYTES = 1 << 20  # a file this small is rewritten after every row (~1 ms)
STREAM_BUDGET = 20  # else: at most one write's time in this many (~5% of the run)
_ROWS = "\x00benchmarks\x00"  # where the encoded rows go (no field holds a NUL)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
