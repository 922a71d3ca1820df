"""The pytest plugin end to end: a project's tests run in a pytester session on the fake
engine (the same replaceable cudabench.cli.commands.engine_spec the command tests use)."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
from pathlib import Path

# Imported here, before any pytester session: an in-process session drops the modules it
# imported when it ends, and the engine_spec patched below must be the one the next sees
# (NumPy, imported on first use by cudabench, cannot be imported twice in one process).
import numpy  # noqa: F401
import pytest
from helpers import stopped_after
from pty_terminal import run_in_terminal

import cudabench.api  # noqa: F401
import cudabench.cli.commands  # noqa: F401
from cudabench.engines.fake_engine import FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.errors import GpuEnvironmentError
from cudabench.history.store import Store
from cudabench.pytest_plugin import gpu_unavailable_reason
from cudabench.results import Status, load_results

pytest_plugins = ["pytester"]

TESTS = '''
import pytest
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_tiled(cudabench):
    results = cudabench.run("matmul", variants=["naive", "tiled"], size=64, vendor=False,
                            timing=FAST)
    assert results.row("tiled").median_s > 0


@pytest.mark.cudabench_sweep(size=[32, 48], TILE=[8, 16])
def test_sweep(cudabench, cudabench_point):
    cudabench.run("matmul", variants=["tiled"], vendor=False, batch=False, timing=FAST,
                  **cudabench_point)
'''


@pytest.fixture
def project(pytester):
    """A project whose tests use the plugin (only the first test unless -k says more)."""
    pytester.makepyfile(test_plugin_project=TESTS)
    return pytester


def use(monkeypatch, spec) -> None:
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: spec)


def test_the_plugin_is_an_entry_point():
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert any(p.name == p.value == "cudabench.pytest_plugin" for p in plugins)


@pytest.mark.parametrize("how", ["-p", "pytest_plugins"])
def test_the_plugin_named_by_its_module_loads_once(pytester, monkeypatch, how):
    # `-p cudabench.pytest_plugin` stopped pytest: "Plugin already registered under a
    # different name: cudabench=..."
    pytester.makepyfile(test_named=TESTS.split("@pytest.mark")[0])
    if how == "pytest_plugins":
        pytester.makeconftest('pytest_plugins = ["cudabench.pytest_plugin"]\n')
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest(*(["-p", "cudabench.pytest_plugin"] if how == "-p" else []))
    done.assert_outcomes(passed=1)
    blocked = pytester.runpytest("-p", "no:cudabench.pytest_plugin")
    blocked.assert_outcomes(errors=1)  # no `cudabench` fixture without the plugin


def test_a_passing_session_writes_every_row_to_one_file(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    done = project.runpytest("--cudabench-json", "now.json")
    done.assert_outcomes(passed=5)
    assert [i for i in done.outlines if "test_sweep[" in i] == []  # -q: no ids in lines
    saved = load_results(project.path / "now.json")
    assert saved.metadata["complete"] is True
    assert saved.metadata["command"][:3] == ["python", "-m", "pytest"]
    points = sorted((r.shape[0], r.params["TILE"]) for r in saved.benchmarks
                    if r.variant == "tiled")
    assert points == [(32, 8), (32, 16), (48, 8), (48, 16), (64, 16)]
    assert all(r.status is Status.PASS for r in saved.benchmarks)
    done.stdout.fnmatch_lines(["*cudabench: 6 rows written to now.json*"])


def test_sweep_points_name_the_tests(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    done = project.runpytest("-v", "-k", "sweep", "--collect-only")
    done.stdout.fnmatch_lines(["*test_sweep[[]size:32-TILE:8[]]*",
                               "*test_sweep[[]size:48-TILE:16[]]*"])


def test_a_failed_verification_fails_the_test_with_the_rows_message(project, monkeypatch):
    use(monkeypatch, FakeSpec(faults={"naive": Fault.WRONG_ELEMENT}))
    done = project.runpytest("-k", "tiled", "-rs")
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(["*cudabench: matmul/naive TILE=16 64x64x64 float32: FAIL: "
                               "*elements outside tolerance*"])


def test_a_regression_against_the_baseline_fails_the_session(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    project.runpytest("-k", "tiled", "--cudabench-json", "base.json").assert_outcomes(passed=1)
    use(monkeypatch, FakeSpec(seed=1))  # the same kernels again: no regression
    same = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json")
    assert same.ret == 0
    same.stdout.fnmatch_lines(["*cudabench: no regression against base.json*"])
    use(monkeypatch, FakeSpec(seed=2, slowdown={"tiled": 1.3}))
    slow = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json",
                             "--cudabench-json", "slow.json")
    slow.assert_outcomes(passed=1)  # the test itself passed: the session fails
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    slow.stdout.fnmatch_lines(["*cudabench compare*", "*matmul/tiled*slower*",
                               "*1 regression:*",
                               "*cudabench: the session fails: a regression against base.json*"])
    # A threshold above the planted change lets it through, as compare's --threshold does.
    wide = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json",
                             "--cudabench-threshold", "50%")
    assert wide.ret == 0


def test_a_baseline_benchmark_the_session_did_not_run_fails_it(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    project.runpytest("-k", "tiled or 32-TILE", "--cudabench-json", "base.json"
                      ).assert_outcomes(passed=3, deselected=2)
    use(monkeypatch, FakeSpec(seed=1))  # a new run: other samples than the baseline's
    monkeypatch.setenv("COLUMNS", "400")  # every column of the table shown
    fewer = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json")
    assert fewer.ret == pytest.ExitCode.TESTS_FAILED
    fewer.stdout.fnmatch_lines(["*the session fails: a regression against base.json*"])
    # the table names the plugin's options, not compare()'s arguments (allow_missing=True)
    fewer.stdout.fnmatch_lines(["*missing*--cudabench-allow-missing accepts that*"])
    assert "allow_missing" not in fewer.stdout.str()
    monkeypatch.setenv("COLUMNS", "80")  # nor table(wide=True), for a column left out
    narrow = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json")
    narrow.stdout.fnmatch_lines(["*left out to fit: *(a wider terminal (COLUMNS) shows*"])
    allowed = project.runpytest("-k", "tiled", "--cudabench-compare", "base.json",
                                "--cudabench-allow-missing")
    assert allowed.ret == 0


def test_record_feeds_the_history_store(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    done = project.runpytest("-k", "tiled", "--cudabench-record", "h.db")
    assert done.ret == 0
    with Store.open(project.path / "h.db") as store:
        assert len(store.runs()) == 1
    # said once, in the summary (the history command's line was glued to the progress)
    assert "recorded as run" not in done.stdout.str()
    done.stdout.fnmatch_lines(["cudabench: * recorded in h.db"])


class Refuse(FakeSpec):
    def count_devices(self) -> int:
        raise GpuEnvironmentError("PyCUDA is not installed: pip install pycuda")


@pytest.mark.parametrize(("spec", "reason"), [
    (FakeSpec(device_count=0), "cudabench: no usable GPU: the CUDA driver sees no device"),
    (Refuse(), "cudabench: no usable GPU: PyCUDA is not installed*"),
])
def test_no_gpu_skips_the_tests_with_the_reason(project, monkeypatch, spec, reason):
    use(monkeypatch, spec)
    done = project.runpytest("-rs", "--cudabench-json", "now.json",
                             "--cudabench-compare", "now.json.missing")
    # A baseline that does not exist is refused first, naming the option.
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(["*--cudabench-compare: *now.json.missing*"])
    done = project.runpytest("-rs", "--cudabench-json", "now.json")
    done.assert_outcomes(skipped=5)
    done.stdout.fnmatch_lines(["*no benchmark ran in this session*", f"SKIPPED *{reason}"])
    assert not (project.path / "now.json").exists()
    required = project.runpytest("-k", "tiled", "--cudabench-require-gpu")
    required.assert_outcomes(errors=1)
    required.stdout.fnmatch_lines([f"*{reason} (--cudabench-require-gpu)*"])


@pytest.mark.parametrize(("args", "message"), [
    (["--cudabench-compare", "base.json", "--cudabench-threshold", "5"], "*bare number*"),
    (["--cudabench-compare", "base.json", "--cudabench-alpha", "2"], "*--cudabench-alpha 2.0*"),
    (["--cudabench-compare", "base.json", "--cudabench-max-threshold", "1%"],
     "*--cudabench-max-threshold 1%: below the 2% floor*"),
    (["--cudabench-compare", "base.json", "--cudabench-json", "base.json"],
     "*--cudabench-json base.json: is the baseline*"),
    (["--cudabench-json", "."], "*--cudabench-json .: names a folder*"),
    # Path dropped the slash, and the session wrote the file it named
    (["--cudabench-json", "test_plugin_project.py/"],
     "*--cudabench-json test_plugin_project.py/: names a folder (it ends with /)*"),
    (["--cudabench-rounds", "0"], "*--cudabench-rounds 0: must be a whole number from 1*"),
    (["--cudabench-json", "test_plugin_project.py"],
     "*--cudabench-json *test_plugin_project.py: exists and is not a cudabench results file*"),
    (["--cudabench-json", "test_plugin_project.py/now.json"],
     "*--cudabench-json test_plugin_project.py/now.json: *is a file, not a folder*"),
    # the store's error named --cudabench-db, an option not given
    (["--cudabench-record", "test_plugin_project.py"],
     "*test_plugin_project.py: *not *SQLite*; pass --cudabench-record with a store's path*"),
    (["--cudabench-compare", "base.json", "--cudabench-db", "base.json"],
     "*base.json: *not *SQLite*"),
    (["--cudabench-keep-workers", "-1"], "*--cudabench-keep-workers -1: expected the seconds*"),
    # checked without --cudabench-compare too (they were accepted until a compare came)
    (["--cudabench-threshold", "banana"], "*--cudabench-threshold 'banana': expected*"),
    (["--cudabench-alpha", "7"], "*--cudabench-alpha 7.0: must be between 0 and 1*"),
    # a cap beside a fixed threshold, as `compare` refuses it (it was taken, and ignored)
    (["--cudabench-threshold", "5%", "--cudabench-max-threshold", "10%"],
     "*--cudabench-max-threshold caps --cudabench-threshold auto only; with "
     "--cudabench-threshold 5% it does nothing*"),
    # a store beside a fixed threshold: it was taken, and read by nothing
    (["--cudabench-threshold", "5%", "--cudabench-db", "history.db"],
     "*--cudabench-db names the history store of --cudabench-threshold auto only; with "
     "--cudabench-threshold 5% it does nothing*"),
])
def test_bad_options_stop_the_session_naming_them(project, monkeypatch, args, message):
    use(monkeypatch, FakeSpec())
    project.runpytest("-k", "tiled", "--cudabench-json", "base.json").assert_outcomes(passed=1)
    kept = (project.path / "test_plugin_project.py").read_bytes()
    done = project.runpytest(*args)
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines([message])
    assert (project.path / "test_plugin_project.py").read_bytes() == kept


TWICE = '''
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_one(cudabench):
    cudabench.run("matmul", variants=["tiled"], size=64, timing=FAST)


def test_two(cudabench):
    cudabench.run("matmul", variants=["tiled", "naive"], size=64, timing=FAST)


def test_three(cudabench):
    cudabench.run("matmul", variants=["naive"], size=64, timing=FAST)


def test_again(cudabench):  # the same test measuring its kernel twice: the later row stays
    for _ in range(2):
        cudabench.run("matmul", variants=["naive"], size=48, timing=FAST)


def test_moves(cudabench, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a test that changes the folder before the file is written
    cudabench.run("matmul", variants=["naive"], size=32, timing=FAST)
'''


def test_a_session_file_holds_one_row_per_benchmark(pytester, monkeypatch):
    """Two tests of one kernel: the second fails, naming the first, and the session's file
    stays one a command can compare; the cuBLAS row each test measures is kept once."""
    from click.testing import CliRunner

    from cudabench.cli import cli

    pytester.makepyfile(test_twice=TWICE)
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("--cudabench-json", "now.json")
    done.assert_outcomes(passed=4, failed=1)
    done.stdout.fnmatch_lines(["*cudabench: error: matmul/tiled TILE=16 float32 at 64x64x64 "
                               "was measured already in this session by "
                               "test_twice.py::test_one*"])
    saved = load_results(pytester.path / "now.json")  # where pytest started, not tmp_path
    names = sorted((r.variant, r.shape[0]) for r in saved.benchmarks)
    assert names == [("cuBLAS", 32), ("cuBLAS", 48), ("cuBLAS", 64), ("naive", 32),
                     ("naive", 48), ("naive", 64), ("tiled", 64)]
    use(monkeypatch, FakeSpec(seed=1))
    again = pytester.runpytest("-k", "not two", "--cudabench-json", "again.json")
    again.assert_outcomes(passed=4, deselected=1)
    compared = CliRunner().invoke(cli, ["compare", str(pytester.path / "now.json"),
                                        str(pytester.path / "again.json")])
    assert compared.exit_code == 0, compared.output


def test_a_gate_that_ran_no_benchmark_fails(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    project.runpytest("-k", "tiled", "--cudabench-json", "base.json").assert_outcomes(passed=1)
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    none = project.runpytest("-k", "plain", "--cudabench-compare", "base.json")
    assert none.ret == pytest.ExitCode.TESTS_FAILED
    none.stdout.fnmatch_lines(["*cudabench: error: no benchmark ran in this session*every "
                               "benchmark of base.json is missing; pass "
                               "--cudabench-allow-missing if that is meant*"])
    allowed = project.runpytest("-k", "plain", "--cudabench-compare", "base.json",
                                "--cudabench-allow-missing")
    assert allowed.ret == 0
    listed = project.runpytest("--collect-only", "-q", "--cudabench-compare", "base.json")
    assert listed.ret == 0 and "no benchmark ran" not in listed.stdout.str()  # IDE discovery


def test_session_options_refuse_pytest_xdist_in_the_controller_too():
    from types import SimpleNamespace

    from cudabench.pytest_plugin import _distributed

    def config(**option):
        return SimpleNamespace(option=SimpleNamespace(**option))

    assert not _distributed(config())  # xdist not installed
    assert not _distributed(config(numprocesses=None, dist="no"))
    assert not _distributed(config(numprocesses=0, dist="no"))  # -n 0
    # -n 2, in the controller (xdist has made the workers' --tx of it)
    assert _distributed(config(numprocesses=2, dist="load", tx=["popen", "popen"]))
    assert _distributed(config(numprocesses=None, dist="loadscope", tx=["2*popen"]))  # --tx
    # --dist without -n (addopts' --dist loadfile, -n in some jobs only): xdist starts no
    # worker, and the session runs in this process (it was refused)
    assert not _distributed(config(numprocesses=None, dist="loadfile", tx=[]))
    assert not _distributed(config(numprocesses=0, dist="no", tx=[]))  # -n 0 --dist load
    worker = config(numprocesses=None, dist="no")
    worker.workerinput = {}
    assert _distributed(worker)


def test_sweep_points_can_be_selected_with_k(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    done = project.runpytest("-k", "size:32", "--collect-only", "-q")
    done.stdout.fnmatch_lines(["*test_sweep[[]size:32-TILE:8[]]",
                               "*test_sweep[[]size:32-TILE:16[]]"])
    assert "size:48" not in done.stdout.str()


def test_a_sweep_marker_without_the_point_argument_fails_that_test_only(pytester):
    # it stopped the collection of its whole file, with a traceback: no other test ran
    pytester.makepyfile(test_x='''
import pytest

@pytest.mark.cudabench_sweep(size=[32])
def test_x(cudabench):
    pass

def test_other():
    pass
''')
    done = pytester.runpytest()
    assert done.ret == 1
    done.assert_outcomes(passed=1, errors=1)  # at its setup, as a bad marker
    done.stdout.fnmatch_lines(["*needs a cudabench_point argument*"])
    assert "Traceback" not in done.stdout.str()


def test_a_bad_sweep_marker_errors_its_own_test_and_no_other(pytester, monkeypatch):
    # a positional list stopped the whole session at collection; variants=[...] was taken
    # for a kernel parameter; the outer of two stacked markers was dropped without a word
    pytester.makepyfile(test_x='''
import pytest

@pytest.mark.cudabench_sweep([32, 48])
def test_positional(cudabench, cudabench_point):
    pass

@pytest.mark.cudabench_sweep(size=[32], variants=["naive", "tiled"])
def test_variants(cudabench, cudabench_point):
    pass

@pytest.mark.cudabench_sweep(size=[24])
@pytest.mark.cudabench_sweep(size=[40])
def test_stacked(cudabench, cudabench_point):
    pass

def test_fine():
    pass
''')
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("-rE")
    done.assert_outcomes(passed=1, errors=3)
    done.stdout.fnmatch_lines_random([
        "*test_positional*cudabench_sweep takes keywords only*",
        "*test_variants*variants is an argument of cudabench.run(), not an axis*",
        "*test_stacked*cudabench_sweep is given more than once*"])


def test_the_run_arguments_a_sweep_refuses_are_run_s():
    import inspect

    from cudabench.pytest_plugin import RUN_ARGUMENTS, RUN_AXES

    names = set(inspect.signature(cudabench.api.run).parameters) - {"op", *RUN_AXES}
    assert names == RUN_ARGUMENTS


def test_the_plugin_is_inert_unless_used(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    done = pytester.runpytest()
    done.assert_outcomes(passed=1)
    assert not [line for line in done.outlines if "cudabench" in line and "plugins:" not in line]


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytest"


@pytest.fixture
def example(pytester):
    """A copy of examples/pytest, the project the GPU check runs."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True)
    return pytester


