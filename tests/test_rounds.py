"""--rounds: each benchmark's rows measured in alternating rounds, on buffers placed afresh,
and pooled into one row per benchmark (jobs, the spacer, the pooling, the file, the CLI)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import statistics

import pytest
from helpers import invoke

from cudabench.engines.fake_engine import FakeEngine, FakeSpec
from cudabench.engines.fake_kernels import Fault
from cudabench.measure.jobs import jobs_of
from cudabench.measure.memory import need
from cudabench.measure.placement import MAX_BYTES, STEP, STEPS, Spacer, spacer_bytes
from cudabench.planning.plan import Request, make_plan
from cudabench.planning.timing import TimingPolicy
from cudabench.results import load_results
from cudabench.results.model import BenchmarkResult, Kind, Status, Verification
from cudabench.results.rounds import pool_all, pooled
from cudabench.results.schema import validate
from cudabench.results.writer import ResultsWriter
from cudabench.runner.execute import run_jobs
from cudabench.runner.pipeline import run_plans

QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05", "--no-batch"]


def plan_of(rounds: int, size: str = "64", **fields: object):
    return make_plan(Request(op="transpose", size=size, variants=("naive", "shared"),
                             timing=TimingPolicy(rounds=rounds), **fields))  # type: ignore


def names(jobs) -> list[tuple[int, str]]:
    return [(job.round, job.name) for job in jobs]


def test_one_round_is_the_plain_job_list():
    jobs = jobs_of([plan_of(1)])
    assert names(jobs) == [(0, "naive"), (0, "shared"), (0, "cuBLAS"), (0, "memcpy_dtod")]


def test_rounds_alternate_their_order_within_each_benchmark():
    jobs = jobs_of([plan_of(3), plan_of(2, size="32")])
    forward = ["naive", "shared", "cuBLAS", "memcpy_dtod"]
    assert names(jobs) == (
        [(0, n) for n in forward] + [(1, n) for n in forward[::-1]]
        + [(2, n) for n in forward]
        + [(0, n) for n in forward] + [(1, n) for n in forward[::-1]])
    assert [job.plan_index for job in jobs[-8:]] == [1] * 8


def test_a_search_configuration_is_measured_once():
    plan = dataclasses.replace(plan_of(4), tuning=True)
    assert names(jobs_of([plan])) == [(0, "naive"), (0, "shared")]


@pytest.mark.parametrize("rounds", [0, -1, 101])
def test_rounds_out_of_range_is_a_usage_error(rounds):
    result = invoke("transpose", "--size", "64", "--rounds", str(rounds))
    assert result.exit_code == 2
    assert "--rounds must be a whole number from 1 to 100" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_rounds_with_best_is_a_usage_error():
    result = invoke("transpose", "--size", "64", "--best", "--rounds", "3")
    assert result.exit_code == 2
    assert "use it without --rounds" in result.stderr


@pytest.mark.parametrize("value, message", [
    ("2.5", "expected a whole number"),
    ("0", "timing.rounds must be a whole number from 1 to 100")])
def test_a_suite_s_rounds_are_checked(tmp_path, value, message):
    suite = tmp_path / "cudabench.toml"
    suite.write_text(f'[timing]\nrounds = {value}\n\n[[benchmark]]\nop = "dot"\nsize = "1024"\n')
    result = invoke("run", suite, "--dry-run")
    assert result.exit_code == 2
    assert message in result.stderr


def test_each_later_round_holds_a_spacer_of_its_own_size():
    engine = FakeEngine(FakeSpec())
    spacer = Spacer()
    spacer.move(engine, 0)
    assert engine.allocated_bytes == 0  # the first round runs where memory is
    spacer.move(engine, 1)
    first = engine.allocated_bytes
    assert first == spacer_bytes(1, engine.info.memory_bytes) > 0
    spacer.move(engine, 1)  # the same round: the same spacer
    assert engine.allocated_bytes == first
    spacer.move(engine, 2)
    assert engine.allocated_bytes == spacer_bytes(2, engine.info.memory_bytes) != first
    spacer.release(engine)
    assert engine.allocated_bytes == 0


def test_spacer_sizes_differ_for_8_rounds_in_a_row_and_stay_a_small_share_of_memory():
    h100 = 80 * 2**30
    for first in (1, 5, 9):
        sizes = [spacer_bytes(r, h100) for r in range(first, first + STEPS)]
        assert sorted(sizes) == [k * STEP for k in range(1, STEPS + 1)]
    assert spacer_bytes(0, h100) == 0
    assert max(spacer_bytes(r, h100) for r in range(1, 20)) == MAX_BYTES
    small = [spacer_bytes(r, 2**30) for r in range(1, STEPS + 1)]
    assert len(set(small)) == STEPS and max(small) <= 2**30 // 256


def test_the_memory_check_counts_the_spacer():
    plain, rounds = plan_of(1, size="1024"), plan_of(3, size="1024")
    assert need(rounds).device_bytes == need(plain).device_bytes + MAX_BYTES
    ab_round = dataclasses.replace(plain, placement=2)  # ab's rounds sit behind it too
    assert need(ab_round).device_bytes == need(rounds).device_bytes


def test_a_spacer_that_does_not_fit_is_left_out():
    engine = FakeEngine(FakeSpec(memory_bytes=2**20))
    engine.allocated_bytes = engine.spec.memory_bytes  # the GPU is full
    spacer = Spacer()
    spacer.move(engine, 1)  # no error: the round runs without it
    assert engine.allocated_bytes == engine.spec.memory_bytes
    spacer.release(engine)
    assert engine.allocated_bytes == engine.spec.memory_bytes


def test_each_round_s_buffers_are_allocated_behind_its_spacer():
    engine = FakeEngine(FakeSpec())
    sizes: list[int] = []
    allocate = engine.allocate
    engine.allocate = lambda nbytes: sizes.append(nbytes) or allocate(nbytes)  # type: ignore
    plans = [plan_of(3)]
    rows = run_jobs(plans, jobs_of(plans), engine)
    memory = engine.info.memory_bytes
    spacers = [spacer_bytes(r, memory) for r in (1, 2)]
    assert [size for size in sizes if size in spacers] == spacers  # one each, in order
    first_spacer = sizes.index(spacers[0])
    assert any(size > 64 * 64 for size in sizes[first_spacer + 1:])  # a round's buffers
    assert [r.round_index for r in rows] == [0] * 4 + [1] * 4 + [2] * 4
    assert engine.allocated_bytes == 0  # the spacer is freed with the rest


def test_a_failed_row_is_not_run_again_in_later_rounds():
    engine = FakeEngine(FakeSpec(faults={"shared": Fault.WRONG_ELEMENT}))
    plans = [plan_of(3)]
    compiled: list[str] = []
    compile_ = engine.compile
    engine.compile = lambda variant, *a, **k: compiled.append(variant.name) or compile_(  # type: ignore
        variant, *a, **k)
    rows = run_jobs(plans, jobs_of(plans), engine)
    shared = [r for r in rows if r.variant == "shared"]
    assert [r.status for r in shared] == [Status.FAIL] * 3
    assert compiled.count("shared") == 1 and compiled.count("naive") == 3
    result = pooled(shared)
    assert result.status is Status.FAIL and result.rounds == 3
    assert any("not measured again" in w for w in result.warnings)


def _on_one_gpu(plans, spec):
    return run_plans(plans, spec).results


def _on_devices(plans, spec):
    from cudabench.runner.devices import Slot

    return run_plans(plans, spec, devices=[Slot(0, "0")]).results


def _in_a_ray_actor(plans, spec):
    """The Ray actor's loop (GpuRunner._run) without Ray: its worker, its units."""
    from cudabench.runner import workers
    from cudabench.runner.gpus import units_of
    from cudabench.runner.ray_cluster import GpuRunner

    runner = object.__new__(GpuRunner)
    runner.units = units_of(plans, jobs_of(plans))
    runner.worker = workers.Worker(spec, plans)
    try:
        return runner._run(0)[0]
    finally:
        runner.worker.close()


