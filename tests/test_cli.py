"""The command line on a machine without a GPU: help, list, and one-line errors."""

from __future__ import annotations

import json
import contextlib
import os
import statistics
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import MATMUL_BODY, MATMUL_HEADER, invoke, refuse_engines, write_kernel

from cudabench import __version__
from cudabench.catalog import discover
from cudabench.cli import cli
from cudabench.cli.names import given_kernels_dirs
from cudabench.engines.nvcc import find_nvcc
from cudabench.errors import GpuEnvironmentError
from cudabench.ops import OPS


def assert_one_line_error(result, *fragments: str, code: int = 2) -> str:
    """Check a failed command: its exit code, one stderr line with every fragment."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cudabench: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# Whether this machine's NVIDIA driver loads: what a GPU worker process (which no fixture
# reaches) finds.
DRIVER_HERE = __import__("cudabench.engines.pycuda_engine",
                         fromlist=["driver_present"]).driver_present()


@pytest.fixture
def no_pycuda(monkeypatch):
    """Make `import pycuda` fail, as on a machine with an NVIDIA driver but without PyCUDA
    (even where it is installed, or where no driver is)."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setattr("cudabench.engines.pycuda_engine.driver_present", lambda: True)


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"cudabench, version {__version__}\n"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag):
    result = invoke(flag)
    assert result.exit_code == 0
    for command in ("matmul", "transpose", "dot", "list", "info", "--traceback"):
        assert command in result.stdout
    assert "Exit codes" in result.stdout


@pytest.mark.parametrize(
    ("command", "options"),
    [("matmul", ["--size", "--tile", "--param", "--kernels-dir", "--precision", "--hot"]),
     ("transpose", ["--inplace", "--tile", "--dtype"]),
     ("dot", ["--block", "--blocks-per-sm", "--variant", "--seed", "--json"]),
     ("list", ["--kernels-dir"]),
     ("info", ["--device"])],
)
def test_command_help(command, options):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    for option in options:
        assert option in result.stdout


@pytest.mark.parametrize("command", ["matmul", "transpose", "dot"])
def test_every_size_example_in_help_is_one_the_command_takes(no_engine, command):
    # dot's and transpose's help showed matmul's three-extent range, which they refuse
    import re

    text = " ".join(invoke(command, "--help").stdout.split())
    words = text.split("Problem size:")[1].split("[default")[0].replace(",", " ").split()
    examples = [word.strip(".;()") for word in words
                if re.fullmatch(r"\d[\d<.:x]*", word.strip(".;()"))]
    assert len(examples) >= 4, examples
    for example in examples:
        done = invoke(command, "--size", example, "--variant", "naive" if command != "dot"
                      else "atomic", "--dry-run")
        assert done.exit_code == 0, (example, done.stderr)


def test_list_shows_every_variant():
    result = invoke("list")
    assert result.exit_code == 0, result.stderr
    for op, variants in discover().items():
        assert op in result.stdout
        assert OPS[op].signature in result.stdout
        for name in variants:
            assert f" {name} " in result.stdout


def test_list_with_kernels_dir(tmp_path):
    write_kernel(tmp_path, "my_variant", MATMUL_HEADER)
    result = invoke("list", "--kernels-dir", tmp_path)
    assert result.exit_code == 0, result.stderr
    assert " my_variant " in result.stdout


