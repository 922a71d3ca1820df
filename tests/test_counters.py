"""--counters: ncu's command line, its raw CSV page and its failures, with a fake ncu.

The canned outputs in tests/data/ncu follow ncu's raw page (header of metric names, a units
row, a row per kernel) and its messages; ERR_NVGPUCTRPERM, "Failed to find metric regex:..."
and "No kernels were profiled" are ncu's own wording, the rest is representative.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

from cudabench.errors import UsageError
from cudabench.observers import ncu as counters
from cudabench.planning.plan import Insight, Request, make_plan
from cudabench.observers.sanitizer import MINIMAL

DATA = Path(__file__).parent / "data" / "ncu"
ENTRIES = ("dot_partials", "dot_finish")
DRAM = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
LD = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
ST = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
REGS = "launch__registers_per_thread"
METRICS = tuple(counters.DEFAULT_METRICS.values())


def canned(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture
def dot_plan():
    """A plan of dot's shared_tree variant: two launches a run."""
    plan = make_plan(Request("dot", size="1000", variants=("shared_tree",),
                             insight=Insight(counters=METRICS, energy_s=1.0)))
    assert [launch.entry for launch in plan.variants[0].variant.launches] == list(ENTRIES)
    return plan


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """Put a fake ncu first on PATH: it logs its argv and the plan file, prints a canned
    output and exits with the code given; returns a function to configure it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "ncu"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, shutil, sys, time\n"
        "log = os.environ['FAKE_NCU_LOG']\n"
        "json.dump(sys.argv[1:], open(log, 'w'))\n"
        "shutil.copy(sys.argv[-1], log + '.plan')\n"
        "time.sleep(float(os.environ.get('FAKE_NCU_SLEEP', '0')))\n"
        "sys.stdout.write(open(os.environ['FAKE_NCU_OUTPUT']).read())\n"
        "sys.exit(int(os.environ.get('FAKE_NCU_EXIT', '0')))\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    log = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))

    def use(output: str, exit_code: int = 0, sleep_s: float = 0) -> Path:
        monkeypatch.setenv("FAKE_NCU_OUTPUT", str(DATA / output))
        monkeypatch.setenv("FAKE_NCU_EXIT", str(exit_code))
        monkeypatch.setenv("FAKE_NCU_SLEEP", str(sleep_s))
        return log

    return use


# --- the metrics asked for ---------------------------------------------------------------

def test_counters_alone_is_the_default_set_with_the_duration():
    assert counters.parse_metrics(None) == METRICS == counters.parse_metrics(" ")
    assert METRICS[-1] == counters.DURATION and DRAM in METRICS and REGS in METRICS


def test_a_list_of_metrics_is_kept_in_order_without_repeats():
    assert counters.parse_metrics("sm__inst_executed.sum, dram__bytes.sum,sm__inst_executed.sum"
                                  ) == ("sm__inst_executed.sum", "dram__bytes.sum")


@pytest.mark.parametrize("text", ["sm__inst executed.sum", "a,,b", "dram__bytes.sum;rm", "a.",
                                  "regex:sm__.*"])
def test_a_bad_metric_name_is_a_usage_error_naming_the_flag(text):
    with pytest.raises(UsageError, match="^--counters .*not an ncu metric name"):
        counters.parse_metrics(text)


def test_a_file_given_to_counters_is_refused_not_taken_for_a_metric(tmp_path, monkeypatch):
    # `cudabench run --counters other.toml`: the suite went to ncu as a metric, and the
    # folder's own cudabench.toml ran
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").write_text("")
    for text in ("other.toml", "suite", "dram__bytes.sum,results.json"):
        with pytest.raises(UsageError, match="is a file, not an ncu metric; give the file "
                                             "before the option"):
            counters.parse_metrics(text)


def test_known_metrics_have_short_column_titles():
    assert [counters.short_label(m) for m in METRICS] == list(counters.DEFAULT_METRICS)
    assert counters.short_label(LD) == "bank confl. ld"
    assert counters.short_label("dram__throughput.avg.pct_of_peak_sustained_elapsed") == "DRAM %"
    assert counters.short_label("sm__inst_executed.sum") == "sm__inst_executed.sum"


# --- finding ncu ---------------------------------------------------------------------------

@pytest.fixture
def no_ncu(tmp_path, monkeypatch):
    """Nothing on PATH, CUDA_ROOT or the default places."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CUDA_ROOT", raising=False)
    monkeypatch.setattr("cudabench.observers.toolkit.CUDA_HOME", tmp_path / "no-cuda")
    monkeypatch.setattr(counters, "NSIGHT_ROOTS", (tmp_path / "nsight-compute",))
    return tmp_path


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_a_missing_ncu_is_a_usage_error_saying_how_to_get_it(no_ncu):
    with pytest.raises(UsageError, match="--counters needs Nsight Compute's ncu") as error:
        counters.find_ncu()
    assert "CUDA toolkit" in str(error.value) and "drop --counters" in str(error.value)