@pytest.mark.parametrize("run", [_on_one_gpu, _on_devices, _in_a_ray_actor])
def test_after_a_worker_dies_its_job_s_later_rounds_are_not_run(monkeypatch, run):
    from cudabench.runner import workers

    starts = []
    start = workers.Worker._start
    monkeypatch.setattr(workers.Worker, "_start",
                        lambda self: starts.append(1) or start(self))
    results = run([plan_of(3)], FakeSpec(faults={"shared": Fault.KILLS_WORKER}))
    shared = [r for r in results if r.variant == "shared"]
    assert len(shared) == 3 and all(r.status is Status.ERROR for r in shared)
    assert len(starts) == 2  # the first worker, and one after the only death
    naive = [r for r in results if r.variant == "naive"]
    assert [r.status for r in naive] == [Status.PASS] * 3


def row(samples, variant="v", status=Status.PASS, warnings=(), **fields) -> BenchmarkResult:
    passed = status is Status.PASS
    verification = Verification(passed, 0.0 if passed else 1.0, 0.0, 0 if passed else 3, 64,
                                "test")
    return BenchmarkResult(op="dot", variant=variant, params={}, shape=(64,), dims=("N",),
                           dtype="float32", hot=False, samples_s=tuple(samples),
                           verification=verification, warnings=tuple(warnings), **fields)