USAGE_ERRORS = {
    "size 0": (["matmul", "--size", "0"], ["--size '0'", "positive integers"]),
    "size -5": (["matmul", "--size", "-5"], ["--size '-5'", "positive integers"]),
    "size 12x": (["matmul", "--size", "12x"], ["--size '12x'", "512x256x128"]),
    "size abc": (["dot", "-s", "abc"], ["--size 'abc'"]),
    "tile 12": (["matmul", "--tile", "12"], ["--tile 12", "8, 16, 32"]),
    "param TILE=64": (["matmul", "--param", "TILE=64"], ["--param TILE 64", "8, 16, 32"]),
    # (64, which some variants allow, runs them, the others SKIP rows, as a sweep's point)
    "transpose tile": (["transpose", "--tile", "256"], ["--tile 256", "TILE in 8, 16, 32"]),
    "dot block": (["dot", "--block", "48"], ["--block 48", "BLOCK in 32, 64"]),
    "dot blocks per sm": (["dot", "--blocks-per-sm", "0"], ["--blocks-per-sm 0", "1..64"]),
    "param for no variant": (["dot", "-p", "TILE=16"], ["--param TILE", "no selected dot"]),
    "unknown variant": (["matmul", "--variant", "fastest"],
                        ["--variant fastest",
                         "known: async_double_buffer, blocktile2d, fragment_double_buffer, "
                         "mma_async, mma_sync, naive, prefetch_splitk, tiled, tiled_conflict, "
                         "vectorized, warptile, wgmma_async, wgmma_tma, wgmma_ws; or all: "
                         "every one"]),
    "param without value": (["matmul", "--param", "TILE"], ["--param 'TILE'", "NAME=INTEGER"]),
    "param not integer": (["matmul", "--param", "TILE=big"], ["--param TILE 'big'", "integers"]),
    "param bad name": (["matmul", "--param", "1X=3"], ["--param '1X=3'"]),
    # measured and written, then unreadable: the results file holds 64-bit integers
    "param beyond 64 bits": (["matmul", "--param", "TILE=99999999999999999999"],
                             ["--param TILE 99999999999999999999: beyond a 64-bit integer"]),
    "tile and param": (["matmul", "--tile", "16", "--param", "TILE=16"],
                       ["--tile and --param TILE both set TILE"]),
    "inplace not square": (["transpose", "--inplace", "--size", "3x5"],
                           ["--size '3x5'", "--inplace"]),
    "dtype bfloat16": (["dot", "--dtype", "bfloat16"], ["--dtype bfloat16", "float16, float32"]),
    "precision 0": (["matmul", "--precision", "0"], ["--precision must be > 0"]),
    "precision as a percentage": (["matmul", "--precision", "0.5"],
                                  ["--precision 0.5 (±50%) is a fraction of the median (0.005 "
                                   "is ±0.5%): at most 0.25 (±25%)"]),
    # named as 0.5 alone, not as it was typed
    "precision in percent": (["matmul", "--precision", "50%"], ["--precision 0.5 (±50%)"]),
    "min samples": (["matmul", "--min-samples", "0"], ["--min-samples"]),
    "max samples": (["matmul", "--min-samples", "30", "--max-samples", "10"], ["--max-samples"]),
    "max time": (["dot", "--max-time", "0"], ["--max-time"]),
    "warmup": (["transpose", "--warmup", "-1"], ["--warmup"]),
    "missing kernels dir": (["matmul", "--kernels-dir", "/nonexistent/kernels"],
                            ["--kernels-dir /nonexistent/kernels"]),
}


@pytest.mark.parametrize(("args", "fragments"), USAGE_ERRORS.values(), ids=USAGE_ERRORS.keys())
def test_usage_error_is_one_line_naming_the_flag(no_pycuda, args, fragments):
    assert_one_line_error(invoke(*args), *fragments)


@pytest.mark.parametrize("command", [["matmul"], ["list"]])
def test_malformed_header_in_kernels_dir_names_file_and_line(tmp_path, command):
    path = write_kernel(tmp_path, "bad", ["// cudabench: conv", "// launch k: grid 1; block 1"])
    result = invoke(*command, "--kernels-dir", tmp_path)
    assert_one_line_error(result, f"{path}:1: unknown op 'conv'")


def test_long_error_stays_on_one_line(tmp_path):
    folder = tmp_path / ("long_folder_name_" * 8)
    path = write_kernel(folder, "bad", ["// cudabench: matmul", "// colour: red",
                                        "// launch k: grid 1; block 1"])
    result = invoke("list", "--kernels-dir", folder)
    assert_one_line_error(result, f"{path}:2: unknown header key 'colour'")


def test_valid_run_without_pycuda_says_how_to_install_it(no_pycuda):
    result = invoke("matmul", "--size", "64", "--tile", "16")
    # The GPU worker is a process of its own, which the fixture does not reach: it finds
    # this machine's driver, or that there is none.
    if DRIVER_HERE:
        assert_one_line_error(result, "PyCUDA is not installed",
                              "pip install 'pycuda>=2024.1' 'nvidia-ml-py>=12'")
    else:
        assert_one_line_error(result, "no NVIDIA driver on this machine", "--dry-run")


def test_info_without_pycuda_says_how_to_install_it(no_pycuda):
    assert_one_line_error(invoke("info"), "PyCUDA is not installed", "`gpu` extra")