def test_ncu_is_found_on_path_then_in_cuda_root_then_the_newest_nsight(no_ncu, monkeypatch):
    newest = executable(no_ncu / "nsight-compute" / "2025.10.0" / "ncu")
    executable(no_ncu / "nsight-compute" / "2025.2.1" / "ncu")
    assert counters.find_ncu() == str(newest)
    monkeypatch.setenv("CUDA_ROOT", str(no_ncu / "cuda"))
    in_root = executable(no_ncu / "cuda" / "bin" / "ncu")
    assert counters.find_ncu() == str(in_root)
    on_path = executable(no_ncu / "empty" / "ncu")
    assert counters.find_ncu() == str(on_path)


def test_profile_without_ncu_fails_before_any_gpu_work(no_ncu, dot_plan):
    with pytest.raises(UsageError, match="--counters needs"):
        counters.profile(dot_plan, dot_plan.variants[0], 0, METRICS)


# --- the command line ------------------------------------------------------------------------

@pytest.mark.parametrize("hot", [False, True])
def test_ncu_never_changes_clocks_and_profiles_only_the_checked_run(hot):
    argv = counters.command("ncu", ("a.sum", "b.pct"), 3, Path("/tmp/p.pickle"), hot)
    pairs = {flag: argv[argv.index(flag) + 1] for flag in ("--launch-skip", "--launch-count",
                                                          "--cache-control", "--metrics",
                                                          "--page")}
    assert argv[1:3] == ["--clock-control", "none"]
    assert pairs["--launch-skip"] == "6" and pairs["--launch-count"] == "3"
    assert pairs["--cache-control"] == ("none" if hot else "all")
    assert pairs["--metrics"] == "a.sum,b.pct" and pairs["--page"] == "raw"
    assert argv[-4:] == [sys.executable, "-m", "cudabench.runner.child", "/tmp/p.pickle"]


def test_profile_runs_the_sanitize_child_under_ncu(fake_ncu, dot_plan):
    log = fake_ncu("two_launches.txt")
    report = counters.profile(dot_plan, dot_plan.variants[0], 3, METRICS[:2])
    argv = json.loads(log.read_text())
    assert argv[:2] == ["--clock-control", "none"]
    assert argv[argv.index("--launch-skip") + 1] == "4"  # two warm-up runs of two launches
    assert argv[argv.index("--launch-count") + 1] == "2"
    assert argv[argv.index("--metrics") + 1] == ",".join((*METRICS[:2], counters.DURATION))
    assert argv[argv.index("--target-processes") + 1] == "all"
    assert argv[-4:-1] == [sys.executable, "-m", "cudabench.runner.child"]
    child, device_index = pickle.loads(Path(str(log) + ".plan").read_bytes())
    assert device_index == 3 and child.timing == MINIMAL and child.sanitize is None
    assert child.insight.counters == () and child.insight.energy_s == 0  # no ncu under ncu
    assert [v.variant.name for v in child.variants] == ["shared_tree"]
    assert report.ran and report.kernels == ENTRIES
    assert report.values == {LD: 1024.0, ST: 8.0, counters.DURATION: 16384.0}
    assert report.duration_s == pytest.approx(16.384e-6)


def test_profile_gives_up_after_its_timeout(fake_ncu, dot_plan, monkeypatch):
    fake_ncu("two_launches.txt", sleep_s=30)
    monkeypatch.setattr(counters, "TIMEOUT_S", 1)
    report = counters.profile(dot_plan, dot_plan.variants[0], 0, METRICS)
    assert not report.ran and report.reason.startswith("ncu did not finish in 1 s")


