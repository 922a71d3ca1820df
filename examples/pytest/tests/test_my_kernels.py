"""This project's kernels, checked and timed by cudabench's pytest plugin.

    pytest                                         # verify and time; skips without a GPU
    pytest --cudabench-json now.json               # every row of the session in one file
    pytest --cudabench-compare base.json           # fail the session on a regression
"""

from __future__ import annotations

from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"  # kernels/dot/probe.cu


def test_probe_is_as_fast_as_the_builtin_atomic(cudabench):
    # A FAIL row (a wrong result) fails this test with the row's message.
    results = cudabench.run("dot", variants=["atomic", "probe"], size="1<<24",
                            kernels_dir=KERNELS)
    probe, atomic = results.row("probe"), results.row("atomic")
    # The same reads and the same reduction: the probe is within 10% of atomic.
    assert probe.median_s < 1.10 * atomic.median_s, results


def test_tiled_matmul(cudabench):
    results = cudabench.run("matmul", variants=["naive", "tiled"], size=1024)
    # Shared-memory tiles beat the naive kernel on any GPU of the last ten years.
    assert results.row("tiled").median_s < results.row("naive").median_s, results


@pytest.mark.cudabench_sweep(size=[512, 2048], TILE=[16, 32])
def test_tiled_sweep(cudabench, cudabench_point):
    # One test per point (size:512-TILE:16, ...); each checks the result and keeps the rows.
    cudabench.run("matmul", variants=["tiled"], vendor=False, **cudabench_point)