def test_pooling_keeps_every_round_s_samples_and_each_round_s_median():
    rounds = [row([1.0, 2.0, 3.0]), row([4.0, 5.0]), row([6.0])]
    result = pooled(rounds)
    assert result.samples_s == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert result.round_medians_s == (2.0, 4.5, 6.0)
    assert result.rounds == 3
    assert result.median_s == statistics.median(result.samples_s)
    assert result.status is Status.PASS


def test_a_round_that_failed_is_the_row_shown():
    rounds = [row([1.0]), row([1.1], status=Status.FAIL), row([1.2])]
    result = pooled(rounds)
    assert result.status is Status.FAIL
    assert result.rounds == 3
    assert any("round 2 of 3" in w for w in result.warnings)
    # round 3 repeats round 2's row unmeasured: it has no median of its own
    assert result.round_medians_s == (1.0, 1.1)


def test_a_warning_says_which_rounds_gave_it_and_keeps_the_first_one_s_numbers():
    rounds = [row([1.0], warnings=("median 6.8 us is close", "other")),
              row([1.0], warnings=("median 6.9 us is close", "new"))]
    assert pooled(rounds).warnings == ("in every round (round 1's numbers): median 6.8 us "
                                       "is close", "in round 1 of 2: other",
                                       "in round 2 of 2: new")


def test_telemetry_covers_every_round():
    first = row([1.0], telemetry={"sm_clock_mhz": {"min": 1900, "max": 1980},
                                  "temperature_c": 40, "power_w": 200.0, "polls": 3,
                                  "throttle_reasons": [], "power_violation_s": None})
    second = row([1.0], telemetry={"sm_clock_mhz": {"min": 1500, "max": 1980},
                                   "temperature_c": 55, "power_w": 300.0, "polls": 2,
                                   "throttle_reasons": ["sw power cap"],
                                   "power_violation_s": None})
    merged = pooled([first, second]).telemetry
    assert merged["sm_clock_mhz"] == {"min": 1500, "max": 1980}
    assert merged["temperature_c"] == 55 and merged["power_w"] == 250.0
    assert merged["polls"] == 5 and merged["throttle_reasons"] == ["sw power cap"]
    assert merged["power_violation_s"] is None


def test_clocks_are_kept_only_when_every_round_has_them():
    with_clocks = row([1.0, 2.0], sample_clocks_mhz=(1980.0, 1980.0))
    assert pooled([with_clocks, with_clocks]).sample_clocks_mhz == (1980.0,) * 4
    assert pooled([with_clocks, row([3.0])]).sample_clocks_mhz == ()


