"""Ctrl-C in a terminal: SIGINT reaches the whole process group, the GPU worker included;
and SIGTERM, a CI job cancelled, stops the run the same way."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudabench.results import load_results

FAKE_CLI = Path(__file__).parent / "fake_cli.py"
pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")


def _as_a_terminal_starts_it() -> None:
    """Give the child SIGINT's default action: a suite started in the background by a
    non-interactive shell (`pytest &`, a CI wrapper) inherits SIGINT ignored, and a command
    that inherits it ignored rightly ignores Ctrl-C (the shell's `&` rule), which is not
    what these tests are about."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped_midway(tmp_path: Path, stop: signal.Signals, streams_to: Path,
                   gpus: int = 1) -> tuple[int, str]:
    """Run a long sweep to tmp_path/r.json (on gpus fake GPUs), send stop to its process
    group once a row is in streams_to; return its exit code and stderr."""
    several = ["--devices", "all", "--variant", "tiled"] if gpus > 1 else []
    process = subprocess.Popen(
        [sys.executable, str(FAKE_CLI), "matmul", "--size", "64..4096:x2", "--variant",
         "naive", *several, "--no-vendor", "--json", str(tmp_path / "r.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        cwd=tmp_path, preexec_fn=_as_a_terminal_starts_it,
        env={**os.environ, "FAKE_GPUS": str(gpus)})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if streams_to.exists() and load_results(streams_to).benchmarks:
                break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be stopped"
        os.killpg(process.pid, stop)  # SIGINT: what a terminal's Ctrl-C does
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, stderr


@pytest.mark.parametrize("gpus", [1, 2])
def test_ctrl_c_to_the_process_group_ends_with_one_line_and_no_traceback(tmp_path, gpus):
    path = tmp_path / "r.json"
    code, stderr = stopped_midway(tmp_path, signal.SIGINT, path, gpus)
    assert code == 130, stderr
    assert "cudabench: interrupted" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert load_results(path).metadata["complete"] is False  # the rows so far are kept


def test_sigterm_stops_the_run_as_ctrl_c_does_and_says_so(tmp_path):
    # a CI job cancelled (SIGTERM to its process group) ended with exit 143 and not a
    # word: not where the rows measured so far went
    path = tmp_path / "r.json"
    old = (Path(__file__).parent / "data" / "compare" / "baseline.json").read_text(
        encoding="utf-8")
    path.write_text(old, encoding="utf-8")  # an existing results file: the rows go beside it
    partial = tmp_path / "r.json.partial"
    code, stderr = stopped_midway(tmp_path, signal.SIGTERM, partial)
    assert code == 143, stderr
    said = " ".join(stderr.split())
    assert "cudabench: terminated (SIGTERM)" in said and "Traceback" not in said, stderr
    assert f"of its rows are in {partial}" in said
    assert path.read_text(encoding="utf-8") == old


QUICK = ("--warmup", "0", "--min-samples", "3", "--max-time", "0.01", "--no-vendor",
         "--no-batch")


def stop_in(monkeypatch, owner, name: str, signum: signal.Signals) -> None:
    """Make owner.name send this process signum as it starts, once: a stop that lands
    exactly there."""
    real = getattr(owner, name)
    sent: list[bool] = []

    def stopped(*args, **kwargs):
        if not sent:
            sent.append(True)
            signal.raise_signal(signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, stopped)


@pytest.fixture
def sigterm_handled(monkeypatch):
    """Handle SIGTERM as the command does (entry.py: Terminated), and SIGINT as Python
    does (KeyboardInterrupt): a job started in the background (`cmd &`, nohup) inherits
    SIGINT ignored, and the test's Ctrl-C did nothing."""
    from cudabench.entry import _terminate
    from cudabench.errors import Terminated

    monkeypatch.setattr(Terminated, "received", False)
    previous = signal.signal(signal.SIGTERM, _terminate)
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGTERM, previous)
    signal.signal(signal.SIGINT, interrupt)


@pytest.mark.parametrize("where, signum, code", [
    ("start", signal.SIGTERM, 143), ("_environment", signal.SIGTERM, 143),
    ("_environment", signal.SIGINT, 130), ("_interrupts_held", signal.SIGINT, 130)])
def test_a_stop_while_a_worker_starts_ends_as_a_stop(use_fake, tmp_path, monkeypatch,
                                                     sigterm_handled, where, signum, code):
    # SIGTERM inside multiprocessing's start (the held mask was SIGINT's only), or either
    # signal before it, left a process never started that ab's clean-up joined: "internal
    # error: AssertionError: can only join a started process", exit 4
    import multiprocessing
    import multiprocessing.process

    from cudabench.runner import workers

    from helpers import invoke

    owner = multiprocessing.process.BaseProcess if where == "start" else workers
    stop_in(monkeypatch, owner, where, signum)
    kernels = Path(__file__).resolve().parents[1] / "kernels" / "matmul"
    for side in ("A", "B"):
        (tmp_path / side).mkdir()
        shutil.copy(kernels / "naive.cu", tmp_path / side)
    result = invoke("ab", tmp_path / "A", tmp_path / "B", "--op", "matmul", "--size", "64",
                    "--rounds", "6", "--samples", "5", "--warmup", "0")
    assert result.exit_code == code, result.stderr
    said = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    assert result.stderr.splitlines()[-1] == f"cudabench: {said}", result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert multiprocessing.active_children() == []  # no worker left behind
