"""Every error path ends the process: a command that prints an error must exit, promptly.

Without PyCUDA (or a GPU) each command here fails before measuring. It used to print
"PyCUDA is not installed" and then hang: the worker died with a sweep's large batch of
plans still in its inbox, and Python's exit waited on the queue's feeder thread forever.
These run the real console entry point in a subprocess, each under a time limit.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 30  # generous on a loaded 2-core CI machine; a hang is caught all the same

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pycuda") is not None,
    reason="PyCUDA is installed here: these check the exit path of a machine without it")


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsizes = ["64", "128", "256"]\n'
                     'params = { TILE = [8, 16, 32] }\n\n[[benchmark]]\nop = "dot"\n',
                     encoding="utf-8")
    return suite


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
        (folder / "tiled.cu").write_text(
            (ROOT / "kernels" / "matmul" / "tiled.cu").read_text(encoding="utf-8"),
            encoding="utf-8")
    return old, new


COMMANDS = {
    "sweep x2": ["matmul", "--size", "256..4096:x2", "--tile", "8,16,32"],
    "sweep +64": ["matmul", "--size", "64..8192:+64"],
    "transpose sweep": ["transpose", "--size", "64..4096:x2"],
    "dot": ["dot"],
    "best": ["matmul", "--size", "128", "-p", "TILE=8,16,32", "--best"],
    "devices all": ["matmul", "--size", "128..1024:x2", "--devices", "all"],
    "replicate": ["dot", "--devices", "all", "--replicate"],
    "suite": ["run", "{suite}"],
    "calibrate": ["calibrate", "{suite}", "--runs", "5", "--db", "{tmp}/h.db"],
    "ab": ["ab", "{old}", "{new}", "--op", "matmul"],
    "info": ["info"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_that_cannot_measure_exits_promptly_with_an_error(tmp_path, name):
    old, new = _folders(tmp_path)
    fill = {"suite": str(_suite(tmp_path)), "tmp": str(tmp_path), "old": str(old),
            "new": str(new)}
    args = [arg.format(**fill) for arg in COMMANDS[name]]
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "cudabench", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`cudabench {' '.join(args)}` did not exit within {LIMIT_S} s")
    took = time.monotonic() - started
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "Traceback" not in done.stderr
    assert "PyCUDA is not installed" in done.stderr or "no usable GPU" in done.stderr, \
        done.stderr[-500:]
    assert took < LIMIT_S


COMPARE = Path(__file__).parent / "data" / "compare"


@pytest.mark.parametrize(("args", "code"), [
    (["compare", str(COMPARE / "baseline.json"), str(COMPARE / "identical.json")], 0),
    (["compare", str(COMPARE / "baseline.json"), str(COMPARE / "slower20.json")], 1),
    (["report", str(COMPARE / "baseline.json")], 0),
    (["list"], 0),
])
def test_a_reader_that_stops_reading_leaves_the_exit_code_as_it_was(args, code):
    """`cudabench compare A B | head` under pipefail: the code is the verdict's, not the 1
    (a regression) Rich would exit with when stdout's reader is gone."""
    run = subprocess.Popen([sys.executable, "-m", "cudabench", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run.stdout.close()  # gone before the first line: every write meets a closed pipe
    errors = run.stderr.read().decode()
    assert run.wait(timeout=120) == code, errors
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors
