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


HELP_PROBE = """
import runpy, sys
sys.argv = ["cudabench", "--help"]
try:
    runpy.run_module("cudabench", run_name="__main__")
except SystemExit:
    pass
loaded = sorted(name for name in sys.modules
                if name.startswith(("cudabench.measure", "cudabench.cli.commands",
                                    "cudabench.cli.options", "cudabench.history", "rich")))
print("LOADED", ",".join(loaded), file=sys.stderr)
"""


def test_the_group_help_imports_no_command_module():
    done = subprocess.run([sys.executable, "-c", HELP_PROBE], capture_output=True, text=True,
                          timeout=120)
    assert "Commands:" in done.stdout and "compare" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "LOADED", done.stderr


@pytest.mark.parametrize("name", sorted(__import__("cudabench.cli.group", fromlist=["x"])
                                        .COMMANDS))
def test_each_listed_short_help_is_the_commands_own(name):
    from cudabench.cli.group import COMMANDS, load_command

    command = load_command(name)
    assert command.name == name
    listed = COMMANDS[name][2].rstrip(".")
    own = " ".join((command.short_help or command.help or "").split())
    assert own.startswith(listed) or own.split(".")[0].startswith(listed.split(".")[0]), \
        (listed, own)


PLAN_PROBE = """
import sys
from cudabench.planning.plan import Request, make_plan
for op, size, dtype in (("matmul", "1000", "float32"), ("transpose", "64", "float16"),
                        ("dot", "1000", "int32")):
    make_plan(Request(op=op, size=size, dtype=dtype))
print("NUMPY", "numpy" in sys.modules, file=sys.stderr)
"""


def test_planning_imports_no_numpy():
    """The command's process plans while its GPU worker starts (and imports NumPy): NumPy's
    import, about 0.2 s, would sit on that path."""
    done = subprocess.run([sys.executable, "-c", PLAN_PROBE], capture_output=True, text=True,
                          timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "NUMPY False", done.stderr