def test_profile_without_counter_access_goes_on_without_counters(fake_ncu, dot_plan):
    fake_ncu("permission.txt", exit_code=1)
    report = counters.profile(dot_plan, dot_plan.variants[0], 0, METRICS)
    assert not report.ran and "ERR_NVGPUCTRPERM" in report.reason


# --- reading the output ---------------------------------------------------------------------

def test_the_raw_page_is_read_per_kernel_and_combined():
    report = counters.parse(canned("two_launches.txt"), 0, METRICS, ENTRIES)
    assert report.ran and report.reason == "" and report.kernels == ENTRIES
    first, second = report.per_kernel
    assert first[counters.DURATION] == 12288 and first[LD] == 1024  # thousands separators
    assert LD not in second  # n/a
    assert report.values[counters.DURATION] == 16384 and report.duration_s == 16384e-9
    assert report.values[LD] == 1024 and report.values[ST] == 8  # sums
    assert report.values[REGS] == 40  # the most registers
    assert report.values[DRAM] == pytest.approx((81.52 * 12288 + 0.10 * 4096) / 16384)
    assert report.units[DRAM] == "%" and report.units[counters.DURATION] == "nsecond"


def test_scaled_times_are_read_in_nanoseconds():
    report = counters.parse(canned("scaled_units.txt"), 0, METRICS, ENTRIES)
    assert report.per_kernel[0][counters.DURATION] == pytest.approx(12290)
    assert report.duration_s == pytest.approx(16.39e-6)
    assert report.units[counters.DURATION] == "nsecond"


def test_no_permission_for_the_counters_names_the_fix():
    report = counters.parse(canned("permission.txt"), 1, METRICS, ENTRIES)
    assert not report.ran and report.values == {}
    assert "run as root" in report.reason
    assert "NVreg_RestrictProfilingToAdminUsers=0" in report.reason
    assert "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in report.reason


@pytest.mark.parametrize(("output", "asked", "named"), [
    ("unknown_metric_regex.txt", ("flop_count_sp",), "flop_count_sp"),
    ("unknown_metric.txt", ("sm__warps_activ.avg.pct_of_peak_sustained_active",),
     "sm__warps_activ.avg.pct_of_peak_sustained_active"),
])
def test_a_metric_ncu_lacks_is_a_usage_error_naming_it(output, asked, named):
    with pytest.raises(UsageError, match=f"^--counters: ncu has no metric {named} "):
        counters.parse(canned(output), 1, (*asked, counters.DURATION), ENTRIES)


@pytest.mark.parametrize(("output", "why"), [
    ("cannot_profile.txt", "An error occurred while trying to profile."),
    ("failed_to_initialize.txt", "Failed to initialize the profiler on device 0."),
])
def test_a_machine_where_ncu_cannot_profile_goes_on_without_counters(output, why):
    report = counters.parse(canned(output), 1, METRICS, ENTRIES)
    assert not report.ran
    assert report.reason == (f"ncu could not profile here (exit 1): {why}; the run goes on "
                             "without counters")


def test_a_run_cut_short_gives_no_counters_and_says_why():
    report = counters.parse(canned("one_of_two.txt"), 1, METRICS, ENTRIES)
    assert not report.ran and report.reason.startswith(
        "ncu profiled 1 of the checked run's 2 launches (exit 1): cudabench.measure.engine."
        "KernelFault: an illegal memory access")


def test_kernels_other_than_the_checked_runs_are_refused():
    report = counters.parse(canned("wrong_kernels.txt"), 0, METRICS, ENTRIES)
    assert not report.ran and "not the checked run's dot_partials, dot_finish" in report.reason


def test_combined_values_follow_the_metric_kind():
    kernels = [{counters.DURATION: 3.0, "x.pct": 10.0, "y.max": 1.0, "z.min": 5.0},
               {counters.DURATION: 1.0, "x.pct": 50.0, "y.max": 4.0, "z.min": 2.0}]
    assert counters.combine("x.pct", kernels) == 20.0  # weighted by duration
    assert counters.combine("y.max", kernels) == 4.0
    assert counters.combine("z.min", kernels) == 2.0
    assert counters.combine("w.sum", kernels) is None
    assert counters.combine("x.pct", [{"x.pct": 10.0}, {"x.pct": 50.0}]) == 30.0


# --- ncu's times against the events' --------------------------------------------------------

