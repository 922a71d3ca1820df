"""The insight a run table gives, driven end to end through the fake engine: vendor rows,
roofs, batch times, SM-clock set-aside, NVML throttling, energy, transfers, card settings."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from cudabench.analysis.compare import compare
from cudabench.catalog import discover
from cudabench.cli import cli
from cudabench.errors import KernelFileError
from cudabench.results import load_results
from cudabench.results.model import Kind, Status

QUICK = ["--warmup", "0", "--min-samples", "8", "--max-time", "0.05"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def run_json(tmp_path, *args: str, name: str = "r.json"):
    path = tmp_path / name
    done = invoke(*args, *QUICK, "--json", str(path))
    assert done.exit_code == 0, done.output
    return done, load_results(path)


def rows(results, kind: Kind | None = None):
    return {b.variant: b for b in results.benchmarks if kind is None or b.kind is kind}


def test_the_vendor_row_is_verified_timed_and_gives_a_vs_column(use_fake, tmp_path):
    done, results = run_json(tmp_path, "matmul", "--size", "40")
    cublas = rows(results)["cuBLAS"]
    assert cublas.kind is Kind.VENDOR and cublas.status is Status.PASS
    assert cublas.verification is not None and cublas.verification.total_elements == 1600
    assert cublas.flops == 2 * 40**3 and len(cublas.samples_s) >= 8
    assert "CUBLAS_COMPUTE_32F (no TF32)" in cublas.source and cublas.unit == "cuda"
    assert "vs cuBLAS" in done.stdout and "no TF32" in done.stdout


@pytest.mark.parametrize(("cc", "unit"), [("8.6", "cuda"), ("7.5", "cuda"), ("8.0", "tensor"),
                                          ("9.0", "tensor")])
def test_a_float64_cublas_row_is_held_to_fp64_tensor_cores_only_where_the_gpu_has_them(
        use_fake, tmp_path, cc, unit):
    use_fake(compute_capability=cc)
    path = tmp_path / "r.json"
    # the fake GPU's FP64 CUDA-core roof is 24 GFLOP/s: its rows there are SUSPECT (exit 3)
    invoke("matmul", "--size", "40", "--dtype", "float64", *QUICK, "--json", str(path))
    cublas = rows(load_results(path))["cuBLAS"]
    assert (cublas.unit, cublas.compute_type) == (unit, "float64")
    if unit == "cuda":
        assert "float64 roof on CUDA cores" in (cublas.suspect or "")


@pytest.mark.parametrize(("args", "says"), [
    (("matmul", "--dtype", "int32"), "cuBLAS has no exact int32 GEMM"),
    (("transpose", "--inplace"), "cuBLAS has no in-place transpose"),
    (("dot", "--dtype", "float16"), "cuBLAS has no float16 dot"),
])
def test_no_vendor_routine_is_a_skip_row_that_says_so(use_fake, tmp_path, args, says):
    done, results = run_json(tmp_path, *args, "--size", "40")
    cublas = rows(results)["cuBLAS"]
    assert cublas.status is Status.SKIP and says in (cublas.skipped or "")
    assert says in done.stdout


def test_without_cupy_the_vendor_row_says_how_to_get_it_and_the_run_passes(use_fake, tmp_path):
    use_fake(vendor_missing=True)
    done, results = run_json(tmp_path, "matmul", "--size", "40")
    assert "pip install 'cupy-cuda13x>=13'" in (rows(results)["cuBLAS"].skipped or "")
    assert "--no-vendor" in done.stdout


def test_no_vendor_drops_the_row(use_fake, tmp_path):
    done, results = run_json(tmp_path, "matmul", "--size", "40", "--no-vendor")
    assert "cuBLAS" not in rows(results) and "vs cuBLAS" not in done.stdout


def test_batch_times_sit_beside_the_cold_ones(use_fake, tmp_path):
    done, results = run_json(tmp_path, "dot", "--size", "1000")
    for row in results.benchmarks:
        assert row.batch_samples_s and row.batch_median_s < row.median_s, row.variant
    assert "batch (warm)" in done.stdout and "blocking kernel" in done.stdout
    _, plain = run_json(tmp_path, "dot", "--size", "1000", "--no-batch", name="p.json")
    assert not any(row.batch_samples_s for row in plain.benchmarks)


def test_samples_at_a_slow_sm_clock_are_set_aside_and_counted(use_fake, tmp_path):
    use_fake(slow_clock_every=4)
    done, results = run_json(tmp_path, "transpose", "--size", "64", "--variant", "naive",
                             "--no-vendor")
    naive = rows(results)["naive"]
    assert naive.slow_clock_samples_s and len(naive.sample_clocks_mhz) == len(naive.samples_s)
    assert all(clock >= 0.75 * 1500 for clock in naive.sample_clocks_mhz if clock)
    assert min(naive.slow_clock_samples_s) > naive.median_s  # the slow ones ran slower
    assert "set aside" in done.stderr + done.stdout

def test_slow_samples_kept_for_too_few_fast_ones_are_counted(use_fake, tmp_path):
    # 4 of 8 samples at half the clock: too few fast ones to set them aside, so all were
    # kept, the median between the two clusters, and no warning (the median clock, exactly
    # 75%, was not below it) and a slow-clock share of 0
    use_fake(slow_clock_every=2)
    done = invoke("transpose", "--size", "64", "--variant", "naive", "--no-vendor",
                  "--warmup", "0", "--min-samples", "8", "--max-samples", "8", "--no-batch",
                  "--json", str(tmp_path / "r.json"))
    assert done.exit_code == 0, done.output
    naive = rows(load_results(tmp_path / "r.json"))["naive"]
    assert len(naive.samples_s) == 8 and not naive.slow_clock_samples_s
    assert ("4 of 8 samples ran below 75% of the maximum SM clock and were kept, as fewer "
            "than 5 would remain without them: the median mixes the two clocks") \
        in " ".join(naive.warnings), naive.warnings
    assert naive.slow_clock_share == 0.5 and len(naive.slow_kept_samples_s) == 4
    # the table's NVML line counts them too (it counted those set aside alone)
    assert "sample(s) below 75% of the max SM clock kept" in " ".join(done.stdout.split())


def test_the_warnings_are_of_the_samples_kept_not_those_set_aside(use_fake, tmp_path):
    # "noisy ... (spread 30%)" and a median the table does not show, beside a row of ±0.7%
    use_fake(slow_clock_every=2)
    # at least 20 samples, half of them slow: under QUICK's 8 in 0.05 s a loaded machine
    # took as few as 9, none set aside (fewer than 5 would be left), and the test failed
    done = invoke("transpose", "--size", "64", "--variant", "naive", "--no-vendor",
                  "--warmup", "0", "--min-samples", "20", "--max-time", "0.1",
                  "--json", str(tmp_path / "r.json"))
    assert done.exit_code == 0, done.output
    naive = rows(load_results(tmp_path / "r.json"))["naive"]
    assert len(naive.slow_clock_samples_s) > 5
    assert not any(w.startswith("noisy:") for w in naive.warnings), naive.warnings
    said = [w for w in naive.warnings if "close to launch overhead" in w]
    assert said and f"median {naive.median_s * 1e6:.1f} us" in said[0], said


def test_a_throttled_gpu_is_said_in_the_warnings_and_the_footer(use_fake, tmp_path):
    use_fake(throttle=True)
    done, results = run_json(tmp_path, "dot", "--size", "1000", "--no-vendor")
    atomic = rows(results)["atomic"]
    assert "sw power cap" in atomic.telemetry["throttle_reasons"]
    assert any("throttled" in w for w in atomic.warnings)
    assert "THROTTLED" in done.stdout


def test_the_roofs_give_percent_of_peak_and_the_bound(use_fake, tmp_path):
    done, results = run_json(tmp_path, "matmul", "--size", "64")
    assert "% of peak" in done.stdout and "compute" in done.stdout
    assert "roofs: DRAM" in done.stdout and "per-SM rates" in done.stdout
    assert rows(results)["naive"].compute_type == "float32"


def test_energy_is_a_separate_pass_in_joules_per_launch(use_fake, tmp_path):
    done, results = run_json(tmp_path, "dot", "--size", "1000", "--energy", "0.2",
                             "--no-vendor")
    energy = rows(results)["atomic"].energy
    assert energy["launches"] > 10 and 0.15 < energy["seconds"] < 1.0
    # The fake board draws 250 W: the pass's joules follow from its length.
    assert energy["joules"] / energy["seconds"] == pytest.approx(250, rel=0.2)
    assert "energy/launch" in done.stdout and "GFLOP/J" in done.stdout
    # NVML's counter steps every ~100 ms: a pass this short is kept, with a warning
    assert "--energy 0.2: NVML's energy counter moves about every 100 ms" in done.stderr
    assert any("off by tens of percent" in w for w in rows(results)["atomic"].warnings)


def test_an_energy_pass_longer_than_the_timeout_is_not_a_timeout(use_fake, tmp_path):
    # the watchdog counted the pass in --timeout: a right kernel's row became TIMEOUT
    done, results = run_json(tmp_path, "dot", "--size", "1000", "--variant", "atomic",
                             "--energy", "1.5", "--timeout", "1", "--no-vendor")
    assert done.exit_code == 0, done.stderr
    assert rows(results)["atomic"].energy["seconds"] > 1.0
    assert "--energy 1.5" not in done.stderr  # long enough: no warning


def test_energy_without_nvml_warns_and_the_run_passes(use_fake, tmp_path):
    use_fake(no_monitor=True)
    done, results = run_json(tmp_path, "dot", "--size", "1000", "--energy", "--no-vendor")
    assert not rows(results)["atomic"].energy
    assert "--energy: no NVML" in done.stderr


@pytest.mark.parametrize("value", ["0", "abc", "nan", "inf"])
def test_a_bad_energy_duration_is_a_usage_error(use_fake, value):
    done = invoke("dot", f"--energy={value}")
    assert done.exit_code == 2 and "--energy" in done.stderr and "Traceback" not in done.output


def test_writeback_times_the_flush_after_each_row_and_charges_it(use_fake, tmp_path):
    # The fake leaves 5% of a run's time as dirty lines: at 2048^2 that is microseconds,
    # well past the noise of its 40 us flushes.
    done, results = run_json(tmp_path, "transpose", "--size", "2048", "--writeback",
                             "--variant", "vectorized", "--no-batch", "--no-vendor")
    timed = [r for r in results.benchmarks if r.samples_s]
    assert {r.variant for r in timed} == {"vectorized", "memcpy_dtod"}
    for row in timed:
        pairs = len(row.writeback_after_run_s)
        assert 5 <= pairs <= 21 and len(row.writeback_baseline_s) == pairs, row.variant
        assert row.writeback_s is not None and row.writeback_s > 0, row.variant
    assert "write-back" in done.stdout and "median + write-back" in done.stdout
    assert "off their clock" in done.stdout


def test_writeback_pools_over_rounds_and_is_off_by_default(use_fake, tmp_path):
    _, results = run_json(tmp_path, "transpose", "--size", "256", "--writeback", "--rounds",
                          "2", "--variant", "naive", "--no-vendor", "--no-batch")
    naive = rows(results)["naive"]
    assert naive.rounds == 2 and len(naive.writeback_after_run_s) >= 2 * 5
    done, plain = run_json(tmp_path, "transpose", "--size", "256", "--variant", "naive",
                           "--no-vendor", name="plain.json")
    assert rows(plain)["naive"].writeback_s is None and "write-back" not in done.stdout


def test_writeback_with_hot_is_a_usage_error(use_fake):
    done = invoke("transpose", "--hot", "--writeback")
    assert done.exit_code == 2 and "--writeback with --hot" in done.stderr
    assert "Traceback" not in done.output


def test_a_suite_s_hot_entries_take_no_writeback_pass(use_fake, tmp_path):
    # the whole suite was refused for an entry's `hot = true`, which no flag can drop
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[timing]\nwarmup = 0\nmin_samples = 8\nmax_time = 0.05\n\n'
                     '[[benchmark]]\nop = "transpose"\nsize = "256"\nvariants = ["naive"]\n\n'
                     '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = ["atomic"]\n'
                     'hot = true\n')
    path = tmp_path / "r.json"
    done = invoke("run", str(suite), "--writeback", "--no-vendor", "--no-batch", "--json",
                  str(path))
    assert done.exit_code == 0, done.output
    naive, atomic = rows(load_results(path))["naive"], rows(load_results(path))["atomic"]
    assert naive.writeback_s is not None and atomic.hot and atomic.writeback_s is None


def test_a_row_too_slow_for_the_writeback_pass_says_so(use_fake, tmp_path):
    # 5 pairs of a 60 ms kernel would outlast the pass's budget, for a write-back of tens
    # of microseconds: not timed, and the row says why
    use_fake(slowdown={"naive": 20000.0})
    done, results = run_json(tmp_path, "transpose", "--size", "256", "--variant", "naive",
                             "--writeback", "--no-vendor", "--no-batch")
    naive = rows(results)["naive"]
    assert naive.median_s > 0.05 and naive.writeback_s is None
    assert "--writeback: not timed beside a median of" in " ".join(done.stderr.split())


def test_transfers_time_each_phase_and_pinned_beats_pageable(use_fake, tmp_path):
    done, results = run_json(tmp_path, "transpose", "--size", "256", "--transfers",
                             "--no-vendor", "--variant", "naive")
    trip = rows(results)["naive"].transfers
    assert trip["pinned"]["h2d_gbps"] > trip["pageable"]["h2d_gbps"]
    assert trip["pinned"]["d2h_bytes"] == 256 * 256 * 4
    assert trip["end_to_end_s"] > trip["kernel_s"] > 0
    assert "H2D pinned GB/s" in done.stdout and "link's peak" in done.stdout


def test_the_csv_keeps_the_transfers_and_the_sm_clock(use_fake, tmp_path):
    # the tables showed each copy's GB/s, the GPU trip and the SM MHz; the CSV lacked them
    import csv
    import io

    table = tmp_path / "r.csv"
    _, results = run_json(tmp_path, "transpose", "--size", "256", "--transfers",
                          "--no-vendor", "--variant", "naive", "--csv", str(table))
    row = next(r for r in csv.DictReader(io.StringIO(table.read_text(encoding="utf-8")))
               if r["variant"] == "naive")
    trip = rows(results)["naive"]
    assert float(row["h2d_pinned_gbps"]) == trip.transfers["pinned"]["h2d_gbps"]
    assert float(row["d2h_pageable_gbps"]) == trip.transfers["pageable"]["d2h_gbps"]
    assert float(row["end_to_end_s"]) == trip.transfers["end_to_end_s"]
    assert float(row["sm_mhz"]) > 0 and trip.sample_clocks_mhz
    plain = tmp_path / "plain.csv"
    run_json(tmp_path, "transpose", "--size", "64", "--no-vendor", "--csv", str(plain),
             name="plain.json")
    assert "h2d_pinned_gbps" not in plain.read_text(encoding="utf-8")  # none asked for


def test_counters_without_ncu_is_a_usage_error_before_any_work(use_fake, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path))
    monkeypatch.setattr("cudabench.observers.toolkit.CUDA_HOME", tmp_path)
    monkeypatch.setattr("cudabench.observers.ncu.NSIGHT_ROOTS", ())
    done = invoke("matmul", "--size", "40", "--counters")
    assert done.exit_code == 2 and "ncu" in done.stderr and "--counters" in done.stderr


def test_a_bad_metric_name_is_a_usage_error(use_fake):
    done = invoke("matmul", "--counters", "sm__throughput;rm -rf /")
    assert done.exit_code == 2 and "--counters" in done.stderr


def test_compare_says_when_the_cards_differ(use_fake, tmp_path):
    _, first = run_json(tmp_path, "dot", "--size", "1000", "--no-vendor", name="a.json")
    data = json.loads((tmp_path / "a.json").read_text())
    data["devices"][0]["settings"]["power_limit_w"] = 300.0
    for row in data["benchmarks"]:  # another run, not a copy of the first (nor of a row)
        row["samples_s"] = [s * 1.001 for s in row["samples_s"]]
    (tmp_path / "b.json").write_text(json.dumps(data))
    comparison = compare(first, load_results(tmp_path / "b.json"))
    assert comparison.setting_changes == ("power limit (W): 350.0 -> 300.0",)
    done = invoke("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert "the card differs: power limit (W): 350.0 -> 300.0" in done.stdout


def test_every_new_field_survives_the_file(use_fake, tmp_path):
    _, results = run_json(tmp_path, "transpose", "--size", "64", "--transfers", "--energy",
                          "0.1", name="all.json")
    again = load_results(tmp_path / "all.json")
    for before, after in zip(results.benchmarks, again.benchmarks):
        for field in ("batch_samples_s", "sample_clocks_mhz", "telemetry", "energy",
                      "transfers", "unit", "compute_type", "skipped"):
            assert getattr(before, field) == getattr(after, field), field
    assert again.devices[0].settings["max_sm_clock_mhz"] == 1500


def test_a_header_may_declare_its_unit(tmp_path):
    source = (discover()["matmul"]["naive"].path.read_text()
              .replace("// cudabench: matmul", "// cudabench: matmul\n// unit: tensor"))
    (tmp_path / "mma.cu").write_text(source)
    assert discover([tmp_path])["matmul"]["mma"].unit == "tensor"
    (tmp_path / "mma.cu").write_text(source.replace("unit: tensor", "unit: warp"))
    with pytest.raises(KernelFileError, match="unit must be one of cuda, tensor"):
        discover([tmp_path])


def test_a_tensor_row_is_held_to_the_tensor_roof(use_fake):
    from cudabench.insight import roofs
    from cudabench.engines.fake_engine import FAKE_DEVICE
    from cudabench.results.model import BenchmarkResult

    h100 = dataclasses.replace(FAKE_DEVICE, sm_count=132, sm_clock_khz=1_980_000)
    row = BenchmarkResult(op="matmul", variant="mma", params={}, shape=(4096,) * 3,
                          dims=("M", "K", "N"), dtype="float16", hot=False,
                          samples_s=(2 * 4096**3 / 700e12,) * 5, flops=2 * 4096**3,
                          bytes_moved=3 * 4096**2 * 2, device=h100, unit="tensor",
                          compute_type="float16")
    assert roofs.suspect(row, "float16", "tensor") is None
    assert roofs.suspect(row, "float32", "cuda") is not None


def test_the_footer_says_how_the_l2_was_flushed(use_fake, tmp_path):
    clean = CliRunner().invoke(cli, ["dot", "--size", "1000", "--no-vendor"])
    assert clean.exit_code == 0
    assert "cold L2 (flushed by reading twice its size)" in " ".join(clean.stdout.split())
    memset = CliRunner().invoke(cli, ["dot", "--size", "1000", "--no-vendor", "--no-batch",
                                      "--l2-flush", "memset"])
    assert memset.exit_code == 0
    assert "cold L2: flushed by a memset of twice its size, as nvbench does" in " ".join(
        memset.stdout.split())


def test_a_small_work_per_joule_keeps_its_digits():
    # a small input's GFLOP/J rounded to "0.0"
    from cudabench.render.insight import detail_columns
    from cudabench.results.model import BenchmarkResult

    row = BenchmarkResult(op="dot", variant="atomic", params={}, shape=(1000,), dims=("N",),
                          dtype="float32", hot=False, samples_s=(1e-5,) * 5, flops=2000,
                          energy={"joules": 0.5, "launches": 1000.0, "seconds": 0.01})
    cells = {c.title: c.cell(row) for c in detail_columns([row])}
    assert cells["GFLOP/J"] == "0.004", cells


def test_a_small_rate_or_ratio_keeps_two_significant_digits(use_fake, tmp_path):
    # dot of one element read "GFLOP/s 0.0", "GB/s 0.0", "% of peak 0.0%" on every row
    from cudabench.render.run_table import build_tables
    from cudabench.results.model import RunOutcome

    _, results = run_json(tmp_path, "dot", "--size", "1")
    table = build_tables(RunOutcome(tuple(results.benchmarks)))[0]
    for row, r in zip(table.rows, results.benchmarks):
        cells = {name: cell.text for name, cell in zip(table.columns, row)}
        if r.gflops:
            assert float(cells["GFLOP/s"]) == pytest.approx(r.gflops, rel=0.05), cells
        assert float(cells["GB/s"]) == pytest.approx(r.gbps, rel=0.05), cells
        if cells["% of peak"] != "-":
            assert float(cells["% of peak"].rstrip("%")) > 0, cells


def test_a_small_comparison_keeps_its_digits_an_ordinary_one_its_decimals():
    # a true 0.0059x read "0.01x" (70% off) on an H200
    from cudabench.render.run_table import comparators
    from cudabench.results.model import BenchmarkResult

    def row(variant, kind, median):
        return BenchmarkResult(op="matmul", variant=variant, params={}, shape=(8, 8, 8),
                               dims=("M", "K", "N"), dtype="float16", hot=False,
                               samples_s=(median,) * 3, kind=kind)

    columns = {c.title: c for c in comparators([row("cuBLAS", Kind.VENDOR, 1e-4),
                                                row("memcpy_dtod", Kind.REFERENCE, 2e-6)])}
    assert columns["vs cuBLAS"].format(1e-4, 1.7e-2) == "0.0059x"
    assert columns["% of memcpy_dtod"].format(2e-6, 1.7e-2) == "0.012%"
    assert columns["vs cuBLAS"].format(1e-4, 0.81e-4) == "1.23x"
    assert columns["% of memcpy_dtod"].format(2e-6, 2.5e-6) == "80.0%"


def test_format_amount_keeps_ordinary_values_as_they_were():
    from cudabench.common.units import format_amount

    assert format_amount(12345.67) == "12,345.7" and format_amount(1.0) == "1.0"
    assert format_amount(0.00031) == "0.00031" and format_amount(0.5) == "0.50"
    assert format_amount(1234.5, 2, grouped=False) == "1234.50"


def test_a_small_counter_or_transfer_rate_keeps_its_digits():
    # an SM % of 0.031 read "0.0", as did a one-element copy's GB/s and its trip's speedup
    from cudabench.render.insight import detail_columns
    from cudabench.results.model import BenchmarkResult

    metric = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    row = BenchmarkResult(op="dot", variant="atomic", params={}, shape=(1,), dims=("N",),
                          dtype="float32", hot=False, samples_s=(1e-5,) * 5, flops=2,
                          counters={metric: 0.031},
                          transfers={"pinned": {"h2d_gbps": 0.00042}, "end_to_end_s": 1e-3,
                                     "cpu_reference_s": 2e-5})
    cells = {c.title: c.cell(row) for c in detail_columns([row])}
    assert "0.031" in [cells[title] for title in cells if title not in ("min", "max")], cells
    assert cells["H2D pinned GB/s"] == "0.00042", cells
    assert cells["GPU trip (vs CPU ref)"].endswith("(0.020x)"), cells


def test_int32_work_is_headed_in_operations_not_flops(use_fake, tmp_path):
    # int32 matmul's column read GFLOP/s (and GFLOP/J), its roof in the footer INT32 TOPS
    from cudabench.render.fit import fit
    from cudabench.render.run_table import build_tables
    from cudabench.results.model import RunOutcome

    done, results = run_json(tmp_path, "matmul", "--size", "64", "--dtype", "int32",
                             "--energy", "0.1", "--no-vendor")
    assert "GOP/J" in done.stdout and "GFLOP" not in done.stdout
    table, details = build_tables(RunOutcome(tuple(results.benchmarks)))[:2]
    assert table.rate == "GOP/s" and "GOP/s" in table.columns and "GOP/J" in details.columns
    # ranked as the table's rate: kept before GB/s, as GFLOP/s is
    keep = fit(table.columns, [[c.text for c in row] for row in table.rows], 60, table.rate)
    assert "GOP/s" in [table.columns[i] for i in keep.kept]
    # only the display: the results file keeps its field names
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert all("gflops" in b["throughput"] for b in saved["benchmarks"])
    _, floats = run_json(tmp_path, "matmul", "--size", "64", "--energy", "0.1",
                         "--no-vendor", name="f.json")
    assert build_tables(RunOutcome(tuple(floats.benchmarks)))[0].rate == "GFLOP/s"


def test_a_table_of_int32_and_float_rows_is_headed_in_operations():
    # GOP/s stays true of FLOPs too; GFLOP/s would not of int32's
    from cudabench.render.insight import work_unit
    from cudabench.results.model import BenchmarkResult

    def row(dtype, compute_type=""):
        return BenchmarkResult(op="matmul", variant="naive", params={}, shape=(8, 8, 8),
                               dims=("M", "K", "N"), dtype=dtype, hot=False, flops=1024,
                               compute_type=compute_type)

    assert work_unit([row("float32"), row("float16", "float32")]) == "GFLOP"
    assert work_unit([row("int32")]) == work_unit([row("float32"), row("int32")]) == "GOP"
