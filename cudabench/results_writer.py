"""Write a results file after every benchmark, atomically, so a crash loses nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from cudabench import __version__
from cudabench.errors import UsageError
from cudabench.results import (
    FILE_KIND,
    SCHEMA_VERSION,
    BenchmarkResult,
    DeviceInfo,
    benchmark_to_dict,
)


def git_commit(directory: Path) -> dict:
    """Return the commit checked out in directory and whether the tree is dirty, if any."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=directory, capture_output=True,
                                  text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"git_commit": commit, "git_dirty": bool(status) if status is not None else None}


class ResultsWriter:
    """Collects benchmarks and rewrites the whole file after each one (temp file + rename)."""

    def __init__(self, path: Path, argv: list[str] | None = None) -> None:
        self.path = Path(path)
        self.created = _now()
        self.metadata = {
            "kind": FILE_KIND,
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "cudabench", "version": __version__},
            "created": self.created,
            "command": ["cudabench", *(sys.argv[1:] if argv is None else argv)],
            "host": platform.node(),
            "python": platform.python_version(),
            **git_commit(Path.cwd()),
        }
        self.gpu: dict = {}
        self.benchmarks: list[dict] = []

    def set_device(self, device: DeviceInfo) -> None:
        """Record the GPU; writes the (still empty) file so the path is claimed early."""
        self.gpu = device.to_dict()
        self.metadata["tool"]["pycuda_version"] = device.pycuda_version
        self.write(complete=False)

    def add(self, result: BenchmarkResult) -> None:
        """Append one benchmark and rewrite the file."""
        self.benchmarks.append(benchmark_to_dict(result))
        self.write(complete=False)

    def write(self, complete: bool = True) -> None:
        """Write the file atomically: a reader sees the old or the new file, never half."""
        document = {**self.metadata, "updated": _now(), "complete": complete,
                    "gpu": self.gpu, "benchmarks": self.benchmarks}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.",
                                                 dir=self.path.parent)
        except OSError as exc:
            raise UsageError(f"--json {self.path}: cannot write there: {exc}") from None
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(document, stream, indent=1, allow_nan=False)
                stream.write("\n")
            os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it 0600
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
