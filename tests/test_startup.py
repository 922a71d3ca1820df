"""`cudabench --help` and `cudabench list` stay light: no NumPy, PyCUDA or CuPy imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
loaded = sorted(name for name in sys.modules if name.startswith(("cudabench.tuning.search",
                                                                 "cudabench.tuning.strategies")))
print("SEARCH", ",".join(loaded), file=sys.stderr)
"""


def probed(args: list[str]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run cudabench with args in a fresh interpreter; return it and the probe's lines."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(args=args)],
                          capture_output=True, text=True, timeout=120)
    said = dict(line.partition(" ")[::2] for line in done.stderr.splitlines()[-2:])
    return done, said


@pytest.mark.parametrize("args", [["--help"], ["list"], ["matmul", "--help"], []])
def test_help_and_list_import_no_heavy_library(args):
    done, said = probed(args)
    assert said.get("HEAVY") == "", done.stderr


@pytest.mark.parametrize("args", [["list"], ["matmul", "--help"]])
def test_the_op_commands_load_no_search_loop_until_best_is_given(args):
    """op_commands imported the search (its strategies, the tuning cache) for a type: some
    45 ms of `cudabench list`."""
    done, said = probed(args)
    assert "matmul" in done.stdout
    assert said.get("SEARCH") == "", done.stderr


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


COMMAND_PROBE = """
import sys
import cudabench.cli.commands
from cudabench.cli.options import build_insight
build_insight({{}})
print("LOADED", ",".join(sorted(name for name in {rare!r} if name in sys.modules)),
      file=sys.stderr)
"""
# Modules a plain benchmark command does not use: the history store, ncu, --dry-run's
# compiler table and the --profile-time table load where their option is given.
RARE = ("sqlite3", "cudabench.history.store", "cudabench.history.records",
        "cudabench.history.threshold", "cudabench.observers.ncu", "cudabench.measure.dryrun",
        "cudabench.analysis.time_profile", "cudabench.render.time_profile",
        "cudabench.observers.sanitizer", "cudabench.render.markdown",
        "cudabench.render.csv_out")


