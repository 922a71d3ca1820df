"""The Python API's measurements beyond the samples on a real GPU: counters, energy,
transfers, the full check and compute-sanitizer, asked for as run()'s arguments."""

from __future__ import annotations

import shutil

import pytest

import cudabench as cb
from cudabench.results.model import Status

pytestmark = pytest.mark.gpu

FAST = cb.TimingPolicy(warmup_s=0.0, min_samples=10, max_time_s=0.1)


def test_run_measures_energy_and_transfers_with_the_full_check():
    results = cb.run("transpose", variants="shared", size=2048, vendor=False, timing=FAST,
                     energy=0.5, transfers=True, full_check=True)
    row = results.row("shared")
    assert row.status is Status.PASS
    assert row.transfers["pinned"]["h2d_gbps"] > row.transfers["pageable"]["h2d_gbps"] > 0
    if row.energy:  # a board without NVML's energy counter says so in a warning instead
        assert row.energy["launches"] > 10 and row.energy["joules"] > 0
    record = next(r for r in results.to_records() if r["variant"] == "shared")
    assert record["bound"] == "memory" and 0 < record["pct_of_peak"] <= 100


@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu (Nsight Compute) is not on PATH")
def test_run_reads_the_counters_it_is_given():
    metric = "launch__registers_per_thread"
    results = cb.run("matmul", variants="tiled", size=256, vendor=False, timing=FAST,
                     counters=[metric])
    row = results.row("tiled")
    if not row.counters:  # a host where ncu cannot profile (gVisor): said, the run went on
        assert row.counters_note
        pytest.skip(f"ncu cannot profile here: {row.counters_note}")
    assert row.counters[metric] > 0 and "--counters=" + metric in results.command


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None,
                    reason="compute-sanitizer is not on PATH")
def test_run_sanitizes_the_checked_launch():
    results = cb.run("matmul", variants="tiled", size=64, vendor=False, timing=FAST,
                     sanitize=True)
    row = results.row("tiled")
    assert row.status is Status.PASS, row.error
    assert any("compute-sanitizer memcheck" in w for w in row.warnings), row.warnings
