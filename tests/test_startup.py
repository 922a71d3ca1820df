"""`cudabench --help` and `cudabench list` stay light: no NumPy, PyCUDA or CuPy imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import runpy, sys
sys.argv = ["cudabench", *{args!r}]
try:
    runpy.run_module("cudabench", run_name="__main__")
except SystemExit:
    pass
heavy = [name for name in ("numpy", "pycuda", "cupy") if name in sys.modules]
print("HEAVY", ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["list"], ["matmul", "--help"], []])
def test_help_and_list_import_no_heavy_library(args):
    done = subprocess.run([sys.executable, "-c", PROBE.format(args=args)],
                          capture_output=True, text=True, timeout=120)
    line = done.stderr.strip().splitlines()[-1]
    assert line == "HEAVY", done.stderr