def test_a_machine_without_a_driver_is_told_what_works_without_a_gpu(no_pycuda, monkeypatch):
    """Not to build PyCUDA: without an NVIDIA driver it would not measure anything."""
    monkeypatch.setattr("cudabench.engines.pycuda_engine.driver_present", lambda: False)
    result = invoke("matmul", "--size", "64", "--tile", "16")
    assert_one_line_error(result, "no NVIDIA driver on this machine", "--dry-run")
    assert "pip install" not in result.stderr


@pytest.mark.parametrize("args", [["info"], ["matmul", "--size", "0"]])
def test_traceback_flag_shows_the_traceback(no_pycuda, args):
    result = invoke("--traceback", *args)
    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("cudabench: error: ")


def test_internal_error_says_it_is_a_bug(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("cudabench.cli.listing.discover", broken)
    result = invoke("list")
    assert result.exit_code == 4
    assert "cudabench: internal error: RuntimeError: boom" in result.stderr
    assert "--traceback" in result.stderr and "Traceback" not in result.stderr


def test_interrupt_exits_130(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("cudabench.cli.listing.discover", interrupted)
    result = invoke("list")
    assert result.exit_code == 130
    assert result.stderr == "cudabench: interrupted\n"


def test_click_usage_errors_exit_2():
    result = invoke("matmul", "--tile", "sixteen")
    assert result.exit_code == 2
    assert "--tile" in result.stderr


# -- --dry-run: the plan on any machine -------------------------------------------------------

NVCC_MISSING = find_nvcc() is None


@pytest.fixture
def no_engine(monkeypatch):
    refuse_engines(monkeypatch)


def test_dry_run_shows_the_plan_and_compiles_every_kernel(no_engine):
    result = CliRunner().invoke(cli, ["transpose", "--dry-run", "--size", "3001",
                                      "--dtype", "float64"])
    assert result.exit_code == 0, result.output
    for text in ("shared_padded", "transpose_shared_padded <<<94x94, 32x8>>>", "memory",
                 "float64"):
        assert text in result.stdout
    assert ("ok (sm_90)" if not NVCC_MISSING else "nvcc is not on PATH") in result.stdout


def test_dry_run_says_how_the_run_would_time(no_engine, tmp_path):
    result = CliRunner().invoke(cli, ["dot", "--dry-run", "--size", "1000", "--rounds", "3",
                                      "--max-time", "0.5", "--min-samples", "30"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert ("timing: warm-up 0.05 s; 30-5000 samples a variant, until the median is known "
            "to ±0.50% or after 0.5 s; cold L2 (clean flush); 3 rounds a benchmark") in text
    suite = tmp_path / "cudabench.toml"  # entries timed differently: each named
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n\n'
                     '[[benchmark]]\nop = "dot"\nsize = "2000"\nhot = true\n')
    result = CliRunner().invoke(cli, ["run", str(suite), "--dry-run"])
    text = " ".join(result.stdout.split())
    assert "timing of dot 1000: warm-up" in text and "cold L2 (clean flush)" in text
    assert "timing of dot 2000: warm-up" in text and "hot L2 (no flush)" in text


@pytest.mark.skipif(NVCC_MISSING, reason="nvcc is not on PATH")
def test_dry_run_shows_nvcc_errors_per_variant_and_exits_2(no_engine, tmp_path):
    write_kernel(tmp_path / "matmul", "broken", MATMUL_HEADER,
                 MATMUL_BODY.replace("{}", "{ C[0] = undeclared; }"))
    result = CliRunner().invoke(cli, ["matmul", "--dry-run", "--kernels-dir", str(tmp_path),
                                      "--arch", "sm_80"])
    assert result.exit_code == 2, result.output
    assert "undeclared" in result.stdout and "ok (sm_80)" in result.stdout


def test_dry_run_of_a_suite_and_a_bad_arch(no_engine, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsizes = ["1000", "1<<20"]\n')
    result = CliRunner().invoke(cli, ["run", str(suite), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dot 1000" in result.stdout and "dot 1048576" in result.stdout
    bad = CliRunner().invoke(cli, ["run", str(suite), "--dry-run", "--arch", "volta"])
    assert bad.exit_code == 2 and "--arch 'volta'" in bad.stderr


def test_a_dry_run_notes_a_tool_a_real_run_would_miss(no_engine, monkeypatch, tmp_path):
    """--counters without ncu, --sanitize without compute-sanitizer: a real run exits 2; the
    dry run still plans, and says so."""
    monkeypatch.setenv("PATH", str(tmp_path))  # neither tool on PATH
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path))
    monkeypatch.setattr("cudabench.observers.toolkit.CUDA_HOME", tmp_path)
    monkeypatch.setattr("cudabench.observers.ncu.NSIGHT_ROOTS", ())
    result = invoke("matmul", "--variant", "naive", "--size", "64", "--counters",
                    "--sanitize", "memcheck", "--dry-run", "--arch", "sm_90")
    notes = " ".join(result.stderr.split())
    assert "a run would stop here: --counters needs Nsight Compute's ncu" in notes
    assert "a run would stop here: --sanitize needs compute-sanitizer" in notes
    plain = invoke("matmul", "--variant", "naive", "--size", "64", "--dry-run")
    assert "would stop here" not in plain.stderr


def test_a_dry_run_notes_a_machine_without_a_gpu(monkeypatch):
    class NoGpu:
        def count_devices(self) -> int:
            raise GpuEnvironmentError("no NVIDIA driver on this machine")

    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: NoGpu())
    result = invoke("dot", "--variant", "atomic", "--dry-run")
    assert result.exit_code == 0
    assert "a run would stop here: no NVIDIA driver on this machine" in result.stderr


def test_calibrate_without_a_gpu_says_so_before_its_first_run(monkeypatch, tmp_path):
    # it printed "calibrate: run 1 of 5" and made .cudabench/runs/ before the error
    class NoGpu:
        def count_devices(self) -> int:
            raise GpuEnvironmentError("no NVIDIA driver on this machine")

    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: NoGpu())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text('[[benchmark]]\nop = "dot"\nsize = "4096"\n',
                                             encoding="utf-8")
    result = invoke("calibrate")
    assert result.exit_code == 2
    assert result.stderr.strip() == "cudabench: error: no NVIDIA driver on this machine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cudabench.toml"]


def test_a_dry_run_says_it_writes_no_file_and_checks_the_placement(no_engine, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("dot", "--variant", "atomic", "--dry-run", "--json", str(out),
                    "--csv", str(tmp_path / "r.csv"))
    assert result.exit_code == 0 and not out.exists()
    assert "note: --dry-run measures nothing, so --json, --csv wrote nothing" in result.stderr
    bad = invoke("dot", "--dry-run", "--devices", "abc")
    assert bad.exit_code == 2 and "--devices 'abc': expected `all`" in bad.stderr
    bad = invoke("dot", "--dry-run", "--cluster", "foo")
    assert bad.exit_code == 2 and "--cluster 'foo': expected `ray`" in bad.stderr


def test_a_dry_run_notes_cuda_launch_blocking(no_engine, monkeypatch):
    # a real run refuses it (exit 2): the dry run says so, as for the other settings
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    result = invoke("dot", "--variant", "atomic", "--dry-run")
    notes = " ".join(result.stderr.split())
    assert result.exit_code == 0
    assert "a run would stop here: CUDA_LAUNCH_BLOCKING=1: cudabench queues" in notes
    for off in ("0", "00", " 0 "):
        monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", off)
        assert "would stop here" not in invoke("dot", "--variant", "atomic",
                                               "--dry-run").stderr, off
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "0")
    assert "would stop here" not in invoke("dot", "--variant", "atomic", "--dry-run").stderr


def test_a_dry_run_notes_a_size_beyond_this_machines_host_memory(no_engine, monkeypatch):
    monkeypatch.setattr("cudabench.measure.memory.host_available_bytes", lambda: 2**30)
    result = invoke("matmul", "--variant", "naive", "--size", "20000", "--dry-run")
    notes = " ".join(result.stderr.split())
    assert "a run would stop here: --size 20000x20000x20000: matmul float32 needs" in notes
    assert "in host memory but 1 GiB is free" in notes
    small = invoke("matmul", "--variant", "naive", "--size", "64", "--dry-run")
    assert "would stop here" not in small.stderr


@pytest.mark.parametrize("args, says", [
    (["softmax", "--size", "64"],  # the example op, from the repository's root
     "No such command 'softmax'. An op of your own needs its folder: cudabench softmax "
     "--kernels-dir examples/softmax"),
    (["matmull"], "No such command 'matmull'. Did you mean 'matmul'?"),
    (["histroy"], "No such command 'histroy'. Did you mean 'history'?"),
    (["layernorm"], "cudabench layernorm --kernels-dir FOLDER (FOLDER holding layernorm.py"),
    (["softmx", "--kernels-dir", "examples/softmax"],
     "None of --kernels-dir examples/softmax defines an op 'softmx'"),
    (["zzqq**"], "No such command 'zzqq**'."),  # no op name: no hint (a glob pattern)
    (["results.json"], "No such command 'results.json'.")])
def test_an_unknown_command_says_what_was_meant(monkeypatch, args, says):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).parents[1])
    assert_one_line_error(CliRunner().invoke(cli, args), says)