def test_rows_pool_by_round_in_first_seen_order():
    copy = dataclasses.replace(row([9.0], variant="copy"), kind=Kind.REFERENCE,
                               verification=None)
    again = {"round_index": 1}
    rows = [row([1.0]), copy, dataclasses.replace(copy, **again),
            row([2.0], round_index=1), row([5.0], variant="w")]
    pooled_rows = pool_all(rows)
    assert [(r.variant, r.rounds) for r in pooled_rows] == [("v", 2), ("copy", 2), ("w", 1)]
    assert pooled_rows[1].status is Status.REF


def test_rows_of_a_first_round_are_never_pooled_together():
    # a sweep's SKIP rows (no job measured them) and two suite entries of one benchmark
    skip = dataclasses.replace(row([]), verification=None, skipped="not at TILE=128")
    other = dataclasses.replace(skip, skipped="not at TILE=64")
    assert [r.skipped for r in pool_all([skip, other])] == ["not at TILE=128",
                                                            "not at TILE=64"]
    a, b = row([1.0]), row([2.0])
    later = [dataclasses.replace(a, round_index=1), dataclasses.replace(b, round_index=1)]
    assert [r.rounds for r in pool_all([a, b, *later])] == [2, 2]


def test_the_writer_replaces_a_row_with_the_row_of_one_more_round(tmp_path):
    writer = ResultsWriter(tmp_path / "r.json", ["dot"])
    a, b = row([1.0]), row([2.0], variant="w")
    for arrived in (a, b, pooled([a, a]), pooled([b, b]), pooled([a, a, a])):
        writer.add(arrived, replace=True)
    document = json.loads((tmp_path / "r.json").read_text())
    assert [(r["variant"], r["rounds"]) for r in document["benchmarks"]] == [("v", 3), ("w", 2)]
    validate(document)


def test_a_pooled_row_added_as_a_row_of_its_own_replaces_nothing(tmp_path):
    # the pytest plugin's session file: one test's row once, another's pooled over rounds
    writer = ResultsWriter(tmp_path / "r.json", ["pytest"])
    a = row([1.0])
    writer.add(a)
    writer.add(pooled([a, a]))
    assert [r.get("rounds", 1) for r in writer.benchmarks] == [1, 2]


def test_the_command_pools_each_row_over_its_rounds(use_fake, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "shared",
                    "--rounds", "3", "--json", out, "--csv", tmp_path / "r.csv", *QUICK)
    assert result.exit_code == 0, result.stderr
    loaded = load_results(out)
    assert [r.variant for r in loaded.benchmarks] == ["naive", "shared", "cuBLAS",
                                                      "memcpy_dtod"]
    for bench in loaded.benchmarks:
        assert bench.rounds == 3 and len(bench.round_medians_s) == 3
        assert len(bench.samples_s) >= 3 * 5
    validate(json.loads(out.read_text()))
    assert "rounds: each row pools 3 rounds" in result.stdout
    # said of what was measured: "counters, energy and transfers from the first round" of
    # a run that took none of them
    assert "from the first round" not in result.stdout
    assert "3: ±" in result.stdout  # the rounds column behind the times
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert [r["rounds"] for r in rows] == ["3"] * 4
    # the rounds column's spread, which the CSV lacked
    for bench, row in zip(loaded.benchmarks, rows):
        medians = bench.round_medians_s
        assert float(row["rounds_spread"]) == pytest.approx(
            (max(medians) - min(medians)) / 2 / bench.median_s)


def test_the_rounds_footer_names_what_came_from_the_first_round(use_fake):
    result = invoke("dot", "--size", "1000", "--variant", "atomic", "--no-vendor",
                    "--rounds", "2", "--energy", "0.2", *QUICK)
    assert result.exit_code == 0, result.stderr
    assert "rounds' medians); energy from the first round" in " ".join(result.stdout.split())