def test_the_example_project_collects_its_sweep(example):
    done = example.runpytest("--collect-only", "-q")
    done.stdout.fnmatch_lines(["tests/test_my_kernels.py::test_probe_is_as_fast_as_the_builtin_atomic",
                               "tests/test_my_kernels.py::test_tiled_matmul",
                               "tests/test_my_kernels.py::test_tiled_sweep[[]size:512-TILE:16[]]",
                               "tests/test_my_kernels.py::test_tiled_sweep[[]size:2048-TILE:32[]]",
                               "*6 tests collected*"])


def test_the_example_project_skips_without_a_gpu(example):
    if not gpu_unavailable_reason():  # the plugin's own probe, on the real engine
        pytest.skip("a GPU is usable here: the example's tests run (run-gpu-check.sh)")
    done = example.runpytest("--cudabench-json", "now.json")
    done.assert_outcomes(skipped=6)
    done.stdout.fnmatch_lines(
        ["SKIPPED [[]4[]] tests/test_my_kernels.py:*: cudabench: no usable GPU: *"])
    assert not (example.path / "now.json").exists()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("planted", [False, True])
def test_the_example_probe_compiles_with_and_without_the_plant(tmp_path, planted):
    from helpers import invoke

    shutil.copytree(EXAMPLE / "kernels", tmp_path / "kernels")
    probe = tmp_path / "kernels" / "dot" / "probe.cu"
    if planted:  # as run-gpu-check.sh plants it
        probe.write_text(probe.read_text(encoding="utf-8").replace(
            "#ifndef EXTRA_PERMILLE", "#define EXTRA_PERMILLE 35\n#ifndef EXTRA_PERMILLE"),
            encoding="utf-8")
    done = invoke("dot", "--dry-run", "--variant", "probe", "--size", "1<<24",
                  "--kernels-dir", tmp_path / "kernels")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "probe" in done.stdout


