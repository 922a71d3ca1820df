"""`cudabench compare`: verdicts on committed sample files, statistics, markdown and Rich output.

The sample files in tests/data/compare/ are schema-1 results files (written by cudabench 0.1's
make_samples.py, kept as they were): loading them also tests the migration to schema 2.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from cudabench.analysis.compare import compare
from cudabench.analysis.verdicts import REGRESSION, Comparison, Verdict, parse_threshold
from cudabench.errors import ExitCode, ResultsFileError, UsageError
from cudabench.render.comparison import COLUMNS, summary_text
from cudabench.render.markdown import to_markdown
from cudabench.render.terminal import render_comparison
from cudabench.results import (
    BenchmarkResult,
    DeviceInfo,
    Kind,
    ResultsFile,
    Verification,
    load_results,
)
from cudabench.common.units import format_seconds

DATA = Path(__file__).parent / "data" / "compare"


def load(name: str) -> ResultsFile:
    """Load a committed sample file."""
    return load_results(DATA / name)


def against_baseline(name: str, **options) -> Comparison:
    """Compare a sample file with baseline.json."""
    return compare(load("baseline.json"), load(name), **options)


def verdicts(comparison: Comparison) -> dict[tuple[str, str], str]:
    """Map (op, variant) to verdict."""
    return {(row.op, row.variant): row.verdict for row in comparison.rows}


def row(comparison: Comparison, op: str, variant: str):
    """Return the row of op/variant."""
    return next(r for r in comparison.rows if (r.op, r.variant) == (op, variant))


def bench(samples, variant: str = "tiled", *, op: str = "matmul", params=None,
          hot: bool = False, passed: bool = True, error: str | None = None,
          kind: Kind = Kind.VARIANT) -> BenchmarkResult:
    """Build a benchmark in memory."""
    verification = None
    if kind is Kind.VARIANT and error is None:  # a kernel that could not run was not verified
        verification = Verification(passed, 0.0 if passed else 0.5, 0.0 if passed else 3.0,
                                    0 if passed else 10, 100, "exact")
    return BenchmarkResult(
        op=op, variant=variant, params={"TILE": 16} if params is None else params,
        shape=(64, 64, 64), dims=("M", "K", "N"), dtype="float32", hot=hot,
        samples_s=tuple(float(s) for s in samples), verification=verification, kind=kind,
        error=error,
    )


def device(name: str) -> DeviceInfo:
    """Return a device of that model name."""
    return DeviceInfo(name=name, compute_capability="9.0", sm_count=132, memory_bytes=2**37,
                      l2_bytes=60 * 2**20, sm_clock_khz=1_980_000, memory_clock_khz=3_201_000,
                      memory_bus_bits=6144, max_threads_per_block=1024,
                      max_shared_bytes_per_block=48 * 1024, driver_version="13.0",
                      cuda_version="13.0")


def results(path: str, *benchmarks: BenchmarkResult, gpu: str = "NVIDIA H200") -> ResultsFile:
    """Build a results file in memory."""
    return ResultsFile(path, {}, (device(gpu),), tuple(benchmarks), schema_version=2)


def lognormal(rng: np.random.Generator, median: float, spread: float, n: int) -> np.ndarray:
    """Draw n timings with log-normal noise of relative spread around median."""
    return median * np.exp(spread * rng.standard_normal(n))


TIGHT = 100e-6 * (1 + 0.005 * np.linspace(-2, 2, 41))  # 41 samples, median 100 us


# -- the committed sample files -------------------------------------------------------------

def test_identical_runs_are_all_same():
    comparison = against_baseline("identical.json")
    assert set(verdicts(comparison).values()) == {"same"}
    assert len(comparison.rows) == 7
    assert comparison.added == comparison.removed == ()
    assert comparison.regressions == ()
    assert comparison.exit_code == ExitCode.OK


def test_a_20_percent_slowdown_is_slower_and_exits_1():
    comparison = against_baseline("slower20.json")
    slow = row(comparison, "matmul", "tiled")
    assert slow.verdict == "slower"
    assert 0.15 < slow.change < 0.25
    assert slow.p_value < comparison.alpha
    assert slow.current_median_s > slow.baseline_median_s
    assert "+19.9%" in slow.reason
    others = {v for key, v in verdicts(comparison).items() if key != ("matmul", "tiled")}
    assert others == {"same"}
    assert comparison.regressions == (slow,)
    assert comparison.exit_code == ExitCode.REGRESSION == 1


def test_a_change_of_exactly_the_threshold_reads_alike_whatever_the_rounding():
    # 672/640 - 1 computes a hair above 0.05 and 21/20 - 1 a hair below: the first was
    # slower (exit 1) and the second same; "more than the threshold" is neither
    for low, high in ((640e-9, 672e-9), (20e-6, 21e-6)):
        comparison = compare(results("a.json", bench([low] * 11 + [high] * 10)),
                             results("b.json", bench([high] * 11 + [high * high / low] * 10)),
                             threshold=0.05)
        (judged,) = comparison.rows
        assert judged.verdict is Verdict.SAME and "within ±5%" in judged.reason, judged.reason


def test_a_2_percent_change_inside_the_threshold_is_same():
    comparison = against_baseline("noise2.json")
    shifted = row(comparison, "matmul", "tiled")
    assert 0.01 < shifted.change < 0.03
    # Real and significant with 80 samples a side, but below the 5% threshold.
    assert shifted.p_value < comparison.alpha
    assert shifted.verdict == "same"
    assert "within" in shifted.reason
    assert set(verdicts(comparison).values()) == {"same"}
    assert comparison.exit_code == ExitCode.OK


def test_a_variant_that_now_fails_verification_is_a_regression():
    comparison = against_baseline("failing.json")
    broken = row(comparison, "matmul", "tiled")
    assert broken.verdict == "failed"
    assert broken.change < 0  # faster, and wrong: failing verification wins
    assert "FAIL" in broken.reason and "was PASS" in broken.reason
    assert comparison.regressions == (broken,)
    assert comparison.exit_code == ExitCode.REGRESSION


def test_a_suspect_row_says_why_it_is_not_believed():
    # the reason read "still SUSPECT (was SUSPECT): 0 of 65536 elements wrong": a verified
    # row that is faster than the GPU allows has no wrong element to count
    why = "7.0 TFLOP/s is beyond the device's 1.5 TFLOP/s float32 roof on CUDA cores"
    files = [dataclasses.replace(f, benchmarks=[
        dataclasses.replace(r, suspect=why) if r.variant == "tiled" else r
        for r in f.benchmarks]) for f in (load("baseline.json"), load("baseline.json"))]
    comparison = compare(*files)
    suspect = row(comparison, "matmul", "tiled")
    assert suspect.verdict == "failed"
    assert suspect.reason == f"still SUSPECT (was SUSPECT): {why}"
    # a failed row over the roof too (a kernel that skips work) says its wrong elements
    broken = dataclasses.replace(files[1], benchmarks=[
        dataclasses.replace(r, verification=dataclasses.replace(
            r.verification, passed=False, bad_elements=7)) if r.variant == "tiled" else r
        for r in files[1].benchmarks])
    failed = row(compare(files[0], broken), "matmul", "tiled")
    assert failed.reason.startswith("still FAIL (was SUSPECT): 7 of ") and why not in \
        failed.reason
    # fixed: the baseline's median is in the table, so it "has no timing" contradicted it
    fixed = row(compare(files[0], load("baseline.json")), "matmul", "tiled")
    assert fixed.verdict == "fixed"
    assert fixed.reason == ("now PASS (was SUSPECT); the baseline's timing is not believed, "
                            "so its speed is not judged")
    # a slower copy row, which is not gated, is counted as such in the summary ("1
    # regression: 1 failed, 1 slower" left the reader to find which was not one)
    slow_copy = dataclasses.replace(files[1], benchmarks=[
        dataclasses.replace(r, samples_s=tuple(t * 1.5 for t in r.samples_s))
        if r.variant == "memcpy_dtod" else r for r in files[1].benchmarks])
    comparison = compare(files[0], slow_copy)
    assert len(comparison.regressions) == 1
    assert summary_text(comparison).startswith(
        "1 failed, 5 same; not gated: 1 slower (vendor-library or copy rows); threshold")
    # a failing copy row beside a missing kernel: "2 regressions: 2 failed, 1 missing"
    copy_fails = dataclasses.replace(broken, benchmarks=[
        dataclasses.replace(r, error="the copy raised", samples_s=())
        if r.kind is Kind.REFERENCE else r
        for r in broken.benchmarks if (r.op, r.variant) != ("matmul", "naive")])
    both = compare(files[0], copy_fails)
    head = summary_text(both)
    assert len(both.regressions) == 2, head
    assert head.startswith("1 failed, 1 missing,") and "not gated: 1 failed (vendor-library" in head


def test_a_benchmark_missing_from_the_current_file_fails_the_gate():
    comparison = against_baseline("added_removed.json")
    assert [(r.op, r.variant, dict(r.params)) for r in comparison.added] == [
        ("matmul", "tiled", {"TILE": 32})]
    assert comparison.removed == ()
    (gone,) = comparison.missing
    assert (gone.op, gone.variant, gone.verdict) == ("transpose", "naive", "missing")
    assert "not in the current file" in gone.reason and "--allow-missing" in gone.reason
    assert comparison.regressions == (gone,)
    assert comparison.exit_code == ExitCode.REGRESSION
    # a fixed threshold stays one with a missing row ("threshold auto per benchmark")
    assert "; threshold 5%, alpha" in summary_text(comparison), summary_text(comparison)


def test_allow_missing_lists_removed_benchmarks_and_passes():
    comparison = against_baseline("added_removed.json", allow_missing=True)
    assert [(r.op, r.variant) for r in comparison.removed] == [("transpose", "naive")]
    assert ("transpose", "naive") not in verdicts(comparison)
    assert set(verdicts(comparison).values()) == {"same"}
    assert comparison.exit_code == ExitCode.OK


def test_a_benchmark_turned_skip_is_missing_with_the_skip_reason():
    skipped = dataclasses.replace(bench((), "gone"), verification=None,
                                  skipped="no GPU: PyCUDA is not installed")
    after = results("b.json", bench(TIGHT), skipped)
    comparison = compare(results("a.json", bench(TIGHT), bench(TIGHT, "gone")), after)
    (gone,) = comparison.missing
    assert gone.variant == "gone" and "now SKIP (was PASS): no GPU" in gone.reason
    assert comparison.exit_code == ExitCode.REGRESSION


@pytest.mark.parametrize("kind, name", [(Kind.REFERENCE, "memcpy_dtod"), (Kind.VENDOR, "cuBLAS")])
def test_a_missing_reference_or_vendor_row_does_not_fail_the_gate(kind, name):
    # a runner that lost CuPy (or a --no-vendor run) failed the job: `missing` cuBLAS,
    # where a cuBLAS row that now FAILs is not gated
    other = bench(TIGHT, name, kind=kind)
    comparison = compare(results("a.json", bench(TIGHT), other), results("b.json", bench(TIGHT)))
    assert comparison.missing == () and [r.variant for r in comparison.removed] == [name]
    assert comparison.exit_code == ExitCode.OK


def test_samples_too_spread_to_tell_are_noisy_not_a_regression():
    comparison = against_baseline("noisy.json")
    assert row(comparison, "matmul", "tiled_conflict").verdict == "noisy"
    others = {v for key, v in verdicts(comparison).items() if key != ("matmul", "tiled_conflict")}
    assert others == {"same"}
    assert comparison.exit_code == ExitCode.OK


def test_a_higher_threshold_ignores_the_20_percent_slowdown():
    comparison = against_baseline("slower20.json", threshold=parse_threshold("25%"))
    assert row(comparison, "matmul", "tiled").verdict == "same"
    assert comparison.exit_code == ExitCode.OK


def test_files_from_different_gpus_are_refused_unless_allowed():
    with pytest.raises(UsageError) as caught:
        against_baseline("other_gpu.json")
    message = str(caught.value)
    assert "NVIDIA H200" in message and "NVIDIA H100 80GB HBM3" in message
    assert "--allow-different-gpu" in message
    assert caught.value.exit_code == ExitCode.USAGE == 2

    comparison = against_baseline("other_gpu.json", allow_different_gpu=True)
    assert (comparison.baseline_gpu, comparison.current_gpu) == (
        "NVIDIA H200", "NVIDIA H100 80GB HBM3")
    assert len(comparison.rows) == 7
    assert comparison.exit_code == ExitCode.OK


def test_files_whose_sizes_ran_on_other_gpu_models_say_so(tmp_path):
    # --devices all on a host of two models put each size on whichever card was free: the
    # benchmarks are the same, the models are not, and the error sent the user to check
    # the op, sizes, types and parameters
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA.parent / "h200x2" / "all.json").read_text(encoding="utf-8"))
    document["devices"][1]["name"] = "NVIDIA H100 80GB HBM3"
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps(document), encoding="utf-8")
    for row in document["benchmarks"]:  # a new run: every size on the other card
        row["device"] = 1 - row["device"]
        row["samples_s"] = [s * 1.001 for s in row["samples_s"]]
    current = tmp_path / "new.json"
    current.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(baseline), str(current)])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "no measured kernel in common on one GPU model" in message
    assert "'NVIDIA H200' in the baseline but on 'NVIDIA H100 80GB HBM3'" in message
    assert "--allow-different-gpu" in message and "sizes, types" not in message
    assert len(message.splitlines()) == 1
    result = CliRunner().invoke(cli, ["compare", str(baseline), str(current),
                                      "--allow-different-gpu"])
    assert result.exit_code == 0, result.output


def test_a_truncated_file_names_its_path():
    with pytest.raises(ResultsFileError) as caught:
        load("truncated.json")
    assert str(DATA / "truncated.json") in str(caught.value)
    assert "truncated" in str(caught.value)
    assert caught.value.exit_code == ExitCode.USAGE


def test_a_file_that_is_no_json_object_is_not_called_truncated(tmp_path):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\n', encoding="utf-8")
    with pytest.raises(ResultsFileError) as caught:
        load_results(suite)
    assert "not a results file, which is a JSON object" in str(caught.value)
    assert "truncated" not in str(caught.value)


@pytest.mark.parametrize("name", ["joined.json", "joined.json.gz"])
def test_two_files_joined_are_not_called_truncated(tmp_path, name):
    # `cat a.json a.json`: the file holds too much, not too little (two gzip streams too)
    text = (DATA / "baseline.json").read_bytes()
    path = tmp_path / name
    path.write_bytes(text + text if name.endswith(".json") else gzip.compress(text) * 2)
    with pytest.raises(ResultsFileError) as caught:
        load_results(path)
    assert "holds more than one JSON document (two files joined?)" in str(caught.value)
    assert "truncated" not in str(caught.value) and str(path) in str(caught.value)


def test_a_results_file_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (DATA / "baseline.json").read_bytes())
    assert load_results(path).benchmarks


@pytest.mark.parametrize("field", ["flops", "bytes_moved"])
def test_a_negative_count_of_work_is_refused(tmp_path, field):
    # report showed "GFLOP/s -0.0" and plot warned from matplotlib's roofline
    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    document["benchmarks"][0]["throughput"][field] = -5
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsFileError, match=rf"throughput.{field}.*non-negative integer"):
        load_results(path)


def test_another_schema_version_names_the_path_and_field():
    with pytest.raises(ResultsFileError) as caught:
        load("schema99.json")
    message = str(caught.value)
    assert str(DATA / "schema99.json") in message
    assert "schema_version" in message and "99" in message


def test_json_that_is_not_a_cudabench_file_names_the_kind_field(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"foo": 1}), encoding="utf-8")
    with pytest.raises(ResultsFileError) as caught:
        load_results(path)
    assert str(path) in str(caught.value)
    assert "kind" in str(caught.value)


# 5e-324 and 1e-12 are positive, but no launch is that fast: compare took them for speedups
# and 1e308 overflowed the statistics (no launch takes a day: --timeout stops it first)
@pytest.mark.parametrize("bad", ["fast", -1.0, 0, None, True, 5e-324, 1e-12, 1e308, 86401])
def test_a_bad_sample_names_its_benchmark_and_index(tmp_path, bad):
    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    document["benchmarks"][1]["samples_s"][2] = bad
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsFileError) as caught:
        load_results(path)
    message = str(caught.value)
    assert str(path) in message
    assert (f"{path}: benchmarks[1].samples_s[2]: expected a number of seconds, from 1e-9"
            in message)


@pytest.mark.parametrize(("where", "named"), [
    (lambda d: d["benchmarks"][1]["samples_s"], "benchmarks[1].samples_s[0]"),
    (lambda d: d["benchmarks"][1]["params"], "benchmarks[1].params.TILE"),
    (lambda d: d["benchmarks"][1]["shape"], "benchmarks[1].shape"),
    (lambda d: d["devices"][0], "devices[0].sm_clock_khz"),
])
def test_an_integer_too_large_for_a_float_is_a_file_error_not_a_crash(tmp_path, where, named):
    # JSON allows an integer of 400 digits: math.isfinite and the roofline's division
    # raised OverflowError (exit 4, "internal error") in report, compare and history
    source = Path(__file__).parent / "data" / "h100" / "v2-matmul.json"
    document = json.loads(source.read_text(encoding="utf-8"))
    holder = where(document)
    key = 0 if isinstance(holder, list) else next(
        k for k in ("TILE", "sm_clock_khz") if k in holder)
    holder[key] = 10 ** 400
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsFileError, match=re.escape(f"{path}: {named}: expected")):
        load_results(path)


@pytest.mark.parametrize(("field", "value", "named"), [
    ("kind", "other", "benchmarks[0].kind"),
    ("verification", None, "benchmarks[0].verification"),  # a kernel that ran was verified
    ("params", {"TILE": True}, "benchmarks[0].params.TILE"),
    ("shape", [1000, "x"], "benchmarks[0].shape"),
    ("error", 5, "benchmarks[0].error"),
    ("throughput", {"flops": 1.5, "bytes_moved": 1}, "benchmarks[0].throughput.flops"),
])
def test_a_bad_field_is_named(tmp_path, field, value, named):
    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    document["benchmarks"][0][field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsFileError, match=re.escape(f"{path}: {named}: expected")):
        load_results(path)


def test_sample_files_are_complete_and_realistic():
    baseline = load("baseline.json")
    assert baseline.metadata["complete"] is True
    assert baseline.gpu_name == "NVIDIA H200"
    statuses = {(b.variant, b.status) for b in baseline.benchmarks}
    assert ("memcpy_dtod", "REF") in statuses
    assert all(40 <= len(b.samples_s) <= 200 for b in baseline.benchmarks)
    # A fresh draw, not a copy of the baseline.
    identical = load("identical.json")
    assert baseline.benchmarks[0].samples_s != identical.benchmarks[0].samples_s


# -- verdict rules, on benchmarks built in memory --------------------------------------------

def test_a_new_error_is_failed_and_names_it():
    before = results("a.json", bench(TIGHT))
    after = results("b.json", bench((), error="kernels/matmul/tiled.cu: nvcc failed\nline 2"))
    comparison = compare(before, after)
    (only,) = comparison.rows
    assert only.verdict == "failed"
    assert "now ERROR (was PASS)" in only.reason and "nvcc failed" in only.reason
    assert "line 2" not in only.reason
    assert only.current_median_s is None and only.change is None
    assert comparison.exit_code == ExitCode.REGRESSION


def test_still_failing_is_still_a_regression():
    comparison = compare(results("a.json", bench(TIGHT, passed=False)),
                         results("b.json", bench(TIGHT, passed=False)))
    assert comparison.rows[0].verdict == "failed"
    assert "still FAIL" in comparison.rows[0].reason
    assert comparison.exit_code == ExitCode.REGRESSION


def test_a_fixed_variant_is_not_a_regression():
    comparison = compare(results("a.json", bench(TIGHT, passed=False)),
                         results("b.json", bench(TIGHT * 1.01)))
    assert comparison.rows[0].verdict == "fixed"
    assert comparison.exit_code == ExitCode.OK


def test_a_fix_is_judged_on_its_speed_when_the_failing_baseline_was_timed():
    # A FAIL row was timed like any other: a fix 1.5x slower than it is `slower`, not
    # `fixed`. A baseline with no timing (an ERROR) leaves only `fixed` to say.
    comparison = compare(results("a.json", bench(TIGHT, passed=False)),
                         results("b.json", bench(TIGHT * 1.5)))
    assert comparison.rows[0].verdict == "slower"
    assert comparison.rows[0].reason.startswith("now PASS (was FAIL), but +50")
    assert comparison.exit_code == ExitCode.REGRESSION
    comparison = compare(results("a.json", bench((), error="nvcc failed")),
                         results("b.json", bench(TIGHT * 1.5)))
    assert comparison.rows[0].verdict == "fixed"
    assert "no timing" in comparison.rows[0].reason
    assert comparison.exit_code == ExitCode.OK


def test_a_significant_speedup_is_faster():
    comparison = compare(results("a.json", bench(TIGHT)), results("b.json", bench(TIGHT * 0.8)))
    assert comparison.rows[0].verdict == "faster"
    assert comparison.rows[0].change == pytest.approx(-0.2)
    assert comparison.exit_code == ExitCode.OK


def test_too_few_samples_are_noisy_when_nothing_looks_slower():
    comparison = compare(results("a.json", bench(TIGHT)),
                         results("b.json", bench(TIGHT[:2])))
    (only,) = comparison.rows
    assert abs(only.change) < comparison.threshold
    assert only.verdict == "noisy"
    assert only.p_value is None
    assert "too few samples" in only.reason
    assert comparison.exit_code == ExitCode.OK


@pytest.mark.parametrize(("base", "current", "factor"), [
    (30, 2, 10.86),  # +986% on 2 samples was "noisy" and passed
    (6, 6, 10.0),    # a 10x slowdown on 6 samples a side passed with no warning
    (5, 5, 1.3),     # 5 a side can never reach p < 0.001, however far apart
])
def test_a_large_slowdown_on_too_few_samples_fails_as_untestable(base, current, factor):
    comparison = compare(results("a.json", bench(TIGHT[:base])),
                         results("b.json", bench(TIGHT[:current] * factor)))
    (only,) = comparison.rows
    assert only.change == pytest.approx(factor - 1, rel=0.05)
    assert only.verdict == "untestable"
    assert "too few samples to judge" in only.reason
    assert comparison.exit_code == ExitCode.REGRESSION


def test_a_large_change_that_could_be_significant_but_is_not_is_noisy():
    # Enough samples to reach p < 0.001, but two overlapping populations: not proven.
    rng = np.random.default_rng(3)
    base = 1e-3 * np.concatenate([1 + 0.01 * rng.random(10), 2 + 0.01 * rng.random(10)])
    after = 1e-3 * np.concatenate([1 + 0.01 * rng.random(9), 2 + 0.01 * rng.random(11)])
    comparison = compare(results("a.json", bench(base)), results("b.json", bench(after)))
    (only,) = comparison.rows
    assert only.change > comparison.threshold
    assert only.verdict == "noisy" and "not significant" in only.reason
    assert comparison.exit_code == ExitCode.OK
    # The gate passes it, and says so where a reader looks: a note, printed and in markdown.
    (note,) = comparison.notes
    assert note.startswith("matmul/tiled") and "the gate passes it; measure more samples" \
        in note
    assert f"- note: {note}" in to_markdown(comparison)


def test_reachable_p_matches_the_test_at_its_extreme():
    from cudabench.analysis.compare import reachable_p
    from cudabench.common.stats import mann_whitney_u

    for n1, n2 in ((3, 3), (6, 6), (10, 12), (30, 2)):
        low, high = list(range(n1)), list(range(100, 100 + n2))
        assert reachable_p(n1, n2) == pytest.approx(mann_whitney_u(low, high))


def test_a_spread_too_wide_to_resolve_the_threshold_is_noisy():
    # Same median, but the current median is known only to about ±8%: no verdict possible.
    wide = 100e-6 * (1 + 0.1 * np.linspace(-2, 2, 21))
    comparison = compare(results("a.json", bench(TIGHT)), results("b.json", bench(wide)))
    (only,) = comparison.rows
    assert abs(only.change) < 0.05
    assert only.verdict == "noisy"
    assert "current median known only to" in only.reason


def test_rounds_that_disagree_make_a_pooled_median_noisy():
    # The same tight samples (their median known to ±0.1%), once from rounds whose medians
    # agree and once from rounds whose medians range over ±15%: samples pooled from rounds
    # are not independent, so the second median is known no better than its rounds agree.
    samples = np.tile(TIGHT, 5)
    medians = 100e-6 * np.array([0.85, 1.0, 1.15, 0.9, 1.1])
    disagreeing = dataclasses.replace(bench(samples), rounds=5, round_medians_s=tuple(medians))
    agreeing = dataclasses.replace(bench(samples), rounds=5,
                                   round_medians_s=tuple(100e-6 * (1 + 0.001 * medians / 1e-4)))
    noisy = compare(results("a.json", bench(TIGHT)), results("b.json", disagreeing)).rows[0]
    assert noisy.verdict == "noisy" and "current median known only to" in noisy.reason
    same = compare(results("a.json", bench(TIGHT)), results("b.json", agreeing)).rows[0]
    assert same.verdict == "same"


def test_pairing_uses_hot_and_ignores_params_order():
    before = results("a.json",
                     bench(TIGHT, params={"TILE": 32, "BLOCK_ROWS": 8}),
                     bench(TIGHT, hot=True, params={"TILE": 32, "BLOCK_ROWS": 8}))
    after = results("b.json",
                    bench(TIGHT * 1.3, hot=True, params={"BLOCK_ROWS": 8, "TILE": 32}),
                    bench(TIGHT, params={"BLOCK_ROWS": 8, "TILE": 32}))
    comparison = compare(before, after)
    assert {(r.hot, r.verdict) for r in comparison.rows} == {(False, "same"), (True, "slower")}
    assert comparison.added == comparison.removed == ()


def test_a_benchmark_twice_in_one_file_is_refused():
    twice = results("twice.json", bench(TIGHT), bench(TIGHT))
    with pytest.raises(ResultsFileError) as caught:
        compare(results("a.json", bench(TIGHT)), twice)
    message = str(caught.value)
    assert "twice.json" in message and "matmul/tiled" in message and "benchmarks[1]" in message


def test_reference_rows_are_compared_on_time_but_do_not_gate():
    before = results("a.json", bench(TIGHT, "memcpy_dtod", kind=Kind.REFERENCE, params={}))
    after = results("b.json", bench(TIGHT * 1.2, "memcpy_dtod", kind=Kind.REFERENCE, params={}))
    comparison = compare(before, after)
    assert comparison.rows[0].verdict == "slower" and "not gated" in comparison.rows[0].reason
    assert comparison.regressions == () and comparison.exit_code == ExitCode.OK


def test_compare_validates_threshold_and_alpha():
    same = results("a.json", bench(TIGHT))
    with pytest.raises(UsageError, match="--threshold"):
        compare(same, same, threshold=0)
    with pytest.raises(UsageError, match="alpha"):
        compare(same, same, alpha=1.5)


# -- statistics: it does not cry wolf, and it does see a real slowdown -----------------------

def test_a_a_runs_never_give_slower_or_faster():
    false_alarms = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n1, n2 = (int(n) for n in rng.integers(20, 201, size=2))
        spread = float(rng.uniform(0.003, 0.05))
        median = float(rng.uniform(5e-6, 5e-3))
        before = results("a.json", bench(lognormal(rng, median, spread, n1)))
        after = results("b.json", bench(lognormal(rng, median, spread, n2)))
        verdict = compare(before, after).rows[0].verdict
        if verdict in ("slower", "faster"):
            false_alarms.append((seed, n1, n2, round(spread, 4), verdict))
    assert not false_alarms, (
        f"{len(false_alarms)} of 200 A/A comparisons gave a verdict: {false_alarms}")


def test_a_true_20_percent_slowdown_with_1_percent_noise_is_always_slower():
    misses = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        before = results("a.json", bench(lognormal(rng, 267e-6, 0.01, 20)))
        after = results("b.json", bench(lognormal(rng, 267e-6 * 1.2, 0.01, 20)))
        comparison = compare(before, after)
        if comparison.rows[0].verdict != "slower" or comparison.exit_code != 1:
            misses.append((seed, comparison.rows[0].verdict))
    assert not misses, f"{len(misses)} of 100 true 20% slowdowns missed: {misses}"


# -- --threshold -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("5%", 0.05), ("5 %", 0.05), (" 5% ", 0.05), ("0.05", 0.05), ("2.5%", 0.025),
    (".05", 0.05), ("150%", 1.5), ("999%", 9.99), ("1e-2", 0.01),
])
def test_parse_threshold_accepts_percentages_and_fractions(text, expected):
    assert parse_threshold(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", [
    "", "%", "abc", "5x", "5%%", "-5%", "0", "0%", "1000%", "5000%", "nan", "inf", "5",
    "1", "0x5",
])
def test_parse_threshold_refuses_the_rest_naming_the_flag(text):
    with pytest.raises(UsageError, match="--threshold") as caught:
        parse_threshold(text)
    assert caught.value.exit_code == ExitCode.USAGE


def test_a_bare_number_above_one_suggests_the_percentage():
    with pytest.raises(UsageError, match="5%"):
        parse_threshold("5")


@pytest.mark.parametrize(("text", "said"), [
    ("500", "write 500% for 500 percent"), ("1e400", "must be above 0% and below 1000%")])
def test_a_bare_number_suggests_no_fraction_that_is_refused_in_turn(text, said):
    # "--threshold 1e400: ... or inf as a fraction", which is refused in turn
    with pytest.raises(UsageError, match=said) as caught:
        parse_threshold(text)
    assert "as a fraction" not in str(caught.value)


# -- output ----------------------------------------------------------------------------------

def test_markdown_has_the_table_and_bolds_regressions():
    text = to_markdown(against_baseline("slower20.json"))
    lines = text.splitlines()
    assert lines[0].startswith("## ")
    header = "| " + " | ".join(COLUMNS) + " |"
    assert header in lines
    assert lines[lines.index(header) + 1].startswith("|---")
    assert "1 slower" in text and "6 same" in text and "threshold 5%" in text
    assert "alpha 0.001" in text and "NVIDIA H200" in text
    slow = next(line for line in lines if line.startswith("| matmul/tiled |"))
    assert "**slower**" in slow and "+19.9%" in slow and " us |" in slow
    assert "**same**" not in text
    columns = len(COLUMNS)
    assert all(line.count(" | ") == columns - 1 for line in lines if line.startswith("| "))


def test_markdown_lists_added_and_removed():
    text = to_markdown(against_baseline("added_removed.json", allow_missing=True))
    added = text.index("### Added")
    removed = text.index("### Removed")
    assert "- matmul/tiled TILE=32" in text[added:removed]
    assert "- transpose/naive TILE=32" in text[removed:]
    assert text.splitlines()[2].startswith("no regression: ")


def test_markdown_escapes_pipes_in_cells():
    before = results("a|b.json", bench(TIGHT, "bad|name"))
    after = results("c.json", bench(TIGHT * 1.3, "bad|name"), bench(TIGHT, "new|one"))
    text = to_markdown(compare(before, after))
    line = next(line for line in text.splitlines() if "bad" in line and line.startswith("| "))
    assert "matmul/bad\\|name" in line
    assert "**failed**" not in line and "**slower**" in line
    # Escaped pipes do not split cells: the row has as many cells as the header.
    assert len(re.split(r"(?<!\\)\|", line)) - 2 == len(COLUMNS)
    assert "new\\|one" in text


def test_markdown_bolds_failed():
    text = to_markdown(against_baseline("failing.json"))
    assert "**failed**" in text
    assert "**1 regression**" in text


def test_a_new_kernel_that_fails_verification_fails_the_gate():
    # listed as `added`, a kernel the baseline lacks passed with wrong results (exit 0):
    # the README's workflow runs `cudabench run ... || [ $? -eq 3 ]` so compare judges it
    before = results("a.json", bench(TIGHT, "naive"))
    now = results("b.json", bench(TIGHT, "naive"), bench(TIGHT, "warptile", passed=False),
                  bench(TIGHT, "tiled"))
    comparison = compare(before, now)
    failing = row(comparison, "matmul", "warptile")
    assert failing.verdict is Verdict.FAILED and failing.regressed
    assert "not in the baseline" in failing.reason and failing.baseline_median_s is None
    assert [r.variant for r in comparison.added] == ["tiled"]  # a passing one is added
    assert comparison.exit_code == ExitCode.REGRESSION
    # renamed and failing, with --allow-missing: still failed
    assert row(compare(before, now, allow_missing=True),
                  "matmul", "warptile").verdict is Verdict.FAILED
    text = to_markdown(comparison)
    assert "**failed**" in text
    stream = io.StringIO()
    render_comparison(comparison, Console(file=stream, width=200))
    assert "warptile" in stream.getvalue()


def test_power_at_80_columns_notes_every_row_s_catch():
    # the "catches >= X" of --power sat in the threshold column, which a narrow terminal
    # leaves out: only the rows that changed kept it, as a note
    stream = io.StringIO()
    comparison = against_baseline("slower20.json", power_for=lambda threshold, base, now: 0.034)
    render_comparison(comparison, Console(file=stream, width=80, force_terminal=True,
                                          color_system=None))
    text = stream.getvalue()
    same = [line for line in text.splitlines() if "matmul/naive" in line][0]
    assert "[" in same and "catches >= 3.4%" in text, text


def test_render_comparison_prints_verdicts_added_removed_and_summary():
    stream = io.StringIO()
    console = Console(file=stream, width=200)
    render_comparison(against_baseline("slower20.json"), console)
    text = stream.getvalue()
    for name in COLUMNS:
        assert name in text
    assert "slower" in text and "same" in text
    assert "1 regression" in text
    assert "matmul/tiled" in text

    stream = io.StringIO()
    render_comparison(against_baseline("added_removed.json", allow_missing=True),
                      Console(file=stream, width=200))
    text = stream.getvalue()
    assert "added" in text and "matmul/tiled TILE=32" in text
    assert "removed" in text and "transpose/naive" in text
    assert "no regression" in text


def test_render_comparison_prints_user_text_literally():
    stream = io.StringIO()
    before = results("[bold]a.json", bench(TIGHT, "[red]x"))
    render_comparison(compare(before, results("b.json", bench(TIGHT, "[red]x"))),
                      Console(file=stream, width=200))
    assert "[red]x" in stream.getvalue() and "[bold]a.json" in stream.getvalue()


@pytest.mark.parametrize("kind", list(Kind))
def test_only_slower_or_failed_variants_fail_the_gate(kind):
    # Build each verdict for real, then check which rows the exit code counts.
    slower = results("b.json", bench(TIGHT * 1.3, "v", kind=kind))
    failing = results("b.json", bench(TIGHT, "v", kind=kind, error="no compile"))
    faster = results("b.json", bench(TIGHT * 0.7, "v", kind=kind))
    same = results("b.json", bench(TIGHT, "v", kind=kind))
    base = results("a.json", bench(TIGHT, "v", kind=kind))
    for current, verdict in ((slower, "slower"), (failing, "failed"), (faster, "faster"),
                             (same, "same")):
        comparison = compare(base, current)
        (only,) = comparison.rows
        assert only.verdict == verdict
        gates = verdict in ("slower", "failed") and kind is Kind.VARIANT
        assert only.regressed is gates and (only.verdict in REGRESSION) is (verdict in (
            "slower", "failed"))
        assert comparison.exit_code == (ExitCode.REGRESSION if gates else ExitCode.OK)


def test_a_change_near_the_threshold_prints_on_the_side_its_verdict_puts_it():
    from cudabench.common.units import format_change

    # +5.04% and +4.96% both read "+5.0%": one "exceeds the 5% threshold", one "within ±5%"
    base = 100e-6 * (1 + 0.001 * np.linspace(-2, 2, 41))
    shown = {}
    for factor in (1.0504, 1.0496):
        comparison = compare(results("a.json", bench(base)),
                             results("b.json", bench(base * factor)), threshold=0.05)
        (judged,) = comparison.rows
        shown[judged.verdict] = judged.reason
        assert f"{factor - 1:+.2%}" in to_markdown(comparison)  # the change column too
    assert shown[Verdict.SLOWER].startswith("+5.04% exceeds the 5% threshold")
    assert shown[Verdict.SAME].startswith("+4.96% is significant")
    assert format_change(0.0504) == "+5.0%"  # no threshold beside it: one decimal
    assert format_change(0.02, 0.05) == "+2.0%" and format_change(0.0001, 0.05) == "0.0%"
    # within 5e-7 of it: four decimals read "+5.0000%" on both sides
    assert format_change(0.0500004, 0.05) == "+5.00004%"
    assert format_change(0.0499996, 0.05) == "+4.99996%"


def test_time_format():
    assert format_seconds(267.3e-6) == "267.3 us"
    assert format_seconds(None) == "-"
    assert format_seconds(1.5e-3) == "1.5 ms"
    assert format_seconds(2.5) == "2.5 s"
    assert format_seconds(12e-9) == "12 ns"
    # rounded to 4 digits, 999.96 us is 1 ms, not "1000 us"
    assert format_seconds(0.00099996) == "1 ms" and format_seconds(0.99996) == "1 s"
    assert format_seconds(999.96e-9) == "1 us" and format_seconds(999.4e-6) == "999.4 us"


def test_a_p_value_prints_on_its_side_of_alpha():
    # p 0.000996 read "p=0.001 < 0.001" at two digits, in the reason and the p-value column
    before = [1e-5 * (1 + 0.003 * k) for k in (*range(8), 25, 42)]
    after = [1e-5 * (1 + 0.003 * k) for k in range(43) if k not in (*range(8), 25, 42)]
    comparison = compare(results("a.json", bench(before)), results("b.json", bench(after)),
                         threshold=0.02)
    (slower,) = comparison.rows
    assert slower.verdict is Verdict.SLOWER and "p=0.000996 < 0.001" in slower.reason
    assert "| 0.000996 |" in to_markdown(comparison)
    from cudabench.common.units import format_p_value, p_test_text

    assert format_p_value(0.0010004, 0.001) == "0.001"  # 0.001 >= 0.001 reads right
    assert format_p_value(0.000996) == "0.001"  # no alpha beside it: two digits
    assert p_test_text(1e-120, 0.001) == "p<1e-99 < 0.001"  # was "p=<1e-99 < 0.001"


def test_compare_module_needs_neither_rich_nor_pycuda():
    import subprocess
    import sys

    code = ("import sys, cudabench.analysis.compare; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'pycuda', 'scipy'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[1])
    assert done.stdout.strip() == "[]"


# -- the command as a user runs it ------------------------------------------------------------

@pytest.mark.parametrize(("current", "code"), [
    ("identical.json", 0), ("noise2.json", 0), ("noisy.json", 0), ("added_removed.json", 1),
    ("slower20.json", 1), ("failing.json", 1),
    ("truncated.json", 2), ("schema99.json", 2), ("other_gpu.json", 2),
])
def test_compare_command_exit_codes(tmp_path, current, code):
    from click.testing import CliRunner

    from cudabench.cli import cli

    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"),
                                      str(DATA / current), "--markdown", str(summary)])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    if code != 2:
        assert summary.read_text(encoding="utf-8").startswith("#")
    else:
        assert result.output.count("\n") <= 3  # a short error, not a dump


@pytest.mark.parametrize("baseline", ["empty", "all skipped", "disjoint"])
def test_a_comparison_that_pairs_no_kernel_fails_the_gate(tmp_path, baseline):
    # an empty or all-SKIP baseline, or files with nothing in common (--allow-missing):
    # "no regression: 6 added", exit 0, having judged nothing
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    if baseline == "empty":
        document["benchmarks"] = []
    elif baseline == "all skipped":
        for row in document["benchmarks"]:
            row.update(samples_s=[], stats=None, status="SKIP", skipped="not run",
                       verification=None)
    else:
        for row in document["benchmarks"]:
            row["shape"] = [n + 1 for n in row["shape"]]
    path = tmp_path / "base.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    done = CliRunner().invoke(cli, ["compare", str(path), str(DATA / "slower20.json"),
                                    "--allow-missing"])
    assert done.exit_code == 2, done.output
    assert "have no measured kernel in common" in " ".join(done.output.split())


@pytest.mark.parametrize("how", ["pasted", "reversed"])
def test_a_row_copied_from_the_baseline_is_refused(tmp_path, how):
    # the baseline's row pasted over a slowed kernel's (or its samples reversed) passed
    # as "same": the whole-file copy check looked at every row at once, in order
    from click.testing import CliRunner

    from cudabench.cli import cli

    base = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    current = json.loads((DATA / "slower20.json").read_text(encoding="utf-8"))
    (index, row), = [(i, r) for i, r in enumerate(base["benchmarks"])
                     if r["variant"] == "tiled"]
    copied = dict(row)
    if how == "reversed":
        copied["samples_s"] = row["samples_s"][::-1]
    current["benchmarks"] = [copied if r["variant"] == "tiled" else r
                             for r in current["benchmarks"]]
    path = tmp_path / "current.json"
    path.write_text(json.dumps(current), encoding="utf-8")
    done = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(path)])
    assert done.exit_code == 2, done.output
    assert "matmul/tiled TILE=16" in done.output
    assert "holds the raw samples of" in " ".join(done.output.split())


def test_few_distinct_samples_may_repeat_in_a_new_run():
    # a steady small kernel's samples take a few 32 ns steps: two runs may draw the same
    from cudabench.results.identity import copied_row

    steps = tuple(8.0e-6 + 32e-9 * (i % 3) for i in range(20))
    before = results("base.json", bench(steps))
    after = results("new.json", bench(tuple(reversed(steps))))
    assert copied_row(before, after) is None
    telling = tuple(8.0e-6 + 32e-9 * i for i in range(20))
    assert copied_row(results("b.json", bench(telling)),
                      results("n.json", bench(telling[::-1]))) is not None
    # a search's rows may be the tuning cache's, an earlier search's samples and all
    searched = dataclasses.replace(results("s.json", bench(telling)), metadata={
        "command": ["cudabench", "matmul", "--best", "--budget", "3"]})
    assert copied_row(results("b.json", bench(telling)), searched) is None
    uncached = dataclasses.replace(searched, metadata={"command": [
        *searched.metadata["command"], "--no-tune-cache"]})
    assert copied_row(results("b.json", bench(telling)), uncached) is not None


def test_a_search_whose_every_row_is_the_cache_s_says_so(tmp_path):
    # exit 2, "copies of one run ... check the paths the CI job passes": the paths were
    # right, and the second search wrote the tuning cache's rows again (processes: the
    # file's command is the one that searched)
    import os
    import subprocess
    import sys

    env = {**os.environ, "CUDABENCH_CACHE_DIR": str(tmp_path / "cache")}
    fake = [sys.executable, str(Path(__file__).parent / "fake_cli.py")]
    search = ["matmul", "--size", "64", "--variant", "tiled", "--best", "--budget", "3",
              "--no-vendor", "--max-time", "0.05"]
    first, second = tmp_path / "main.json", tmp_path / "pr.json"
    for path in (first, second):
        subprocess.run([*fake, *search, "--json", str(path)], env=env, check=True,
                       capture_output=True, timeout=300)
    done = subprocess.run([*fake, "compare", str(first), str(second)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"every row of {second} is one of {first}'s, written again from the tuning " \
           "cache: its search measured nothing; run it with --no-tune-cache" in said, said
    import cudabench.api as cb  # the same files loaded: "the same run" said no more
    with pytest.raises(UsageError, match="every row of current is one of baseline's, "
                                         "written again from the tuning cache"):
        cb.compare(cb.load(first), cb.load(second))


def test_compare_command_flags(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    runner = CliRunner()
    base, other = str(DATA / "baseline.json"), str(DATA / "other_gpu.json")
    assert runner.invoke(cli, ["compare", base, other, "--allow-different-gpu"]).exit_code == 0
    bad = runner.invoke(cli, ["compare", base, base, "--threshold", "five"])
    assert bad.exit_code == 2 and "--threshold" in bad.output
    # A 20% slowdown passes the gate when the threshold is raised above it.
    slower = str(DATA / "slower20.json")
    assert runner.invoke(cli, ["compare", base, slower, "--threshold", "25%"]).exit_code == 0


def test_compare_warns_about_an_incomplete_file(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "identical.json").read_text(encoding="utf-8"))
    document["complete"] = False
    document["benchmarks"] = document["benchmarks"][:2]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(partial),
                                      "--allow-missing"])
    # Missing rows allowed, but a run that stopped early never passes the gate.
    assert result.exit_code == 1 and "incomplete" in result.output
    assert "fails the gate" in result.stderr
    complete = json.loads(partial.read_text(encoding="utf-8"))
    complete["complete"] = True
    partial.write_text(json.dumps(complete), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(partial)])
    assert result.exit_code == 1 and "missing" in result.stdout
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(partial),
                                      "--allow-missing"])
    assert result.exit_code == 0 and "incomplete" not in result.output
    assert "no regression: 2 same, 5 removed" in " ".join(result.stdout.split())


def test_an_incomplete_baseline_is_a_note_in_every_output(tmp_path):
    # only the command's stderr said it: the API's comparison, its markdown (a job's
    # summary) and the pytest plugin's gate passed on a stopped run's baseline silently
    from cudabench.render.markdown import to_markdown

    document = json.loads((DATA / "baseline.json").read_text(encoding="utf-8"))
    document["complete"] = False
    stopped = tmp_path / "stopped.json"
    stopped.write_text(json.dumps(document), encoding="utf-8")
    comparison = compare(load_results(stopped), load_results(DATA / "identical.json"))
    note = (f"the baseline {stopped} is incomplete (its run stopped early): the benchmarks "
            "it lacks cannot be compared")
    assert note in comparison.notes and comparison.exit_code == 0
    assert note in " ".join(to_markdown(comparison).split())
    from click.testing import CliRunner

    from cudabench.cli import cli

    done = CliRunner().invoke(cli, ["compare", str(stopped), str(DATA / "identical.json")])
    assert done.exit_code == 0 and note in " ".join(done.stdout.split()), done.output
    assert "incomplete" not in done.stderr


@pytest.mark.parametrize("kind", [Kind.REFERENCE, Kind.VENDOR])
def test_a_kernel_relabelled_a_reference_or_vendor_row_stays_gated(kind):
    slow = 100e-6 * 1.3 * (1 + 0.005 * np.linspace(-2, 2, 41))
    relabelled = dataclasses.replace(bench(slow), kind=kind)
    comparison = compare(results("a.json", bench(TIGHT)), results("b.json", relabelled))
    (only,) = comparison.rows
    assert only.verdict == "failed" and only.kind is Kind.VARIANT
    assert f"a kernel in the baseline, a {kind.value} row here" in only.reason
    assert comparison.exit_code == ExitCode.REGRESSION


def test_a_passed_verification_with_wrong_elements_is_a_bad_file(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "failing.json").read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        if row.get("verification") and not row["verification"]["passed"]:
            row["verification"]["passed"], row["status"] = True, "PASS"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(edited)])
    assert result.exit_code == 2 and "verification.bad_elements" in result.stderr


def test_a_cold_row_measured_without_a_flush_is_not_compared_with_a_flushed_one(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "slower20.json").read_text(encoding="utf-8"))
    for row in document["benchmarks"]:
        if not row.get("hot"):
            row["l2_flush"] = ""
    warm = tmp_path / "warm.json"
    warm.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(warm)])
    assert result.exit_code == 2 and "not at all (a warm L2)" in result.stderr


def test_rows_stripped_of_their_gpu_still_meet_the_gpu_model_check(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    base = Path(__file__).parent / "data" / "h100-insight" / "m4096_full.json"
    document = json.loads(base.read_text(encoding="utf-8"))
    document["devices"][0]["name"] = "NVIDIA H200"
    for row in document["benchmarks"]:
        row["device"] = None
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(base), str(other)])
    assert result.exit_code == 2 and "different GPU models" in result.stderr, result.output


def test_a_file_compared_with_itself_or_its_copy_is_refused(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    base = DATA / "baseline.json"
    copy = tmp_path / "current.json"
    copy.write_bytes(base.read_bytes())
    link = tmp_path / "link.json"
    link.symlink_to(base)
    packed = tmp_path / "current.json.gz"  # every command reads .json.gz
    packed.write_bytes(gzip.compress(base.read_bytes()))
    dumped = tmp_path / "dumped.json"  # re-indented: other bytes, the same run
    dumped.write_text(json.dumps(json.loads(base.read_text()), indent=4), encoding="utf-8")
    # reordered, or a warning edited away: the same run still (both passed as "7 same")
    document = json.loads(base.read_text())
    document["benchmarks"].reverse()
    reordered = tmp_path / "reordered.json"
    reordered.write_text(json.dumps(document), encoding="utf-8")
    for row in document["benchmarks"]:
        row["warnings"] = ["edited"]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document), encoding="utf-8")
    skipped = dict(document, benchmarks=[dict(r, samples_s=[], status="SKIP",
                                              skipped="needs sm_100", verification=None)
                                         for r in document["benchmarks"]])
    skip_only = tmp_path / "skip.json"  # a run that measured nothing, and its copy
    skip_only.write_text(json.dumps(skipped), encoding="utf-8")
    skip_copy = tmp_path / "skip-copy.json"
    skip_copy.write_text(json.dumps(skipped, indent=2), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(skip_only), str(skip_copy)])
    assert result.exit_code == 2 and "copies of one run" in result.stderr, result.output
    for current, says in ((base, "the same file"), (link, "the same file"),
                          (copy, "copies of one file"), (packed, "copies of one run"),
                          (dumped, "copies of one run"), (reordered, "copies of one run"),
                          (edited, "copies of one run")):
        result = CliRunner().invoke(cli, ["compare", str(base), str(current)])
        assert result.exit_code == 2 and says in result.stderr, result.output


@pytest.mark.parametrize("value", ["false", 0, None, "true"])
def test_a_complete_flag_that_is_not_a_boolean_is_a_bad_file(tmp_path, value):
    # Only `false` marks a crashed run: any other value must not slip through the gate.
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "identical.json").read_text(encoding="utf-8"))
    document["complete"] = value
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(odd)])
    assert result.exit_code == 2
    assert "complete" in result.stderr and "true or false" in result.stderr


def test_a_file_without_its_complete_flag_is_a_bad_file(tmp_path):
    # it was taken as complete: a crashed run's rows with the flag cut out passed the gate.
    # Every schema version wrote the flag (version 1's first writer included).
    from click.testing import CliRunner

    from cudabench.cli import cli

    for name in ("identical.json", "../h100/v2-matmul.json"):  # versions 1 and 2
        document = json.loads((DATA / name).read_text(encoding="utf-8"))
        del document["complete"]
        cut = tmp_path / "cut.json"
        cut.write_text(json.dumps(document), encoding="utf-8")
        result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(cut)])
        assert result.exit_code == 2, result.output
        assert f"{cut}: complete: expected true or false" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_an_incomplete_current_file_heads_every_summary_as_a_failed_gate(tmp_path):
    """The job summary of a failed gate must not read "no regression" (exit 1 all the same)."""
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "identical.json").read_text(encoding="utf-8"))
    document["complete"] = False
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(document), encoding="utf-8")
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(partial),
                                      "--markdown", str(summary), "--html", str(page)])
    assert result.exit_code == 1
    head = "gate failed, the current run is incomplete"
    assert head in " ".join(result.stdout.split()) and "no regression" not in result.stdout
    assert f"**{head}" in summary.read_text() and "no regression" not in summary.read_text()
    assert f'<span class="bad">{head}' in page.read_text()



def test_an_incomplete_current_file_missing_rows_says_why_they_are_missing(tmp_path):
    """Rows a stopped run never reached are `missing` regressions: the summary, which a CI
    job shows alone, must say the run stopped, not only that rows vanished."""
    from click.testing import CliRunner

    from cudabench.cli import cli

    document = json.loads((DATA / "identical.json").read_text(encoding="utf-8"))
    document["complete"] = False
    document["benchmarks"] = document["benchmarks"][:1]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(document), encoding="utf-8")
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(partial),
                                      "--markdown", str(summary)])
    assert result.exit_code == 1
    first = summary.read_text().split("\n\n")[1]
    # why it is incomplete (stopped, or a run still writing it) is the error line's
    assert "regression" in first and "the current run is incomplete" in first \
        and "stopped early" not in first
    assert "missing" in summary.read_text()
    assert "the current run is incomplete" in " ".join(result.stdout.split())

# -- the L2 flush of the cold samples ------------------------------------------------------

def flushed(benchmark: BenchmarkResult, method: str) -> BenchmarkResult:
    return dataclasses.replace(benchmark, l2_flush=method)


def test_times_after_different_l2_flushes_are_not_compared():
    # A memset flush charges each sample the write-back of its dirty lines (5% of an H100
    # dot): a gate across the two methods would judge the flush, not the kernel.
    before = results("base.json", flushed(bench(TIGHT), "memset"))
    after = results("new.json", flushed(bench(TIGHT), "clean"))
    with pytest.raises(UsageError, match=r"base.json flushed the L2 by memset and new.json by "
                       r"clean .*matmul/tiled.*the same flush \(a fresh baseline"):
        compare(before, after)
    assert verdicts(compare(after, results("again.json", flushed(bench(TIGHT), "clean")))) == {
        ("matmul", "tiled"): "same"}


def test_hot_rows_have_no_flush_to_differ():
    before = results("base.json", flushed(bench(TIGHT, hot=True), ""))
    after = results("new.json", flushed(bench(TIGHT, hot=True), ""))
    assert verdicts(compare(before, after)) == {("matmul", "tiled"): "same"}


def test_a_file_from_before_the_flush_was_recorded_reads_as_memset(tmp_path):
    from click.testing import CliRunner

    from cudabench.cli import cli

    old = load("baseline.json")  # written before the field existed
    assert {r.l2_flush for r in old.benchmarks if not r.hot} == {"memset"}
    data = json.loads((DATA / "baseline.json").read_text())
    for benchmark in data["benchmarks"]:
        benchmark["l2_flush"] = "" if benchmark["hot"] else "clean"
    current = tmp_path / "clean.json"
    current.write_text(json.dumps(data))
    done = CliRunner().invoke(cli, ["compare", str(DATA / "baseline.json"), str(current)])
    assert done.exit_code == ExitCode.USAGE
    assert "by memset" in done.output and "by clean" in done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


def test_a_run_compared_with_itself_through_pipes_is_refused(use_fake, tmp_path):
    # `compare <(cat a.json) <(cat a.json)`: no regular file, so the byte checks cannot run,
    # but the rows and raw samples are the same run's: refused as for files.
    import os
    import shutil
    import subprocess
    import sys

    from click.testing import CliRunner

    from cudabench.cli import cli

    if shutil.which("bash") is None:
        pytest.skip("needs bash for process substitution")
    run = tmp_path / "a.json"
    done = CliRunner().invoke(cli, ["dot", "--size", "1000", "--warmup", "0", "--min-samples",
                                    "8", "--max-time", "0.05", "--json", str(run)])
    assert done.exit_code == 0, done.output
    root = Path(__file__).parent.parent
    fake_cli = Path(__file__).parent / "fake_cli.py"
    result = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" "{fake_cli}" compare <(cat "{run}") '
                       f'<(cat "{run}") --threshold 5%'],
        capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "copies of one run (the same rows and raw samples)" in result.stderr


def test_a_run_that_records_no_gpu_is_not_compared_with_one_that_does(use_fake, tmp_path):
    # `"devices": []` and rows with `"device": null` took the current file out of the
    # different-GPU-model refusal: its rows paired with any model's.
    from click.testing import CliRunner

    from cudabench.cli import cli

    runs = []
    for seed in (1, 2):
        use_fake(seed=seed)
        path = tmp_path / f"r{seed}.json"
        done = CliRunner().invoke(cli, ["dot", "--size", "1000", "--warmup", "0",
                                        "--min-samples", "8", "--max-time", "0.05",
                                        "--json", str(path)])
        assert done.exit_code == 0, done.output
        runs.append(path)
    document = json.loads(runs[1].read_text(encoding="utf-8"))
    document["devices"] = []
    for row in document["benchmarks"]:
        row["device"] = None
    blind = tmp_path / "blind.json"
    blind.write_text(json.dumps(document), encoding="utf-8")
    for pair in ((runs[0], blind), (blind, runs[0])):
        result = CliRunner().invoke(cli, ["compare", *map(str, pair), "--threshold", "5%"])
        assert result.exit_code == 2, result.output
        assert "records no GPU for its measured rows" in result.stderr
        assert "--allow-different-gpu" in result.stderr
    allowed = CliRunner().invoke(cli, ["compare", str(runs[0]), str(blind), "--threshold", "5%",
                                       "--allow-different-gpu"])
    assert allowed.exit_code in (0, 1), allowed.output


def test_a_kernel_that_makes_the_card_throttle_is_judged_at_its_slow_clock():
    # 29 of 41 samples below 75% of the maximum SM clock were set aside and the kept 12
    # judged: a kernel that throttles the card passed as `same`, with a note
    kept, slow = TIGHT[:12], TIGHT[:29] * 1.6
    throttling = dataclasses.replace(bench(kept), slow_clock_samples_s=tuple(slow))
    judged = compare(results("a.json", bench(TIGHT)), results("b.json", throttling))
    found = row(judged, "matmul", "tiled")
    assert found.verdict is Verdict.SLOWER, found.reason
    assert "judged on the 29 of 41 samples that ran below 75% of the maximum SM clock (the " \
        "baseline's: none): the card throttles under this kernel" in found.reason
    assert not any("set aside" in note for note in judged.notes)
    # half of them (the fake engine's every other sample): the rank test of all of them
    # had too little power (+96%, `noisy`)
    half = dataclasses.replace(bench(TIGHT[:20]), slow_clock_samples_s=tuple(TIGHT[:20] * 2))
    assert row(compare(results("a.json", bench(TIGHT[:20])), results("b.json", half)),
               "matmul", "tiled").verdict is Verdict.SLOWER
    # a kernel the card throttled under in the baseline too (a GEMM at its power limit):
    # the kept samples of both, the set-aside ones noted
    both = compare(results("a.json", throttling), results("b.json", throttling))
    assert row(both, "matmul", "tiled").verdict not in REGRESSION
    assert "judged on" not in row(both, "matmul", "tiled").reason
    assert any("29 of 41 samples of the current run" in note for note in both.notes)
    # a minority set aside (the machine's accident): judged on the rest, noted
    few = dataclasses.replace(bench(TIGHT), slow_clock_samples_s=tuple(slow[:10]))
    minority = compare(results("a.json", bench(TIGHT)), results("b.json", few))
    assert row(minority, "matmul", "tiled").verdict is Verdict.SAME
    assert any("10 of 51 samples" in note for note in minority.notes)


def test_slow_samples_a_run_kept_count_in_its_slow_clock_share():
    # a row that kept its 4 slow samples of 8 (too few fast ones to set them aside) had a
    # slow-clock share of 0: as the baseline it passed for a card that held its clock, and
    # as the current row the kernel that throttled the card went unseen
    clocks = (1980.0, 990.0) * 4  # the H200 device's 1,980 MHz, and half of it
    mixed = dataclasses.replace(
        bench([s for pair in zip(TIGHT[:4], TIGHT[:4] * 1.6) for s in pair]),
        device=device("NVIDIA H200"), sample_clocks_mhz=clocks)
    assert mixed.slow_clock_share == 0.5
    found = row(compare(results("a.json", bench(TIGHT)), results("b.json", mixed)),
                "matmul", "tiled")
    # judged on all 8 it was `noisy`, which the gate passes; on the 4 slow ones alone no
    # rank test can tell (`untestable`, a regression: take more samples)
    assert found.verdict in REGRESSION and "judged on the 4 of 8 samples that ran " \
        "below 75% of the maximum SM clock (the baseline's: none)" in found.reason, found.reason
    # a baseline the card throttled under too: the kept samples of both
    throttling = dataclasses.replace(bench(TIGHT[:12]), slow_clock_samples_s=tuple(TIGHT * 1.6))
    both = row(compare(results("a.json", mixed), results("b.json", throttling)),
               "matmul", "tiled")
    assert both.verdict not in REGRESSION and "judged on" not in both.reason, both.reason


def test_set_aside_samples_make_no_verdict_better():
    # a 30% slowdown with the baseline's own samples pasted in as set aside was `same`:
    # judged on all of them, the pasted ones drowned the slow ones
    slowed = TIGHT * 1.3
    forged = dataclasses.replace(bench(slowed), slow_clock_samples_s=tuple([*TIGHT, *TIGHT]))
    found = row(compare(results("a.json", bench(TIGHT)), results("b.json", forged)),
                "matmul", "tiled")
    assert found.verdict is Verdict.SLOWER and "judged on" not in found.reason


def test_a_results_file_s_html_and_links_stay_text_in_the_markdown_summary():
    # `<img src=x> [link](http://evil)` in a pull request's results file reached the job
    # summary as HTML and a link
    from cudabench.render.markdown import markdown_cell as _cell

    assert _cell("<img src=x> [link](http://evil) a|b & c") == \
        "&lt;img src=x&gt; \\[link\\](http://evil) a\\|b &amp; c"


def test_a_benchmark_that_ran_on_the_host_s_other_model_is_not_missing(tmp_path):
    # --devices all on a host of two models hands work to whichever GPU is free: a
    # benchmark on GPU 0 (one model) in the baseline and GPU 1 (the other) now read
    # "missing ... not in the current file", failing the gate with a false reason
    h200, other = device("NVIDIA H200"), dataclasses.replace(device("Other GPU"), index=1)

    def on(row, gpu):
        return dataclasses.replace(row, device=gpu)

    base = ResultsFile("b.json", {}, (h200, other), (on(bench(TIGHT, "tiled"), h200),
                                                     on(bench(TIGHT, "naive"), other)), 2)
    now = ResultsFile("c.json", {}, (h200, other), (on(bench(TIGHT, "tiled"), other),
                                                    on(bench(TIGHT, "naive"), h200)), 2)
    judged = compare(base, now, 0.05)
    assert judged.exit_code == ExitCode.OK, [(r.variant, r.verdict, r.reason)
                                             for r in judged.rows]
    assert not [r for r in judged.rows if r.verdict == "missing"]
    assert any("ran on another GPU model in the current file (matmul/" in note
               for note in judged.notes), judged.notes
    # said once: a current file of one model now, whose benchmarks all ran on it
    one_model = ResultsFile("e.json", {}, (h200,), (on(bench(TIGHT, "tiled"), h200),
                                                     on(bench(TIGHT, "naive"), h200)), 2)
    judged = compare(base, one_model, 0.05)
    assert judged.exit_code == ExitCode.OK
    assert [n for n in judged.notes if "Other GPU" in n] == [
        "1 benchmark(s) of the baseline ran on another GPU model in the current file "
        "(matmul/naive: Other GPU, now NVIDIA H200): listed as removed, not compared; give "
        "--devices the GPUs of one model to keep each benchmark on it"], judged.notes
    # gone from the current file altogether: missing, as before
    gone = ResultsFile("d.json", {}, (h200, other), (on(bench(TIGHT, "naive"), h200),), 2)
    assert compare(base, gone, 0.05).exit_code == ExitCode.REGRESSION


def test_a_current_run_stopped_before_the_baseline_s_kernels_fails_the_gate():
    # no kernel in common is the files' mistake (exit 2) where the current run completed;
    # one that stopped before it reached them fails the gate as stopped (exit 1)
    from cudabench.cli.compare import judge

    before = results("base.json", bench(TIGHT, params={"TILE": 16}))
    after = results("new.json", bench(TIGHT, params={"TILE": 32}))
    with pytest.raises(UsageError, match="no measured kernel in common"):
        judge(before, after, "5%", allow_missing=True)
    stopped = dataclasses.replace(after, metadata={"complete": False})
    assert judge(before, stopped, "5%", allow_missing=True).exit_code == ExitCode.REGRESSION
    nothing = dataclasses.replace(stopped, benchmarks=())
    assert judge(before, nothing, "5%").exit_code == ExitCode.REGRESSION
    with pytest.raises(UsageError, match="holds no benchmarks"):
        judge(before, dataclasses.replace(after, benchmarks=()), "5%")


def test_a_current_file_that_names_no_gpu_lacks_the_baseline_s_kernels():
    # a run stopped before its first row (no rows, no devices) listed the baseline's
    # kernels as removed, "ran on NVIDIA H200, which the current file lacks": it ran nothing
    h200 = device("NVIDIA H200")
    base = results("b.json", *(dataclasses.replace(bench(TIGHT, name), device=h200)
                               for name in ("tiled", "naive")))
    stopped = ResultsFile("c.json", {"complete": False}, (), (), 2)
    judged = compare(base, stopped, 0.05)
    assert [(r.variant, r.verdict) for r in judged.rows] == [
        ("tiled", Verdict.MISSING), ("naive", Verdict.MISSING)]
    assert not judged.removed and judged.exit_code == ExitCode.REGRESSION
    assert not [note for note in judged.notes if "lacks" in note], judged.notes
    allowed = compare(base, stopped, 0.05, allow_missing=True)
    assert len(allowed.removed) == 2 and allowed.exit_code == ExitCode.REGRESSION
    assert not [note for note in allowed.notes if "lacks" in note], allowed.notes


def test_unpaired_rows_are_matched_by_key_once_not_pair_by_pair(monkeypatch):
    # --allow-missing with thousands of rows that do not pair compared every removed row
    # with every added one, building both keys each time (3000 a side: 38 s)
    from cudabench.cli.compare import judge

    built = []
    key = BenchmarkResult.key

    def counted(self):
        built.append(1)
        return key.fget(self)

    monkeypatch.setattr(BenchmarkResult, "key", property(counted))
    rows = 300
    before = results("base.json", *(bench(TIGHT, params={"TILE": i}) for i in range(rows)))
    after = results("new.json", *(bench(TIGHT * 1.001, params={"TILE": rows + i})
                                  for i in range(rows)))
    with pytest.raises(UsageError, match="no measured kernel in common"):
        judge(before, after, "5%", allow_missing=True)
    assert len(built) < 20 * rows, len(built)


def test_a_current_file_that_names_no_gpu_is_shown_as_recording_none():
    # "GPU NVIDIA H200 ->" with nothing after the arrow, and "current: `c.json` ()"
    from cudabench.render.comparison import summary_text
    from cudabench.render.markdown import to_markdown

    h200 = device("NVIDIA H200")
    base = results("b.json", dataclasses.replace(bench(TIGHT, "tiled"), device=h200))
    judged = compare(base, ResultsFile("c.json", {"complete": False}, (), (), 2), 0.05)
    assert summary_text(judged).endswith("GPU NVIDIA H200 -> no GPU recorded")
    assert "current: `c.json` (no GPU recorded)" in to_markdown(judged)
