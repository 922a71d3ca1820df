"""--best over several GPUs (--devices) on fake engines: a GPU given up during the
head-to-head re-measure."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import invoke

from cudabench.results import Status, load_results

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05", "--no-batch"]
SWEEP = ["dot", "--size", "4096,8192,16384", "--variant", "atomic", "-p", "BLOCK=64,128,256",
         *QUICK, "--no-vendor", "--devices", "all", "--best"]


@pytest.fixture
def lost_in_head_to_head(monkeypatch):
    """Call with GPU indices: those fall off the bus once the sweep is done (the
    head-to-head's fresh workers cannot open them)."""
    from cudabench.cli import best

    def lose(*gpus: int) -> None:
        original = best.choose

        def choose(outcome, plans, spec, *args, **kwargs):
            return original(outcome, plans, dataclasses.replace(spec, lost_devices=gpus),
                            *args, **kwargs)

        monkeypatch.setattr(best, "choose", choose)

    return lose


def test_a_gpu_given_up_in_the_head_to_head_leaves_it_to_one_still_in_the_run(
        use_fake, lost_in_head_to_head, tmp_path):
    # Each later group's contenders came back ERROR ("not run: every chosen GPU was given
    # up"), read as the kernels' own failures and written over their PASS rows.
    use_fake(device_count=2)
    lost_in_head_to_head(0)
    out = tmp_path / "r.json"
    done = invoke(*SWEEP, "--json", out)
    said = " ".join(done.stderr.split())
    assert done.exit_code == 0, done.stderr
    assert ("note: GPU 0 was given up during --best's head-to-head re-measure (a fresh "
            "worker could not open it): its close calls are re-measured on GPU 1") in said
    assert "when measured again head to head" not in said
    assert "chosen on the run's own samples" not in said
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert len(rows) == 9 and {r.status for r in rows} == {Status.PASS}
    assert done.stdout.count("atomic") >= 3  # a winner per size


def test_every_gpu_given_up_in_the_head_to_head_is_said_and_exits_2(
        use_fake, lost_in_head_to_head, tmp_path):
    use_fake(device_count=2)
    lost_in_head_to_head(0, 1)
    out, suite = tmp_path / "r.json", tmp_path / "best.toml"
    done = invoke(*SWEEP, "--json", out, "--best-out", suite, "--markdown",
                  tmp_path / "r.md")
    said = " ".join(done.stderr.split())
    assert done.exit_code == 2, done.stderr
    assert ("GPU 1 was given up during --best's head-to-head re-measure (a fresh worker "
            "could not open it), and no GPU is left") in said
    assert "when measured again head to head" not in said
    # each size whose choice was a close call (re-measured head to head): which are depends
    # on which GPU measured each size, as the run's queue handed them out
    lines = [f"--best: dot/atomic {size} float32: not re-measured head to head: every GPU "
             "was given up (GPU 0, GPU 1): chosen on the run's own samples"
             for size in ("4096", "8192", "16384")]
    said_lines = [line for line in lines if line in said]
    assert said_lines, done.stderr
    assert all(line in (tmp_path / "r.md").read_text() for line in said_lines)
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert len(rows) == 9 and {r.status for r in rows} == {Status.PASS}
    assert "every GPU was given up" in suite.read_text()


def test_a_search_s_head_to_head_moves_off_a_gpu_given_up_in_it(
        use_fake, lost_in_head_to_head, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("cudabench.measure.memory.device_free_bytes", lambda index: None)
    use_fake(device_count=2)
    lost_in_head_to_head(0)
    out = tmp_path / "r.json"
    done = invoke("dot", "--size", "4096,8192", "--variant", "atomic", "-p",
                  "BLOCK=64,128,256", "--best", "--budget", "10", "--devices", "all", *QUICK,
                  "--no-vendor", "--json", out)
    said = " ".join(done.stderr.split())
    assert done.exit_code == 0, done.stderr
    assert "re-measured on GPU 1" in said and "when measured again head to head" not in said
    rows = [r for r in load_results(out).benchmarks if r.variant == "atomic"]
    assert rows and {r.status for r in rows} == {Status.PASS}


def test_the_head_to_head_holds_no_warm_worker_but_its_own_gpu_s(use_fake, monkeypatch):
    # Every GPU's warm worker (a CUDA context each) was held through the head-to-head,
    # which runs on one GPU.
    from cudabench.cli import best

    swept, held = [], []
    choosing, running = best.head_to_head_gpus, best.run_plans

    def head_to_head_gpus(fleet, note):
        swept.append(sorted(fleet.workers))
        return choosing(fleet, note)

    def run_plans(*args, fleet=None, **kwargs):
        held.append(tuple(sorted(fleet.workers)))
        return running(*args, fleet=fleet, **kwargs)

    monkeypatch.setattr(best, "head_to_head_gpus", head_to_head_gpus)
    monkeypatch.setattr(best, "run_plans", run_plans)
    use_fake(device_count=3)
    done = invoke(*SWEEP)
    assert done.exit_code == 0, done.stderr
    assert swept == [[0, 1, 2]]  # the sweep kept one a GPU
    assert held and set(held) == {(0,)}