def test_a_run_that_measures_nothing_skips_the_test(pytester, monkeypatch):
    tiled = (Path(__file__).resolve().parents[1] / "kernels" / "matmul" / "tiled.cu"
             ).read_text(encoding="utf-8")
    hopper = tiled.replace("// cudabench: matmul\n", "// cudabench: matmul\n// arch: sm_90a\n")
    pytester.makepyfile(test_hopper_only=f"""
def test_hopper(cudabench):
    cudabench.run("matmul", variants=["mine"], sources={{"mine": {hopper!r}}}, size=64,
                  vendor=False)


def test_hopper_beside_cublas(cudabench):
    # the cuBLAS row beside it ran: the test passed, though its kernel never did
    cudabench.run("matmul", variants=["mine"], sources={{"mine": {hopper!r}}}, size=64)
""")
    use(monkeypatch, FakeSpec(compute_capability="8.0"))
    done = pytester.runpytest("-rs")
    done.assert_outcomes(skipped=2)
    done.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_hopper_only.py:*: cudabench: nothing was "
                               "measured: matmul/mine: *"])


def test_a_gpu_one_test_cannot_use_skips_that_test_alone(pytester, monkeypatch):
    # a lost GPU 1 (or device=1 on a one-GPU machine) made every later test skip as if the
    # machine had no GPU
    pytester.makepyfile(test_gpu_choice="""
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_a(cudabench):
    cudabench.run("matmul", variants=["tiled"], size=32, vendor=False, timing=FAST)


def test_b(cudabench):
    cudabench.run("matmul", variants=["tiled"], size=32, vendor=False, timing=FAST, device=1)


def test_c(cudabench):
    cudabench.run("matmul", variants=["vectorized"], size=48, vendor=False, timing=FAST)
""")
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: FakeSpec(
        device_index=device, device_count=2, lost_devices=(1,)))
    done = pytester.runpytest("-rs")
    done.assert_outcomes(passed=2, skipped=1)
    done.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_gpu_choice.py:*: cudabench: no usable GPU: *"])


