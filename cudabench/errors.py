"""Error classes and the exit codes they map to; cli.main is the one boundary."""

from __future__ import annotations

import enum
import os
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from cudabench.api.results import Results


class ExitCode(enum.IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    REGRESSION = 1  # `compare` found a significant slowdown or a new verification failure
    USAGE = 2  # bad flags, bad files, missing GPU/driver/PyCUDA, compile errors
    VERIFICATION_FAILED = 3  # a variant's result disagreed with the reference
    INTERNAL = 4  # a bug in cudabench: re-run with --traceback and report it
    INTERRUPTED = 130
    TERMINATED = 143  # SIGTERM (128 + 15): a CI job cancelled or timed out

    # The number, as print(results.exit_code) and f-strings show it: Python 3.10's IntEnum
    # printed "ExitCode.OK" (3.11 made str() the number)
    def __str__(self) -> str:
        return str(int(self))

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the command's process as Ctrl-C is (entry.py): the run stops the
    same way, its rows kept and said where, and exits 143 rather than dying silently."""

    received = False  # set by the handler: a library that turns the exception into a plain
    # KeyboardInterrupt (Ray's ray.wait does) must not turn a SIGTERM into a Ctrl-C


def _terminated(stop: KeyboardInterrupt) -> bool:
    return isinstance(stop, Terminated) or Terminated.received


def stopped_text(stop: KeyboardInterrupt) -> str:
    """Say what stopped the command: Ctrl-C, or SIGTERM (a CI job cancelled)."""
    return "terminated (SIGTERM)" if _terminated(stop) else "interrupted"


def stopped_code(stop: KeyboardInterrupt) -> ExitCode:
    """Return the exit code of a command stopped by Ctrl-C (130) or SIGTERM (143)."""
    return ExitCode.TERMINATED if _terminated(stop) else ExitCode.INTERRUPTED


class WorkerStopped(SystemExit):
    """A worker process ending on a signal (runner/workers.py): not an op's own exit."""


class CudabenchError(Exception):
    """An error the user can fix; its message says what went wrong and how to fix it."""

    exit_code = ExitCode.USAGE


class UsageError(CudabenchError):
    """A flag or config value is invalid; the message names it."""


class ResultsNotWritten(UsageError):
    """A run measured its rows but could not write its results file at the end (a full
    disk): the message says where the rows streamed so far are; `results` holds every row
    where the caller has them: the Python API's Results (a command's own: None, never a
    caller's to see)."""

    def __init__(self, message: str, results: Results | None = None) -> None:
        super().__init__(message)
        # typed as what the API's callers get: `except ResultsNotWritten as e: len(e.results)`
        self.results = cast("Results", results)


class KernelFileError(CudabenchError):
    """A .cu file's header is malformed; the message names the file and line."""

    def __init__(self, path: object, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class CompileError(CudabenchError):
    """nvcc rejected a kernel; the message keeps nvcc's own output."""


class LaunchRefused(CudabenchError):
    """The driver refused a launch (its configuration or resources); nothing ran."""


class OutputNotWritten(CudabenchError):
    """Standard output or error cannot be written (a full disk, a closed descriptor, an
    encoding without the output's characters): an environment error, exit 2."""


class GpuEnvironmentError(CudabenchError):
    """No PyCUDA, no CUDA driver or no GPU; the message says which and how to fix it."""


class ResultsFileError(CudabenchError):
    """A results file is unreadable or not a cudabench results file of a known schema."""


class OpFileError(CudabenchError):
    """An op's Python file is broken, or its code raised; the message names the file."""


def folder_gone(fix: str = "cd to an existing folder") -> UsageError | None:
    """Return the error of a current folder deleted or moved away (a shell still in it),
    else None: os.getcwd() fails, and with it a relative path, a worker's spawn, a file's
    real path. Asked once something failed, as a command that needs no folder still runs."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return UsageError(f"the current folder no longer exists (deleted or moved): {fix}")
    return None


# The README's order among one run's codes: a row not compiled or run, then a failed row,
# then the gate. max() put a FAIL (3) over an ERROR (2).
RUN_CODE_ORDER = (ExitCode.USAGE, ExitCode.VERIFICATION_FAILED, ExitCode.REGRESSION)


def ranked_code(codes: list[int]) -> int:
    """Return the exit code of parts of one run (calibrate's runs, a run and its --best or
    --check): the first of RUN_CODE_ORDER any part gave, else the largest."""
    return next((int(code) for code in RUN_CODE_ORDER if code in codes), max(codes, default=0))

