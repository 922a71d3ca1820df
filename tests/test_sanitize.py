"""--sanitize: compute-sanitizer's report read into the row (the GPU runs are in tests/gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.observers import sanitizer as sanitize

MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at leaky+0x70 in /work/k/matmul/leaky.cu:7
=========     by thread (0,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 3 errors
"""
RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at racy+0x1a0 in /k/matmul/racy.cu:11
=========     and Read access at racy+0x2c0 in /k/matmul/racy.cu:13 [512 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
ASSERT = """========= COMPUTE-SANITIZER
========= Warp assert
=========     at checked+0x90 in /k/dot/checked.cu:21
=========     by thread (3,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""
REFUSED = "========= Error: Target application returned an error\n========= No device found\n"


@pytest.mark.parametrize(("output", "errors", "first"), [
    (MEMCHECK, 3, "Invalid __global__ write of size 4 bytes (at /work/k/matmul/leaky.cu:7)"),
    (RACECHECK, 1, "Error: Race reported between Write access at racy+0x1a0 in "
                   "/k/matmul/racy.cu:11"),
    (CLEAN, 0, ""),
    (ASSERT, 1, "Warp assert (at /k/dot/checked.cu:21)"),
])
def test_the_count_and_the_first_finding_with_its_line(output, errors, first):
    report = sanitize.parse("memcheck", output, 0)
    assert report.ran and (report.errors, report.first) == (errors, first)


def test_a_sanitizer_that_cannot_use_the_device_says_so():
    report = sanitize.parse("memcheck", REFUSED, 1)
    assert not report.ran and "could not run here (exit 1): No device found" in report.first


def test_a_missing_sanitizer_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setattr("cudabench.observers.toolkit.shutil.which", lambda name: None)
    monkeypatch.setattr("cudabench.observers.toolkit.CUDA_HOME", tmp_path)
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path))
    done = CliRunner().invoke(cli, ["matmul", "--size", "16", "--sanitize"])
    assert done.exit_code == 2 and "--sanitize needs compute-sanitizer" in done.stderr


def test_an_unknown_tool_is_refused():
    done = CliRunner().invoke(cli, ["matmul", "--sanitize", "leakcheck"])
    assert done.exit_code == 2 and "--sanitize" in done.stderr


def test_the_sanitizer_reports_the_kernels_findings_not_api_errors(tmp_path):
    # CUDA Python's bindings probe the driver with failing calls: not the kernel's findings.
    command = sanitize.sanitizer_command("/cuda/bin/compute-sanitizer", "memcheck",
                                         tmp_path / "plan.pickle")
    assert command[:5] == ["/cuda/bin/compute-sanitizer", "--tool", "memcheck",
                           "--report-api-errors", "no"]
    assert command[-3:] == ["-m", sanitize.CHILD_MODULE, str(tmp_path / "plan.pickle")]


def test_a_checked_launch_that_did_not_run_under_the_tool_checked_nothing():
    # The child exits NOT_RUN, saying why: "no error" would claim a check that never ran.
    output = CLEAN + f"{sanitize.NOT_RUN_MARK} the driver refused the tensor map\n"
    report = sanitize.parse("memcheck", output, sanitize.NOT_RUN)
    assert not report.ran and report.errors == 0
    assert "memcheck checked nothing" in report.first
    assert "the driver refused the tensor map" in report.first


def test_the_child_exits_not_run_unless_its_launch_was_verified(monkeypatch, tmp_path, capsys):
    import pickle

    from cudabench.engines import pycuda_engine
    from cudabench.measure import jobs
    from cudabench.results.model import Verification
    from cudabench.runner import child, execute

    class Engine:
        def close(self):
            pass

    class Spec:
        def __init__(self, index):
            pass

        def open(self):
            return Engine()

    class Row:
        def __init__(self, verification=None, skipped=None, error=None):
            self.verification, self.skipped, self.error = verification, skipped, error
            self.timed_out = False

    plan_file = tmp_path / "plan.pickle"
    plan_file.write_bytes(pickle.dumps(("plan", 0)))
    monkeypatch.setattr(pycuda_engine, "PycudaSpec", Spec)
    monkeypatch.setattr(jobs, "jobs_of", lambda plans: ["job"])
    for rows, status in (([Row(Verification(True, 0.0, 0.0, 0, 4, "exact"))], 0),
                         ([Row(Verification(False, 1.0, 1.0, 4, 4, "exact"))], 0),
                         ([Row(skipped="no tensor map here")], sanitize.NOT_RUN),
                         ([Row(error="launch failed")], sanitize.NOT_RUN)):
        monkeypatch.setattr(execute, "run_jobs", lambda plans, js, engine, r=rows: r)
        assert child.main(str(plan_file)) == status
    assert f"{sanitize.NOT_RUN_MARK} launch failed" in capsys.readouterr().err


def test_a_sanitizer_timeout_ends_the_process_it_checks(monkeypatch, tmp_path):
    # The checked child holds a CUDA context (maybe a spinning kernel): killing only
    # compute-sanitizer left it running. Here the "child" is a sleep the fake tool started.
    import os
    import time

    from cudabench.planning.plan import Request, make_plan

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "compute-sanitizer"
    pid_file = tmp_path / "child.pid"
    tool.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n", encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(sanitize, "TIMEOUT_S", 1)
    plan = make_plan(Request("dot", size="1000", variants=("atomic",)))
    report = sanitize.run(plan, plan.variants[0], "memcheck", 0)
    assert not report.ran and "did not finish in 1 s" in report.first
    pid = int(pid_file.read_text())

    def running() -> bool:
        try:  # a zombie, killed but not yet reaped, is not running
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 5
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    if running():
        os.kill(pid, 9)  # not left behind by the test either
        pytest.fail("the checked process outlived compute-sanitizer's timeout")
