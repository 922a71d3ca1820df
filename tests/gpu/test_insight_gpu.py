"""The insight on a real GPU: cuBLAS rows, batches, clock stamps, NVML, counters, energy."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.results import load_results
from cudabench.results.model import Kind, Status

pytestmark = pytest.mark.gpu

QUICK = ["--warmup", "0", "--min-samples", "10", "--max-time", "0.1"]
needs_cupy = pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                                reason="CuPy is not installed (pip install cupy-cuda13x: "
                                "the `vendor` extra)")


def run(tmp_path, *args: str):
    path = tmp_path / "r.json"
    done = CliRunner().invoke(cli, [*args, *QUICK, "--json", str(path)])
    assert done.exit_code == 0, done.output
    return done, {b.variant: b for b in load_results(path).benchmarks}


@needs_cupy
@pytest.mark.parametrize(("args", "unit"), [
    (("matmul", "--size", "333x129x257"), "cuda"),
    (("matmul", "--size", "256", "--dtype", "float16"), "tensor"),
    (("matmul", "--size", "127", "--dtype", "float64"), "tensor"),
    (("transpose", "--size", "300x200"), ""),
    (("transpose", "--size", "97", "--dtype", "float64"), ""),
    (("dot", "--size", "100003"), "cuda"),
    (("dot", "--size", "1000", "--dtype", "float64"), "cuda"),
])
def test_the_cublas_row_is_verified_on_odd_shapes(tmp_path, args, unit):
    done, rows = run(tmp_path, *args)
    cublas = rows["cuBLAS"]
    assert cublas.kind is Kind.VENDOR and cublas.status is Status.PASS, cublas
    assert cublas.unit == unit and cublas.batch_samples_s
    assert "vs cuBLAS" in done.output


def test_a_small_kernel_has_a_batch_time_well_under_its_cold_time(tmp_path):
    _, rows = run(tmp_path, "matmul", "--size", "128", "--variant", "tiled", "--no-vendor")
    tiled = rows["tiled"]
    assert tiled.batch_median_s < 0.8 * tiled.median_s
    assert any(c is not None for c in tiled.sample_clocks_mhz)  # stamps read the SM clock


def test_every_sample_knows_its_clock_and_nvml_is_read(tmp_path):
    _, rows = run(tmp_path, "matmul", "--size", "1024", "--variant", "naive", "--no-vendor")
    naive = rows["naive"]
    clocks = [c for c in naive.sample_clocks_mhz if c is not None]
    assert len(clocks) == len(naive.samples_s)  # 1024^3 takes far longer than a timer tick
    limit = naive.device.settings.get("max_sm_clock_mhz") or naive.device.sm_clock_khz / 1e3
    assert all(0.3 * limit < c < 1.2 * limit for c in clocks)
    if naive.device.settings:  # NVML present
        assert naive.telemetry["polls"] >= 1 and "throttle_reasons" in naive.telemetry


def test_energy_is_measured_where_nvml_has_a_counter(tmp_path):
    done, rows = run(tmp_path, "dot", "--size", "1<<22", "--energy", "1", "--no-vendor")
    energy = rows["atomic"].energy
    if not energy:
        assert "--energy" in done.output  # a warning says why
        return
    assert energy["launches"] > 100 and 20 < energy["joules"] / energy["seconds"] < 1500


def test_writeback_sees_the_dirty_lines_a_transpose_leaves(tmp_path):
    # A 2048^2 float32 transpose writes 16 MB, less than the L2 of the GPUs this runs on
    # (40-60 MB): much of B is still dirty when the kernel ends, for the next flush to
    # write back (16 MB at ~3 TB/s is ~5 us). A copy's output is as large: so is its debt.
    done, rows = run(tmp_path, "transpose", "--size", "2048", "--variant", "vectorized",
                     "--no-vendor", "--no-batch", "--writeback")
    for name in ("vectorized", "memcpy_dtod"):
        row = rows[name]
        assert row.writeback_s is not None and 1e-6 < row.writeback_s < 20e-6, row
        assert len(row.writeback_after_run_s) == len(row.writeback_baseline_s) >= 5
    assert "median + write-back" in done.output


def test_writeback_of_a_kernel_that_only_reads_is_about_zero(tmp_path):
    # The two flushes of a pair differ by what the run left dirty, nothing else: a dot
    # writes one number. (Its partial sums' buffer is a few KB.)
    _, rows = run(tmp_path, "dot", "--size", "1<<24", "--variant", "atomic", "--no-vendor",
                  "--no-batch", "--writeback")
    assert abs(rows["atomic"].writeback_s) < 1.5e-6, rows["atomic"]


@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu (Nsight Compute) is not on PATH")
def test_counters_show_the_seeds_bank_conflicts(tmp_path):
    done, rows = run(tmp_path, "matmul", "--size", "512", "--tile", "16", "--counters",
                     "--variant", "tiled", "--variant", "tiled_conflict", "--no-vendor")
    tiled, conflict = rows["tiled"], rows["tiled_conflict"]
    if not conflict.counters:  # a host where ncu cannot profile: said, and the run went on
        assert conflict.counters_note and "counters:" in done.output
        pytest.skip(f"ncu cannot profile here: {conflict.counters_note}")
    loads = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    assert conflict.counters[loads] > 10 * max(tiled.counters[loads], 1)
    assert conflict.counters["gpu__time_duration.sum"] > 0
    assert conflict.counters_units["gpu__time_duration.sum"] == "nsecond"  # kept, as read


def test_transfers_from_pinned_memory_beat_pageable(tmp_path):
    _, rows = run(tmp_path, "transpose", "--size", "4096", "--variant", "naive", "--transfers",
                  "--no-vendor")
    trip = rows["naive"].transfers
    assert trip["pinned"]["h2d_gbps"] > trip["pageable"]["h2d_gbps"]