@pytest.mark.parametrize("setting", ['full_check = true', 'seed = 7', 'sanitize = "racecheck"'])
def test_a_suite_asking_for_one_benchmark_twice_another_way_is_refused(use_fake, tmp_path,
                                                                       setting):
    # the second entry was dropped unsaid: its check, seed or sanitizer never ran
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsize = "64"\nvariants = ["tiled"]\n\n'
                     f'[[benchmark]]\nop = "matmul"\nsize = "64"\nvariants = ["tiled"]\n'
                     f'{setting}\n')
    result = CliRunner().invoke(cli, ["run", str(suite), "--no-vendor"])
    assert_one_line_error(result, "matmul/tiled TILE=16 at 64x64x64 float32 is asked for "
                          "twice, with another")


def test_a_hot_suite_entry_with_a_flush_says_so_once_in_the_suite_s_words(use_fake, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\nhot = true\n'
                     'l2_flush = "memset"\n')
    error = assert_one_line_error(CliRunner().invoke(cli, ["run", str(suite)]),
                                  'hot = true with l2_flush = "memset"')
    assert error.count("benchmark[0]") == 1


def test_calibrate_tells_a_hot_row_from_a_cold_one(use_fake, tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.02\nwarmup = 0\n\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = ["atomic"]\n\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = ["atomic"]\n'
                     'hot = true\n')
    done = CliRunner().invoke(cli, ["--wide", "calibrate", str(suite), "--runs", "5",
                                    "--db", str(tmp_path / "h.db")])
    assert done.exit_code == 0, done.output
    names = [line.split("│")[1].strip() for line in done.stdout.splitlines()
             if line.startswith("│ dot/atomic")]
    assert sorted(names) == ["dot/atomic", "dot/atomic (hot)"], done.stdout


