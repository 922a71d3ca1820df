"""--profile-time: where a run's wall time went, per phase, printed and kept."""

from __future__ import annotations

import json
import time

from cudabench.analysis.time_profile import time_profile
from cudabench.common.phases import PhaseClock
from cudabench.results.loader import load_results

from helpers import invoke

QUICK = ("--warmup", "0", "--min-samples", "5", "--max-samples", "5", "--no-batch")


def test_nested_phases_count_each_second_once():
    clock = PhaseClock()
    with clock.phase("outer"):
        time.sleep(0.02)
        with clock.phase("inner"):
            time.sleep(0.03)
    totals = clock.take()
    assert 0.015 < totals["outer"] < 0.03  # its own time only, not inner's
    assert 0.025 < totals["inner"] < 0.045
    assert clock.take() == {}  # take starts again from zero


def test_a_run_with_profile_time_keeps_its_phases(use_fake, tmp_path):
    out = tmp_path / "r.json"
    done = invoke("matmul", "--size", "64", *QUICK, "--profile-time", "--json", out)
    assert done.exit_code == 0, done.output
    assert "--profile-time:" in done.stderr and "GPU time in the samples" in done.stderr
    assert "samples" in done.stderr and "worker" in done.stderr
    document = json.loads(out.read_text())
    profile = document["profile"]
    assert profile["wall_s"] > 0 and profile["gpu_sampling_s"] > 0
    assert {"start-up", "planning"} <= set(profile["phases"])
    rows = document["benchmarks"]
    variants = [row for row in rows if row["kind"] == "variant"]
    assert all({"compile", "samples", "verify", "recheck"} <= set(row["phases"])
               for row in variants)
    loaded = load_results(out)  # the loader reads the phases back
    assert loaded.benchmarks[0].phases == rows[0]["phases"]
    # The rows' phases add up to the GPU time in their samples and more.
    profile_back = time_profile(profile["wall_s"], profile["phases"], loaded.benchmarks)
    assert profile_back.gpu_sampling_s == profile["gpu_sampling_s"]
    assert sum(profile_back.rows.values()) >= profile_back.gpu_sampling_s


def test_without_profile_time_the_file_has_no_phases(use_fake, tmp_path):
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "1000", *QUICK, "--json", out)
    assert done.exit_code == 0, done.output
    document = json.loads(out.read_text())
    assert "profile" not in document
    assert all("phases" not in row for row in document["benchmarks"])
    assert "--profile-time" not in done.stderr


def test_a_file_with_bad_phases_is_refused(use_fake, tmp_path):
    out = tmp_path / "r.json"
    assert invoke("dot", "--size", "1000", *QUICK, "--profile-time", "--json", out
                  ).exit_code == 0
    document = json.loads(out.read_text())
    document["benchmarks"][0]["phases"] = {"compile": -1}
    out.write_text(json.dumps(document))
    done = invoke("report", out)
    assert done.exit_code == 2 and "phases.compile" in done.stderr
