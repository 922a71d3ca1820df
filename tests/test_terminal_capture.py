"""The main job in a real terminal: tmux at 80x24, the fake engine, the screen captured and
checked as the other tables are (issue 30): no cell cut, no data row wrapped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import unreadable

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed (.ci/run installs it): the 80x24 terminal capture needs it")


def capture_in_tmux(tmp_path: Path, command: str, width: int = 80, height: int = 24) -> str:
    """Run command in a fresh tmux server's width x height window; return everything it
    printed, wrapped lines joined (a line wider than the window shows as one long line)."""
    socket = str(tmp_path / "tmux.sock")  # a server of its own: the user's is not touched
    env = {name: value for name, value in os.environ.items()
           if name not in ("COLUMNS", "LINES", "CUDABENCH_WIDE", "TMUX")}
    done = tmp_path / "done"
    script = f"{command}; echo $? > {done}; sleep 600"
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x",
                    str(width), "-y", str(height), "-c", str(ROOT), script],
                   check=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists(), "the command did not finish in 120 s"
        assert done.read_text().strip() == "0"
        shown = subprocess.run(["tmux", "-S", socket, "capture-pane", "-p", "-J", "-S",
                                "-2000"], check=True, capture_output=True, text=True)
        return shown.stdout
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], check=False)


def test_the_main_job_at_80x24(tmp_path):
    text = capture_in_tmux(tmp_path, f"{sys.executable} tests/fake_cli.py matmul --size 64")
    Path(tmp_path / "capture.txt").write_text(text)  # to look at: pytest keeps tmp_path
    assert "matmul 64x64x64 (MxKxN) float32" in text
    for variant in ("naive", "tiled", "tiled_conflict", "cuBLAS"):
        assert f"│ {variant} " in text
    assert "left out to fit:" in text  # 80 columns cannot hold them all: named
    problems = unreadable(text, 80)
    assert not problems, "\n".join(problems) + "\n\n" + text
    # stderr's notes and warnings are wrapped at words to the window (the capture joins what
    # the terminal itself wrapped: a line left to it would come back wider than 80), whole
    said = [line for line in text.splitlines() if line.startswith(("note:", "warning:"))]
    assert said and all(len(line) <= 80 for line in said), said
    flowing = " ".join(text.split())
    assert "a larger --size measures it cold" in flowing, text


def test_list_at_80x24(tmp_path):
    text = capture_in_tmux(tmp_path, f"{sys.executable} -m cudabench list")
    Path(tmp_path / "capture.txt").write_text(text)
    for op in ("matmul", "transpose", "transpose_inplace", "dot"):
        assert f"{op} (cudabench.ops." in text  # each op's table and its line
    assert "│ tiled_conflict [" in text and "[1] allowed: " in text
    assert "left out" not in text  # what does not fit is in the notes and folder lines
    problems = unreadable(text, 80)
    assert not problems, "\n".join(problems) + "\n\n" + text


def test_ab_s_summary_wraps_at_80x24(tmp_path):
    # ab printed its listing and summary lines unwrapped (137 characters at 80 columns),
    # where compare's wrap at words
    from helpers import MATMUL_BODY, MATMUL_HEADER, write_kernel

    for side in ("a", "b"):
        write_kernel(tmp_path / side / "matmul", "register_tiled_long_name", MATMUL_HEADER,
                     MATMUL_BODY)
    text = capture_in_tmux(tmp_path, f"{sys.executable} tests/fake_cli.py ab {tmp_path / 'a'} "
                                     f"{tmp_path / 'b'} --size 32 --samples 5 --warmup 0 "
                                     "--rounds 6")
    Path(tmp_path / "capture.txt").write_text(text)
    summary = [line for line in text.splitlines() if "rounds" in line or "GPU" in line]
    assert summary, text
    assert all(len(line) <= 80 for line in text.splitlines()), text