@pytest.mark.parametrize(("args", "said"), [
    (("--tile", "8", "--tile", "32"), "--tile 8 and --tile 32: --tile takes one value; give it "
                                      "once (a comma list sweeps: --tile A,B)"),
    (("--size", "64", "--size=32"), "--size 64 and --size 32: --size takes one value"),
    (("--dtype", "float32", "--dtype", "int32"), "--dtype float32 and --dtype int32:"),
    (("--size", "64", "-s128"), "--size 64 and -s 128: --size takes one value"),  # attached
])
def test_an_option_of_one_value_given_twice_is_refused(no_gpu_work, args, said):
    # Click keeps the last: `--tile 8 --tile 32` measured TILE=32 alone, where -p refuses
    # the same thing given twice
    result = invoke("matmul", "--variant", "naive", *args)
    assert result.exit_code == 2 and said in result.stderr, result.output
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("args", "said"), [
    # ab measured 96 alone
    (("ab", "A", "B", "--op", "matmul", "-s", "64", "-s", "96"),
     "-s 64 and -s 96: -s takes one value; give it once"),
    (("dot", "--devices", "0", "--devices", "1", "--dry-run"),
     "--devices 0 and --devices 1: --devices takes one value; give it once (several in one: "
     "--devices all|I,J,...)"),
    (("history", "show", "--variant", "naive", "--variant", "tiled"),
     "--variant naive and --variant tiled: --variant takes one value"),
])
def test_an_option_a_user_may_repeat_for_several_values_is_refused(no_gpu_work, args, said):
    result = invoke(*args)
    assert result.exit_code == 2 and said in result.stderr, result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_options_that_repeat_by_design_still_do(no_gpu_work):
    result = invoke("matmul", "--size", "32", "--variant", "naive", "--variant", "tiled",
                    "--hot", "--hot", "--dry-run")
    assert result.exit_code == 0, result.output
    # a setting appended to shared flags wins, as on any command line ($COMMON --warmup 1)
    result = invoke("matmul", "--size", "32", "--variant", "naive", "--warmup", "0",
                    "--warmup", "1", "--dry-run")
    assert result.exit_code == 0, result.output