def test_check_takes_true_or_false_only(pytester, monkeypatch):
    pytester.makepyfile(test_check="""
def test_x(cudabench):
    cudabench.run("matmul", variants=["naive"], size=32, vendor=False, check="no")
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest()
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(["*cudabench: error: check 'no': expected True or False*"])


def test_a_misspelt_keyword_fails_the_test_with_one_line(pytester, monkeypatch):
    # a TypeError's traceback into the plugin, for the likeliest typo there is
    pytester.makepyfile(test_typo="""
def test_x(cudabench):
    cudabench.run("matmul", variant=["naive"], size=32, vendor=False)
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest()
    done.assert_outcomes(failed=1)
    assert "Traceback" not in done.stdout.str() and "pytest_plugin.py" not in done.stdout.str()
    done.stdout.fnmatch_lines(["*cudabench: error: cudabench.run(): got an unexpected keyword "
                               "argument 'variant'; did you mean variants=?*"])


def test_a_rounds_marker_and_a_timing_s_own_rounds_that_disagree_fail_the_test(pytester,
                                                                             monkeypatch):
    # the timing's rounds=2 won, though the marker's doc says its N rounds run
    pytester.makepyfile(test_disagreeing_rounds="""
import pytest
from cudabench.api import TimingPolicy

@pytest.mark.cudabench_rounds(3)
def test_x(cudabench):
    cudabench.run("matmul", variants=["naive"], size=32, vendor=False,
                  timing=TimingPolicy(rounds=2))
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest()
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(["*cudabench: error: the test's cudabench_rounds(3) and its "
                               "timing's rounds=2 disagree: give the rounds in one place*"])


def test_a_test_s_mistake_is_said_once_without_the_error_behind_it(pytester, monkeypatch):
    # pytest.fail inside the except block printed the handled error, "During handling of
    # the above exception, another exception occurred", then the message again
    pytester.makepyfile(test_mistake="""
def test_x(cudabench):
    cudabench.run("matmul", kernels_dir="does/not/exist", size=64)
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest()
    done.assert_outcomes(failed=1)
    text = done.stdout.str()
    assert "During handling" not in text and "Traceback" not in text
    # the short summary repeats it only where the terminal is wide enough: count the report
    report = text.split("short test summary info")[0]
    assert report.count("cudabench: error: kernels_dir does/not/exist: no such directory") == 1


def test_a_sweep_of_sizes_and_dtypes_takes_the_test_s_own_params(pytester, monkeypatch):
    # every point carried params={} (a TypeError beside the test's own params=), and
    # dtype=[...] was taken for a kernel parameter
    pytester.makepyfile(test_swept="""
import pytest
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


@pytest.mark.cudabench_sweep(size=[32, 48], dtype=["float32", "float16"])
def test_points(cudabench, cudabench_point):
    results = cudabench.run("matmul", variants=["tiled"], vendor=False, batch=False,
                            timing=FAST, params={"TILE": 8}, **cudabench_point)
    row = results.row("tiled")
    assert (row.shape[0], row.dtype, row.params["TILE"]) == (
        cudabench_point["size"], cudabench_point["dtype"], 8)
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("-v")
    done.assert_outcomes(passed=4)
    done.stdout.fnmatch_lines(["*test_points[[]size:32-dtype:float16[]] PASSED*"])


def test_session_rounds_pool_every_run_unless_a_test_sets_its_own(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    done = project.runpytest("-k", "tiled", "--cudabench-json", "now.json",
                             "--cudabench-rounds", "3")
    done.assert_outcomes(passed=1)
    rows = load_results(project.path / "now.json").benchmarks
    assert rows and all(r.rounds == 3 for r in rows if r.samples_s)


MARKED = '''
import pytest
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


@pytest.mark.cudabench_rounds(1)
def test_once(cudabench):
    cudabench.run("transpose", variants=["naive"], size=64, timing=FAST)


@pytest.mark.cudabench_rounds(2)
def test_twice(cudabench):
    cudabench.run("transpose", variants=["shared"], size=64, timing=FAST)


@pytest.mark.cudabench_rounds(0)
def test_wrong(cudabench):
    pass
'''


def test_a_test_s_rounds_marker_wins_over_the_session_s(pytester, monkeypatch):
    pytester.makepyfile(test_marked=MARKED)
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("--cudabench-json", "now.json", "--cudabench-rounds", "3")
    done.assert_outcomes(passed=2, errors=1)  # the marker's mistake: the fixture's error
    done.stdout.fnmatch_lines(["*test_wrong: cudabench_rounds takes one whole number from 1*"])
    rows = {r.variant: r for r in load_results(pytester.path / "now.json").benchmarks}
    assert rows["naive"].rounds == 1 and rows["shared"].rounds == 2


def test_a_test_s_own_rounds_win_over_the_session_s():
    from cudabench.api import TimingPolicy
    from cudabench.pytest_plugin import session_rounds

    assert session_rounds(None, 3).rounds == 3
    assert session_rounds(TimingPolicy(max_time_s=0.2), 3) == TimingPolicy(max_time_s=0.2,
                                                                             rounds=3)
    assert session_rounds(TimingPolicy(rounds=5), 3).rounds == 5


def test_launch_blocking_fails_the_tests_rather_than_skipping_them(project, monkeypatch):
    use(monkeypatch, FakeSpec())
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    done = project.runpytest("-k", "tiled")
    done.assert_outcomes(failed=1)
    done.stdout.fnmatch_lines(["*CUDA_LAUNCH_BLOCKING=1*"])


def test_an_interrupted_session_keeps_an_existing_file_and_marks_its_rows_incomplete(
        pytester, monkeypatch):
    pytester.makepyfile(test_stops='''
import pytest
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_one(cudabench):
    cudabench.run("transpose", variants=["naive"], size=64, timing=FAST)


def test_two():
    pytest.exit("stopped")  # as Ctrl-C stops a session (KeyboardInterrupt would leave
                            # the pytester session and stop this one too)
''')
    use(monkeypatch, FakeSpec())
    kept = (Path(__file__).parent / "data" / "compare" / "baseline.json").read_bytes()
    (pytester.path / "now.json").write_bytes(kept)  # an earlier session's file
    done = pytester.runpytest("--cudabench-json", "now.json", "--cudabench-record", "h.db")
    assert done.ret == pytest.ExitCode.INTERRUPTED
    assert not (pytester.path / "h.db").exists()  # part of a session is not recorded
    done.stdout.fnmatch_lines(["*the session was interrupted: nothing compared or recorded*"])
    assert (pytester.path / "now.json").read_bytes() == kept
    partial = load_results(pytester.path / "now.json.partial")
    assert partial.metadata["complete"] is False and partial.benchmarks  # naive, cuBLAS, copy
    done.stdout.fnmatch_lines(["*rows written to *now.json.partial (incomplete: the "
                               "session was interrupted)*"])
    # --cudabench-record alone: the rows streamed to a file of their own (they were lost)
    done = pytester.runpytest("--cudabench-record", "h.db", "-p", "no:cacheprovider")
    assert done.ret == pytest.ExitCode.INTERRUPTED and not (pytester.path / "h.db").exists()
    (kept_rows,) = (pytester.path / ".cudabench" / "runs").glob("*.json")
    assert load_results(kept_rows).benchmarks
    done.stdout.fnmatch_lines([f"*record its rows with `cudabench history import "
                               f"*{kept_rows.name} --db *h.db`*"])


def test_the_gate_defaults_the_plugin_skips_checking_are_compare_s():
    # a session without gate options does not load the compare module (2 s) to check them
    from cudabench.analysis.verdicts import DEFAULT_ALPHA
    from cudabench.history.threshold import DEFAULT_CAP
    from cudabench.pytest_plugin import GATE_DEFAULTS

    assert GATE_DEFAULTS == ("auto", DEFAULT_ALPHA, f"{DEFAULT_CAP:.0%}")


def test_a_session_stopped_mid_run_keeps_the_rows_that_run_measured(pytester, monkeypatch):
    # the rows of the run a Ctrl-C stopped were lost: the file held the earlier tests' only
    from cudabench.cli import commands

    pytester.makepyfile(test_stops_mid_run='''
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_long(cudabench):
    cudabench.run("matmul", variants=["naive", "tiled"], size=[32, 48], vendor=False,
                  batch=False, timing=FAST)
''')
    use(monkeypatch, FakeSpec())
    # as Ctrl-C stops a session (see above)
    monkeypatch.setattr(commands, "run_plans",
                        stopped_after(commands.run_plans, 3, lambda: pytest.exit("stopped")))
    done = pytester.runpytest("--cudabench-json", "now.json")
    assert done.ret == pytest.ExitCode.INTERRUPTED
    saved = load_results(pytester.path / "now.json")
    assert saved.metadata["complete"] is False
    assert len(saved.benchmarks) == 3 and all(r.status is Status.PASS for r in saved.benchmarks)


def test_a_test_cannot_write_over_the_sessions_baseline_or_file(pytester, monkeypatch):
    # a test's json= replaced base.json mid-session; the gate then compared with that. And
    # one replaced --cudabench-json's file: an interrupted session then left the test's run
    # there (the file it promised to keep was gone)
    pytester.makepyfile(test_writes='''
import pytest
from cudabench.api import TimingPolicy
from cudabench.errors import UsageError

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_json(cudabench):
    cudabench.run("transpose", variants=["naive"], size=64, vendor=False, timing=FAST,
                  json="base.json")


def test_to_json(cudabench):
    results = cudabench.run("transpose", variants=["naive"], size=96, vendor=False,
                            timing=FAST)
    with pytest.raises(UsageError, match="is the session's --cudabench-compare baseline"):
        results.to_json("base.json")


def test_session_file(cudabench):
    cudabench.run("transpose", variants=["naive"], size=80, vendor=False, timing=FAST,
                  json="now.json")
''')
    use(monkeypatch, FakeSpec())
    kept = (Path(__file__).parent / "data" / "compare" / "baseline.json").read_bytes()
    (pytester.path / "base.json").write_bytes(kept)
    done = pytester.runpytest("--cudabench-compare", "base.json", "--cudabench-allow-missing",
                              "--cudabench-json", "now.json")
    done.assert_outcomes(failed=2, passed=1)
    done.stdout.fnmatch_lines(["*cudabench: error: json base.json: is the session's "
                               "--cudabench-compare baseline; nothing is written over a file "
                               "the run reads*"])
    done.stdout.fnmatch_lines(["*json now.json: is the session's --cudabench-json file*"])
    assert (pytester.path / "base.json").read_bytes() == kept
    # the session is over: the files are free again
    from cudabench.common.outfiles import check_output

    for name in ("base.json", "now.json"):
        check_output(pytester.path / name, "--json")


def test_a_direct_run_in_a_gathering_session_fails_its_test(pytester, monkeypatch):
    # cudabench.run() called directly: "no benchmark ran in this session: nothing written",
    # exit 0, its rows in neither the file nor the gate
    pytester.makepyfile(test_direct='''
import cudabench
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


def test_direct():
    assert cudabench.run("transpose", variants=["naive"], size=64, timing=FAST,
                         vendor=False).ok


def test_through_the_fixture(cudabench):
    cudabench.run("transpose", variants=["shared"], size=64, timing=FAST, vendor=False)
''')
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("--cudabench-json", "now.json", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=2, errors=1)
    done.stdout.fnmatch_lines(["*error: transpose/naive measured by a direct "
                               "cudabench.run(), which this session's*"])
    # without an option that gathers, a direct run is the test's own business
    done = pytester.runpytest("-p", "no:cacheprovider")
    done.assert_outcomes(passed=2)


def test_a_direct_run_outside_the_test_body_is_caught_too(pytester, monkeypatch):
    # a module-scoped fixture's run, one at import and one in a session fixture's teardown
    # passed a gathering session by: the fixture that listened was the test's own
    pytester.makepyfile(test_scoped='''
import pytest
import cudabench
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)
AT_IMPORT = cudabench.run("transpose", variants=["vectorized"], size=48, timing=FAST, vendor=False)


@pytest.fixture(scope="module")
def measured():
    return cudabench.run("transpose", variants=["naive"], size=64, timing=FAST, vendor=False)


@pytest.fixture(scope="session")
def late():
    yield
    cudabench.run("transpose", variants=["naive"], size=32, timing=FAST, vendor=False)


def test_uses_it(measured):
    assert measured.ok


def test_through_the_fixture(cudabench, late):
    cudabench.run("transpose", variants=["shared"], size=64, timing=FAST, vendor=False)
''')
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("--cudabench-json", "now.json", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=1, errors=2)
    done.stdout.fnmatch_lines([
        "*ERROR at setup of test_uses_it*", "*error: transpose/naive measured by a direct*",
        "*ERROR at teardown of test_through_the_fixture*",
        "*error: transpose/vectorized measured by a direct cudabench.run(), which this session's "
        "*at the import of test_scoped.py*"])
    assert done.ret == pytest.ExitCode.TESTS_FAILED
    saved = load_results(pytester.path / "now.json")
    assert [row.variant for row in saved.benchmarks if row.kind.value == "variant"] == [
        "shared"]


def test_a_direct_run_in_a_teardown_that_raised_blames_no_later_test(pytester, monkeypatch):
    # a fixture's teardown that raised ended the teardown hooks: its direct run was left
    # over, and the next test's setup errored for it
    pytester.makepyfile(test_left="""
import pytest
import cudabench
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)


@pytest.fixture
def breaks():
    yield
    cudabench.run("transpose", variants=["naive"], size=32, timing=FAST, vendor=False)
    raise RuntimeError("teardown broke")


def test_first(cudabench, breaks):
    cudabench.run("transpose", variants=["shared"], size=64, timing=FAST, vendor=False)


def test_second(cudabench):
    cudabench.run("transpose", variants=["shared"], size=48, timing=FAST, vendor=False)
""")
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest("--cudabench-json", "now.json", "-p", "no:cacheprovider")
    done.assert_outcomes(passed=2, errors=1)  # test_first's teardown error alone
    done.stdout.fnmatch_lines(["*error: transpose/naive measured by a direct*in the test "
                               "before test_left.py::test_second*"])
    assert done.ret == pytest.ExitCode.TESTS_FAILED


def test_a_measured_kernel_takes_the_place_of_its_skip(monkeypatch, tmp_path):
    # a SKIP first (a build for a newer GPU), the kernel measured by a later test: the
    # measured row was dropped, the session's file keeping the SKIP
    from dataclasses import replace

    from cudabench.api import Results, TimingPolicy, run
    from cudabench.errors import UsageError
    from cudabench.pytest_plugin import SessionRows

    use(monkeypatch, FakeSpec())
    timing = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)
    measured = run("transpose", variants=["naive"], size=64, vendor=False, timing=timing)
    naive = measured.row("naive")
    skip = replace(naive, skipped="built for sm_100a", samples_s=(), verification=None)
    assert skip.status is Status.SKIP
    rows = SessionRows(json_path=tmp_path / "now.json")
    rows.add(Results((skip,)), "test_a")
    rows.add(Results((naive,)), "test_b")
    assert rows.rows == [naive]
    rows.add(Results((skip,)), "test_c")  # a later SKIP leaves the measured row
    assert rows.rows == [naive]
    rows.add(Results((naive,)), "test_b")  # its test re-run: replaced, not refused
    with pytest.raises(UsageError, match="measured already in this session by test_b"):
        rows.add(Results((naive,)), "test_d")


FAKE_CONFTEST = '''
import os

from cudabench.cli import commands
from cudabench.engines.fake_engine import FakeSpec

commands.engine_spec = lambda device: FakeSpec(seed=int(os.environ.get("FAKE_SEED", "0")))
'''


def test_the_session_s_comparison_fits_pytest_s_terminal(pytester, monkeypatch):
    # on a 100-column terminal the table was 207-231 characters a line, wrapped by it
    pytester.makepyfile(test_plugin_project=TESTS)
    pytester.makeconftest(FAKE_CONFTEST)  # a process of its own: the fake engine there too
    base = pytester.runpytest_subprocess("-k", "tiled", "--cudabench-json", "base.json")
    base.assert_outcomes(passed=1)
    monkeypatch.setenv("FAKE_SEED", "1")
    code = "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"
    shown = run_in_terminal(code, 100, pytester.path, "-p", "no:cacheprovider", "-k", "tiled",
                            "--cudabench-compare", "base.json")
    table = shown[shown.index("cudabench compare"):shown.index("no regression against")]
    assert max(len(line) for line in table.splitlines()) <= 100, shown
    assert "left out to fit" in table


STOPPING_HEAD = '''
from cudabench.api import TimingPolicy

FAST = TimingPolicy(warmup_s=0.0, min_samples=20, max_time_s=0.2)
'''
FIRST = '''
def test_first(cudabench):
    cudabench.run("matmul", variants=["naive"], size=64, vendor=False, timing=FAST)
'''
FAILS = '''
def test_fails():
    assert False
'''
LAST = '''
def test_last(cudabench):
    cudabench.run("matmul", variants=["tiled"], size=64, vendor=False, timing=FAST)
'''


@pytest.mark.parametrize("stop", [["-x"], ["--maxfail", "1"]])
def test_a_session_stopped_by_a_failure_writes_its_rows_marked_incomplete(
        pytester, monkeypatch, stop):
    # -x wrote its file "complete": test_last's kernel, never run, would read as added
    # (not gated) in a comparison against it as the baseline
    pytester.makepyfile(test_stopped=STOPPING_HEAD + FIRST + FAILS + LAST)
    use(monkeypatch, FakeSpec())
    done = pytester.runpytest(*stop, "--cudabench-json", "now.json")
    done.assert_outcomes(passed=1, failed=1)
    saved = load_results(pytester.path / "now.json")
    assert saved.metadata["complete"] is False
    assert [row.variant for row in saved.benchmarks] == ["naive"]
    done.stdout.fnmatch_lines(["*cudabench: 1 rows written to now.json (incomplete: the "
                               "session stopped early, tests left unrun (stopping after 1 "
                               "failures))*"])
    # every test ran, the last failing: -x stopped nothing
    pytester.makepyfile(test_stopped=STOPPING_HEAD + FIRST + LAST + FAILS)
    whole = pytester.runpytest(*stop, "--cudabench-json", "all.json")
    whole.assert_outcomes(passed=2, failed=1)
    assert load_results(pytester.path / "all.json").metadata["complete"] is True
    # nor is part of a session judged against a baseline: its tests left unrun are not
    # missing kernels, they were never measured
    pytester.makepyfile(test_stopped=STOPPING_HEAD + FIRST + FAILS + LAST)
    use(monkeypatch, FakeSpec(seed=1))
    gated = pytester.runpytest(*stop, "--cudabench-compare", "all.json")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["*cudabench: the session stopped early, tests left unrun "
                                "(stopping after 1 failures): nothing compared or recorded*"])


def test_the_docs_k_selects_one_size_of_any_sweep(pytester, monkeypatch):
    # docs/python.md advised -k "size:512-", which selects nothing where sizes are the only
    # axis (those points are named size:512, nothing after)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "python.md").read_text("utf-8")
    advised = set(re.findall(r'-k "(size:512[^"]+)"', " ".join(docs.split())))
    assert advised
    pytester.makepyfile(test_sizes='''
import pytest


@pytest.mark.cudabench_sweep(size=[512, 5120])
def test_sizes(cudabench, cudabench_point):
    pass


@pytest.mark.cudabench_sweep(size=[512, 5120], TILE=[8, 16])
def test_both(cudabench, cudabench_point):
    pass
''')
    use(monkeypatch, FakeSpec())
    for expression in advised:
        listed = pytester.runpytest("-k", expression, "--collect-only", "-q")
        chosen = sorted(line.split("::")[1] for line in listed.outlines if "::" in line)
        assert chosen == ["test_both[size:512-TILE:16]", "test_both[size:512-TILE:8]",
                          "test_sizes[size:512]"], expression