def test_a_benchmark_command_loads_no_module_of_an_option_it_was_not_given():
    """Each import is the start-up of every command (0.35-0.58 s on the GPU hosts)."""
    done = subprocess.run([sys.executable, "-c", COMMAND_PROBE.format(rare=RARE)],
                          capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "LOADED", done.stderr


@pytest.mark.parametrize(("args", "device"), [
    (["matmul", "--size", "1000"], 0),
    (["--wide", "dot", "--device", "1"], 1),
    (["transpose", "--device=2", "--inplace"], 2),
    (["run", "suite.toml"], 0),
    (["matmul", "--help"], None),
    (["matmul", "--dry-run"], None),
    (["run", "--devices", "all"], None),
    (["dot", "--cluster", "ray"], None),
    (["dot", "--device", "x"], None),
    (["dot", "--device"], None),
    (["compare", "a.json", "b.json"], None),
    (["list"], None),
    ([], None),
])
def test_only_a_plain_one_gpu_run_starts_its_worker_early(args, device):
    from cudabench.cli.early import early_device

    assert early_device(args) == device


def test_measure_keeps_a_worker_started_early_for_the_same_engine():
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner import starting as workers

    try:
        workers.prestart(FakeSpec())
        first = workers._PRESTARTED[0]
        workers.prestart(FakeSpec())  # measure's own call: the same engine
        assert workers._PRESTARTED == [first]
        workers.prestart(FakeSpec(device_count=2))  # another engine: replaced
        assert len(workers._PRESTARTED) == 1 and workers._PRESTARTED[0] is not first
    finally:
        workers.discard_prestarted()


def test_a_usage_error_ends_the_worker_started_early(use_fake, monkeypatch):
    from cudabench.cli import early, main
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner import starting as workers

    started = []

    def fake_spec(device):
        started.append(device)
        return FakeSpec()

    monkeypatch.setattr(early, "early_spec", fake_spec)
    with pytest.raises(SystemExit) as ended:
        main(["dot", "--device", "0", "--size", "not-a-size"])
    assert ended.value.code == 2 and started == [0]  # started before the parsing
    assert workers._PRESTARTED == []


def test_a_run_takes_the_worker_started_early(use_fake, monkeypatch, tmp_path):
    from cudabench.cli import early, main
    from cudabench.engines.fake_engine import FakeSpec
    from cudabench.runner import starting as workers

    early_workers = []
    real_prestart = workers.prestart

    def watched(spec):
        real_prestart(spec)
        early_workers.append(workers._PRESTARTED[0])

    monkeypatch.setattr(early, "early_spec", lambda device: FakeSpec())
    monkeypatch.setattr(workers, "prestart", watched)
    taken = []
    real_take = workers.take_prestarted
    monkeypatch.setattr("cudabench.runner.pipeline.take_prestarted",
                        lambda spec, plans: taken.append(real_take(spec, plans)) or taken[-1])
    with pytest.raises(SystemExit) as ended:
        main(["dot", "--size", "1000", "--warmup", "0", "--max-time", "0.02", "--no-batch",
              "--json", str(tmp_path / "r.json")])
    assert ended.value.code == 0
    assert early_workers and taken and taken[0] is early_workers[0]


def test_a_device_that_is_not_ascii_digits_leaves_the_start_to_the_command():
    from cudabench.cli.early import early_device

    assert early_device(["dot", "--device", "²"]) is None
    assert early_device(["dot", "--device", "٣"]) is None


def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130():
    # a traceback from the middle of an import, before the command's own boundary
    script = ("import builtins\n"
              "from cudabench import entry\n"
              "real = builtins.__import__\n"
              "def loading(name, *args, **kwargs):\n"
              "    if name == 'cudabench.cli':\n"
              "        raise KeyboardInterrupt\n"
              "    return real(name, *args, **kwargs)\n"
              "builtins.__import__ = loading\n"
              "entry.main()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130 and done.stderr == "cudabench: interrupted\n", done.stderr


def lazy_import_probe(tmp_path: Path, module: str, probe: str) -> str:
    """Run probe (a script) in a fresh Python beside the module cb_probed (its text);
    return what it printed."""
    import os

    (tmp_path / "cb_probed.py").write_text(module)
    (tmp_path / "probe.py").write_text(probe)
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py")], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(tmp_path), *sys.path])})
    return done.stdout.strip() or done.stderr


def test_a_lazy_import_holds_ctrl_c_and_sigterm_until_it_is_done(tmp_path):
    # a SIGTERM inside NumPy's lazy import left it half made, and the stop's own handling
    # failed with "cannot load module more than once per process" (exit 4); a signal
    # mask held it only in the importing thread, and another thread took it
    said = lazy_import_probe(
        tmp_path, "import time\ntime.sleep(1.0)\nDONE = True\n",
        "import os, signal, sys, threading, time\n"
        "from cudabench.common.lazy import LazyModule\n"
        # a background job (a CI's) starts with Ctrl-C ignored: Python's own handler here
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), os.kill(os.getpid(), "
        "signal.SIGINT)), daemon=True).start()\n"
        "try:\n"
        "    LazyModule('cb_probed').DONE\n"
        "    time.sleep(1)\n"
        "    print('never stopped')\n"
        "except KeyboardInterrupt:\n"
        "    print('stopped after the import:', sys.modules['cb_probed'].DONE)\n")
    assert said == "stopped after the import: True", said


def test_a_sigterm_after_a_ctrl_c_inside_a_lazy_import_still_ends_the_run_as_sigterm(tmp_path):
    # a CI's cancel sends SIGINT, then SIGTERM: both held, the SIGINT raised first ended the
    # loop, the SIGTERM was lost and the command exited 130, not 143
    said = lazy_import_probe(
        tmp_path, "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                  "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.2)\nX = 1\n",
        "import signal\nfrom cudabench.entry import _terminate\n"
        "from cudabench.errors import Terminated\n"
        "from cudabench.common.lazy import LazyModule\n"
        "signal.signal(signal.SIGTERM, _terminate)\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "try:\n    LazyModule('cb_probed').X\nexcept BaseException as stop:\n"
        "    print(type(stop).__name__, Terminated.received)\n")
    assert said == "Terminated True", said