def test_a_wrong_kernel_fails_in_rounds_too(use_fake, tmp_path):
    use_fake(faults={"shared": Fault.WRONG_ELEMENT})
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "shared",
                    "--rounds", "2", "--json", out, *QUICK)
    assert result.exit_code == 3
    rows = {r.variant: r for r in load_results(out).benchmarks}
    assert rows["shared"].status is Status.FAIL and rows["shared"].rounds == 2
    assert rows["naive"].status is Status.PASS and rows["naive"].rounds == 2


def test_the_python_api_takes_rounds_from_the_timing_policy(use_fake):
    from cudabench.api import run

    results = run("dot", size=4096, variants=None,
                  timing=TimingPolicy(warmup_s=0, min_samples=5, max_time_s=0.05, rounds=2),
                  batch=False)
    assert results.rows and all(r.rounds == 2 for r in results.rows if r.samples_s)
    assert "--rounds" in results.command


def test_a_crashing_variant_does_not_cost_the_gpu_under_devices(use_fake, tmp_path):
    use_fake(device_count=2, faults={"shared": Fault.KILLS_WORKER})
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "--variant", "naive", "--variant", "shared",
                    "--devices", "0", "--rounds", "3", "--json", out, *QUICK)
    assert result.exit_code == 2  # the ERROR row of the crash
    rows = {r.variant: r for r in load_results(out).benchmarks}
    assert rows["shared"].status is Status.ERROR and rows["shared"].rounds == 3
    assert "given up" not in (rows["naive"].error or "")
    assert rows["naive"].status is Status.PASS and rows["naive"].rounds == 3
    assert rows["memcpy_dtod"].status is Status.REF


def test_a_sweep_keeps_each_skip_row_under_rounds(use_fake, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("transpose", "--size", "64", "-p", "TILE=16,128", "--variant", "naive",
                    "--variant", "evict_first", "--rounds", "2", "--json", out, *QUICK)
    plain = tmp_path / "plain.json"
    invoke("transpose", "--size", "64", "-p", "TILE=16,128", "--variant", "naive",
           "--variant", "evict_first", "--json", plain, *QUICK)
    assert result.exit_code == 0, result.stderr
    def skipped(path):
        return sorted((r.variant, r.skipped) for r in load_results(path).benchmarks
                      if r.skipped)
    assert skipped(out) == skipped(plain) and skipped(plain)
    assert all(r.rounds == 2 for r in load_results(out).benchmarks if not r.skipped)


def test_a_failed_round_reaches_the_file_as_one_row(use_fake, tmp_path):
    use_fake(faults={"shared": Fault.WRONG_ELEMENT})
    out = tmp_path / "r.json"
    invoke("transpose", "--size", "64", "--variant", "shared", "--rounds", "3", "--json", out,
           *QUICK)
    document = json.loads(out.read_text())
    shared = [r for r in document["benchmarks"] if r["variant"] == "shared"]
    assert len(shared) == 1 and shared[0]["status"] == "FAIL" and shared[0]["rounds"] == 3
    validate(document)


def test_ab_places_each_round_afresh_and_a_and_b_alike():
    from cudabench.cli.ab import _interleave

    plan = plan_of(1)  # two variants: each round holds A and B of both
    schedule = _interleave([(plan, plan)], 3)
    # a warm-up round (0), then rounds 1..3, each on buffers placed by its number
    assert [job.round for job in schedule.jobs] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert all(p.placement == 1 for p in schedule.plans)  # the memory check counts a spacer
    assert schedule.sides[4:8] == ["A", "B", "A", "B"]
    assert schedule.sides[8:12] == ["B", "A", "B", "A"]
    engine = FakeEngine(FakeSpec())
    sizes: list[int] = []
    allocate = engine.allocate
    engine.allocate = lambda nbytes: sizes.append(nbytes) or allocate(nbytes)  # type: ignore
    run_jobs(schedule.plans, schedule.jobs, engine)
    memory = engine.info.memory_bytes
    assert [s for s in sizes if s in {spacer_bytes(r, memory) for r in (1, 2, 3)}] == [
        spacer_bytes(1, memory), spacer_bytes(2, memory), spacer_bytes(3, memory)]