def test_a_row_whose_times_disagree_is_flagged():
    pairs = {"a": (10e-6, 9.8e-6), "b": (20e-6, 19.5e-6), "c": (5e-6, 4.9e-6),
             "d": (10e-6, 5e-6)}
    flags = counters.duration_outliers(pairs)
    assert list(flags) == ["d"]
    assert "disagree" in flags["d"] and "work the events did not see" in flags["d"]


def test_times_within_the_tolerance_or_too_few_usable_rows_are_not_flagged():
    assert counters.duration_outliers({"a": (10e-6, 9e-6), "b": (10e-6, 11e-6),
                                       "c": (10e-6, 10e-6)}) == {}
    assert counters.duration_outliers({"a": (10e-6, 10e-6), "b": (10e-6, 2e-6)}) == {}
    unusable_c = {"a": (10e-6, 10e-6), "b": (10e-6, 10e-6), "c": (0.0, 5e-6),
                  "d": (10e-6, 2e-6)}
    assert list(counters.duration_outliers(unusable_c)) == ["d"]  # c is left out, not judged


def test_with_three_rows_one_stray_row_is_flagged_alone():
    pairs = {"a": (10e-6, 10e-6), "b": (10e-6, 10.5e-6), "c": (10e-6, 2e-6)}
    assert list(counters.duration_outliers(pairs)) == ["c"]
    assert "0.20x, against 1.00x" in counters.duration_outliers(pairs)["c"]
    unusable = {"a": (10e-6, 10e-6), "b": (float("nan"), 10e-6), "c": (0.0, 2e-6)}
    assert counters.duration_outliers(unusable) == {}  # one usable row: nothing to judge


def test_a_sweep_s_rows_are_each_compared_with_their_own_ncu_time():
    # keyed by variant alone, a sweep's configurations overwrote each other: unflagged
    from cudabench.render.insight import footer_lines
    from cudabench.results.model import BenchmarkResult

    def row(block: int, ncu_over_event: float) -> BenchmarkResult:
        return BenchmarkResult(op="dot", variant="shared_tree", params={"BLOCK": block},
                               shape=(1 << 20,), dims=("N",), dtype="float32", hot=False,
                               samples_s=(40e-6,) * 5,
                               counters={counters.DURATION: 40e3 * ncu_over_event})

    lines = footer_lines([row(128, 3.0), row(256, 1.0), row(512, 1.01), row(1024, 0.99)])
    assert any(line.startswith("shared_tree BLOCK=128: ") and "disagree" in line
               for line in lines), lines


def test_a_row_s_own_counters_failure_names_the_row_a_shared_one_names_none():
    # "counters: ncu timed out" under a table of five rows did not say whose
    from cudabench.render.insight import footer_lines
    from cudabench.results.model import BenchmarkResult

    def row(variant: str, note: str | None = None) -> BenchmarkResult:
        return BenchmarkResult(op="dot", variant=variant, params={}, shape=(1 << 20,),
                               dims=("N",), dtype="float32", hot=False,
                               samples_s=(40e-6,) * 5, counters_note=note,
                               counters={} if note else {counters.DURATION: 40e3})

    lines = footer_lines([row("naive"), row("shared_tree", "ncu gave up after 60 s"),
                          row("warp_shuffle")])
    assert "counters of shared_tree: ncu gave up after 60 s" in lines, lines
    lines = footer_lines([row(name, "ncu is not permitted") for name in ("naive", "tree")])
    assert "counters: ncu is not permitted" in lines, lines


def test_compute_sanitizer_is_looked_for_where_ncu_is_and_the_error_says_where(no_ncu,
                                                                             monkeypatch):
    # it looked in $CUDA_ROOT/bin or /usr/local/cuda/bin (not both), and said "on PATH"
    from cudabench.observers import sanitizer

    with pytest.raises(UsageError) as error:
        sanitizer.find_sanitizer()
    assert "on PATH, in $CUDA_ROOT/bin" in str(error.value)
    with pytest.raises(UsageError) as error:
        counters.find_ncu()
    assert "nsight-compute/*/" in str(error.value)
    monkeypatch.setenv("CUDA_ROOT", str(no_ncu / "elsewhere"))
    default = executable(no_ncu / "no-cuda" / "bin" / "compute-sanitizer")
    assert sanitizer.find_sanitizer() == str(default)