def test_a_suite_s_warnings_name_its_keys_not_the_flags_it_has_not(use_fake, tmp_path):
    # `run` said "raise --max-time" and "a larger --size": flags a suite has not
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nmax_time = 0.01\nwarmup = 0\n\n'
                     '[[benchmark]]\nop = "dot"\nsize = "100"\nvariants = ["atomic"]\n')
    result = CliRunner().invoke(cli, ["run", str(suite), "--no-vendor", "--no-batch"])
    assert result.exit_code == 0, result.output
    assert "a larger size measures the kernel" in result.stderr, result.stderr
    assert "--size" not in result.stderr and "--max-time" not in result.stderr
    # a flag the command itself has stays one
    direct = CliRunner().invoke(cli, ["dot", "--size", "100", "--variant", "atomic",
                                      "--no-vendor", "--no-batch", "--max-time", "0.01"])
    assert "a larger --size measures" in direct.stderr, direct.stderr


def test_the_launch_overhead_warning_points_at_the_rows_batch_time(use_fake, tmp_path):
    # the warning said "a larger --size measures the kernel" beside a batch column that
    # had measured the kernel at this size already
    out = tmp_path / "r.json"
    result = invoke("dot", "--size", "100", "--variant", "atomic", "--no-vendor",
                    "--max-time", "0.01", "--json", out)
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(out.read_text())["benchmarks"] if r["variant"] == "atomic"]
    batch = statistics.median(row["batch_samples_s"])
    (warning,) = [w for w in row["warnings"] if "launch overhead" in w]
    assert f"the batch (warm) column, {batch * 1e6:.1f} us a launch, times the kernel" in warning
    assert "a larger --size measures it cold" in result.stderr


def test_a_short_median_its_batch_matches_gets_no_launch_overhead_warning(use_fake, tmp_path):
    # an H200's 18.5 us median beside a batch of 19.2 us a launch was "close to launch
    # overhead": a batch as slow as the median shows no launch cost in it
    use_fake(batch_share=1.04)
    out = tmp_path / "r.json"
    result = invoke("dot", "--size", "100", "--variant", "atomic", "--no-vendor",
                    "--max-time", "0.01", "--json", out)
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(out.read_text())["benchmarks"] if r["variant"] == "atomic"]
    assert statistics.median(row["samples_s"]) < 20e-6 and row["batch_samples_s"]
    assert not [w for w in row["warnings"] if "launch overhead" in w], row["warnings"]
    assert "launch overhead" not in result.stderr, result.stderr


def test_an_error_quoting_a_terminal_control_writes_it_out(tmp_path, monkeypatch):
    # a suite's op = "\u001b[2Jmatmul": the error's label held the raw ESC, which cleared
    # the reader's terminal (the quoted copy beside it was escaped)
    (tmp_path / "cudabench.toml").write_text(
        '[[benchmark]]\nop = "\\u001b[2Jmatmul"\nsize = "64"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = invoke("run", "--dry-run")
    assert done.exit_code == 2, done.output
    assert "\x1b" not in done.stderr and "benchmark[0] (\\x1b[2Jmatmul" in done.stderr


def test_a_suite_of_two_types_says_only_what_it_left_out_and_once(use_fake, tmp_path,
                                                                   monkeypatch):
    # the int32 points said "left out mma_sync...: written for float16 only" (once per
    # point) beside the float16 rows that ran them
    (tmp_path / "cudabench.toml").write_text(
        '[timing]\nmax_time = 0.01\nwarmup = 0\n\n[[benchmark]]\nop = "matmul"\n'
        'size = "64"\ndtypes = ["float16", "int32"]\nvariants = ["all"]\n'
        'params = {TILE = [8, 16]}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for args in (("--dry-run",), ("--no-vendor",)):
        done = invoke("run", *args)
        left = [line for line in done.stderr.splitlines() if "left out" in line]
        assert len(left) == 1 and "fragment_double_buffer" in left[0], done.stderr
        assert "mma_sync" not in left[0]


@pytest.mark.parametrize("declared, says", [
    ("softmx", "ops/softmax.py does not define the op 'softmax': the ops of ops are softmx "
     "(an op file's name"),
    # refused wherever the folder's ops load, as every command would refuse it
    ("list", "ops/softmax.py: op 'list' takes the name of cudabench's `list` command")])
def test_an_op_file_that_names_another_op_is_said_so(tmp_path, monkeypatch, declared, says):
    # "None of --kernels-dir ops defines an op 'softmax' (softmax.py beside a softmax/
    # folder of kernels)": the layout the user had; the file named another op
    import shutil

    folder = tmp_path / "ops"
    example = Path(__file__).parents[1] / "examples" / "softmax"
    shutil.copytree(example / "softmax", folder / "softmax")
    (folder / "softmax.py").write_text(
        (example / "softmax.py").read_text(encoding="utf-8").replace(
            'name = "softmax"', f'name = "{declared}"'), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(CliRunner().invoke(cli, ["softmax", "--kernels-dir", "ops"]), says)


def test_columns_0_is_no_width_and_errors_are_still_printed():
    # COLUMNS=0 (some shells set it): Rich took 0 as the width and printed nothing, the
    # error of a bad flag included
    import os
    import subprocess

    env = {**os.environ, "COLUMNS": "0"}
    done = subprocess.run([sys.executable, "-m", "cudabench", "matmul", "--bogus"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--bogus" in done.stderr, done.stderr
    listed = subprocess.run([sys.executable, "-m", "cudabench", "list"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "matmul" in listed.stdout, listed.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_an_output_that_cannot_be_written_is_an_environment_error(tmp_path):
    # stdout on a full disk: "internal error: OSError", exit 4; an ASCII stdout: exit 4
    # after the run; a failing stderr: exit 1, the code of a regression
    import os
    import subprocess

    data = Path(__file__).parent / "data" / "compare"
    compare = [sys.executable, "-m", "cudabench", "compare", str(data / "baseline.json"),
               str(data / "slower20.json")]
    with open("/dev/full", "w") as full:
        done = subprocess.run(compare, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert done.returncode == 2, done.stderr
    assert "cannot write to standard output: No space left on device" in done.stderr
    # an ASCII stdout: the characters it lacks written as \xNN, the command's own code
    ascii_out = subprocess.run(compare[:3] + ["report", str(data / "baseline.json")],
                               env={**os.environ, "PYTHONIOENCODING": "ascii"},
                               capture_output=True, text=True, timeout=120)
    assert ascii_out.returncode == 0 and "matmul" in ascii_out.stdout, ascii_out.stderr
    with open("/dev/full", "w") as full:
        failing = subprocess.run(compare[:3] + ["compare", "--bogus"], stderr=full,
                                 timeout=120)
    assert failing.returncode == 2
    # stdout closed (`>&-`): the tables were dropped without a word, exit 1 (the verdict)
    closed = subprocess.run(" ".join(compare) + " >&-", shell=True, capture_output=False,
                            stderr=subprocess.PIPE, text=True, timeout=120)
    assert closed.returncode == 2, closed.stderr
    assert "cannot write to standard output: it is closed" in closed.stderr
    # stderr closed (`2>&-`): its notes dropped, the run's own code (1: the verdict)
    quiet = subprocess.run(" ".join(compare) + " 2>&-", shell=True, stdout=subprocess.PIPE,
                           text=True, timeout=120)
    assert quiet.returncode == 1 and "slower" in quiet.stdout, quiet.stdout
    fake = f"{sys.executable} {Path(__file__).parent / 'fake_cli.py'}"
    warned = subprocess.run(f"{fake} dot --size 1000 --variant atomic --warmup 0 "
                            "--max-time 0.02 2>&-", shell=True, stdout=subprocess.PIPE,
                            text=True, timeout=120, cwd=tmp_path)  # a warning for stderr
    assert warned.returncode == 0 and "atomic" in warned.stdout, warned.stdout


def test_file_names_that_are_no_utf8_are_taken(tmp_path):
    # history import, compare --markdown, --record of `bad\xff.json`: internal error, exit 4
    # (UnicodeEncodeError), after the run had been measured
    import os
    import subprocess

    data = Path(__file__).parent / "data" / "compare"
    odd = os.fsdecode(b"bad\xff.json")
    (tmp_path / odd).write_bytes((data / "baseline.json").read_bytes())
    fake = [sys.executable, str(Path(__file__).parent / "fake_cli.py")]

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*fake, *map(str, args)], cwd=tmp_path, capture_output=True,
                              text=True, errors="backslashreplace", timeout=300)

    done = run("history", "import", odd, "--db", "h.db")
    assert done.returncode == 0, done.stderr
    done = run("compare", odd, data / "slower20.json", "--markdown", "c.md")
    assert done.returncode == 1, done.stderr
    assert "bad\\udcff.json" in (tmp_path / "c.md").read_text(encoding="utf-8")
    done = run("matmul", "--size", "64", "--variant", "naive", "--max-time", "0.01", "--json",
               os.fsdecode(b"run\xff.json"), "--record", "--db", "h.db")
    assert done.returncode == 0 and "recorded as run 2" in done.stdout, done.stderr


def test_a_tilde_after_equals_is_the_home_folder(use_fake, tmp_path, monkeypatch):
    # no shell expands `~` after `=`: `--json=~/r.json` wrote into a folder named `~`
    home, work = tmp_path / "home", tmp_path / "work"
    write_kernel(home / "kk" / "matmul", "mine", MATMUL_HEADER)
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    fast = ["--max-time", "0.01", "--warmup", "0", "--no-vendor", "--no-batch"]
    result = invoke("dot", "--size", "1000", "--variant", "atomic", *fast, "--json=~/r.json",
                    "--markdown=~/r.md", "--csv=~/r.csv", "--kernels-dir=~/kk")
    assert result.exit_code == 0, result.stderr
    assert all((home / name).is_file() for name in ("r.json", "r.md", "r.csv"))
    assert given_kernels_dirs(["matmul", "--kernels-dir=~/kk"]) == [home / "kk"]  # op files
    suite = work / "cudabench.toml"
    suite.write_text('kernels_dirs = ["~/kk"]\n[timing]\nmax_time = 0.01\nwarmup = 0\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = ["atomic"]\n')
    result = invoke("run", suite, "--no-vendor", "--no-batch", "--json=~/s.json")
    assert result.exit_code == 0, result.stderr
    assert json.loads((home / "s.json").read_text())["benchmarks"]
    assert not (work / "~").exists()


def test_cuda_counts_gpus_as_a_run_s_devices_do(monkeypatch):
    # --devices and the memory check count GPUs in nvidia-smi's order; CUDA, where
    # CUDA_DEVICE_ORDER is unset, fastest first: `--device 1` and `info --device 1` opened
    # another card on a host of two models. Set before CUDA starts, whether it can or not.
    from cudabench.engines.pycuda_engine import load_pycuda
    from cudabench.errors import GpuEnvironmentError

    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    with contextlib.suppress(GpuEnvironmentError):  # no PyCUDA or no GPU here
        load_pycuda()
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [(), ("--version",), ("--help",), ("dot", "--help"),
                                  ("workers",), ("workers", "--stop")])
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_help_version_and_echo_survive_a_closed_pipe_and_a_full_disk(tmp_path, args,
                                                                     encoding):
    # click.echo and Click's own help and version: a reader gone (`| true`) was "internal
    # error: BrokenPipeError" (exit 4) or a traceback (exit 1); a full disk the same. On an
    # ASCII output Click writes to its binary buffer: that went around the guard (exit 4 or
    # 1; a full disk exit 0, the output lost without a word)
    import subprocess

    fake = [sys.executable, str(Path(__file__).parent / "fake_cli.py"), *args]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path),  # no kept workers there
           "PYTHONIOENCODING": encoding}
    done = subprocess.Popen(fake, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert done.stdout is not None and done.stderr is not None
    done.stdout.close()  # the reader gone before a word was written
    stderr = done.stderr.read().decode()
    assert done.wait(timeout=120) == 0 and stderr == "", stderr  # no "Exception ignored"
    with open("/dev/full", "w") as full:
        failed = subprocess.run(fake, stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                                timeout=120)
    assert failed.returncode == 2, failed.stderr
    assert failed.stderr == ("cudabench: error: cannot write to standard output: No space "
                             "left on device\n")
